#!/usr/bin/env bash
# scripts/notebooks_selftest.sh — proves that the notebook runner (scripts/notebooks.py, make
# notebooks) fails when it must. Run by `make notebooks-selftest` (about a minute).
#
#  1. GoNB reports a cell that panics, exits non-zero, is killed by a signal or runs a failing
#     shell command as successful. Five small notebooks, one per kind of failure (plus a compile
#     error), run two at a time (--jobs 2), must each make the runner fail at the right cell, with
#     the right reason.
#  2. A planted error: in a copy of the repository, mhalib's attention scale is changed from
#     1/√dk to 1/dk. Notebook 04 must pass on the unchanged copy and fail on the broken one, at
#     the cell that compares with the float64 reference (cell 7).
#
# Everything happens in a temporary copy of the working tree (tracked and untracked files that
# git does not ignore), removed at the end.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$("$REPO/scripts/jupyter_python.sh")" # the Jupyter of scripts/setup.sh --only jupyter
BACKEND="${GOMLX_BACKEND:-go}"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/mhalab-nbselftest.XXXXXX")"
trap 'rm -rf -- "$TMP"' EXIT

fail() {
	printf 'notebooks selftest: FAILED: %s\n' "$*" >&2
	exit 1
}

# copy_repo DEST: the working tree as git sees it (no build outputs, no ignored files).
copy_repo() {
	mkdir -p "$1"
	(cd "$REPO" && git ls-files -co --exclude-standard -z) |
		while IFS= read -r -d '' f; do [[ -e "$REPO/$f" ]] && printf '%s\0' "$f"; done |
		(cd "$REPO" && xargs -0 cp --parents -t "$1")
}

# ---------------------------------------------------------------------------------------
echo "== 1. failures GoNB reports as success must fail the runner"
copy_repo "$TMP/repo"
"$PY" - "$TMP/repo/notebooks" <<'EOF'
import json, sys
import nbformat
from pathlib import Path

nbdir = Path(sys.argv[1])
# The real setup cell, so that these notebooks build against the copy's mhalib like the others.
setup = next(c.source for c in nbformat.read(nbdir / "01_qkv_projection.ipynb", 4).cells if c.cell_type == "code")
failing = {
    "zz_panic": '%%\npanic("planted panic")',
    "zz_exit": 'import "os"\n\n%%\nfmt.Println("exiting with 3")\nos.Exit(3)',
    "zz_signal": 'import (\n\t"os"\n\t"syscall"\n)\n\n%%\nsyscall.Kill(os.Getpid(), syscall.SIGKILL)',
    "zz_shell": '!false',
    "zz_compile": '%%\nthisFunctionDoesNotExist()',
    # An exercise's check must catch the committed stub ("not solved yet"); a solved one fails.
    "zz_solved": 'import "github.com/mhalab/mhalab/notebooks/nb"\n\n%%\nnb.Exercise(true, "hint", "answer committed")',
}
for name, source in failing.items():
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"name": "gonb", "display_name": "Go (gonb)", "language": "go"}}
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {name}"),
                nbformat.v4.new_code_cell(setup),
                nbformat.v4.new_code_cell('%%\nfmt.Println("a cell that works")'),
                nbformat.v4.new_code_cell(source),
                nbformat.v4.new_code_cell('%%\nfmt.Println("never reached")')]
    nbformat.write(nb, nbdir / f"{name}.ipynb")
EOF
set +e
# Two at a time (as `make notebooks` runs them on 2 cores): each failure must still be reported
# for its own notebook and cell.
"$PY" "$TMP/repo/scripts/notebooks.py" --backend "$BACKEND" --no-html --jobs 2 --out "$TMP/out1" \
	"$TMP"/repo/notebooks/zz_*.ipynb >"$TMP/run1.log" 2>&1
rc=$?
set -e
cat "$TMP/run1.log"
[[ $rc == 1 ]] || fail "the runner exited $rc on six failing notebooks, want 1"
grep -q '^notebooks: 2 notebooks at a time' "$TMP/run1.log" || fail "the runner did not run the six notebooks two at a time"
"$PY" - "$TMP/out1/${BACKEND/:/-}/timings.json" <<'EOF' || fail "a failure was not reported as expected (see above)"
import json, sys
results = {r["notebook"].rsplit("/", 1)[-1]: r for r in json.load(open(sys.argv[1]))["notebooks"]}
want = {
    "zz_panic.ipynb": "panic: planted panic",
    "zz_exit.ipynb": "exit status 3",
    "zz_signal.ipynb": "signal: killed",
    "zz_shell.ipynb": "exit status 1",
    "zz_compile.ipynb": "thisFunctionDoesNotExist",
    "zz_solved.ipynb": "stub was not caught",
}
bad = 0
for name, text in want.items():
    r = results.get(name)
    if r is None or r["ok"] or r["cell"] != 4 or text not in (r["failure"] or ""):
        print(f"  {name}: want a failure at cell 4 mentioning {text!r}, got {r and {k: r[k] for k in ('ok', 'cell', 'failure')}}")
        bad += 1
    else:
        print(f"  ok: {name} failed at cell 4: {r['failure'][:80]}")
sys.exit(1 if bad else 0)
EOF

# ---------------------------------------------------------------------------------------
echo "== 2. a planted error in mhalib must fail its notebook"
NB=notebooks/04_mha.ipynb
rm -f "$TMP"/repo/notebooks/zz_*.ipynb
"$PY" "$TMP/repo/scripts/notebooks.py" --backend "$BACKEND" --no-html --out "$TMP/out2" "$TMP/repo/$NB" ||
	fail "$NB fails on an unchanged copy of the repository: the planted-error test would prove nothing"
# The classic bug: scale the logits by 1/dk instead of 1/√dk.
target="$TMP/repo/mhalib/mha.go"
grep -q 'return 1 / math.Sqrt(float64(d))' "$target" || fail "mhalib/mha.go no longer has the line this test breaks (headScale's 1/√d)"
sed -i 's|return 1 / math.Sqrt(float64(d))|return 1 / float64(d) // planted error|' "$target"
grep -q 'planted error' "$target" || fail "could not plant the error"
echo "planted in the copy's mhalib/mha.go: $(grep -n 'planted error' "$target")"
set +e
"$PY" "$TMP/repo/scripts/notebooks.py" --backend "$BACKEND" --no-html --out "$TMP/out3" "$TMP/repo/$NB" >"$TMP/run3.log" 2>&1
rc=$?
set -e
cat "$TMP/run3.log"
[[ $rc == 1 ]] || fail "$NB passed (exit $rc) with mhalib's scale broken"
grep -q 'FAILED: .*04_mha.ipynb cell 7: panic: check failed: output equals the float64 reference' "$TMP/run3.log" ||
	fail "$NB failed, but not at the reference check of cell 7"
echo "notebooks selftest: ok — the runner fails on panics, exit codes, signals, failing shell commands, compile errors and a planted mhalib error"
