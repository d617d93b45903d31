#!/usr/bin/env python3
"""Run mhalab's notebooks headless with the GoNB kernel and fail if any cell fails.

    scripts/notebooks.py [--backend go|xla:cpu|xla:cuda] [--out DIR] [--no-html]
                         [--jobs N] [--timeout S] [--slowest N] [NOTEBOOK ...]

Every notebook (default: notebooks/*.ipynb, sorted) runs in a fresh GoNB kernel, cell by cell,
in the notebook's own folder (so its first cell's `go mod edit -replace …=${GONB_DIR}/..` uses
the repository the notebook sits in). The executed copy and an HTML rendering go to
DIR/<backend>/ (default build/notebooks/<backend>/), with timings.json and kernel.log.

--jobs N runs N notebooks at a time (default 2 on a machine with 2 or more cores, else 1), each
in its own process with its own kernel; the notebooks are independent programs. A line is printed
as each notebook finishes, failures are listed per notebook at the end, and kernel.log holds the
kernels' logs one notebook after another. Times printed per notebook are then wall times while
another notebook ran beside it; the total is the wall time of the whole set.

Why this is not plain `jupyter nbconvert --execute`: GoNB v0.11 reports a cell whose program
panics, calls os.Exit(N != 0) or runs a failing `!command` as successful, and nbconvert then
exits 0. This runner also scans each cell's stderr for GoNB's "exit status N", "signal: …" and
Go's "panic: …", stops the notebook at the first failing cell, names the notebook and cell,
and exits 1 when any notebook failed.

Runs with the Jupyter that scripts/setup.sh --only jupyter installs (nbclient, nbconvert from
PyPI in a venv of the cache; scripts/jupyter_python.sh names its Python — started with another
Python, this script re-executes itself with that one) and GoNB v0.11.3, goimports and gopls in
$(go env GOPATH)/bin (scripts/setup.sh --only gonb). The backend reaches the notebooks as
GOMLX_BACKEND.

Every code cell is a Go program that GoNB builds before running it, and linking that program
(GoMLX and the XLA bindings, ~15 MB) is most of a cell's cost. The bindings use cgo, so Go
links with the system's C linker by default; this runner sets GO_EXTLINK_ENABLED=0 (unless it is
set already) so that Go's own linker does it (the programs behave the same; notebooks/README.md
has the times). Per-cell times are in timings.json; the slowest cells are printed at the end.
"""

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GONB_VERSION = "v0.11.3"
BACKENDS = ("go", "xla:cpu", "xla:cuda")

# Lines GoNB (or the Go runtime) writes to a cell's stderr when the cell's program failed.
FAILURE_LINE = re.compile(r"^(exit status -?\d+|signal: .*|panic: .*|fatal error: .*)$", re.MULTILINE)


ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def stream_text(out):
    text = out.get("text", "")
    return ANSI.sub("", "".join(text) if isinstance(text, list) else text)


def cell_failure(cell):
    """Returns a one-line description of why an executed code cell failed, or None."""
    problems = []
    stderr = ""
    for out in cell.get("outputs", []):
        kind = out.get("output_type")
        if kind == "error":
            problems.append(f"{out.get('ename', 'error')}: {ANSI.sub('', str(out.get('evalue', '')))}".strip())
        elif kind == "stream" and out.get("name") == "stderr":
            stderr += stream_text(out)  # a line may arrive in several stream messages
    problems += [m.group(1) for m in FAILURE_LINE.finditer(stderr)]
    if not problems:
        return None
    seen = []  # keep the order, drop repeats
    for p in problems:
        if p not in seen:
            seen.append(p)
    text = " | ".join(line.strip() for p in seen for line in p.splitlines() if line.strip())
    return text if len(text) <= 400 else text[:400] + " …"


EXERCISE_CHECK = re.compile(r"\bnb\.(Try|Exercise)\(")


def exercise_failure(cell):
    """An exercise's check cell (nb.Try, nb.Exercise) runs the answer as committed: the stub.
    It must print "not solved yet"; anything else means the stub is not caught (or the answer
    was committed). Returns a one-line description, or None."""
    if not EXERCISE_CHECK.search(cell.get("source", "")):
        return None
    stdout = "".join(stream_text(o) for o in cell.get("outputs", [])
                     if o.get("output_type") == "stream" and o.get("name") == "stdout")
    if "not solved yet" in stdout:
        return None
    return "exercise check: the committed stub was not caught (no \"not solved yet\" in its output)"


