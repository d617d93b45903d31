#!/usr/bin/env python3
"""make book-check: opens every page of the book (scripts/book.py) in headless Chromium and
fails on what a reader would see broken.

  python3 scripts/book_check.py [--html build/book/html] [--chromium PATH] [--screenshots DIR]

For every page: it loads; every request it makes is a file of the book (no request to another
host, none failed); every image has loaded (naturalWidth > 0) and every picture a notebook drew (SVG) has a size; every formula is rendered (each
<math> has a size; no formula KaTeX could not render); every link inside the book points at a page
and an anchor that exist. Then the search box finds a word, and three pages are screenshot
(DIR, default HTML/../screenshots). Prints one line per page and a summary; exits 1 on a
failure. Drives Chromium over the DevTools protocol with explorer/browser_check.py's Browser.
"""

import argparse
import base64
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "explorer"))
from browser_check import Browser  # noqa: E402

SCREENSHOTS = ("index.html", "modern-attention.html", "lesson-05-sdpa.html")  # home, a notebook with formulas and pictures, a lesson

PAGE_STATE = """(() => {
  const imgs = [...document.images];
  const maths = [...document.querySelectorAll('math')];
  return JSON.stringify({
    ready: document.readyState,
    images: imgs.length,
    brokenImages: imgs.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.getAttribute('src').slice(0, 80)),
    formulas: maths.length,
    pictures: document.querySelectorAll('.output svg').length,
    emptyPictures: [...document.querySelectorAll('.output svg')].filter(v => { const r = v.getBoundingClientRect(); return r.width === 0 || r.height === 0; }).length,
    emptyFormulas: maths.filter(m => { const r = m.getBoundingClientRect(); return r.width === 0 || r.height === 0; }).length,
    mathErrors: document.querySelectorAll('.math-error').length,
    links: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href')),
  });
})()"""


