#!/usr/bin/env python3
"""The single-host hub keeps students apart: runs docker/start-hub.sh for real, as root.

    python3 docker/hub_security_test.py [--hub-python PATH]

JupyterHub (PyPI, docker/hub-requirements.txt, made by docker/hub-venv.sh unless --hub-python
names a Python that has it) with docker/jupyterhub_config.py, on 127.0.0.1 on free ports, with the
image's paths replaced through start-hub.sh's variables (state, homes, students file, tools, the
repository copied to students). Two throw-away accounts mhtest-<hex>a and mhtest-<hex>b are
created by start-hub.sh and deleted at the end. Checks:

  shared-password, plain HTTP
    - the hub warns that passwords travel in clear
    - its state (directory, cookie secret, sqlite database) is root's, mode 0700/0600
    - a student logs in and gets a server that runs under the student's own uid, without the
      shared password in its environment
    - as that student (a real uid): the cookie secret, the database, the state directory, the
      hub's environment (/proc/PID/environ: the shared password) and the other student's home
      cannot be read
  pam, students file readable by others: start-hub.sh refuses to start
  pam with the documented 0600 students file, HTTPS with a self-signed certificate (openssl)
    - the hub serves TLS (the certificate checked); a plain HTTP request gets no hub page
    - no clear-text warning
    - as a student: the students file and the TLS key cannot be read
    - the student logs in over HTTPS with their password and gets a server under their own uid,
      with no student's password in its environment

One line per check ("ok …" / "FAIL …"), then "N passed, N failed". Exit 0 when all passed, 1
otherwise, 3 when a prerequisite is missing (root, configurable-http-proxy, runuser, useradd,
openssl).
"""

import argparse
import http.client
import http.cookiejar
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
results = []


def check(ok, what, detail=""):
    results.append(bool(ok))
    print(f"{'ok  ' if ok else 'FAIL'} {what}{': ' + detail if detail else ''}", flush=True)
    return ok


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """Cookies, redirects, form posts; HTTPS trusting one certificate."""

    def __init__(self, base, cafile=None):
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        handlers = [urllib.request.HTTPCookieProcessor(self.jar)]
        if cafile:
            handlers.append(urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=cafile)))
        self.opener = urllib.request.build_opener(*handlers)

    def request(self, method, path, form=None, timeout=30, headers=None):
        body = urllib.parse.urlencode(form).encode() if form is not None else None
        headers = dict(headers or {})
        if form is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        req = urllib.request.Request(self.base + path, data=body, method=method, headers=headers)
        try:
            with self.opener.open(req, timeout=timeout) as r:
                return r.status, r.geturl(), r.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            return e.code, e.geturl(), e.read().decode("utf-8", "replace")

    def login(self, user, password):
        status, _, page = self.request("GET", "/hub/login")
        form = {"username": user, "password": password}
        m = re.search(r'name="_xsrf"\s+value="([^"]+)"', page)
        if m:
            form["_xsrf"] = m.group(1)
        self.request("POST", "/hub/login?next=", form=form, timeout=60)
        return any(c.name.startswith("jupyterhub-session-id") or c.name == "jupyterhub-hub-login" for c in self.jar)


def wait_for(fn, timeout, interval=0.5):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            ok, last = fn()
            if ok:
                return True, last
        except OSError as e:
            last = repr(e)
        time.sleep(interval)
    return False, last


def as_user(user, *cmd):
    """Runs cmd as user (a real uid, via runuser); returns (exit status, output)."""
    p = subprocess.run(["runuser", "-u", user, "--", *cmd], capture_output=True, text=True, timeout=30)
    return p.returncode, (p.stdout + p.stderr).strip()


def cannot_read(user, path, what):
    if os.path.isdir(path):
        code, out = as_user(user, "ls", path)
    else:
        code, out = as_user(user, "cat", path)
    check(code != 0, f"{user} cannot read {what}", out[-120:] if code != 0 else f"read it! ({len(out)} bytes)")


