#!/usr/bin/env bash
# scripts/gpu-check.sh — run mhalab's parity tests and `mhalab bench` on XLA CUDA (xla:cuda).
#
# Two steps, on two machines:
#
#   scripts/gpu-check.sh prepare    on a machine with Go (this repository's dev machine):
#                                   builds build/gpu/ — the mhalab binary and the test binaries of
#                                   mhalib and parity (stripped, gzipped; about 20 MB in all)
#   scripts/gpu-check.sh run        on the GPU machine, from the repository root, no network and
#                                   no Go needed: finds the CUDA PJRT plugin of the installed
#                                   jax-cuda13-pjrt (or jax-cuda12-pjrt) wheel and the NVIDIA
#                                   libraries of the installed pip packages, then
#                                     1. mhalab backends        (xla:cuda must be available)
#                                     2. parity tests           (committed fixtures vs PyTorch; on xla:cuda and go)
#                                     3. mhalib tests           (flash, KV cache, checkpointing, MHA vs float64 reference)
#                                     4. mhalab bench           (xla:cuda next to PyTorch on cuda; go left out: slow)
#                                     5. mhalab bench devices   (attention across 1, 2, 4, … GPUs, when there are several)
#                                   and writes logs, bench.md and bench.json to $OUT (when set) or build/gpu/out.
#
# Options of run:  --quick   bench --quick and only the flash/KV-cache/checkpoint/parity tests
#                  --python PATH   Python with torch and the CUDA PJRT wheel (default python3)
# Environment:     MHALAB_CUDA_PLUGIN=/path/to/plugin.so  use this plugin instead of searching
#
# TF32 is off for both XLA and PyTorch: the tests' float32 tolerances assume full float32 matrix
# products, PyTorch's own default is no TF32 for matmuls, and mhalab's xla package turns it off on
# xla:cuda by itself (NVIDIA_TF32_OVERRIDE=0 and --xla_gpu_enable_triton_gemm=false, see
# xla/cuda_float32.go; the script sets NVIDIA_TF32_OVERRIDE=0 for PyTorch's sake).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
GPU_DIR=build/gpu

say() { printf '==> %s\n' "$*"; }
die() { printf 'gpu-check: %s\n' "$*" >&2; exit 1; }

prepare() {
	command -v go >/dev/null || die "prepare needs Go (run it on the development machine)"
	mkdir -p "$GPU_DIR"
	say "building $GPU_DIR/mhalab, mhalib.test, parity.test (stripped, gzipped)"
	go build -ldflags='-s -w' -o "$GPU_DIR/mhalab" ./cmd/mhalab
	go test -c -ldflags='-s -w' -o "$GPU_DIR/mhalib.test" ./mhalib/
	go test -c -ldflags='-s -w' -o "$GPU_DIR/parity.test" ./parity/
	for f in mhalab mhalib.test parity.test; do
		gzip -f -9 "$GPU_DIR/$f"
	done
	ls -l "$GPU_DIR"
	say "ready: carry $GPU_DIR to the GPU machine (with the repository) and run: scripts/gpu-check.sh run"
}

# find_plugin prints the path of the CUDA PJRT plugin shipped by the jax-cuda*-pjrt wheel.
find_plugin() {
	if [[ -n "${MHALAB_CUDA_PLUGIN:-}" ]]; then
		echo "$MHALAB_CUDA_PLUGIN"
		return
	fi
	"$PYTHON" - <<'EOF'
import glob, importlib, os, sys
for name in ("jax_plugins.xla_cuda13", "jax_plugins.xla_cuda12"):
    try:
        mod = importlib.import_module(name)
    except Exception:
        continue
    for d in mod.__path__:
        for f in sorted(glob.glob(os.path.join(d, "*.so"))):
            if "pjrt" in os.path.basename(f) or "plugin" in os.path.basename(f):
                print(f)
                sys.exit(0)
sys.exit("no jax_plugins.xla_cuda13 / xla_cuda12 module with a plugin .so (pip package jax-cuda13-pjrt)")
EOF
}

# nvidia_lib_dirs prints, ':'-separated, every lib directory of the installed nvidia-* pip
# packages (cuBLAS, cuDNN, NVRTC, ... for the plugin, which Go loads without Python's help).
nvidia_lib_dirs() {
	"$PYTHON" - <<'EOF'
import glob, os, site, sys
roots = set(site.getsitepackages() + [site.getusersitepackages()])
dirs = []
for r in sorted(roots):
    for d in sorted(glob.glob(os.path.join(r, "nvidia", "**", "lib"), recursive=True)):
        if glob.glob(os.path.join(d, "*.so*")):
            dirs.append(d)
print(":".join(dirs))
EOF
}

