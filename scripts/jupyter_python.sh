#!/bin/sh
# scripts/jupyter_python.sh — prints the Python whose Jupyter mhalab uses (make lab, make
# notebooks, make lab-check, the images): $MHALAB_JUPYTER_PYTHON when set, else the venv that
# scripts/setup.sh (step jupyter) makes, $MHALAB_JUPYTER_VENV or
# ${XDG_CACHE_HOME:-~/.cache}/mhalab/jupyter-venv. Prints the path even when it does not exist yet.
if [ -n "${MHALAB_JUPYTER_PYTHON:-}" ]; then
	printf '%s\n' "$MHALAB_JUPYTER_PYTHON"
else
	printf '%s\n' "${MHALAB_JUPYTER_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/mhalab/jupyter-venv}/bin/python"
fi
