#!/usr/bin/env python3
"""Check that `make lab` serves the notebooks: start scripts/lab.sh on a free port, then, over
HTTP and the kernel's websocket, as a browser would:

  1. GET /api/status and /api/contents: the server runs and lists the eight notebooks;
  2. GET /lab/tree/<notebook>: JupyterLab's page for the notebook renders;
  3. POST /api/sessions: open the notebook with the GoNB kernel the setup installed, execute all
     its code cells through /api/kernels/<id>/channels, and fail on a failing cell (the same
     detection as scripts/notebooks.py);
     Every picture or table a cell shows must use only MIME types that JupyterLab, Notebook 7
     and VS Code all render (text/plain, text/html, text/markdown, image/svg+xml, image/png,
     image/jpeg) and no <script> (front-ends that sanitise HTML, like VS Code's, drop it);
  4. with --screenshot FILE: a headless Chromium screenshot of the notebook page.

    scripts/lab_check.py [--notebook 01_qkv_projection.ipynb] [--screenshot build/lab.png]

Run by `make lab-check`, with the Jupyter the setup installed (scripts/jupyter_python.sh; started
with another Python, it re-executes itself with that one). Stops the server at the end.
"""

import argparse
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
from notebooks import cell_failure, use_jupyter_python  # noqa: E402  (same failure detection as make notebooks)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode("utf-8", "replace")


# What every notebook front-end renders alike (JupyterLab, Notebook 7, VS Code's Jupyter view).
STANDARD_MIME = {"text/plain", "text/html", "text/markdown", "image/svg+xml", "image/png", "image/jpeg"}


def nonstandard_outputs(outputs):
    """Problems with a cell's display outputs: MIME types outside STANDARD_MIME, <script> in HTML."""
    problems = []
    for o in outputs:
        data = o.get("data", {})
        for mime in data:
            if mime not in STANDARD_MIME:
                problems.append(f"output of MIME type {mime} (not rendered alike by JupyterLab, Notebook 7 and VS Code)")
        html = data.get("text/html", "")
        if "<script" in ("".join(html) if isinstance(html, list) else html).lower():
            problems.append("HTML output with <script> (sanitising front-ends such as VS Code drop it)")
    return problems


# GoNB's display calls that send only STANDARD_MIME types (DisplaySVG is sent as text/html), and
# Sync, which sends nothing to Jupyter (it waits until GoNB has forwarded the displays before it).
STANDARD_GONBUI = {"DisplayHTML", "DisplaySVG", "DisplayMarkdown", "DisplayImage", "DisplayPNG", "DisplayPng",
                   "Sync"}


def static_output_check():
    """Every notebook and notebooks/nb: GoNB display calls only from STANDARD_GONBUI (no
    JavaScript, widgets or custom MIME types), no <script>. Returns problems."""
    import re
    problems = []
    files = sorted((REPO / "notebooks").glob("*.ipynb")) + sorted((REPO / "notebooks" / "nb").glob("*.go"))
    for f in files:
        text = f.read_text(encoding="utf-8")
        for call in sorted(set(re.findall(r"gonbui\.(\w+)", text)) - STANDARD_GONBUI):
            problems.append(f"{f.relative_to(REPO)}: gonbui.{call} (not a plain HTML/SVG/PNG/Markdown display)")
        for word in ("<script", "gonbui/dom", "gonbui/widgets", "application/javascript"):
            if word in text.lower():
                problems.append(f"{f.relative_to(REPO)}: {word}")
    return problems


