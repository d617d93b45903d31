#!/usr/bin/env python3
"""mhalab-notebook keeps its token whatever the spelling: starts docker/start-notebook.sh for real.

    python3 docker/notebook_security_test.py [--jobs N] [--only NAME]...

Each case starts docker/start-notebook.sh (JupyterLab from the setup's Jupyter venv,
scripts/jupyter_python.sh) on 127.0.0.1 on a free port with options, config files or environment
that would turn the login or the XSRF check off, and checks that the server refuses to start
(exit 2, "refusing to start") — or, where a case says so, that it starts but answers 403 without
the token. The good cases check that a server with a token answers 403 without it and 200 with it
(/api/status, the /lab page). Every request goes to 127.0.0.1 with a timeout. Exit 0 when every
case passed, 1 otherwise (one "FAIL name: why" line each), 3 when the Jupyter venv is missing.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOOD = "0123456789abcdef0123456789abcdef"

# name, arguments, extra environment, config files {relative path under the case's HOME: text},
# expected outcome: "refused" (exit 2 with the guard's line) or "token" (serves, 403 without the
# token, 200 with GOOD) or "random" (serves with a random token: 403 without).
CASES = [
    ("ServerApp.token=", ["--ServerApp.token="], {}, {}, "refused"),
    ("ServerApp.token space-empty", ["--ServerApp.token", ""], {}, {}, "refused"),
    ("ServerApp.token=''", ["--ServerApp.token=''"], {}, {}, "refused"),
    ("IdentityProvider.token=", ["--IdentityProvider.token="], {}, {}, "refused"),
    ("IdentityProvider.token space-empty", ["--IdentityProvider.token", ""], {}, {}, "refused"),
    ("PasswordIdentityProvider.token=", ["--PasswordIdentityProvider.token="], {}, {}, "refused"),
    ("NotebookApp.token=", ["--NotebookApp.token="], {}, {}, "refused"),
    ("ServerApp.token=short", ["--ServerApp.token=short"], {}, {}, "refused"),
    ("JUPYTER_TOKEN empty (Jupyter: unset)", [], {"JUPYTER_TOKEN": ""}, {}, "random"),
    ("JUPYTER_TOKEN short", [], {"JUPYTER_TOKEN": "short"}, {}, "refused"),
    ("token= after a good JUPYTER_TOKEN", ["--ServerApp.token="], {"JUPYTER_TOKEN": GOOD}, {}, "refused"),
    ("JUPYTER_CONFIG_DIR config.py", [], {"JUPYTER_CONFIG_DIR": "{home}/cfg"},
     {"cfg/jupyter_server_config.py": "c.ServerApp.token = ''\n"}, "refused"),
    ("~/.jupyter config.py", [], {}, {".jupyter/jupyter_server_config.py": "c.IdentityProvider.token = ''\n"}, "refused"),
    ("~/.jupyter config.json", [], {},
     {".jupyter/jupyter_server_config.json": json.dumps({"IdentityProvider": {"token": ""}})}, "refused"),
    ("~/.jupyter jupyter_config.py", [], {}, {".jupyter/jupyter_config.py": "c.ServerApp.token = ''\n"}, "refused"),
    ("--config FILE", ["--config={home}/x_config.py"], {},
     {"x_config.py": "c.ServerApp.disable_check_xsrf = True\n"}, "refused"),
    ("-c FILE (token)", ["--config", "{home}/y_config.py"], {}, {"y_config.py": "c.ServerApp.token = ''\n"}, "refused"),
    ("JUPYTER_CONFIG_PATH", [], {"JUPYTER_CONFIG_PATH": "{home}/cp"},
     {"cp/jupyter_server_config.py": "c.IdentityProvider.token = ''\n"}, "refused"),
    ("ServerApp.disable_check_xsrf=True", ["--ServerApp.disable_check_xsrf=True"], {}, {}, "refused"),
    ("NotebookApp.disable_check_xsrf=True", ["--NotebookApp.disable_check_xsrf=True"], {}, {}, "refused"),
    ("tornado_settings xsrf_cookies False", [], {},
     {".jupyter/jupyter_server_config.py": "c.ServerApp.tornado_settings = {'xsrf_cookies': False}\n"}, "refused"),
    ("tornado_settings disable_check_xsrf", [], {},
     {".jupyter/jupyter_server_config.py": "c.ServerApp.tornado_settings = {'disable_check_xsrf': True}\n"}, "refused"),
    ("allow_unauthenticated_access=True", ["--ServerApp.allow_unauthenticated_access=True"], {}, {}, "refused"),
    ("allow_unauthenticated_access in config", [], {},
     {".jupyter/jupyter_server_config.py": "c.ServerApp.allow_unauthenticated_access = True\n"}, "refused"),
    ("no token, password_required=False", ["--ServerApp.token=", "--PasswordIdentityProvider.password_required=False"],
     {}, {}, "refused"),
    ("no token, ServerApp.password_required=False", ["--ServerApp.token=", "--ServerApp.password_required=False"],
     {}, {}, "refused"),
    ("identity_provider_class", ["--ServerApp.identity_provider_class=jupyter_server.auth.identity.IdentityProvider"],
     {"JUPYTER_TOKEN": GOOD}, {}, "refused"),
    # Served, with the token demanded:
    ("JUPYTER_SERVER_ALLOW_UNAUTHENTICATED_ACCESS=true", [], {"JUPYTER_SERVER_ALLOW_UNAUTHENTICATED_ACCESS": "true",
                                                              "JUPYTER_TOKEN": GOOD}, {}, "refused"),
    ("password_required=False with a token", ["--PasswordIdentityProvider.password_required=False"],
     {"JUPYTER_TOKEN": GOOD}, {}, "token"),
    ("good JUPYTER_TOKEN", [], {"JUPYTER_TOKEN": GOOD}, {}, "token"),
    ("random token", [], {}, {}, "random"),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(url, timeout=5):
    """(status, final URL): no redirects followed."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(url, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, ""


