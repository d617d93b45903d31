#!/usr/bin/env bash
# docker/versions.sh — print what an mhalab image contains, one "name version" line each: the
# Debian release and the Debian packages that matter, Go, GoNB and its tools, the PJRT plugins
# (sha256), PyTorch. The image build stores the output in ~/image-versions.txt; `make
# docker-verify` prints it. Missing pieces print "absent" instead of failing.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
line() { printf '%-34s %s\n' "$1" "$2"; }

line debian "$(cat /etc/debian_version 2>/dev/null || echo absent)"
[[ -r /etc/os-release ]] && line os "$(. /etc/os-release && echo "$PRETTY_NAME")"
for p in gcc libc6-dev python3 python3-venv node-configurable-http-proxy openssl tini; do
	v="$(dpkg-query -W -f '${db:Status-Status} ${Version}' "$p" 2>/dev/null)"
	[[ "$v" == installed\ * ]] && line "deb:$p" "${v#installed }" || line "deb:$p" absent
done
line go "$(go env GOVERSION 2>/dev/null || echo absent) $(command -v go)"
gopath="$(go env GOPATH 2>/dev/null)"
for tool in gonb goimports gopls; do
	bin="$gopath/bin/$tool"
	if [[ -x "$bin" ]]; then
		line "$tool" "$(go version -m "$bin" | awk '$1 == "mod" {print $3; exit}') $bin"
	else
		line "$tool" absent
	fi
done
for so in "${MHALAB_PLUGIN_DIR:-$HOME/.local/lib/go-xla}/pjrt_c_api_cpu_plugin.so" /usr/local/lib/go-xla/pjrt_c_api_cpu_plugin.so \
	/usr/local/lib/go-xla/nvidia/pjrt_c_api_cuda_plugin.so; do
	[[ -f "$so" ]] && line "plugin:$(basename "$so")" "sha256 $(sha256sum "$so" | cut -d' ' -f1) $so"
done
jpy="$(scripts/jupyter_python.sh)"
if [[ -x "$jpy" ]]; then
	line jupyter "$("$jpy" -c 'import jupyterlab, nbclient, nbconvert, jupyter_server, jupyterhub; print(f"JupyterLab {jupyterlab.__version__}, jupyter_server {jupyter_server.__version__}, nbclient {nbclient.__version__}, nbconvert {nbconvert.__version__}, JupyterHub {jupyterhub.__version__}")' 2>/dev/null || echo broken) $jpy"
else
	line jupyter "absent ($jpy)"
fi
venv="${MHALAB_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/mhalab/torch-venv}"
if [[ -x "$venv/bin/python" ]]; then
	line torch "$("$venv/bin/python" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo broken) $venv"
else
	line torch absent
fi
kernels="$("$jpy" -m jupyter kernelspec list 2>/dev/null | awk 'NR > 1 {printf "%s ", $1}')"
line jupyter-kernels "${kernels:-none}"
exit 0
