# scripts/llama.sh — optional setup step llama (issue 29): llama.cpp as the second anchor of
# `mhalab bench --suites smollm2`. Sourced by scripts/setup.sh, which provides say/info/warn/die,
# sha256_of, find_python, make_venv, CLEANUP, CACHE_DIR, WHEEL_DIR and the pins (scripts/pins.env).
# Not meant to be run on its own, and not one of the default steps: scripts/setup.sh --only llama.
#
# llama-cpp-python $LLAMA_CPP_PYTHON_VERSION is built from its sdist (sha256-pinned, cached in
# $WHEEL_DIR) with CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAMA_CURL=OFF" (-march=native, no libcurl),
# at nice 10, in the venv $MHALAB_LLAMA_VENV (default $CACHE_DIR/llama-venv); cmake, ninja,
# scikit-build-core and the run-time dependencies come from PyPI first, pinned by version in
# scripts/llama-requirements.txt. About 10 minutes on 2 cores. Once it imports, the step does
# nothing (no network). The bench finds this venv's python by itself (bench/llamacpp.go).

LLAMA_VENV="${MHALAB_LLAMA_VENV:-$CACHE_DIR/llama-venv}"
LLAMA_REQUIREMENTS="$REPO_ROOT/scripts/llama-requirements.txt"

# llama_ok: does the venv's python import llama_cpp at the pinned version?
llama_ok() {
	[[ -x "$LLAMA_VENV/bin/python" ]] || return 1
	"$LLAMA_VENV/bin/python" -c 'import sys, llama_cpp
sys.exit(llama_cpp.__version__ != sys.argv[1])' "$LLAMA_CPP_PYTHON_VERSION" >/dev/null 2>&1
}

# llama_sdist: prints the path of the pinned sdist in $WHEEL_DIR, downloading it when it is not
# there (or has the wrong sha256).
llama_sdist() {
	local sdist="$WHEEL_DIR/$LLAMA_CPP_PYTHON_SDIST_FILE" dl
	mkdir -p "$WHEEL_DIR"
	if [[ -f "$sdist" && "$(sha256_of "$sdist")" == "$LLAMA_CPP_PYTHON_SDIST_SHA256" ]]; then
		printf '%s\n' "$sdist"
		return 0
	fi
	rm -f -- "$sdist"
	dl="$(mktemp -d "$WHEEL_DIR/.download.XXXXXX")"
	CLEANUP+=("$dl")
	info "pip download llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION (sdist, ~76 MB)" >&2
	"$LLAMA_VENV/bin/python" -m pip download --no-deps --no-binary :all: --disable-pip-version-check \
		--progress-bar off --dest "$dl" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" >"$dl/.pip.log" 2>&1 ||
		die "could not download llama-cpp-python $LLAMA_CPP_PYTHON_VERSION from PyPI:" "$(tail -n 2 "$dl/.pip.log")" \
			"offline: copy $LLAMA_CPP_PYTHON_SDIST_FILE (sha256 $LLAMA_CPP_PYTHON_SDIST_SHA256) into $WHEEL_DIR/"
	local got
	got="$(sha256_of "$dl/$LLAMA_CPP_PYTHON_SDIST_FILE")"
	[[ "$got" == "$LLAMA_CPP_PYTHON_SDIST_SHA256" ]] ||
		die "sha256 mismatch for $LLAMA_CPP_PYTHON_SDIST_FILE: got $got, pinned $LLAMA_CPP_PYTHON_SDIST_SHA256 ($PINS_FILE); nothing was installed"
	mv -f -- "$dl/$LLAMA_CPP_PYTHON_SDIST_FILE" "$sdist"
	printf '%s\n' "$sdist"
}

step_llama() {
	if llama_ok; then
		info "ok: llama-cpp-python $LLAMA_CPP_PYTHON_VERSION in $LLAMA_VENV, skipping"
		return 0
	fi
	local py
	py="$(find_python)" || die "$(no_python_help "llama-cpp-python (the bench's llama.cpp anchor)" | head -n 1)" "$(no_python_help x | sed -n 2,4p)"
	mkdir -p "$CACHE_DIR"
	if ! { [[ -x "$LLAMA_VENV/bin/python" ]] && "$LLAMA_VENV/bin/python" -m pip --version >/dev/null 2>&1; }; then
		info "creating the venv $LLAMA_VENV with $py"
		make_venv "$py" "$LLAMA_VENV"
	fi
	local log="$CACHE_DIR/llama-pip.log" sdist t0=$SECONDS
	info "pip install -r scripts/llama-requirements.txt (cmake, ninja, scikit-build-core, numpy, ...)"
	"$LLAMA_VENV/bin/python" -m pip install --prefer-binary --no-input --disable-pip-version-check --progress-bar off \
		-r "$LLAMA_REQUIREMENTS" >"$log" 2>&1 ||
		die "pip install -r scripts/llama-requirements.txt failed (log: $log):" "$(tail -n 5 "$log")" \
			"it needs PyPI (or a mirror: PIP_INDEX_URL)"
	sdist="$(llama_sdist)"
	info "building llama.cpp from $sdist (-DGGML_NATIVE=ON -DLLAMA_CURL=OFF, nice 10; ~10 min on 2 cores; log: $log)"
	CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAMA_CURL=OFF" nice -n 10 "$LLAMA_VENV/bin/python" -m pip install \
		--no-build-isolation --no-deps --no-input --disable-pip-version-check --progress-bar off "$sdist" >>"$log" 2>&1 ||
		die "building llama-cpp-python $LLAMA_CPP_PYTHON_VERSION failed (log: $log):" "$(tail -n 5 "$log")" \
			"it needs a C/C++ compiler (Debian: g++) and ~1 GB free in $(dirname "$LLAMA_VENV")"
	llama_ok || die "llama-cpp-python was built in $LLAMA_VENV but does not import:" \
		"$("$LLAMA_VENV/bin/python" -c 'import llama_cpp' 2>&1 | tail -n 2)"
	info "ok: llama-cpp-python $LLAMA_CPP_PYTHON_VERSION in $LLAMA_VENV ($((SECONDS - t0)) s)"
}