def server_process(user):
    """(pid, uid, environ bytes) of user's notebook server, found by JUPYTERHUB_USER."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            environ = (d / "environ").read_bytes()
            cmdline = (d / "cmdline").read_bytes()
            uid = (d / "status").read_text().split("\nUid:")[1].split()[0]
        except OSError:
            continue
        if b"JUPYTERHUB_USER=" + user.encode() + b"\0" in environ and b"singleuser" in cmdline:
            return int(d.name), int(uid), environ
    return None


class Hub:
    def __init__(self, env, log_path, scheme="http", cafile=None):
        self.env, self.log_path = env, log_path
        self.port = int(env["MHALAB_HUB_PORT"])
        self.base = f"{scheme}://127.0.0.1:{self.port}"
        self.cafile = cafile
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen([str(REPO / "docker" / "start-hub.sh")], env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def text(self):
        return self.log_path.read_text(errors="replace")

    def up(self, timeout=60):
        b = Browser(self.base, self.cafile)

        def api():
            if self.proc.poll() is not None:
                raise OSError(f"the hub exited with status {self.proc.returncode}")
            status, _, body = b.request("GET", "/hub/api", timeout=5)
            return status == 200 and '"version"' in body, f"{status}"

        return wait_for(api, timeout)

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


def spawn(hub, browser, user, timeout):
    """Logs user's browser into their server (the hub's redirects); True when it answers."""
    browser.request("GET", "/hub/spawn", timeout=timeout)

    def answers():
        # The hub's OAuth redirects end on the server's own page (default_url; jupyter_server alone
        # has no /tree: 404, but from the student's server, past the login, not from the hub).
        status, url, _ = browser.request("GET", f"/user/{user}/", timeout=30)
        path = urllib.parse.urlparse(url).path
        return status in (200, 404) and path.startswith(f"/user/{user}/") and server_process(user), f"{status} {path}"

    return wait_for(answers, timeout, interval=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hub-python", help="a Python with jupyterhub and jupyter_server (default: docker/hub-venv.sh)")
    ap.add_argument("--timeout", type=float, default=90)
    a = ap.parse_args()
    missing = [t for t in ("configurable-http-proxy", "runuser", "useradd", "userdel", "openssl") if not shutil.which(t)]
    if os.geteuid() != 0 or missing:
        print(f"hub_security_test: needs root and {', '.join(missing) or 'nothing else'} "
              "(apt-get install node-configurable-http-proxy)")
        return 3
    hub_python = a.hub_python or subprocess.run([str(REPO / "docker" / "hub-venv.sh")], check=True,
                                                capture_output=True, text=True).stdout.strip().splitlines()[-1]
    venv_bin = Path(os.path.abspath(os.path.join(REPO, hub_python))).parent  # not resolved: a venv's python is a link
    for tool in ("jupyterhub", "jupyterhub-singleuser"):
        if not (venv_bin / tool).exists():
            print(f"hub_security_test: no {tool} next to {hub_python}")
            return 3

    t0 = time.time()
    tmp = Path(tempfile.mkdtemp(prefix="mhtest-hub."))
    os.chmod(tmp, 0o755)
    tag = secrets.token_hex(3)
    ua, ub = f"mhtest-{tag}a", f"mhtest-{tag}b"
    hubs = []
    try:
        # What the config needs from the image: a tools home (gonb, its kernel), a repository to copy.
        tools, src = tmp / "tools", tmp / "src"
        for f in (tools / "go" / "bin" / "gonb", tools / ".local/share/jupyter/kernels/gonb/kernel.json",
                  src / "lessons" / "README.md", src / "notebooks" / "README.md"):
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text("#!/bin/sh\n")
            f.chmod(0o755)
        subprocess.run(["chmod", "-R", "a+rX", str(tools)], check=True)
        state, homes = tmp / "state", tmp / "homes"
        base_env = {k: v for k, v in os.environ.items() if not k.startswith(("MHALAB_HUB", "JUPYTER"))}
        base_env.update({
            "PATH": f"{venv_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "MHALAB_DIR": str(REPO), "MHALAB_HUB_SOURCE": str(src), "MHALAB_HUB_TOOLS": str(tools),
            "MHALAB_HUB_STATE": str(state), "MHALAB_HUB_HOME_BASE": str(homes),
            "MHALAB_HUB_SINGLEUSER": str(venv_bin / "jupyterhub-singleuser"),
            "MHALAB_HUB_STUDENTS": str(tmp / "etc" / "students"),
            "MHALAB_HUB_SSL_CERT": "", "MHALAB_HUB_SSL_KEY": "",
            "MHALAB_HUB_IP": "127.0.0.1",
        })
        # Debian's configurable-http-proxy finds its modules there; a node not from Debian does not look.
        if Path("/usr/share/nodejs").is_dir():
            base_env["NODE_PATH"] = os.pathsep.join(filter(None, [os.environ.get("NODE_PATH"), "/usr/share/nodejs"]))

        def hub_env(**extra):
            env = dict(base_env)
            env.update({"MHALAB_HUB_PORT": str(free_port()), "MHALAB_HUB_API_PORT": str(free_port()),
                        "MHALAB_HUB_PROXY_API_PORT": str(free_port())})
            env.update(extra)
            for k in [k for k, v in env.items() if k.startswith("MHALAB_HUB_SSL") and not v]:
                del env[k]
            return env

        # ---- shared password, plain HTTP -------------------------------------------------------
        shared = secrets.token_urlsafe(12)
        hub = Hub(hub_env(MHALAB_HUB_USERS=f"{ua},{ub}", MHALAB_HUB_PASSWORD=shared), tmp / "shared.log")
        hubs.append(hub)
        ok, last = hub.up()
        if not check(ok, "shared-password: the hub starts as root", last):
            print(hub.text()[-3000:])
            return 1
        check("passwords travel in clear" in hub.text(), "shared-password: plain HTTP warns that passwords travel in clear")
        st = state.stat()
        check(st.st_uid == 0 and st.st_mode & 0o777 == 0o700, "the state directory is root's, 0700", oct(st.st_mode & 0o777))
        for name in ("jupyterhub_cookie_secret", "jupyterhub.sqlite"):
            p = state / name
            ok = p.exists() and p.stat().st_uid == 0 and p.stat().st_mode & 0o077 == 0
            check(ok, f"{name} is root's, not readable by others",
                  oct(p.stat().st_mode & 0o777) if p.exists() else "missing")
        b = Browser(hub.base)
        check(b.login(ua, shared), f"{ua} logs in with the shared password")
        ok, last = spawn(hub, b, ua, a.timeout)
        if not check(ok, f"{ua}'s server answers", last):
            print("\n".join(hub.text().splitlines()[-40:]))
        else:
            proc = server_process(ua)
            want = pwd.getpwnam(ua).pw_uid
            check(proc and proc[1] == want and want != 0, f"{ua}'s server runs as {ua} (uid {want})",
                  f"pid {proc[0]} uid {proc[1]}" if proc else "no process found")
            check(proc and shared.encode() not in proc[2], f"{ua}'s server's environment has no shared password")
        cannot_read(ua, str(state / "jupyterhub_cookie_secret"), "the cookie secret")
        cannot_read(ua, str(state / "jupyterhub.sqlite"), "the hub database")
        cannot_read(ua, str(state), "the state directory")
        cannot_read(ua, f"/proc/{hub.proc.pid}/environ", "the hub's environment (the shared password)")
        cannot_read(ua, pwd.getpwnam(ub).pw_dir, f"{ub}'s home")
        hub.stop()

        # ---- pam: a students file others can read is refused -------------------------------------
        etc = tmp / "etc"
        etc.mkdir(mode=0o755)
        students = etc / "students"
        pa, pb = secrets.token_hex(8), secrets.token_hex(8)
        students.write_text(f"# hub_security_test\n{ua}:{pa}\n{ub}:{pb}\n")
        students.chmod(0o644)
        hub = Hub(hub_env(), tmp / "pam-open.log")
        hubs.append(hub)
        try:
            code = hub.proc.wait(60)
        except subprocess.TimeoutExpired:
            code = None
        line = next((l for l in hub.text().splitlines() if "readable by student" in l), "")
        check(code == 2 and line, "pam: a students file (0644) that students can read is refused", line or f"exit {code}")
        hub.stop()

        # ---- pam, 0600 students file (the documented recipe), HTTPS ------------------------------
        students.chmod(0o600)
        cert, key = tmp / "hub.crt", tmp / "hub.key"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
        key.chmod(0o600)
        cert.chmod(0o644)
        hub = Hub(hub_env(MHALAB_HUB_SSL_CERT=str(cert), MHALAB_HUB_SSL_KEY=str(key)), tmp / "pam-tls.log",
                  scheme="https", cafile=str(cert))
        hubs.append(hub)
        ok, last = hub.up()
        if not check(ok, "pam + HTTPS: the hub serves TLS with the given certificate", last):
            print(hub.text()[-3000:])
            return 1
        try:
            plain = urllib.request.urlopen(f"http://127.0.0.1:{hub.port}/hub/api", timeout=5)
            got = f"HTTP {plain.status}: {plain.read(200)!r}"
        except urllib.error.HTTPError as e:
            got = f"HTTP {e.code}"
        except (OSError, http.client.HTTPException) as e:
            got = f"no answer ({type(e).__name__})"
        check(not got.startswith("HTTP 200"), "a plain HTTP request gets no hub page", got)
        check("passwords travel in clear" not in hub.text(), "with a certificate there is no clear-text warning")
        cannot_read(ua, str(students), "the students file (0600)")
        cannot_read(ua, str(key), "the TLS key")
        b = Browser(hub.base, str(cert))
        check(b.login(ua, pa), f"{ua} logs in over HTTPS with their PAM password")
        check(not Browser(hub.base, str(cert)).login(ua, pb), f"{ua} cannot log in with {ub}'s password")
        ok, last = spawn(hub, b, ua, a.timeout)
        if not check(ok, f"{ua}'s server answers (PAM)", last):
            print("\n".join(hub.text().splitlines()[-40:]))
        else:
            proc = server_process(ua)
            want = pwd.getpwnam(ua).pw_uid
            check(proc and proc[1] == want and want != 0, f"{ua}'s server runs as {ua} (uid {want}, PAM)",
                  f"pid {proc[0]} uid {proc[1]}" if proc else "no process found")
            check(proc and pa.encode() not in proc[2] and pb.encode() not in proc[2],
                  f"{ua}'s server's environment has no student's password")
        hub.stop()
    finally:
        for hub in hubs:
            hub.stop()
        for user in (ua, ub):
            try:
                uid = pwd.getpwnam(user).pw_uid
            except KeyError:
                continue
            for d in Path("/proc").iterdir():  # the test's own accounts' leftover processes, by pid
                try:
                    if d.name.isdigit() and (d / "status").read_text().split("\nUid:")[1].split()[0] == str(uid):
                        os.kill(int(d.name), signal.SIGKILL)
                except (OSError, IndexError):
                    pass
            subprocess.run(["userdel", "--remove", user], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    passed, failed = results.count(True), results.count(False)
    print(f"hub_security_test: {passed} passed, {failed} failed ({time.time() - t0:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