def first_line(source):
    """The first line of a cell's source that says something (not blank, not GoNB's "%%")."""
    for line in source.splitlines():
        if line.strip() and line.strip() not in ("%%", "%main"):
            return line.strip()[:100]
    return ""


def output_text(cell, limit=2000):
    """The cell's text outputs (stdout, stderr, errors), for a failure report."""
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(stream_text(out))
        elif out.get("output_type") == "error":
            parts.append(ANSI.sub("", "\n".join(out.get("traceback", [])) or f"{out.get('ename')}: {out.get('evalue')}"))
    text = "".join(parts).strip()
    if len(text) > limit:
        text = "…" + text[-limit:]
    return text


def jupyter_python():
    """The Python whose Jupyter mhalab uses (scripts/jupyter_python.sh)."""
    return subprocess.run(["sh", str(REPO / "scripts" / "jupyter_python.sh")], check=True,
                          capture_output=True, text=True).stdout.strip()


def use_jupyter_python(name):
    """Re-executes this script with the Jupyter Python unless it already runs there. Exits with
    what to run when that Python does not exist yet."""
    want = jupyter_python()
    if os.environ.get("MHALAB_JUPYTER_REEXEC") or os.path.abspath(sys.executable) == os.path.abspath(want):
        return
    if not os.path.exists(want):
        sys.exit(f"{name}: no Jupyter at {want}: run scripts/setup.sh --only jupyter,gonb (no root needed)")
    os.environ["MHALAB_JUPYTER_REEXEC"] = "1"
    os.execv(want, [want, os.path.abspath(sys.argv[0])] + sys.argv[1:])


def go_env(var):
    try:
        return subprocess.run(["go", "env", var], check=True, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def find_tools():
    """Returns (gonb path, PATH for the kernel) or exits with what to install."""
    gobin = go_env("GOBIN") or (os.path.join(go_env("GOPATH"), "bin") if go_env("GOPATH") else "")
    path = os.environ.get("PATH", "")
    if gobin and gobin not in path.split(os.pathsep):
        path = gobin + os.pathsep + path
    gonb = os.environ.get("GONB") or shutil.which("gonb", path=path)
    missing = [t for t in ("go", "goimports", "gopls") if not shutil.which(t, path=path)]
    if not gonb:
        missing.insert(0, "gonb")
    if missing:
        sys.exit(f"notebooks: {', '.join(missing)} not found (looked in {gobin or '$(go env GOPATH)/bin'} and $PATH); "
                 "install with: scripts/setup.sh --only gonb")
    info = subprocess.run(["go", "version", "-m", gonb], capture_output=True, text=True).stdout
    m = re.search(r"^\s*mod\s+github\.com/janpfeifer/gonb\s+(\S+)", info, re.MULTILINE)
    version = m.group(1) if m else "unknown"
    if version != GONB_VERSION:
        sys.exit(f"notebooks: {gonb} is GoNB {version}, want {GONB_VERSION} (GoNB < v0.11.3 or unknown builds are untested); "
                 "reinstall with: scripts/setup.sh --only gonb")
    return gonb, path, version


def write_kernelspec(jupyter_dir, gonb):
    """A private kernel spec "gonb" (found first through JUPYTER_PATH) running the pinned GoNB
    with plain-text errors."""
    spec = Path(jupyter_dir, "kernels", "gonb")
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [gonb, "--kernel", "{connection_file}", "--raw_error"],
        "display_name": "Go (gonb)",
        "language": "go",
        "interrupt_mode": "message",
        "env": {},
    }))


def run_notebook(path, out_dir, timeout, log_path, html):
    """Executes one notebook, the kernel's log going to log_path; returns a result dict (ok,
    failure, cell, seconds, cells)."""
    with open(log_path, "w") as log:
        return run_notebook_logged(path, out_dir, timeout, log, html)


