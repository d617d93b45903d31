"""Exported notebook HTML that needs no network: formulas as MathML, no scripts from a CDN.

nbconvert's HTML loads MathJax, require.js and mermaid from a CDN, so offline its formulas stay
raw LaTeX. offline_html converts the LaTeX of the markdown cells ($…$ and $$…$$, outside code)
to MathML with latex2mathml (pinned in scripts/jupyter-requirements.txt) — browsers render
MathML themselves — and drops the script tags that would fetch code from the network (the
notebooks use neither widgets nor mermaid diagrams). It fails, naming them, if any reference
to a remote resource is left. (JupyterLab itself renders the LaTeX with the MathJax it bundles.)

    python3 scripts/nbhtml.py NOTEBOOK.ipynb OUT.html   converts one notebook
"""

import copy
import re
import sys

CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
MATH = re.compile(r"\$\$(.+?)\$\$|(?<![\\$])\$([^$\n]+?)\$", re.S)
SCRIPT = re.compile(r"<script\b[^>]*>.*?</script>\s*", re.S | re.I)
# What a browser would fetch: src/href attributes, CSS url(…) and @import, dynamic import(…).
REMOTE = re.compile(r"""(?:\b(?:src|href)\s*=\s*["']?|url\(\s*["']?|@import\s+["']?|import\(\s*["'])"""
                    r"""((?:https?:)?//[^"'\s)>]+)""", re.I)


def math_to_mathml(markdown):
    """Returns markdown with its formulas (outside code spans and fences) as MathML."""
    try:
        from latex2mathml.converter import convert
    except ImportError:
        raise SystemExit(f"notebooks: latex2mathml is not installed for {sys.executable} (it is pinned in "
                         "scripts/jupyter-requirements.txt): run scripts/setup.sh --only jupyter")

    def formulas(text):
        def one(m):
            if m.group(1) is not None:
                return "\n\n" + convert(m.group(1).strip(), display="block") + "\n\n"
            return convert(m.group(2).strip())
        return MATH.sub(one, text)

    out, last = [], 0
    for m in CODE.finditer(markdown):
        out.append(formulas(markdown[last:m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(formulas(markdown[last:]))
    return "".join(out)


def remote_references(html):
    """The URLs of remote resources html would load."""
    return [m.group(1) for m in REMOTE.finditer(html)]


def offline_html(nb):
    """The HTML of notebook nb (an nbformat node; not modified), with no remote references."""
    from nbconvert import HTMLExporter

    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = math_to_mathml(cell.source)
        elif cell.get("metadata", {}).get("jupyter", {}).get("source_hidden"):
            # A folded solution: JupyterLab shows it on a click; the HTML shows only its output.
            cell.metadata["transient"] = {"remove_source": True}
    body, _ = HTMLExporter().from_notebook_node(nb)
    body = SCRIPT.sub(lambda m: "" if re.search(r"https?://|MathJax", m.group(0)) else m.group(0), body)
    # Code cells use tabs (Go): 4 columns, as in JupyterLab, not the browser's 8.
    body = body.replace("</head>", "<style>pre { tab-size: 4; }</style>\n</head>", 1)
    left = remote_references(body)
    if left:
        raise RuntimeError(f"exported HTML still loads remote resources: {sorted(set(left))}")
    return body


if __name__ == "__main__":
    import nbformat

    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    html = offline_html(nbformat.read(sys.argv[1], as_version=4))
    open(sys.argv[2], "w", encoding="utf-8").write(html)