def run_cells(base, token, notebook, timeout):
    """Opens notebook in a GoNB kernel session and executes its code cells; returns failures."""
    from tornado.ioloop import IOLoop
    from tornado.websocket import websocket_connect
    import nbformat

    body = json.dumps({"path": notebook, "type": "notebook", "name": notebook, "kernel": {"name": "gonb"}}).encode()
    req = urllib.request.Request(f"{base}/api/sessions?token={token}", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        session = json.loads(r.read())
    kernel = session["kernel"]["id"]
    print(f"  session {session['id']}: kernel {session['kernel']['name']} ({kernel})")
    nb = nbformat.read(REPO / "notebooks" / notebook, as_version=4)
    failures = []

    async def execute_all():
        ws = await websocket_connect(f"{base.replace('http', 'ws', 1)}/api/kernels/{kernel}/channels?token={token}")
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            msg_id = uuid.uuid4().hex
            await ws.write_message(json.dumps({
                "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "lab_check",
                           "session": uuid.uuid4().hex, "version": "5.3", "date": ""},
                "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
                "content": {"code": cell.source, "silent": False, "store_history": True,
                            "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
            }))
            outputs, status, deadline = [], None, time.monotonic() + timeout
            idle = False
            while not (idle and status) and time.monotonic() < deadline:
                raw = await ws.read_message()
                if raw is None:
                    raise RuntimeError("the kernel's websocket closed")
                msg = json.loads(raw)
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind, content = msg["msg_type"], msg["content"]
                if kind == "stream":
                    outputs.append({"output_type": "stream", "name": content["name"], "text": content["text"]})
                elif kind == "error":
                    outputs.append({"output_type": "error", "ename": content["ename"], "evalue": content["evalue"]})
                elif kind in ("display_data", "execute_result"):
                    outputs.append({"output_type": "display_data", "data": content.get("data", {})})
                elif kind == "execute_reply":
                    status = content["status"]
                elif kind == "status" and content["execution_state"] == "idle":
                    idle = True
            if not (idle and status):
                failures.append(f"cell {index + 1}: no reply within {timeout} s")
                break
            problem = cell_failure({"outputs": outputs}) or (None if status == "ok" else f"status {status}")
            problem = problem or "; ".join(nonstandard_outputs(outputs)) or None
            shown = sum(1 for o in outputs if o["output_type"] == "display_data")
            mimes = sorted({m for o in outputs for m in o.get("data", {})})
            print(f"  cell {index + 1}: {'FAILED: ' + problem if problem else 'ok'}"
                  f" ({sum(len(o.get('text', '')) for o in outputs)} chars of text, {shown} pictures"
                  f"{': ' + ', '.join(mimes) if mimes else ''})")
            if problem:
                failures.append(f"cell {index + 1}: {problem}")
                break
        ws.close()

    try:
        IOLoop.current().run_sync(execute_all, timeout=timeout * len(nb.cells))
    finally:
        urllib.request.urlopen(urllib.request.Request(f"{base}/api/sessions/{session['id']}?token={token}", method="DELETE"), timeout=30)
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notebook", default="01_qkv_projection.ipynb")
    ap.add_argument("--screenshot", type=Path, help="write a headless-Chromium screenshot of the notebook page here")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    args = ap.parse_args()
    use_jupyter_python("lab_check")
    failures = static_output_check()
    print(f"lab_check: notebooks/*.ipynb and notebooks/nb display only HTML/SVG/PNG/Markdown: "
          f"{'ok' if not failures else 'NO: ' + '; '.join(failures)}")

    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ, LAB_PORT=str(port), LAB_TOKEN=token)
    log = open(tempfile.mktemp(prefix="mhalab-lab-", suffix=".log"), "w+")
    server = subprocess.Popen([str(REPO / "scripts" / "lab.sh"), "--no-browser"], env=env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                if get(f"{base}/api/status?token={token}", timeout=2)[0] == 200:
                    break
            except OSError:
                time.sleep(1)
            if server.poll() is not None:
                log.seek(0)
                sys.exit(f"lab_check: make lab exited {server.returncode}:\n{log.read()}")
        else:
            sys.exit("lab_check: the server did not answer within 120 s")
        print(f"lab_check: make lab serves {base}/ (scripts/lab.sh, pid {server.pid})")

        status, text = get(f"{base}/api/contents?token={token}")
        names = sorted(c["name"] for c in json.loads(text)["content"] if c["name"].endswith(".ipynb"))
        print(f"  GET /api/contents: {status}, {len(names)} notebooks: {', '.join(names)}")
        if len(names) < 8:
            failures.append(f"/api/contents lists {len(names)} notebooks, want 8")
        status, page = get(f"{base}/lab/tree/{args.notebook}?token={token}")
        version = json.loads(get(f"{base}/api?token={token}")[1]).get("version", "?")
        print(f"  GET /lab/tree/{args.notebook}: {status}, {len(page)} bytes (JupyterLab page; jupyter_server {version})")
        if status != 200 or "JupyterLab" not in page:
            failures.append(f"/lab/tree/{args.notebook} did not render JupyterLab's page")
        failures += run_cells(base, token, args.notebook, args.timeout)

        if args.screenshot:
            chromium = next((c for c in ("chromium", "chromium-browser", "google-chrome") if subprocess.run(["which", c], capture_output=True).returncode == 0), None)
            if not chromium:
                failures.append("no chromium for the screenshot (Debian: apt-get install chromium)")
            else:
                args.screenshot.parent.mkdir(parents=True, exist_ok=True)
                profile = tempfile.mkdtemp(prefix="mhalab-chromium-")
                cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                       "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                       "--hide-scrollbars", "--window-size=1280,2400", "--virtual-time-budget=15000",
                       f"--screenshot={args.screenshot.resolve()}", f"{base}/lab/tree/{args.notebook}?token={token}"]
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
                subprocess.run(["rm", "-rf", profile])
                if r.returncode != 0 or not args.screenshot.exists():
                    failures.append(f"chromium screenshot failed: {r.stderr[-500:]}")
                else:
                    print(f"  screenshot: {args.screenshot} ({args.screenshot.stat().st_size} bytes)")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
    if failures:
        print("lab_check: FAILED:\n  " + "\n  ".join(failures))
        return 1
    print(f"lab_check: ok — the server lists the notebooks, renders {args.notebook} and runs it in the GoNB kernel")
    return 0


if __name__ == "__main__":
    sys.exit(main())
