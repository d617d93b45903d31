# docker/jupyterhub_config.py — JupyterHub (PyPI's 5.5, in the image's Jupyter venv) for a class: every student
# logs in, gets a notebook server of their own with the GoNB kernel and a private copy of the
# mhalab repository (notebooks/ and lessons/) in their home directory.
#
#   jupyterhub -f docker/jupyterhub_config.py          (docker/start-hub.sh sets it up in the image)
#
# The hub runs as root and starts each student's server as that student's own Linux account
# (LocalProcessSpawner): a uid of their own, a private 0700 home (docker/start-hub.sh creates the
# accounts). Only the listed users may log in. Two ways to log in, chosen by MHALAB_HUB_AUTH:
#   pam              (default) the accounts' passwords (start-hub.sh sets them from a
#                    "name:password" file)
#   shared-password  one password for every listed user (SharedPasswordAuthenticator, or
#                    DummyAuthenticator's password on JupyterHub < 5.3)
# The hub's state (database, cookie secret, proxy pid) is root's alone: MHALAB_HUB_STATE is made
# 0700, owned by root. HTTPS with MHALAB_HUB_SSL_CERT and MHALAB_HUB_SSL_KEY; without them a
# warning says that passwords travel in clear.
#
# Environment:
#   MHALAB_HUB_USERS     comma-separated student names (required); MHALAB_HUB_ADMINS likewise
#   MHALAB_HUB_PASSWORD  the shared password (shared-password; at least 8 characters)
#   MHALAB_HUB_IP, MHALAB_HUB_PORT   where the hub listens (default 0.0.0.0:8000)
#   MHALAB_HUB_API_PORT, MHALAB_HUB_PROXY_API_PORT   its internal ports on 127.0.0.1 (8081, 8001)
#   MHALAB_HUB_STATE     hub database, cookie secret, proxy pid (default ./mhalab-hub; root 0700)
#   MHALAB_HUB_SSL_CERT, MHALAB_HUB_SSL_KEY   the hub's TLS certificate and key (HTTPS)
#   MHALAB_HUB_SINGLEUSER   the students' server command (default: jupyterhub-singleuser on PATH)
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
IS_ROOT = os.geteuid() == 0

if AUTH not in ("pam", "shared-password"):
    fail(f"MHALAB_HUB_AUTH={AUTH!r}: use pam or shared-password")
if not USERS:
    fail("MHALAB_HUB_USERS is empty: list the students who may log in (comma-separated)")
if not IS_ROOT:
    fail("the hub runs each student's server as that student's own account and needs root "
         "(docker run --user root …; docker/start-hub.sh creates the accounts)")
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
# The state is root's alone: students must not read the cookie secret, the database (their
# tokens) or the proxy's pid file.
os.makedirs(STATE, mode=0o700, exist_ok=True)
os.chown(STATE, 0, 0)
os.chmod(STATE, 0o700)
os.umask(0o077)
SSL_CERT, SSL_KEY = env("MHALAB_HUB_SSL_CERT"), env("MHALAB_HUB_SSL_KEY")
if bool(SSL_CERT) != bool(SSL_KEY):
    fail("HTTPS needs both MHALAB_HUB_SSL_CERT and MHALAB_HUB_SSL_KEY")
if SSL_CERT:
    for path in (SSL_CERT, SSL_KEY):
        if not os.path.isfile(path):
            fail(f"{path} not found")
    c.JupyterHub.ssl_cert = SSL_CERT
    c.JupyterHub.ssl_key = SSL_KEY
else:
    print("mhalab hub: WARNING: no TLS certificate (MHALAB_HUB_SSL_CERT, MHALAB_HUB_SSL_KEY): the hub "
          "serves plain HTTP and passwords travel in clear; mount a certificate and key "
          "(docker/README.md) unless only a trusted network reaches it", file=sys.stderr, flush=True)
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

c.JupyterHub.spawner_class = "jupyterhub.spawner.LocalProcessSpawner"
if AUTH == "pam":
    c.JupyterHub.authenticator_class = "jupyterhub.auth.PAMAuthenticator"
else:
    password = env("MHALAB_HUB_PASSWORD", "")
    if len(password) < 8:
        fail("MHALAB_HUB_AUTH=shared-password needs MHALAB_HUB_PASSWORD (at least 8 characters)")
    try:
        import jupyterhub.authenticators.shared  # noqa: F401 (JupyterHub >= 5.3)
        c.JupyterHub.authenticator_class = "jupyterhub.authenticators.shared.SharedPasswordAuthenticator"
        c.SharedPasswordAuthenticator.user_password = password
    except ImportError:
        c.JupyterHub.authenticator_class = "jupyterhub.auth.DummyAuthenticator"
        c.DummyAuthenticator.password = password

# Each student's server: jupyterhub-singleuser (Jupyter Server with JupyterLab, from the image's
# Jupyter venv), opened on JupyterLab in their copy of the repository; GoNB finds
# Go and its tools on PATH. The Go module cache is shared read-only: GOFLAGS=-mod=mod with
# GOPROXY=off and GOSUMDB=off makes `go` use only modules already in that cache (downloaded and
# checksum-verified when the image was built), so nothing is fetched and nothing written there.
# Each student has their own Go build cache (~/.cache/go-build): their first GoMLX cell compiles
# GoMLX and go-xla (about half a minute on 2 cores).
c.Spawner.default_url = "/lab/tree/mhalab"
SINGLEUSER = env("MHALAB_HUB_SINGLEUSER", shutil.which("jupyterhub-singleuser") or "jupyterhub-singleuser")
c.Spawner.cmd = [SINGLEUSER]
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
    try:
        account = pwd.getpwnam(name)
    except KeyError:
        raise RuntimeError(f"mhalab hub: {name} has no Linux account (docker/start-hub.sh creates them)")
    home, uid, gid = account.pw_dir, account.pw_uid, account.pw_gid
    if uid == 0:
        raise RuntimeError(f"mhalab hub: {name} is root; students need accounts of their own")
    if not os.path.isdir(home):
        os.makedirs(home, mode=0o700)
        os.chown(home, uid, gid)
    target, copied = copy_repository(home, uid, gid)
    spawner.environment["MHALAB_DIR"] = target
    spawner.log.info("mhalab hub: %s: %s %s", name, "copied the repository to" if copied else "keeps", target)


c.Spawner.pre_spawn_hook = pre_spawn_hook

# The hub refuses to start when something students need is missing, instead of failing later
# inside every student's server.
for what, path in [("go", os.path.join(go_root_bin, "go")), ("gonb", os.path.join(go_bin, "gonb")),
                   ("the GoNB kernel", os.path.join(TOOLS, ".local", "share", "jupyter", "kernels", "gonb", "kernel.json")),
                   ("jupyterhub-singleuser", SINGLEUSER)]:
    if not os.path.exists(path):
        fail(f"{what} not found at {path}: run scripts/setup.sh as the account that owns {SOURCE} "
             "(its step jupyter installs JupyterHub; the image links jupyterhub-singleuser into /usr/local/bin)")