def run_notebook_logged(path, out_dir, timeout, log, html):
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="gonb", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}})
    result = {"notebook": str(path.relative_to(REPO) if path.is_relative_to(REPO) else path),
              "ok": True, "failure": None, "cell": None, "cells": [], "seconds": 0.0}
    code_cells = sum(1 for c in nb.cells if c.cell_type == "code")
    start = time.monotonic()
    code_index = 0
    try:
        with client.setup_kernel(stdout=log, stderr=log):
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                code_index += 1
                t0 = time.monotonic()
                failure = None
                try:
                    client.execute_cell(cell, index)
                except CellTimeoutError:
                    failure = f"timed out after {timeout} s"
                except (CellExecutionError, DeadKernelError) as e:
                    failure = f"{type(e).__name__}: {str(e).strip().splitlines()[-1] if str(e).strip() else ''}"
                seconds = time.monotonic() - t0
                result["cells"].append({"cell": index + 1, "code_cell": code_index, "seconds": round(seconds, 2),
                                        "source": first_line(cell.source)})
                failure = failure or cell_failure(cell) or exercise_failure(cell)
                if failure:
                    result.update(ok=False, failure=failure, cell=index + 1, code_cell=code_index,
                                  source=first_line(cell.source), output=output_text(cell))
                    break
    except Exception as e:  # the kernel did not start, died, …
        result.update(ok=False, failure=f"{type(e).__name__}: {e}", cell=None)
    result["seconds"] = round(time.monotonic() - start, 2)
    result["code_cells"] = code_cells

    out_dir.mkdir(parents=True, exist_ok=True)
    executed = out_dir / path.name
    nbformat.write(nb, executed)
    if html:
        from nbhtml import offline_html  # scripts/nbhtml.py: MathML formulas, nothing remote
        (out_dir / (path.stem + ".html")).write_text(offline_html(nb), encoding="utf-8")
    return result


