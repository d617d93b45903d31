#!/usr/bin/env bash
# mhalab-notebook [JUPYTER OPTION...] — the classroom image's default command: JupyterLab (the
# setup's, from the Python scripts/jupyter_python.sh names) on 0.0.0.0:${PORT:-8888} (publish it with `docker run -p 8888:8888 …`), rooted at the mhalab
# repository ($MHALAB_DIR; MHALAB_NOTEBOOK_IP replaces 0.0.0.0, for tests), GoNB as the Go kernel. Access needs a token: $JUPYTER_TOKEN when set
# (at least 16 characters), otherwise a random one that Jupyter prints in the log, in the URL
# to open ("http://127.0.0.1:8888/?token=…"). Options are Jupyter's; docker/notebook_guard.py
# starts the server and refuses to when its effective configuration (command line, config files,
# environment, whatever the spelling) would let anyone in: a token shorter than 16 characters or
# none, the XSRF check off, allow_unauthenticated_access on, another login than the token's.
set -euo pipefail
die() { printf 'mhalab-notebook: %s\n' "$*" >&2; exit 2; }

# The guard: next to this script in a checkout, in /usr/local/lib/mhalab-image in the images.
guard="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/notebook_guard.py"
[[ -f "$guard" ]] || guard=/usr/local/lib/mhalab-image/notebook_guard.py
[[ -f "$guard" ]] || die "notebook_guard.py not found (next to $0 or in /usr/local/lib/mhalab-image)"
# Endpoints that do not declare how they authenticate are refused (Jupyter Server's default lets
# them through); the guard refuses a configuration that turns this back on.
export JUPYTER_SERVER_ALLOW_UNAUTHENTICATED_ACCESS="${JUPYTER_SERVER_ALLOW_UNAUTHENTICATED_ACCESS:-false}"
cd "${MHALAB_DIR:?MHALAB_DIR is not set}"
JUPYTER_PY="$("$MHALAB_DIR/scripts/jupyter_python.sh")"
echo "mhalab-notebook: JupyterLab ($JUPYTER_PY) on port ${PORT:-8888}, notebooks in $MHALAB_DIR/notebooks, lessons in $MHALAB_DIR/lessons"
echo "mhalab-notebook: open the http://127.0.0.1:${PORT:-8888}/?token=… URL printed below (with -p ${PORT:-8888}:${PORT:-8888})"
exec "$JUPYTER_PY" "$guard" --ip="${MHALAB_NOTEBOOK_IP:-0.0.0.0}" --port="${PORT:-8888}" --no-browser --ServerApp.root_dir="$MHALAB_DIR" "$@"
