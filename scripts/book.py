#!/usr/bin/env python3
"""make book: the course as a static web site, built with Jupyter Book 2 (MyST).

  python3 scripts/book.py [--notebooks build/notebooks/xla-cpu] [--out build/book]

1. Stages the course in OUT/src, in course order: the README as the home page, docs/students.md,
   notebooks/README.md and the executed notebooks (the copies `make notebooks NOTEBOOKS_BACKEND=xla:cpu` wrote: nothing is
   executed again), lessons/README.md and each lesson's README, the other pages of docs/ and
   cmd/mhalab/BAD_INPUTS.md. Links between staged files are rewritten to the staged paths; a link
   to a file of the repository that is not in the book becomes its path in plain text (the site
   is a folder of its own).
2. Runs `jupyter-book build --site` there (MyST parses Markdown and notebooks and renders every
   formula with KaTeX at build time), with a local, empty site template: MyST downloads nothing.
3. Writes OUT/html from MyST's content: one page per document, a sidebar in course order, a
   search box over MyST's search index, formulas as MathML (rendered by the browser, no font or
   script needed), the notebooks' outputs (HTML, SVG, PNG, text). OUT/html loads nothing from
   another host; a teacher copies the folder to any static host, or opens index.html.

scripts/book_check.py checks the result in headless Chromium (make book-check).
"""

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TITLE = "mhalab: multi-head attention, step by step"


# ---- 1. staging -------------------------------------------------------------------------------

def course(notebooks_dir):
    """The book's parts in course order: (part title or None, [(repository path, staged path)])."""
    notebooks = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    missing = [n for n in notebooks if not (notebooks_dir / n).exists()]
    if missing:
        sys.exit(f"book: no executed copy of {', '.join(missing)} in {notebooks_dir}: "
                 "run make notebooks NOTEBOOKS_BACKEND=xla:cpu first (make test does)")
    lessons = sorted(p.parent.name for p in (ROOT / "lessons").glob("[0-9][0-9]_*/README.md"))
    return [
        (None, [("README.md", "index.md"), ("docs/students.md", "students.md")]),
        ("Notebooks", [("notebooks/README.md", "notebooks/about-the-notebooks.md")] +
         [(f"notebooks/{n}", f"notebooks/{n}") for n in notebooks]),
        ("Lessons", [("lessons/README.md", "lessons/how-lessons-work.md")] +
         [(f"lessons/{d}/README.md", f"lessons/lesson-{d}.md") for d in lessons]),
        ("Reference", [("docs/teachers.md", "teachers.md"), ("docs/go.md", "go.md"),
                       ("docs/performance.md", "performance.md"),
                       ("cmd/mhalab/BAD_INPUTS.md", "bad-inputs.md"), ("docs/docs.md", "docs.md")]),
    ]


LINK_RE = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]+)\)")
FENCE_RE = re.compile(r"^(```|~~~)")


def rewrite_links(text, src, staged, mapping, assets):
    """Rewrites the Markdown links of text (from repository file src, staged at staged): to staged
    pages, to copied images, or to plain text naming a repository file."""
    def fix(m):
        bang, label, target = m.groups()
        if "://" in target or target.startswith(("#", "mailto:", "data:")):
            return m.group(0)
        path, _, anchor = target.partition("#")
        repo = os.path.normpath(os.path.join(os.path.dirname(src), path))
        if repo in mapping:
            rel = os.path.relpath(mapping[repo], os.path.dirname(staged))
            return f"{bang}[{label}]({rel}{'#' + anchor if anchor else ''})"
        if bang and (ROOT / repo).is_file():  # an image: copied beside the pages
            assets[repo] = "assets/" + repo.replace("/", "_")
            return f"![{label}]({os.path.relpath(assets[repo], os.path.dirname(staged))})"
        name = repo + ("/" if (ROOT / repo).is_dir() else "")
        if label.strip("`") == name.rstrip("/") or label.strip("`") == path:
            return f"`{name}`"
        return f"{label} (`{name}` in the repository)"

    out, prose, fenced = [], [], False
    for line in text.splitlines(keepends=True):  # links are rewritten outside code blocks only
        if FENCE_RE.match(line.lstrip()):
            if not fenced:
                out.append(LINK_RE.sub(fix, "".join(prose)))
                prose = []
            fenced = not fenced
            out.append(line)
        elif fenced:
            out.append(line)
        else:
            prose.append(line)
    out.append(LINK_RE.sub(fix, "".join(prose)))
    return "".join(out)


