#!/usr/bin/env bash
# scripts/lab.sh — `make lab`: Jupyter on localhost with mhalab's notebooks (notebooks/), run by
# the GoNB kernel against this repository's mhalib.
#
# Sets up what is missing first (scripts/setup.sh --only go,cc,gomod,minilm,smollm2,jupyter,gonb: JupyterLab from
# PyPI in a venv of the cache, GoNB v0.11.3, goimports, gopls, the kernel spec; no root needed),
# then starts JupyterLab (the Python scripts/jupyter_python.sh names) in notebooks/ and opens it
# in a browser when there is one.
#
# Environment:
#   LAB_BACKEND   backend of the notebooks: go or xla:cpu (or xla:cuda). Default: $GOMLX_BACKEND
#                 when set, else XLA CPU when its plugin is installed (scripts/setup.sh installs
#                 it), else the pure-Go backend — each notebook prints which one it runs on.
#   LAB_PORT      port (default 8888; Jupyter takes the next free one if it is busy)
#   LAB_TOKEN     the server's token (default: a random one, printed in the URL)
# Extra arguments go to `jupyter lab` (e.g. --no-browser).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

scripts/setup.sh --only go,cc,gomod,minilm,smollm2,jupyter,gonb

GOBIN_DIR="$(go env GOBIN)"
[[ -n "$GOBIN_DIR" ]] || GOBIN_DIR="$(go env GOPATH)/bin"
# GoNB runs goimports and gopls from PATH; the kernels inherit this environment.
export PATH="$GOBIN_DIR:$PATH"
export GOMLX_NO_AUTO_INSTALL=1 PYDEVD_DISABLE_FILE_VALIDATION=1

backend="${LAB_BACKEND:-${GOMLX_BACKEND:-}}"
case "$backend" in
"") echo "lab: backend: XLA CPU when its plugin is installed, else pure Go (LAB_BACKEND=go or xla:cpu to choose)" ;;
go | xla:cpu | xla:cuda)
	export GOMLX_BACKEND="$backend"
	echo "lab: backend $backend"
	;;
*)
	echo "lab: LAB_BACKEND=$backend: want go, xla:cpu or xla:cuda" >&2
	exit 2
	;;
esac

JUPYTER_PY="$(scripts/jupyter_python.sh)"
args=(--ServerApp.root_dir="$REPO/notebooks" --ip=127.0.0.1 --port="${LAB_PORT:-8888}")
if [[ "$(id -u)" == 0 ]]; then
	args+=(--allow-root) # containers and CI machines often run as root; Jupyter refuses it otherwise
fi
if [[ -n "${LAB_TOKEN:-}" ]]; then
	args+=(--IdentityProvider.token="$LAB_TOKEN")
fi
echo "lab: starting JupyterLab ($JUPYTER_PY) on http://127.0.0.1:${LAB_PORT:-8888}/lab with notebooks/ (Ctrl-C twice to stop)"
exec "$JUPYTER_PY" -m jupyterlab "${args[@]}" "$@"
