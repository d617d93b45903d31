# docker/jupyterhub_config.py — JupyterHub (Debian's jupyterhub 3.0) for a class: every student
# logs in, gets a notebook server of their own with the GoNB kernel and a private copy of the
# mhalab repository (notebooks/ and lessons/) in their home directory.
#
#   jupyterhub -f docker/jupyterhub_config.py          (docker/start-hub.sh sets it up in the image)
#
# Two ways to log in and run, chosen by MHALAB_HUB_AUTH:
#   pam              (default) students are Linux accounts with passwords (docker/start-hub.sh
#                    creates them from a "name:password" file); the hub runs as root and starts
#                    each student's server as that student (LocalProcessSpawner): separate
#                    accounts, private 0700 homes. Only the listed users may log in.
#   shared-password  one password for every listed user (DummyAuthenticator); the hub runs as an
#                    ordinary user and every student's server runs as that same account, with its
#                    own folder MHALAB_HUB_HOMES/<name> (SimpleLocalProcessSpawner). For a trusted
#                    group or a test: students can reach each other's files.
#
# Environment:
#   MHALAB_HUB_USERS     comma-separated student names (required); MHALAB_HUB_ADMINS likewise
#   MHALAB_HUB_PASSWORD  the shared password (shared-password; at least 8 characters)
#   MHALAB_HUB_IP, MHALAB_HUB_PORT   where the hub listens (default 0.0.0.0:8000)
#   MHALAB_HUB_API_PORT, MHALAB_HUB_PROXY_API_PORT   its internal ports on 127.0.0.1 (8081, 8001)
#   MHALAB_HUB_STATE     hub database, cookie secret, proxy token (default ./mhalab-hub)
#   MHALAB_HUB_HOMES     shared-password: the students' folders (default MHALAB_HUB_STATE/homes)
#   MHALAB_HUB_SOURCE    the repository copied to each student (default: the one holding this file)
#   MHALAB_HUB_TOOLS     the account (or its home directory) whose Go tools (~/go/bin), module
#                        cache and XLA plugin students share (default: the owner of
#                        MHALAB_HUB_SOURCE, i.e. the image's user)
import os
import pwd
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def env(name, default=None):
    value = os.environ.get(name, "").strip()
    return value if value else default


def fail(message):
    sys.exit(f"mhalab hub: {message}")


AUTH = env("MHALAB_HUB_AUTH", "pam")
USERS = sorted({u.strip() for u in env("MHALAB_HUB_USERS", "").split(",") if u.strip()})
ADMINS = sorted({u.strip() for u in env("MHALAB_HUB_ADMINS", "").split(",") if u.strip()})
SOURCE = os.path.abspath(env("MHALAB_HUB_SOURCE", os.path.dirname(HERE)))
STATE = os.path.abspath(env("MHALAB_HUB_STATE", "mhalab-hub"))
HOMES = os.path.abspath(env("MHALAB_HUB_HOMES", os.path.join(STATE, "homes")))
IS_ROOT = os.geteuid() == 0

if AUTH not in ("pam", "shared-password"):
    fail(f"MHALAB_HUB_AUTH={AUTH!r}: use pam or shared-password")
if not USERS:
    fail("MHALAB_HUB_USERS is empty: list the students who may log in (comma-separated)")
if AUTH == "pam" and not IS_ROOT:
    fail("MHALAB_HUB_AUTH=pam runs each student's server as that student and needs root; "
         "run as root or use MHALAB_HUB_AUTH=shared-password")
if not os.path.isdir(os.path.join(SOURCE, "lessons")):
    fail(f"MHALAB_HUB_SOURCE={SOURCE} has no lessons/ folder")


def tools_home():
    """The home of the account whose Go tools, module cache and XLA plugin students use."""
    named = env("MHALAB_HUB_TOOLS")
    if named and os.path.isabs(named):
        return named
    if named:
        return pwd.getpwnam(named).pw_dir
    return pwd.getpwuid(os.stat(SOURCE).st_uid).pw_dir


TOOLS = tools_home()

c = get_config()  # noqa: F821 (provided by JupyterHub when it loads this file)

