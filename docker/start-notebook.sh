#!/usr/bin/env bash
# mhalab-notebook [JUPYTER OPTION...] — the classroom image's default command: JupyterLab (the
# setup's, from the Python scripts/jupyter_python.sh names) on 0.0.0.0:${PORT:-8888} (publish it with `docker run -p 8888:8888 …`), rooted at the mhalab
# repository ($MHALAB_DIR), GoNB as the Go kernel. Access needs a token: $JUPYTER_TOKEN when set
# (at least 16 characters), otherwise a random one that Jupyter prints in the log, in the URL
# to open ("http://127.0.0.1:8888/?token=…"). It refuses options that would turn the token or
# the XSRF check off.
set -euo pipefail
die() { printf 'mhalab-notebook: %s\n' "$*" >&2; exit 2; }

if [[ -v JUPYTER_TOKEN && ${#JUPYTER_TOKEN} -lt 16 ]]; then
	die "JUPYTER_TOKEN has ${#JUPYTER_TOKEN} characters; use at least 16 (e.g. \$(openssl rand -hex 16)) or leave it unset for a random token"
fi
for arg in "$@"; do
	case "$arg" in
	*[Tt]oken=|*[Tt]oken=\"\"|*[Tt]oken=\'\'|*disable_check_xsrf*|*password_required=[Ff]alse*)
		die "refusing '$arg': the notebook server must keep its token (anyone reaching the port could run code)" ;;
	esac
done
cd "${MHALAB_DIR:?MHALAB_DIR is not set}"
JUPYTER_PY="$("$MHALAB_DIR/scripts/jupyter_python.sh")"
echo "mhalab-notebook: JupyterLab ($JUPYTER_PY) on port ${PORT:-8888}, notebooks in $MHALAB_DIR/notebooks, lessons in $MHALAB_DIR/lessons"
echo "mhalab-notebook: open the http://127.0.0.1:${PORT:-8888}/?token=… URL printed below (with -p ${PORT:-8888}:${PORT:-8888})"
exec "$JUPYTER_PY" -m jupyterlab --ip=0.0.0.0 --port="${PORT:-8888}" --no-browser --ServerApp.root_dir="$MHALAB_DIR" "$@"
