#!/usr/bin/env bash
# deploy/z2jh/install-validator.sh — kubernetes-validate (PyPI, hash-pinned in
# validate-requirements.txt) in a venv of the user's cache, for go test ./deploy/z2jh/
# (TestKubernetesObjects; under CI=true the test runs this script itself when the venv is missing).
#
#   deploy/z2jh/install-validator.sh        (or: make z2jh-validator)
#
# The venv: $MHALAB_K8S_VALIDATE_VENV, default ${XDG_CACHE_HOME:-~/.cache}/mhalab/k8s-validate-venv.
# Needs python3 (>= 3.10) with venv and network access to PyPI; idempotent (a venv that already
# imports the pinned version is kept). About 10 s.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
venv="${MHALAB_K8S_VALIDATE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/mhalab/k8s-validate-venv}"
want="$(sed -n 's/^kubernetes-validate==\([0-9.]*\).*/\1/p' validate-requirements.txt)"
if [[ -x "$venv/bin/python" ]] &&
	[[ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("kubernetes-validate"))' 2>/dev/null)" == "$want" ]]; then
	echo "install-validator: kubernetes-validate $want already in $venv"
	exit 0
fi
py="${MHALAB_PYTHON:-python3}"
"$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
	{ echo "install-validator: $py is older than Python 3.10" >&2; exit 1; }
rm -rf -- "$venv"
mkdir -p "$(dirname "$venv")"
"$py" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir \
	--require-hashes --only-binary :all: -r validate-requirements.txt
"$venv/bin/python" -m kubernetes_validate --version >/dev/null
echo "install-validator: kubernetes-validate $want installed in $venv"
