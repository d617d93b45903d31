#!/usr/bin/env python3
"""Drives a real headless Chromium over the DevTools protocol (--remote-debugging-pipe, no
library needed) to check the explorer page that explorer_test.go wrote:

  1. the page loads and draws (document.body.dataset.ready, lines in the head view);
  2. choosing another head in the head picker changes what is drawn (the lines' set and
     opacities differ, the SVG's data-head follows);
  3. hovering a token on the left (a real mouse move) leaves only that token's lines visible,
     and moving away shows them all again;
  4. clicking a thumbnail in the model view opens that layer and head;
  5. the page made no network request (Network.requestWillBeSent: only the page itself);
  6. a screenshot is written.

  python3 explorer/browser_check.py --chromium PATH --page FILE --screenshot OUT.png

Prints one line per check ("ok: ..." / "FAIL: ...") and exits 1 if any failed.
"""

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import time


class Browser:
    def __init__(self, chromium):
        self.profile = tempfile.mkdtemp(prefix="mhalab-chromium-")
        r_cmd, w_cmd = os.pipe()  # we write commands, Chromium reads fd 3
        r_ev, w_ev = os.pipe()    # Chromium writes fd 4, we read
        args = [chromium, "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--metrics-recording-only", "--mute-audio", "--hide-scrollbars",
                f"--user-data-dir={self.profile}", "--window-size=1400,1000", "about:blank"]

        def child():
            os.dup2(r_cmd, 3)
            os.dup2(w_ev, 4)

        self.proc = subprocess.Popen(args, pass_fds=(3, 4), preexec_fn=child,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        os.close(r_cmd)
        os.close(w_ev)
        self.w = os.fdopen(w_cmd, "wb", buffering=0)
        self.r = os.fdopen(r_ev, "rb", buffering=0)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def _read_message(self):
        while b"\0" not in self.buf:
            chunk = self.r.read(1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the pipe: " + self.proc.stderr.read().decode(errors="replace")[-500:])
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, session=None, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        self.w.write(json.dumps(msg).encode() + b"\0")
        while True:
            m = self._read_message()
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def close(self):
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        subprocess.run(["rm", "-rf", self.profile])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chromium", required=True)
    ap.add_argument("--page", required=True)
    ap.add_argument("--screenshot", required=True)
    args = ap.parse_args()
    url = "file://" + os.path.abspath(args.page)
    failed = 0

    def check(ok, what):
        nonlocal failed
        print(("ok:   " if ok else "FAIL: ") + what, flush=True)
        failed += 0 if ok else 1

    b = Browser(args.chromium)
    try:
        target = b.send("Target.createTarget", url="about:blank")["targetId"]
        s = b.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        b.send("Network.enable", session=s)
        b.send("Page.enable", session=s)
        b.send("Runtime.enable", session=s)
        b.events.clear()
        b.send("Page.navigate", session=s, url=url)

        def js(expr):
            r = b.send("Runtime.evaluate", session=s, expression=expr, returnByValue=True, awaitPromise=True)
            if "exceptionDetails" in r:
                raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
            return r["result"].get("value")

        for _ in range(100):
            if js("document.readyState === 'complete' && document.body && document.body.dataset.ready === '1'"):
                break
            time.sleep(0.1)
        check(js("document.body.dataset.ready") == "1", "the page loads and its script runs")
        check(js("document.scripts.length") == 2 and js("document.querySelectorAll('#headview text').length") > 0,
              "tokens are shown as text, never as markup (2 script elements: data and code)")

        drawing = """JSON.stringify({head: document.getElementById('headview').dataset.head,
            lines: [...document.querySelectorAll('#headview line.attn')].map(l => [l.dataset.q, l.dataset.k, l.getAttribute('stroke-opacity')])})"""
        visible = "[...document.querySelectorAll('#headview line.attn')].filter(l => l.style.display !== 'none').map(l => +l.dataset.q)"
        before = json.loads(js(drawing))
        check(len(before["lines"]) > 0, f"the head view draws lines ({len(before['lines'])} for layer 0 head 0)")

        # 2. Choose head 2 in the head picker, as a user does (value + change event).
        js("const h = document.getElementById('head'); h.value = '2'; h.dispatchEvent(new Event('change'))")
        after = json.loads(js(drawing))
        check(after["head"] == "2" and after["lines"] != before["lines"],
              f"choosing head 2 changes the drawing ({len(before['lines'])} → {len(after['lines'])} lines, data-head {after['head']})")

        # 3. Hover the left token 3 with a real mouse move.
        total = len(js(visible))
        box = js("(() => { const t = document.querySelector('#headview text.tok-left[data-i=\"3\"]'); t.scrollIntoView(); "
                 "const r = t.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        b.send("Input.dispatchMouseEvent", session=s, type="mouseMoved", x=box[0], y=box[1])
        shown = js(visible)
        check(0 < len(shown) < total and all(q == 3 for q in shown),
              f"hovering token 3 shows only its lines ({len(shown)} of {total}, queries {sorted(set(shown))})")
        b.send("Input.dispatchMouseEvent", session=s, type="mouseMoved", x=5, y=5)
        check(len(js(visible)) == total, "moving the mouse away shows every line again")

        # 4. Click the thumbnail of layer 4, head 7 in the model view.
        box = js("(() => { const f = document.querySelector('#model figure[data-layer=\"4\"][data-head=\"7\"]'); f.scrollIntoView(); "
                 "const r = f.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        for t in ("mousePressed", "mouseReleased"):
            b.send("Input.dispatchMouseEvent", session=s, type=t, x=box[0], y=box[1], button="left", clickCount=1)
        sel = js("[document.getElementById('layer').value, document.getElementById('head').value, document.getElementById('headview').dataset.layer]")
        check(sel == ["4", "7", "4"], f"clicking the model view's thumbnail 4.7 opens it (pickers {sel[:2]}, head view layer {sel[2]})")

        # 6. Screenshot of the whole page.
        js("window.scrollTo(0, 0)")
        shot = b.send("Page.captureScreenshot", session=s, format="png", captureBeyondViewport=True)
        with open(args.screenshot, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        check(os.path.getsize(args.screenshot) > 10000, f"screenshot written ({args.screenshot}, {os.path.getsize(args.screenshot)} bytes)")

        # 5. Requests: only the page itself.
        requests = [e["params"]["request"]["url"] for e in b.events if e.get("method") == "Network.requestWillBeSent"]
        others = [u for u in requests if u != url]
        check(requests == [url] or (url in requests and not others),
              f"no network request besides the page ({len(requests)} request(s){': ' + ', '.join(others[:3]) if others else ''})")
    finally:
        b.close()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