def run_case(case, jupyter_py, timeout):
    name, args, extra_env, files, expect = case
    home = Path(tempfile.mkdtemp(prefix="mhalab-nbsec."))
    proc = None
    try:
        for rel, text in files.items():
            p = home / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER")}
        env.update({"HOME": str(home), "MHALAB_DIR": str(REPO), "MHALAB_JUPYTER_PYTHON": jupyter_py,
                    "PORT": str(port), "MHALAB_NOTEBOOK_IP": "127.0.0.1", "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
                    "JUPYTER_DATA_DIR": str(home / "data"), "XDG_CACHE_HOME": str(home / "cache")})
        env.update({k: v.format(home=home) for k, v in extra_env.items()})
        argv = [a.format(home=home) for a in args]
        cmd = [str(REPO / "docker" / "start-notebook.sh")]
        if os.geteuid() == 0:
            cmd.append("--allow-root")  # Jupyter refuses root otherwise; it changes no login rule
        # the case's own options come last, as a user's would
        proc = subprocess.Popen(cmd + argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True, text=True)
        deadline = time.time() + timeout
        base = f"http://127.0.0.1:{port}"
        while time.time() < deadline:
            if proc.poll() is not None:
                out = proc.stdout.read()
                line = next((l for l in out.splitlines() if l.startswith("mhalab-notebook: refusing")), "")
                if expect == "refused" and proc.returncode == 2 and line:
                    return True, line.split(": ", 1)[1][:140]
                return False, f"exited {proc.returncode} (expected {expect}): {out.strip()[-300:]}"
            try:
                status, _ = http(base + "/api/status", timeout=2)
            except OSError:
                time.sleep(0.3)
                continue
            if expect == "refused":
                return False, f"the server started (GET /api/status without the token: HTTP {status})"
            if status != 403:
                return False, f"GET /api/status without the token: HTTP {status}, want 403"
            lab, _ = http(base + "/lab")
            if lab not in (302, 403):
                return False, f"GET /lab without the token: HTTP {lab}, want a redirect to the login or 403"
            if expect == "random":
                return True, f"random token: 403 without it, /lab {lab}"
            with_tok, _ = http(f"{base}/api/status?token={GOOD}")
            lab_tok, page = http(f"{base}/lab?token={GOOD}")
            if with_tok != 200 or lab_tok != 200 or "JupyterLab" not in page:
                return False, f"with the token: /api/status {with_tok}, /lab {lab_tok}; want 200"
            return True, f"403 without the token, /lab {lab}; 200 with it (/api/status, /lab)"
        return False, f"neither refused nor served within {timeout} s"
    finally:
        if proc and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        shutil.rmtree(home, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--only", action="append", default=[], help="run only cases whose name contains this")
    a = ap.parse_args()
    jupyter_py = subprocess.run([str(REPO / "scripts" / "jupyter_python.sh")], capture_output=True, text=True).stdout.strip()
    try:
        found = subprocess.run([jupyter_py, "-c", "import jupyterlab, jupyter_server"], capture_output=True).returncode == 0
    except OSError:  # no such Python (the venv of another user, or none set up)
        found = False
    if not found:
        print(f"notebook_security_test: no JupyterLab at {jupyter_py} (scripts/setup.sh --only jupyter)")
        return 3
    cases = [c for c in CASES if not a.only or any(o in c[0] for o in a.only)]
    t0 = time.time()
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        results = pool.map(lambda c: (c[0], run_case(c, jupyter_py, a.timeout)), cases)
        for name, (ok, why) in results:
            print(f"{'ok  ' if ok else 'FAIL'} {name}: {why}", flush=True)
            failed += not ok
    print(f"notebook_security_test: {len(cases) - failed} passed, {failed} failed ({time.time() - t0:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
