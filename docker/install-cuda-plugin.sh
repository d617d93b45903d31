#!/usr/bin/env bash
# docker/install-cuda-plugin.sh — install the XLA CUDA PJRT plugin (PyPI wheel jax-cuda13-pjrt)
# and NVIDIA's CUDA 13 libraries (PyPI wheels), all pinned with sha256 in
# docker/cuda-requirements.txt, in the layout go-xla expects:
#
#   PREFIX/nvidia/pjrt_c_api_cuda_plugin.so     the plugin; go-xla searches PREFIX/nvidia, and
#                                               the plugin's RPATH is $ORIGIN/../nvidia/<lib>/lib
#   PREFIX/nvidia/{cu13,cudnn,nccl,nvshmem}/    the libraries (the wheels' nvidia/ folders)
#   PREFIX/nvidia/bin/ptxas -> ../cu13/bin/ptxas
#
#   docker/install-cuda-plugin.sh [PREFIX]      (default /usr/local/lib/go-xla; run as root)
#
# Set XLA_FLAGS=--xla_gpu_cuda_data_dir=PREFIX/nvidia when running: go-xla v0.1.4 otherwise sets
# that flag to a directory of its author's machine (pjrt/cuda_linux.go). Dockerfile.cuda does.
# The plugin file's sha256 and its PJRT API version (read from GetPjrtApi, no GPU needed) are
# checked here; loading it for real needs a GPU (`mhalab backends` in a GPU container).
set -euo pipefail
die() { printf 'install-cuda-plugin: %s\n' "$*" >&2; exit 1; }
cd "$(dirname "${BASH_SOURCE[0]}")/.."
prefix="${1:-/usr/local/lib/go-xla}"
requirements=docker/cuda-requirements.txt
# The plugin inside the wheel, and what it must be.
member=jax_plugins/xla_cuda13/xla_cuda_plugin.so
plugin_sha256=1bb61bf8aa7f95f15fb9770ac0dcac299bec238dfc75700c476fa5fceaa9a5ee
plugin_api=0.81

[[ "$(uname -m)" == x86_64 ]] || die "the pinned wheels are for x86-64; this is $(uname -m)"
command -v python3 >/dev/null || die "python3 not found"
work="$(mktemp -d)"
trap 'rm -rf -- "$work"' EXIT
python3 -m venv "$work/venv" || die "python3 -m venv failed (Debian/Ubuntu: apt-get install python3-venv)"
echo "install-cuda-plugin: pip install --require-hashes -r $requirements"
t0=$SECONDS
"$work/venv/bin/pip" install --disable-pip-version-check --no-cache-dir --progress-bar off --quiet \
	--require-hashes --no-deps --only-binary=:all: --target "$work/site" -r "$requirements" ||
	die "pip install -r $requirements failed"
echo "install-cuda-plugin: wheels installed in $((SECONDS - t0)) s ($(du -sh "$work/site" | cut -f1))"

got="$(sha256sum "$work/site/$member" | cut -d' ' -f1)"
[[ "$got" == "$plugin_sha256" ]] || die "$member has sha256 $got, pinned $plugin_sha256"
api="$(python3 - "$work/site/$member" <<'EOF'
import ctypes, sys
# PJRT_Api starts with struct_size, extension_start, then PJRT_Api_Version {struct_size,
# extension_start, major_version, minor_version}: the ints sit at byte offsets 32 and 36.
api = ctypes.CDLL(sys.argv[1]).GetPjrtApi
api.restype = ctypes.c_void_p
p = api()
print("%d.%d" % (ctypes.c_int.from_address(p + 32).value, ctypes.c_int.from_address(p + 36).value))
EOF
)" || die "cannot load $member to read its PJRT API version"
[[ "$api" == "$plugin_api" ]] || die "$member implements PJRT API $api, expected $plugin_api"

nvidia="$prefix/nvidia"
rm -rf -- "$nvidia"
mkdir -p "$nvidia/bin"
cp -a "$work/site/nvidia/." "$nvidia/"
install -m 0755 "$work/site/$member" "$nvidia/pjrt_c_api_cuda_plugin.so"
[[ -x "$nvidia/cu13/bin/ptxas" ]] || die "no ptxas in $nvidia/cu13/bin (nvidia-cuda-nvcc)"
ln -s ../cu13/bin/ptxas "$nvidia/bin/ptxas"
# The libraries the plugin finds through its RPATH, relative to $ORIGIN = $nvidia.
for lib in cu13/lib/libcudart.so.13 cu13/lib/libcublas.so.13 cu13/lib/libcublasLt.so.13 cudnn/lib/libcudnn.so.9 nccl/lib/libnccl.so.2; do
	[[ -e "$nvidia/$lib" ]] || die "missing $nvidia/$lib after installing the wheels"
done
chmod -R a+rX "$prefix"
echo "install-cuda-plugin: installed $nvidia/pjrt_c_api_cuda_plugin.so (jax-cuda13-pjrt, PJRT API $api) and the CUDA 13 libraries ($(du -sh "$nvidia" | cut -f1))"
