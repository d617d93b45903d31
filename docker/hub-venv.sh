#!/usr/bin/env bash
# docker/hub-venv.sh [DIR] — a venv with JupyterHub from PyPI, every package pinned with its sha256
# (docker/hub-requirements.txt, pip --require-hashes), for the hub tests run outside the image
# (docker/hub_security_test.py). DIR defaults to build/hub-venv; it is made readable by every
# account (the tests' students run its jupyterhub-singleuser), and so is made from the system's
# /usr/bin/python3 (a Python under root's home, pyenv's, would not run for them; $MHALAB_HUB_PYTHON
# chooses another). Prints DIR/bin/python. Idempotent: a venv whose stamp matches the requirements
# and the Python is kept.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir="${1:-build/hub-venv}"
req=docker/hub-requirements.txt
stamp="$dir/.mhalab-requirements.sha256"
py="${MHALAB_HUB_PYTHON:-/usr/bin/python3}"
[[ -x "$py" ]] || py=python3
want="$(sha256sum "$req" | cut -d' ' -f1) $py"
if [[ -x "$dir/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
	echo "$dir/bin/python"
	exit 0
fi
rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
"$py" -m venv "$dir" >&2
"$dir/bin/python" -m pip install -q --disable-pip-version-check --no-cache-dir --require-hashes -r "$req" >&2
chmod -R a+rX "$dir"
echo "$want" >"$stamp"
echo "$dir/bin/python"