run_tests() { # run_tests NAME DIR BINARY [go test args...]
	local name=$1 dir=$2 bin=$3
	shift 3
	say "$name tests on $MHALAB_TEST_BACKENDS   (log: $OUTDIR/$name-tests.log)"
	local rc=0
	(cd "$dir" && "$bin" -test.count=1 -test.v "$@") >"$OUTDIR/$name-tests.log" 2>&1 || rc=$?
	grep -E '^(=== [^ ]+: |--- FAIL|FAIL|ok |PASS$|panic:)' "$OUTDIR/$name-tests.log" | head -n 60 || true
	echo "    $name: $(grep -cE '^ *--- PASS' "$OUTDIR/$name-tests.log" || true) passed, $(grep -cE '^ *--- FAIL' "$OUTDIR/$name-tests.log" || true) failed, exit $rc"
	return "$rc"
}

run() {
	local quick=0
	PYTHON=python3
	while [[ $# -gt 0 ]]; do
		case $1 in
		--quick) quick=1 ;;
		--python) PYTHON=$2; shift ;;
		*) die "unknown option $1 (see the header of $0)" ;;
		esac
		shift
	done
	OUTDIR=${OUT:-$GPU_DIR/out}
	mkdir -p "$OUTDIR" "$GPU_DIR/bin"
	for f in mhalab mhalib.test parity.test; do
		[[ -f "$GPU_DIR/$f.gz" ]] || die "$GPU_DIR/$f.gz missing: run 'scripts/gpu-check.sh prepare' on the dev machine and carry $GPU_DIR"
		gzip -dc "$GPU_DIR/$f.gz" >"$GPU_DIR/bin/$f"
		chmod +x "$GPU_DIR/bin/$f"
	done
	local bin
	bin=$(cd "$GPU_DIR/bin" && pwd)

	say "machine"
	{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || echo "nvidia-smi failed"; nproc; "$PYTHON" --version; } 2>&1 | tee "$OUTDIR/machine.txt"
	{ "$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1 || true; } | tee -a "$OUTDIR/machine.txt"

	say "CUDA PJRT plugin"
	local plugin
	plugin=$(find_plugin) || die "no CUDA PJRT plugin found (set MHALAB_CUDA_PLUGIN)"
	export MHALAB_PLUGIN_DIR="$PWD/$GPU_DIR/plugin"
	mkdir -p "$MHALAB_PLUGIN_DIR"
	ln -sf "$plugin" "$MHALAB_PLUGIN_DIR/pjrt_c_api_cuda_plugin.so"
	echo "    $plugin -> $MHALAB_PLUGIN_DIR/pjrt_c_api_cuda_plugin.so"
	local libs
	libs=$(nvidia_lib_dirs)
	export LD_LIBRARY_PATH="${libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	echo "    NVIDIA libraries: ${libs:-none found in site-packages}"
	# GOPJRT_CUDA_CHECKS=0: go-xla warns when no nvidia/ folder sits next to the plugin; the
	# libraries are on LD_LIBRARY_PATH instead (above).
	export NVIDIA_TF32_OVERRIDE=0 GOMLX_NO_AUTO_INSTALL=1 GOPJRT_CUDA_CHECKS=0

	say "mhalab backends"
	"$bin/mhalab" backends 2>&1 | tee "$OUTDIR/backends.txt"
	grep -qE '^xla:cuda +yes' "$OUTDIR/backends.txt" || die "xla:cuda is not available (see $OUTDIR/backends.txt)"

	local failed=0
	export MHALAB_TEST_BACKENDS=go,xla:cuda
	if ((quick)); then
		run_tests parity parity "$bin/parity.test" -test.run 'TestParity' || failed=1
		run_tests mhalib mhalib "$bin/mhalib.test" -test.run 'Flash|KVCache|Cached|Decoder|Checkpoint' || failed=1
	else
		run_tests parity parity "$bin/parity.test" || failed=1
		run_tests mhalib mhalib "$bin/mhalib.test" || failed=1
	fi

	say "mhalab bench on xla:cuda (PyTorch on cuda)   (tables: $OUTDIR/bench.md)"
	local args=(bench --backends xla:cuda --suites mha,torch,decode --torch-device cuda --python "$PYTHON"
		--json "$OUTDIR/bench.json" --no-progress)
	((quick)) && args+=(--quick)
	"$bin/mhalab" "${args[@]}" 2>"$OUTDIR/bench.stderr" | tee "$OUTDIR/bench.md" || failed=1

	local gpus
	gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
	if ((gpus > 1)); then
		say "mhalab bench devices on $gpus GPUs   (tables: $OUTDIR/bench-devices.md)"
		local dargs=(bench --backends xla:cuda --suites devices --devices "$gpus" --python "$PYTHON"
			--json "$OUTDIR/bench-devices.json" --no-progress)
		((quick)) && dargs+=(--quick)
		"$bin/mhalab" "${dargs[@]}" 2>"$OUTDIR/bench-devices.stderr" | tee "$OUTDIR/bench-devices.md" || failed=1
	else
		say "mhalab bench devices skipped: $gpus GPU(s) (it needs at least 2)"
	fi

	if ((failed)); then
		say "FAILED: see the logs in $OUTDIR"
		exit 1
	fi
	say "all GPU checks passed; results in $OUTDIR"
}

case ${1:-} in
prepare) shift; prepare "$@" ;;
run) shift; run "$@" ;;
*) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