def previous_seconds(timings):
    """Seconds per notebook (by file name) of the last run written to timings, or {}."""
    try:
        return {Path(r["notebook"]).name: float(r["seconds"]) for r in json.loads(timings.read_text())["notebooks"]
                if r.get("ok")}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def longest_first(notebooks, previous):
    """Indices of notebooks, the longest first (by the previous run's time, else 3 s a code cell),
    so that with --jobs the last notebook to start is a short one."""
    import nbformat

    def estimate(i):
        name = notebooks[i].name
        if name in previous:
            return previous[name]
        return 3.0 * sum(1 for c in nbformat.read(notebooks[i], as_version=4).cells if c.cell_type == "code")
    return sorted(range(len(notebooks)), key=estimate, reverse=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("notebooks", nargs="*", type=Path, help="notebooks to run (default: notebooks/*.ipynb)")
    ap.add_argument("--backend", default=os.environ.get("GOMLX_BACKEND") or "go", choices=BACKENDS,
                    help="GoMLX backend the notebooks run on (default: $GOMLX_BACKEND, else go)")
    ap.add_argument("--out", type=Path, default=REPO / "build" / "notebooks",
                    help="executed notebooks and HTML go to OUT/<backend>/ (default build/notebooks)")
    ap.add_argument("--jobs", "-j", type=int, default=2 if (os.cpu_count() or 1) >= 2 else 1, metavar="N",
                    help="notebooks run at a time, each with its own kernel (default 2 on ≥ 2 cores, else 1)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds one cell may take (default 600)")
    ap.add_argument("--no-html", dest="html", action="store_false", help="do not write HTML copies")
    ap.add_argument("--list", action="store_true", help="list the notebooks and exit")
    ap.add_argument("--slowest", type=int, default=5, metavar="N", help="print the N slowest cells (default 5)")
    args = ap.parse_args()

    use_jupyter_python("notebooks")
    notebooks = [p.resolve() for p in args.notebooks] or sorted((REPO / "notebooks").glob("*.ipynb"))
    if not notebooks:
        sys.exit("notebooks: no notebooks found in notebooks/")
    for p in notebooks:
        if not p.is_file():
            sys.exit(f"notebooks: {p}: no such notebook")
    if args.list:
        for p in notebooks:
            print(p)
        return 0
    try:
        import nbclient  # noqa: F401
        import nbformat  # noqa: F401
    except ImportError as e:
        sys.exit(f"notebooks: {e} (this Python, {sys.executable}, lacks it; install with scripts/setup.sh --only jupyter)")

    gonb, path, version = find_tools()
    out_dir = args.out.resolve() / args.backend.replace(":", "-")
    out_dir.mkdir(parents=True, exist_ok=True)
    previous = previous_seconds(out_dir / "timings.json")
    jupyter_dir = tempfile.mkdtemp(prefix="mhalab-notebooks-")
    try:
        write_kernelspec(jupyter_dir, gonb)
        # The kernel, and the cell programs it runs, inherit this environment.
        os.environ.update({
            "PATH": path,
            "JUPYTER_PATH": jupyter_dir + (os.pathsep + os.environ["JUPYTER_PATH"] if os.environ.get("JUPYTER_PATH") else ""),
            "GOMLX_BACKEND": args.backend,
            "GOMLX_NO_AUTO_INSTALL": "1",
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",
            "GO_EXTLINK_ENABLED": os.environ.get("GO_EXTLINK_ENABLED", "0"),  # see the docstring
        })
        link = "Go's linker" if os.environ["GO_EXTLINK_ENABLED"] == "0" else f"GO_EXTLINK_ENABLED={os.environ['GO_EXTLINK_ENABLED']}"
        print(f"notebooks: {len(notebooks)} on backend {args.backend}, GoNB {version} ({gonb}), cells linked by {link}, "
              f"output {out_dir}", flush=True)
        logs = Path(tempfile.mkdtemp(prefix="logs-", dir=out_dir))
        jobs = max(1, min(args.jobs, len(notebooks)))
        pool = None
        if jobs > 1:
            # Processes, not threads: each notebook gets its own nbclient, event loop and kernel.
            try:
                pool = concurrent.futures.ProcessPoolExecutor(
                    max_workers=jobs, mp_context=multiprocessing.get_context("spawn"))
            except (OSError, ImportError, NotImplementedError) as e:  # e.g. no /dev/shm for its locks
                print(f"notebooks: cannot run notebooks in parallel here ({e}): one at a time", flush=True)
                jobs = 1
        if jobs > 1:
            print(f"notebooks: {jobs} notebooks at a time (--jobs {jobs}); times per notebook are wall times "
                  "beside another notebook", flush=True)
        results = [None] * len(notebooks)
        done = 0
        total = time.monotonic()

        def report(i, r):
            nonlocal done
            done += 1
            results[i] = r
            name = notebooks[i].name
            if r["ok"]:
                text = f"[{done}/{len(notebooks)}] {name} ok ({r['code_cells']} code cells, {r['seconds']:.1f} s)"
            else:
                where = f"cell {r['cell']} (code cell {r['code_cell']}: {r['source']!r})" if r["cell"] else "before any cell"
                text = f"[{done}/{len(notebooks)}] {name} FAILED at {where} after {r['seconds']:.1f} s\n"
                text += f"    {r['notebook']}, {where}: {r['failure']}"
                if r.get("output"):
                    text += "\n    " + r["output"].replace("\n", "\n    ")
            print(text, flush=True)  # one print per notebook: lines of two notebooks never mix

        try:
            if jobs == 1:
                for i, path_nb in enumerate(notebooks):
                    report(i, run_notebook(path_nb, out_dir, args.timeout, logs / f"{i:03d}.log", args.html))
            else:
                with pool:
                    futures = {pool.submit(run_notebook, notebooks[i], out_dir, args.timeout, logs / f"{i:03d}.log",
                                           args.html): i for i in longest_first(notebooks, previous)}
                    for f in concurrent.futures.as_completed(futures):
                        i = futures[f]
                        try:
                            r = f.result()
                        except Exception as e:  # the worker process died
                            r = {"notebook": str(notebooks[i]), "ok": False, "failure": f"{type(e).__name__}: {e}",
                                 "cell": None, "cells": [], "seconds": 0.0, "code_cells": 0}
                        report(i, r)
        finally:
            with open(out_dir / "kernel.log", "w") as log:  # the kernels' logs in notebook order
                for i, path_nb in enumerate(notebooks):
                    part = logs / f"{i:03d}.log"
                    if part.exists():
                        log.write(f"==== {path_nb.name}\n")
                        log.write(part.read_text(errors="replace"))
            shutil.rmtree(logs, ignore_errors=True)
        total = time.monotonic() - total
    finally:
        shutil.rmtree(jupyter_dir, ignore_errors=True)

    failed = [r for r in results if not r["ok"]]
    (out_dir / "timings.json").write_text(json.dumps(
        {"backend": args.backend, "gonb": version, "jobs": jobs, "seconds": round(total, 2), "notebooks": results}, indent=1))
    cells = sorted(((c["seconds"], Path(r["notebook"]).stem, c["code_cell"], c["source"])
                    for r in results for c in r["cells"]), reverse=True)
    print(f"notebooks: {len(cells)} code cells; the slowest:", flush=True)
    for seconds, name, code_cell, source in cells[:args.slowest]:
        print(f"    {seconds:6.1f} s  {name}, code cell {code_cell}: {source}", flush=True)
    wall = f"{total:.1f} s wall with {jobs} notebooks in parallel" if jobs > 1 else f"{total:.1f} s"
    print(f"notebooks: {len(results) - len(failed)} ok, {len(failed)} failed, {wall} on {args.backend}; "
          f"executed copies and HTML in {out_dir}")
    for r in failed:
        where = f"cell {r['cell']}" if r["cell"] else "kernel"
        print(f"FAILED: {r['notebook']} {where}: {r['failure']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