GENERATED_MARKER_RE = re.compile(r"^<!-- (begin|end) generated: [a-z-]+ -->\n|^<!-- (code|console)[^>]*-->\n", re.M)


def stage(parts, notebooks_dir, src_dir):
    if src_dir.exists():
        shutil.rmtree(src_dir)
    mapping = {repo: staged for _, files in parts for repo, staged in files}
    assets = {}
    for _, files in parts:
        for repo, staged in files:
            dest = src_dir / staged
            dest.parent.mkdir(parents=True, exist_ok=True)
            if repo.endswith(".ipynb"):
                nb = json.loads((notebooks_dir / Path(repo).name).read_text(encoding="utf-8"))
                for cell in nb["cells"]:
                    if "id" in cell:  # cell ids are labels for MyST: unique in the book, not only in one notebook
                        cell["id"] = f"{Path(repo).stem}-{cell['id']}"
                    if cell["cell_type"] == "markdown":
                        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                        cell["source"] = rewrite_links(source, repo, staged, mapping, assets)
                dest.write_text(json.dumps(nb), encoding="utf-8")
            else:
                text = (ROOT / repo).read_text(encoding="utf-8", errors="replace")  # BAD_INPUTS.md quotes invalid UTF-8
                text = GENERATED_MARKER_RE.sub("", text)  # the docs tests' markers, not content
                dest.write_text(rewrite_links(text, repo, staged, mapping, assets), encoding="utf-8")
    for repo, staged in assets.items():
        (src_dir / staged).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / repo, src_dir / staged)
    toc = []
    for title, files in parts:
        entries = [{"file": staged} for _, staged in files]
        toc += entries if title is None else [{"title": title, "children": entries}]
    (src_dir / "template").mkdir()
    (src_dir / "template" / "template.yml").write_text("jtex: v1\n")  # a local template: nothing is downloaded
    config = {"version": 1, "project": {"title": TITLE, "toc": toc}, "site": {"template": "./template"}}
    (src_dir / "myst.yml").write_text(json.dumps(config, indent=1) + "\n")  # JSON is YAML