c.JupyterHub.ip = env("MHALAB_HUB_IP", "0.0.0.0")
c.JupyterHub.port = int(env("MHALAB_HUB_PORT", "8000"))
os.makedirs(STATE, mode=0o700, exist_ok=True)
c.JupyterHub.db_url = "sqlite:///" + os.path.join(STATE, "jupyterhub.sqlite")
c.JupyterHub.cookie_secret_file = os.path.join(STATE, "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.pid_file = os.path.join(STATE, "jupyterhub-proxy.pid")
# The proxy's API listens on localhost only; the hub's own API too.
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(env("MHALAB_HUB_API_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:%d" % int(env("MHALAB_HUB_PROXY_API_PORT", "8001"))
c.JupyterHub.cleanup_servers = True
c.Authenticator.allowed_users = set(USERS)
c.Authenticator.admin_users = set(ADMINS)

if AUTH == "pam":
    c.JupyterHub.authenticator_class = "jupyterhub.auth.PAMAuthenticator"
    c.JupyterHub.spawner_class = "jupyterhub.spawner.LocalProcessSpawner"
else:
    password = env("MHALAB_HUB_PASSWORD", "")
    if len(password) < 8:
        fail("MHALAB_HUB_AUTH=shared-password needs MHALAB_HUB_PASSWORD (at least 8 characters)")
    c.JupyterHub.authenticator_class = "jupyterhub.auth.DummyAuthenticator"
    c.DummyAuthenticator.password = password
    c.JupyterHub.spawner_class = "jupyterhub.spawner.SimpleLocalProcessSpawner"
    c.SimpleLocalProcessSpawner.home_dir_template = os.path.join(HOMES, "{username}")
    os.makedirs(HOMES, mode=0o700, exist_ok=True)

# Each student's server: Jupyter Notebook, opened in their copy of the repository; GoNB finds
# Go and its tools on PATH. The Go module cache is shared read-only: GOFLAGS=-mod=mod with
# GOPROXY=off and GOSUMDB=off makes `go` use only modules already in that cache (downloaded and
# checksum-verified when the image was built), so nothing is fetched and nothing written there.
# Each student has their own Go build cache (~/.cache/go-build): their first GoMLX cell compiles
# GoMLX and go-xla (about half a minute on 2 cores).
c.Spawner.default_url = "/tree/mhalab"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
go_bin = os.path.join(TOOLS, "go", "bin")
go_root_bin = os.path.dirname(shutil.which("go") or "/usr/local/go/bin/go")
c.Spawner.environment = {
    "PATH": os.pathsep.join(dict.fromkeys([go_bin, go_root_bin, "/usr/local/bin", "/usr/bin", "/bin"])),
    "GOMODCACHE": os.path.join(TOOLS, "go", "pkg", "mod"),
    "GOFLAGS": "-mod=mod",
    "GOPROXY": "off",
    "GOSUMDB": "off",
    "GOTOOLCHAIN": "local",
    "GOMLX_NO_AUTO_INSTALL": "1",
    "MHALAB_PLUGIN_DIR": os.path.join(TOOLS, ".local", "lib", "go-xla"),
    "PJRT_PLUGIN_LIBRARY_PATH": os.pathsep.join([os.path.join(TOOLS, ".local", "lib", "go-xla"),
                                                 "/usr/local/lib/go-xla", "/usr/local/lib/go-xla/nvidia"]),
    "JUPYTER_PATH": os.path.join(TOOLS, ".local", "share", "jupyter"),
}
# PyTorch from the setup's venv, for the parity notebook (it falls back to committed fixtures).
torch_venv = env("MHALAB_TORCH_VENV", os.path.join(TOOLS, ".cache", "mhalab", "torch-venv"))
if os.path.isdir(torch_venv):
    c.Spawner.environment["MHALAB_TORCH_VENV"] = torch_venv
for name in ("GOMLX_BACKEND", "XLA_FLAGS", "NVIDIA_VISIBLE_DEVICES", "LANG"):
    if env(name):
        c.Spawner.environment[name] = os.environ[name]


def copy_repository(home, uid=None, gid=None):
    """Copies SOURCE (without build outputs, and without the lessons' reference solutions, which
    are for teachers: lessons/solutions/files/README.md) to home/mhalab unless the student
    already has it."""
    target = os.path.join(home, "mhalab")
    if os.path.exists(target):
        return target, False
    ignore = shutil.ignore_patterns(".git", "build", "bin", "__pycache__", "*.test", ".scratch", "*_solution.go")
    shutil.copytree(SOURCE, target, ignore=ignore, symlinks=True)
    if uid is not None:
        for root, dirs, files in os.walk(target):
            os.chown(root, uid, gid)
            for name in files:
                os.lchown(os.path.join(root, name), uid, gid)
    return target, True


def pre_spawn_hook(spawner):
    """Gives the student a home with their own copy of the repository, before their server starts."""
    name = spawner.user.name
    if AUTH == "pam":
        try:
            account = pwd.getpwnam(name)
        except KeyError:
            raise RuntimeError(f"mhalab hub: {name} has no Linux account (docker/start-hub.sh creates them)")
        home, uid, gid = account.pw_dir, account.pw_uid, account.pw_gid
        if not os.path.isdir(home):
            os.makedirs(home, mode=0o700)
            os.chown(home, uid, gid)
        target, copied = copy_repository(home, uid, gid)
    else:
        home = os.path.join(HOMES, name)
        os.makedirs(home, mode=0o700, exist_ok=True)
        target, copied = copy_repository(home)
    spawner.environment["MHALAB_DIR"] = target
    spawner.log.info("mhalab hub: %s: %s %s", name, "copied the repository to" if copied else "keeps", target)


c.Spawner.pre_spawn_hook = pre_spawn_hook

# The hub refuses to start when something students need is missing, instead of failing later
# inside every student's server.
for what, path in [("go", os.path.join(go_root_bin, "go")), ("gonb", os.path.join(go_bin, "gonb")),
                   ("the GoNB kernel", os.path.join(TOOLS, ".local", "share", "jupyter", "kernels", "gonb", "kernel.json")),
                   ("jupyterhub-singleuser", shutil.which("jupyterhub-singleuser") or "jupyterhub-singleuser")]:
    if not os.path.exists(path):
        fail(f"{what} not found at {path}: run scripts/setup.sh as the account that owns {SOURCE} "
             "(Debian: apt-get install jupyterhub jupyter-notebook)")
