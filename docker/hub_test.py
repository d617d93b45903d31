#!/usr/bin/python3
"""End-to-end test of the classroom JupyterHub (docker/jupyterhub_config.py via docker/start-hub.sh).

    docker/hub_test.py [--mode shared-password|pam] [--user NAME] [--timeout S] [--no-kernel]

Starts the hub on 127.0.0.1 on free ports, logs one student in with HTTP requests (the login
form, like a browser), lets the hub start the student's notebook server, and checks that

  1. the student's server answers (/user/NAME/api/status) after the login redirects;
  2. the student has a copy of the repository with lessons/ and notebooks/ in their home;
  3. the GoNB kernel is offered (/user/NAME/api/kernelspecs);
  4. a GoNB kernel started through the student's server (a notebook session in their
     mhalab/notebooks/) runs a Go cell that imports mhalab
     (github.com/mhalab/mhalab/xla from the student's copy) and lists the backends: the shared
     module cache works offline and the XLA CPU plugin is found (unless --no-kernel).

Both modes run the hub as root (each student's server runs under their own account) with a
throw-away account that start-hub.sh creates and that is deleted afterwards: --mode
shared-password (default) names it in MHALAB_HUB_USERS with one password, --mode pam writes it
to a students file (0600). `make docker-verify` runs both modes
inside the CPU image. Exit status 0 when every check passed, 1 otherwise; the hub's log is
printed on failure.
"""

import argparse
import http.cookiejar
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """Just enough of a browser: cookies, redirects, form posts, JupyterHub's XSRF header."""

    def __init__(self, base):
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def cookie(self, name, path_prefix=""):
        for c in self.jar:
            if c.name == name and c.path.startswith(path_prefix or c.path):
                return c.value
        return None

    def request(self, method, path, form=None, json_body=None, headers=None, timeout=30):
        headers = {"Accept": "text/html,application/json;q=0.9,*/*;q=0.8", **(headers or {})}
        body = None
        if form is not None:
            body = urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif json_body is not None:
            body = json.dumps(json_body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base + path, data=body, method=method, headers=headers)
        try:
            with self.opener.open(req, timeout=timeout) as resp:
                return resp.status, resp.geturl(), resp.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            return e.code, e.geturl(), e.read().decode("utf-8", "replace")


def wait_for(what, fn, timeout, interval=1.0):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            ok, last = fn()
            if ok:
                return last
        except (OSError, urllib.error.URLError) as e:
            last = repr(e)
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}; last: {str(last)[:500]}")