def anchors_of(page):
    return set(re.findall(r'\sid="([^"]+)"', page.read_text(encoding="utf-8")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--html", type=Path, default=ROOT / "build/book/html")
    ap.add_argument("--chromium", default=next((c for c in ("chromium", "chromium-browser", "google-chrome") if shutil.which(c)), None))
    ap.add_argument("--screenshots", type=Path)
    args = ap.parse_args()
    if not args.chromium:
        if os.environ.get("CI", "").lower() in ("true", "1", "yes"):  # internal/testenv's CIValues
            sys.exit("book-check: no Chromium (Debian: apt-get install chromium)")
        print("book-check: skipped: no Chromium (Debian: apt-get install chromium)")
        return
    html_dir = args.html.resolve()
    pages = sorted(html_dir.glob("*.html"))
    if not pages:
        sys.exit(f"book-check: no pages in {html_dir}: run make book first")
    shots = args.screenshots or html_dir.parent / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    for old in shots.glob("*.png"):
        old.unlink()
    anchors = {p.name: anchors_of(p) for p in pages}
    failures = []
    totals = {"pages": 0, "requests": 0, "images": 0, "pictures": 0, "formulas": 0, "links": 0}
    t0 = time.monotonic()
    b = Browser(args.chromium)
    try:
        target = b.send("Target.createTarget", url="about:blank")["targetId"]
        s = b.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        b.send("Network.enable", session=s)
        b.send("Page.enable", session=s)
        b.send("Emulation.setDeviceMetricsOverride", session=s, width=1400, height=1000, deviceScaleFactor=1, mobile=False)

        def js(expr):
            r = b.send("Runtime.evaluate", session=s, expression=expr, returnByValue=True, awaitPromise=True)
            if "exceptionDetails" in r:
                raise RuntimeError(f"{expr[:60]}: {r['exceptionDetails']}")
            return r["result"].get("value")

        for page in pages:
            url = page.as_uri()
            b.events.clear()
            b.send("Page.navigate", session=s, url=url)
            for _ in range(200):
                if js("document.readyState") == "complete":
                    break
                time.sleep(0.05)
            time.sleep(0.1)
            js("1")  # drain the events of the load
            state = json.loads(js(PAGE_STATE))
            problems = []
            requests = [e["params"]["request"]["url"] for e in b.events if e.get("method") == "Network.requestWillBeSent"]
            external = [u for u in requests if not u.startswith(("file://", "data:"))]
            failed = [e["params"].get("errorText", "") for e in b.events if e.get("method") == "Network.loadingFailed"]
            if state["ready"] != "complete":
                problems.append("did not finish loading")
            if external:
                problems.append(f"{len(external)} request(s) to another host: {', '.join(external[:3])}")
            if failed:
                problems.append(f"{len(failed)} failed request(s): {', '.join(failed[:3])}")
            if state["brokenImages"]:
                problems.append(f"{len(state['brokenImages'])} image(s) not shown: {', '.join(state['brokenImages'][:3])}")
            if state["emptyPictures"]:
                problems.append(f"{state['emptyPictures']} of {state['pictures']} output picture(s) (SVG) without a size")
            if state["emptyFormulas"] or state["mathErrors"]:
                problems.append(f"{state['emptyFormulas']} formula(s) without a size, {state['mathErrors']} not rendered by KaTeX")
            bad_links = []
            for href in state["links"]:
                parsed = urlparse(href)
                if parsed.scheme in ("http", "https", "mailto"):
                    continue
                target_page = unquote(parsed.path) or page.name
                if not (html_dir / target_page).is_file():
                    if not (html_dir / target_page).exists():
                        bad_links.append(href)
                    continue
                if parsed.fragment and target_page in anchors and unquote(parsed.fragment) not in anchors[target_page]:
                    bad_links.append(href)
            if bad_links:
                problems.append(f"{len(bad_links)} broken link(s): {', '.join(bad_links[:4])}")
            totals["pages"] += 1
            totals["requests"] += len(requests)
            totals["images"] += state["images"]
            totals["pictures"] += state["pictures"]
            totals["formulas"] += state["formulas"]
            totals["links"] += len(state["links"])
            line = (f"{page.name}: {len(requests)} requests, {state['images']} images, {state['pictures']} output pictures, "
                    f"{state['formulas']} formulas, {len(state['links'])} links")
            print(("FAIL: " + line + ": " + "; ".join(problems)) if problems else ("ok:   " + line), flush=True)
            if problems:
                failures.append(page.name)
            if page.name in SCREENSHOTS:  # a notebook: from its first picture on
                js("(() => { const v = document.querySelector('.output svg'); if (v) v.closest('.cell').scrollIntoView(); })()")
                time.sleep(0.1)
                shot = b.send("Page.captureScreenshot", session=s, format="png")
                (shots / (page.stem + ".png")).write_bytes(base64.b64decode(shot["data"]))

        # The search box, as a reader uses it.
        b.send("Page.navigate", session=s, url=(html_dir / "index.html").as_uri())
        for _ in range(100):
            if js("document.readyState") == "complete":
                break
            time.sleep(0.05)
        hits = js("""(() => { const i = document.getElementById('search'); i.value = 'softmax'; i.dispatchEvent(new Event('input'));
                     return [...document.querySelectorAll('#results a')].map(a => a.getAttribute('href')); })()""")
        ok = bool(hits) and all((html_dir / urlparse(h).path).is_file() for h in hits)
        print(("ok:   " if ok else "FAIL: ") + f"search 'softmax': {len(hits)} results, first {hits[:3]}", flush=True)
        if not ok:
            failures.append("search")
    finally:
        b.close()
    print(f"book-check: {totals['pages']} pages, {totals['requests']} requests, "
          f"{totals['images']} images, {totals['pictures']} output pictures, {totals['formulas']} formulas, {totals['links']} links checked in "
          f"{time.monotonic() - t0:.0f} s; screenshots in {shots}: {', '.join(SCREENSHOTS)}")
    if failures:
        sys.exit(f"book-check: {len(failures)} failed: {', '.join(failures)}")


if __name__ == "__main__":
    main()