def myst_build(jupyter_book, src_dir):
    env = dict(os.environ, HOME=os.environ.get("HOME", "/tmp"))
    proc = subprocess.run([jupyter_book, "build", "--site", "--ci"], cwd=src_dir, env=env,
                          capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    (src_dir.parent / "myst.log").write_text(log)
    if proc.returncode != 0:
        sys.exit(f"book: jupyter-book build --site failed (log {src_dir.parent / 'myst.log'}):\n{log[-2000:]}")
    warnings = [l for l in log.splitlines() if "⚠️" in l or "error" in l.lower()]
    return warnings


# ---- 3. rendering -----------------------------------------------------------------------------

MATHML_RE = re.compile(r"<math\b.*?</math>", re.S)


class Renderer:
    def __init__(self, site, out, slugs):
        self.site, self.out, self.slugs = site, out, slugs
        self.unknown = set()

    def url(self, node):
        """The relative URL of a link node's target."""
        url = node.get("url", "")
        if node.get("internal") or (url.startswith("/") and not url.startswith("//")):
            page, _, anchor = url.lstrip("/").partition("#")
            if page.startswith("build/") or "." in page.split("/")[-1]:  # a file MyST copied to public
                return self.public(url)
            target = "index" if page in ("", self.slugs.get("index")) else page
            return f"{target}.html" + (f"#{anchor}" if anchor else "")
        return url

    def public(self, url):
        """Copies a file MyST put in its public folder (/build/NAME or /NAME) next to the pages."""
        name = url.lstrip("/").split("/")[-1]
        for src in (self.site / "public" / name, self.site / url.lstrip("/")):
            if src.is_file():
                (self.out / "public").mkdir(exist_ok=True)
                shutil.copyfile(src, self.out / "public" / name)
                return "public/" + name
        return url

    def children(self, node):
        return "".join(self.render(c) for c in node.get("children", []))

    def render(self, node):
        t = node.get("type")
        c = self.children
        e = html.escape
        match t:
            case "root" | "block" | "outputs" | "container" | "div" | "span" | "mystDirective" | "mystRole" | "legend":
                cls = " ".join(node.get("class", "").split()) if isinstance(node.get("class"), str) else ""
                if t == "block" and node.get("kind") == "notebook-code":
                    return f'<div class="cell">{c(node)}</div>'
                if t == "container":
                    return f'<figure>{c(node)}</figure>'
                return f'<div class="{e(cls)}">{c(node)}</div>' if cls else c(node)
            case "paragraph":
                return f"<p>{c(node)}</p>\n"
            case "heading":
                d = node.get("depth", 1)
                ident = node.get("html_id") or node.get("identifier") or ""
                return f'<h{d} id="{e(ident)}">{c(node)}</h{d}>\n'
            case "text":
                return e(node.get("value", ""))
            case "emphasis":
                return f"<em>{c(node)}</em>"
            case "strong":
                return f"<strong>{c(node)}</strong>"
            case "delete":
                return f"<del>{c(node)}</del>"
            case "underline":
                return f"<u>{c(node)}</u>"
            case "subscript":
                return f"<sub>{c(node)}</sub>"
            case "superscript":
                return f"<sup>{c(node)}</sup>"
            case "inlineCode":
                return f"<code>{e(node.get('value', ''))}</code>"
            case "code":
                lang = node.get("lang") or ""
                cls = "cell-code" if node.get("executable") else "code"
                return f'<pre class="{cls}" data-lang="{e(lang)}"><code>{e(node.get("value", ""))}</code></pre>\n'
            case "link" | "crossReference":
                href = self.url(node) if t == "link" else self.url({"url": node.get("url") or "#" + node.get("identifier", ""), "internal": True})
                if t == "crossReference" and not node.get("url"):
                    href = "#" + node.get("identifier", "")
                return f'<a href="{e(href)}">{c(node) or e(href)}</a>'
            case "list":
                tag = "ol" if node.get("ordered") else "ul"
                start = f' start="{node["start"]}"' if node.get("ordered") and node.get("start", 1) != 1 else ""
                return f"<{tag}{start}>{c(node)}</{tag}>\n"
            case "listItem":
                return f"<li>{c(node)}</li>\n"
            case "table":
                return f'<div class="table"><table>{c(node)}</table></div>\n'
            case "tableRow":
                return f"<tr>{c(node)}</tr>\n"
            case "tableCell":
                tag = "th" if node.get("header") else "td"
                align = f' style="text-align:{node["align"]}"' if node.get("align") else ""
                return f"<{tag}{align}>{c(node)}</{tag}>"
            case "image":
                src = node.get("url", "")
                if src.startswith("/"):
                    src = self.public(src)
                return f'<img src="{e(src)}" alt="{e(node.get("alt", ""))}">'
            case "math" | "inlineMath":
                m = MATHML_RE.search(node.get("html", ""))
                if not m:  # KaTeX could not render it: show the source, marked
                    return f'<code class="math-error">{e(node.get("value", ""))}</code>'
                mathml = m.group(0)
                if t == "math":
                    mathml = mathml.replace("<math ", '<math display="block" ', 1)
                    return f'<div class="math">{mathml}</div>\n'
                return mathml
            case "blockquote":
                return f"<blockquote>{c(node)}</blockquote>\n"
            case "thematicBreak":
                return "<hr>\n"
            case "break":
                return "<br>"
            case "html":
                return node.get("value", "")
            case "comment":
                return ""
            case "admonition":
                kind = node.get("kind", "note")
                return f'<aside class="admonition {e(kind)}">{c(node)}</aside>\n'
            case "admonitionTitle":
                return f'<p class="admonition-title">{c(node)}</p>'
            case "caption":
                return f"<figcaption>{c(node)}</figcaption>"
            case "footnoteReference":
                ident = node.get("identifier", "")
                return f'<sup><a href="#fn-{e(ident)}">{e(str(node.get("enumerator", ident)))}</a></sup>'
            case "footnoteDefinition":
                ident = node.get("identifier", "")
                return f'<div class="footnote" id="fn-{e(ident)}">{c(node)}</div>'
            case "abbreviation":
                return f'<abbr title="{e(node.get("title", ""))}">{c(node)}</abbr>'
            case "definitionList":
                return f"<dl>{c(node)}</dl>"
            case "definitionTerm":
                return f"<dt>{c(node)}</dt>"
            case "definitionDescription":
                return f"<dd>{c(node)}</dd>"
            case "output":
                return self.output(node)
            case _:
                self.unknown.add(t)
                return c(node)

    def output(self, node):
        parts = []
        outs = node.get("jupyter_data") or node.get("data") or []
        if isinstance(outs, dict):
            outs = [outs]
        for o in outs:
            kind = o.get("output_type")
            if kind == "stream":
                parts.append(f'<pre class="output stream-{html.escape(o.get("name", ""))}">{html.escape(self.text(o.get("text", "")))}</pre>')
                continue
            if kind == "error":
                tb = "\n".join(o.get("traceback", []))
                parts.append(f'<pre class="output error">{html.escape(tb)}</pre>')
                continue
            data = o.get("data", {})
            for mime in ("text/html", "image/svg+xml", "image/png", "image/jpeg", "text/markdown", "text/plain"):
                if mime not in data:
                    continue
                d = data[mime]
                content = self.text(d.get("content", "")) if isinstance(d, dict) else self.text(d)
                if isinstance(d, dict) and d.get("path") and not content:
                    if mime.startswith("image/png") or mime.startswith("image/jpeg"):
                        parts.append(f'<img class="output" src="{html.escape(self.public(d["path"]))}" alt="output">')
                        break
                    p = self.site / "public" / d["path"].lstrip("/").split("/")[-1]
                    content = p.read_text(encoding="utf-8") if p.exists() else ""
                if mime in ("text/html", "image/svg+xml"):
                    parts.append(f'<div class="output html">{content}</div>')
                elif mime.startswith("image/"):
                    parts.append(f'<img class="output" src="data:{mime};base64,{content.strip()}" alt="output">')
                elif mime == "text/markdown" and node.get("children"):
                    parts.append(f'<div class="output markdown">{self.children(node)}</div>')
                else:
                    parts.append(f'<pre class="output">{html.escape(content)}</pre>')
                break
        return "".join(parts)

    @staticmethod
    def text(v):
        return "".join(v) if isinstance(v, list) else (v or "")


def page_html(title, body, sidebar, prev_next):
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)} · mhalab</title>
<link rel="stylesheet" href="book.css">
</head>
<body>
<nav class="sidebar">
<a class="brand" href="index.html">mhalab</a>
<input id="search" type="search" placeholder="Search the course" aria-label="Search the course">
<ol id="results" hidden></ol>
{sidebar}
</nav>
<main>
{body}
<footer>{prev_next}</footer>
</main>
<script src="search-index.js"></script>
<script src="search.js"></script>
</body>
</html>
"""


CSS = """
:root { --fg: #1d2125; --muted: #5b6570; --line: #dde2e7; --accent: #1f5fa8; --code: #f5f7f9; }
* { box-sizing: border-box; }
body { margin: 0; display: flex; font: 16px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: var(--fg); }
.sidebar { width: 19rem; flex: none; height: 100vh; position: sticky; top: 0; overflow-y: auto; padding: 1rem; border-right: 1px solid var(--line); background: #fafbfc; font-size: 0.92rem; }
.sidebar .brand { display: block; font-weight: 700; font-size: 1.25rem; color: var(--fg); text-decoration: none; margin-bottom: 0.7rem; }
.sidebar input { width: 100%; padding: 0.4rem 0.5rem; border: 1px solid var(--line); border-radius: 4px; font: inherit; }
.sidebar ol, .sidebar ul { list-style: none; padding-left: 0; margin: 0.3rem 0; }
.sidebar li li { padding-left: 0.8rem; }
.sidebar .part { margin-top: 0.8rem; font-weight: 600; color: var(--muted); text-transform: uppercase; font-size: 0.78rem; letter-spacing: 0.04em; }
.sidebar a { color: var(--fg); text-decoration: none; display: block; padding: 0.12rem 0; }
.sidebar a:hover { color: var(--accent); }
.sidebar a.current { color: var(--accent); font-weight: 600; }
#results { border: 1px solid var(--line); background: #fff; border-radius: 4px; padding: 0.3rem; max-height: 60vh; overflow-y: auto; }
#results li { padding: 0.2rem 0; border-bottom: 1px solid var(--line); }
#results small { color: var(--muted); display: block; }
main { flex: 1; min-width: 0; max-width: 60rem; padding: 1.5rem 2.5rem 4rem; }
h1, h2, h3 { line-height: 1.25; }
a { color: var(--accent); }
code { background: var(--code); padding: 0.05rem 0.25rem; border-radius: 3px; font-size: 0.9em; }
pre { tab-size: 4; background: var(--code); padding: 0.7rem 0.9rem; overflow-x: auto; border-radius: 4px; font-size: 0.85rem; line-height: 1.4; }
pre code { background: none; padding: 0; }
.cell { margin: 1rem 0; }
.cell pre.cell-code { border-left: 3px solid var(--accent); }
.output { margin: 0.3rem 0 0.8rem; max-width: 100%; overflow-x: auto; }
pre.output { background: #fff; border: 1px solid var(--line); }
pre.output.error, pre.stream-stderr { background: #fdf2f2; }
.div.table, .table { overflow-x: auto; }
table { border-collapse: collapse; margin: 0.8rem 0; font-size: 0.92rem; }
th, td { border: 1px solid var(--line); padding: 0.3rem 0.55rem; vertical-align: top; }
th { background: #f3f5f7; }
img { max-width: 100%; }
.math { overflow-x: auto; margin: 0.8rem 0; }
math[display="block"] { font-size: 1.1em; }
blockquote { border-left: 3px solid var(--line); margin-left: 0; padding-left: 1rem; color: var(--muted); }
.admonition { border-left: 4px solid var(--accent); background: #f3f7fc; padding: 0.2rem 1rem; margin: 1rem 0; }
.admonition-title { font-weight: 600; }
footer { margin-top: 3rem; padding-top: 1rem; border-top: 1px solid var(--line); display: flex; justify-content: space-between; }
@media (max-width: 50rem) { body { display: block; } .sidebar { width: auto; height: auto; position: static; } main { padding: 1rem; } }
"""

SEARCH_JS = """// The course's search box: MyST's search records (search-index.js), every word must match.
(function () {
  const input = document.getElementById('search'), list = document.getElementById('results');
  const records = window.BOOK_SEARCH || [];
  function show() {
    const words = input.value.toLowerCase().split(/\\s+/).filter(Boolean);
    list.replaceChildren();
    if (!words.length) { list.hidden = true; return; }
    const hits = records.filter(r => words.every(w => r.text.includes(w))).slice(0, 30);
    for (const r of hits) {
      const li = document.createElement('li'), a = document.createElement('a'), s = document.createElement('small');
      a.href = r.url; a.textContent = r.title; s.textContent = r.page;
      li.append(a, s); list.append(li);
    }
    if (!hits.length) { const li = document.createElement('li'); li.textContent = 'No match'; list.append(li); }
    list.hidden = false;
  }
  input.addEventListener('input', show);
})();
"""


def render_site(site, out, parts, src_dir):
    config = json.loads((site / "config.json").read_text())
    project = config["projects"][0]
    index_slug = project.get("index", "index")
    pages = [{"slug": index_slug, "title": None, "level": 1}] + project["pages"]
    # MyST lists pages in toc order; part titles are pages without a slug.
    contents = {}
    for p in pages:
        if "slug" in p:
            contents[p["slug"]] = json.loads((site / "content" / f"{p['slug']}.json").read_text())
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    renderer = Renderer(site, out, {"index": index_slug})
    slugs = [p["slug"] for p in pages if "slug" in p]
    titles = {s: (contents[s].get("frontmatter", {}).get("title") or s) for s in slugs}

    def filename(slug):
        return "index.html" if slug == index_slug else f"{slug}.html"

    def sidebar(current):
        items, open_part = [], False
        for p in pages:
            if "slug" not in p:
                if open_part:
                    items.append("</ol></li>")
                items.append(f'<li><div class="part">{html.escape(p["title"])}</div><ol>')
                open_part = True
                continue
            cls = ' class="current"' if p["slug"] == current else ""
            items.append(f'<li><a href="{filename(p["slug"])}"{cls}>{html.escape(titles[p["slug"]])}</a></li>')
        if open_part:
            items.append("</ol></li>")
        return '<ol class="toc">' + "".join(items) + "</ol>"

    for i, slug in enumerate(slugs):
        doc = contents[slug]
        body = renderer.render(doc["mdast"])
        if not re.search(r"<h1[ >]", body):
            body = f"<h1>{html.escape(titles[slug])}</h1>\n" + body
        prev = f'<a href="{filename(slugs[i - 1])}">← {html.escape(titles[slugs[i - 1]])}</a>' if i > 0 else "<span></span>"
        nxt = f'<a href="{filename(slugs[i + 1])}">{html.escape(titles[slugs[i + 1]])} →</a>' if i + 1 < len(slugs) else "<span></span>"
        (out / filename(slug)).write_text(page_html(titles[slug], body, sidebar(slug), prev + nxt), encoding="utf-8")

    # Images the staged Markdown refers to (assets/), copied as they are.
    if (src_dir / "assets").exists():
        shutil.copytree(src_dir / "assets", out / "assets")
    (out / "book.css").write_text(CSS.lstrip())
    (out / "search.js").write_text(SEARCH_JS)
    records = []
    for r in json.loads((site / "myst.search.json").read_text())["records"]:
        page, _, anchor = r["url"].lstrip("/").partition("#")
        page = page or index_slug
        if page not in titles:
            continue
        title = " › ".join(v for k, v in sorted(r.get("hierarchy", {}).items()) if v)
        text = (title + " " + r.get("content", "")).lower()
        records.append({"url": filename(page) + (f"#{anchor}" if anchor else ""), "title": title.split(" › ")[-1] or titles[page],
                        "page": titles[page], "text": text})
    (out / "search-index.js").write_text("window.BOOK_SEARCH = " + json.dumps(records, ensure_ascii=False) + ";\n")
    return slugs, renderer.unknown


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notebooks", type=Path, default=ROOT / "build/notebooks/xla-cpu",
                    help="the executed notebooks (default build/notebooks/xla-cpu)")
    ap.add_argument("--out", type=Path, default=ROOT / "build/book")
    ap.add_argument("--jupyter-book", default=os.environ.get("MHALAB_JUPYTER_BOOK") or str(
        Path(os.environ.get("MHALAB_BOOK_VENV") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mhalab/book-venv") / "bin/jupyter-book"),
        help="the jupyter-book command (default: the venv of scripts/setup.sh --only book)")
    args = ap.parse_args()
    if not Path(args.jupyter_book).exists() and not shutil.which(args.jupyter_book):
        sys.exit(f"book: no {args.jupyter_book}: run scripts/setup.sh --only book")
    t0 = time.monotonic()
    parts = course(args.notebooks)
    src = args.out / "src"
    stage(parts, args.notebooks, src)
    warnings = myst_build(args.jupyter_book, src)
    slugs, unknown = render_site(src / "_build" / "site", args.out / "html", parts, src)
    size = sum(f.stat().st_size for f in (args.out / "html").rglob("*") if f.is_file())
    files = sum(1 for f in (args.out / "html").rglob("*") if f.is_file())
    for w in warnings:
        print("book: myst:", w.strip())
    if unknown:
        print("book: node types rendered by their children only:", ", ".join(sorted(unknown)))
    print(f"book: {len(slugs)} pages, {files} files, {size / 1e6:.1f} MB in {args.out / 'html'} "
          f"({time.monotonic() - t0:.0f} s); open {args.out / 'html' / 'index.html'}")


if __name__ == "__main__":
    main()