def run_cell(connection_file, code, timeout):
    """Runs code in the kernel of connection_file; returns (stdout+stderr text, status)."""
    from jupyter_client import BlockingKernelClient

    client = BlockingKernelClient(connection_file=str(connection_file))
    client.load_connection_file()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=timeout)
        out = []

        def hook(msg):
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                out.append(content["text"])
            elif kind in ("execute_result", "display_data"):
                data = content["data"]
                html = re.sub(r"(?s)<style.*?</style>", "", data.get("text/html", ""))
                text = data.get("text/plain") or re.sub(r"<[^>]+>", "", html)
                out.append(text if text.endswith("\n") else text + "\n")
            elif kind == "error":
                out.append("\n".join(content.get("traceback", [])))

        reply = client.execute_interactive(code, timeout=timeout, output_hook=hook)
        return "".join(out), reply["content"]["status"]
    finally:
        client.stop_channels()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("shared-password", "pam"), default="shared-password")
    ap.add_argument("--user", default=None, help="student name (default: student1, or mhalabtest<random> for pam)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds for the server to start and the Go cell to run")
    ap.add_argument("--no-kernel", action="store_true", help="skip check 4 (the GoNB cell)")
    args = ap.parse_args()

    is_root = os.geteuid() == 0
    if not is_root:
        sys.exit("hub_test: run as root (the hub runs as root; it creates a throw-away account)")
    user = args.user or "mhalabtest" + secrets.token_hex(3)
    password = secrets.token_urlsafe(12)
    state = Path(tempfile.mkdtemp(prefix="mhalab-hub-test."))
    os.chmod(state, 0o755)
    port, api_port, proxy_port = free_port(), free_port(), free_port()
    env = dict(os.environ)
    env.update({
        "MHALAB_DIR": str(REPO),
        "MHALAB_HUB_IP": "127.0.0.1",
        "MHALAB_HUB_PORT": str(port),
        "MHALAB_HUB_API_PORT": str(api_port),
        "MHALAB_HUB_PROXY_API_PORT": str(proxy_port),
        "MHALAB_HUB_STATE": str(state / "hub"),
    })
    if args.mode == "pam":
        students = state / "students"
        students.write_text(f"# hub_test.py\n{user}:{password}\n")
        os.chmod(students, 0o600)
        env["MHALAB_HUB_STUDENTS"] = str(students)
    else:
        env["MHALAB_HUB_STUDENTS"] = str(state / "no-students")
        env["MHALAB_HUB_USERS"] = user
        env["MHALAB_HUB_PASSWORD"] = password
    log_path = state / "hub.log"
    print(f"hub_test: {args.mode}: starting docker/start-hub.sh on 127.0.0.1:{port} (log {log_path})", flush=True)
    t0 = time.time()
    log = open(log_path, "w")
    hub = subprocess.Popen([str(REPO / "docker" / "start-hub.sh")], env=env, stdout=log, stderr=subprocess.STDOUT,
                           start_new_session=True)
    ok = False
    try:
        b = Browser(f"http://127.0.0.1:{port}")

        def hub_up():
            if hub.poll() is not None:
                raise AssertionError(f"the hub exited with status {hub.returncode}")
            status, _, body = b.request("GET", "/hub/api", timeout=5)
            return status == 200 and '"version"' in body, body if status == 200 else f"{status} {body[:200]}"

        version = json.loads(wait_for("the hub's API", hub_up, 60))["version"]
        print(f"hub_test: hub {version} up after {time.time() - t0:.1f} s", flush=True)

        # Log in through the form, as a browser does (with the _xsrf field when the form has one).
        status, _, page = b.request("GET", "/hub/login")
        assert status == 200, f"GET /hub/login: {status}"
        form = {"username": user, "password": password}
        m = re.search(r'name="_xsrf"\s+value="([^"]+)"', page)
        if m:
            form["_xsrf"] = m.group(1)
        status, url, _ = b.request("POST", "/hub/login?next=", form=form, timeout=args.timeout)
        assert b.cookie("jupyterhub-session-id") or b.cookie("jupyterhub-hub-login"), \
            f"no hub login cookie after POST /hub/login ({status} {url}); wrong password?"
        print(f"hub_test: logged in as {user} ({status} {urllib.parse.urlparse(url).path})", flush=True)

        # 1. The student's server: the hub spawns it (a redirect may already have done so).
        b.request("GET", "/hub/spawn", timeout=args.timeout)

        # A page, as a browser opens it: the hub's OAuth redirects give the server's own cookie
        # (the API alone answers 403 without it).
        # JupyterLab's page of the student's copy (the hub's default_url; jupyter_server and
        # JupyterLab have no /tree of their own: that was Notebook 6's).
        def server_up():
            status, url, body = b.request("GET", f"/user/{user}/lab/tree/mhalab", timeout=30)
            return status == 200 and urllib.parse.urlparse(url).path.startswith(f"/user/{user}/lab"), f"{status} {url}"

        wait_for(f"{user}'s notebook server", server_up, args.timeout, interval=2)
        status, _, body = b.request("GET", f"/user/{user}/api/status")
        assert status == 200 and "started" in body, f"GET /user/{user}/api/status: {status} {body[:200]}"
        print(f"hub_test: 1. {user}'s server answers /user/{user}/api/status ({time.time() - t0:.1f} s)", flush=True)

        # 2. The copy of the repository in the student's home.
        status, _, body = b.request("GET", f"/user/{user}/api/contents/mhalab/lessons")
        assert status == 200, f"GET contents mhalab/lessons: {status} {body[:200]}"
        names = {item["name"] for item in json.loads(body)["content"]}
        want = {p.name for p in (REPO / "lessons").iterdir() if p.is_dir()}
        assert want <= names, f"the student's lessons/ lacks {sorted(want - names)}"
        status, _, _ = b.request("GET", f"/user/{user}/api/contents/mhalab/notebooks")
        assert status == 200, f"GET contents mhalab/notebooks: {status}"
        home = Path(pwd.getpwnam(user).pw_dir)
        st = (home / "mhalab").stat()
        assert st.st_uid == pwd.getpwnam(user).pw_uid, f"{home}/mhalab is not owned by {user}"
        assert (home.stat().st_mode & 0o077) == 0, f"{home} is readable by others"
        assert (home / "mhalab" / "lessons").is_dir(), f"no {home}/mhalab/lessons"
        print(f"hub_test: 2. {home}/mhalab has lessons/ ({len(names)} entries) and notebooks/", flush=True)

        # 3. The GoNB kernel is offered.
        status, _, body = b.request("GET", f"/user/{user}/api/kernelspecs")
        specs = json.loads(body)["kernelspecs"] if status == 200 else {}
        assert "gonb" in specs, f"kernelspecs: {status} {sorted(specs)}"
        print(f"hub_test: 3. kernels offered: {sorted(specs)}", flush=True)

        # 4. A GoNB kernel in the student's copy runs a cell that imports mhalab.
        if not args.no_kernel:
            # The server's own _xsrf cookie (path /user/NAME/): JupyterHub 5 sets one for the hub's
            # pages too (path /hub/), which the server rejects ("XSRF cookie does not match").
            xsrf = b.cookie("_xsrf", f"/user/{user}/")
            headers = {"X-XSRFToken": xsrf} if xsrf else {}
            if not xsrf:
                b.request("GET", f"/user/{user}/lab/tree/mhalab")
                xsrf = b.cookie("_xsrf", f"/user/{user}/")
                headers = {"X-XSRFToken": xsrf} if xsrf else {}
            # A session, as opening a notebook creates one: its kernel runs in the notebook's
            # folder, which GoNB calls GONB_DIR (a bare POST /api/kernels would run it in ~).
            session = {"path": "mhalab/notebooks/hub_test.ipynb", "type": "notebook", "name": "hub_test.ipynb",
                       "kernel": {"name": "gonb"}}
            status, _, body = b.request("POST", f"/user/{user}/api/sessions", json_body=session, headers=headers)
            assert status in (200, 201), f"POST sessions: {status} {body[:300]}"
            session_id = json.loads(body)["id"]
            kernel_id = json.loads(body)["kernel"]["id"]
            connection = home / ".local" / "share" / "jupyter" / "runtime" / f"kernel-{kernel_id}.json"
            wait_for(f"connection file {connection}", lambda: (connection.exists(), str(connection)), 30)
            cell = "\n".join([
                "!*go mod edit -replace github.com/mhalab/mhalab=${GONB_DIR}/.. -require github.com/mhalab/mhalab@v0.0.0",
                "import (",
                '\t"fmt"',
                '\t"github.com/mhalab/mhalab/xla"',
                ")",
                "%%",
                "for _, b := range xla.Available() {",
                '\tfmt.Println("backend", b)',
                "}",
            ])
            t1 = time.time()
            out, status = run_cell(connection, cell, args.timeout)
            print("hub_test: cell output:\n    " + "\n    ".join(out.strip().splitlines()), flush=True)
            assert status == "ok", f"the Go cell failed ({status})"
            assert re.search(r"^backend go: available", out, re.M), "the cell did not list the go backend"
            assert re.search(r"^backend xla:cpu: available", out, re.M), "xla:cpu is not available to the student"
            assert not re.search(r"^(exit status|panic:)", out, re.M), "the cell's program failed"
            print(f"hub_test: 4. GoNB cell importing mhalab ran in {time.time() - t1:.1f} s as {user}", flush=True)
            b.request("DELETE", f"/user/{user}/api/sessions/{session_id}", headers=headers)
        ok = True
        print(f"hub_test: PASS ({args.mode}, {time.time() - t0:.1f} s)", flush=True)
    except AssertionError as e:
        print(f"hub_test: FAIL: {e}", flush=True)
    finally:
        if hub.poll() is None:
            os.killpg(hub.pid, signal.SIGTERM)
            try:
                hub.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(hub.pid, signal.SIGKILL)
                hub.wait()
        log.close()
        if not ok:
            print("hub_test: hub log (last 60 lines):")
            print("\n".join(log_path.read_text(errors="replace").splitlines()[-60:]))
        subprocess.run(["userdel", "--remove", user], capture_output=True)
        shutil.rmtree(state, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
