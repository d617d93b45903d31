#!/usr/bin/env bash
# scripts/setup_test.sh — checks scripts/setup.sh's xla-cpu step on bad input, each case in
# its own temporary plugin and cache directories (the real installation is not touched):
#
#   1. a download whose sha256 differs from the pin: deleted, exit 1, nothing installed
#   2. no network: exit 1, a message naming PyPI and the fix, nothing installed
#   3. a "plugin" that is not a PJRT plugin (sha256 pinned to match): exit 1, nothing installed
#   4. a corrupt cached wheel: deleted, fetched again (from a file:// URL), installed
#   5. a broken file at the plugin path: replaced by the pinned plugin
#   6. a different plugin that loads: kept, with a warning; --force replaces it
#   7. a second run: skips
#
# Cases 4-7 need the real wheel in the cache (scripts/setup.sh puts it there); without it
# they are skipped. Needs no network. Usage: scripts/setup_test.sh
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SETUP="$REPO_ROOT/scripts/setup.sh"
# shellcheck source=pins.env
source "$REPO_ROOT/scripts/pins.env"
REAL_WHEEL="${XDG_CACHE_HOME:-$HOME/.cache}/mhalab/wheels/$XLA_CPU_WHEEL_FILE"
# Each case sets XDG_CACHE_HOME, which moves Go's default build cache: keep the real one.
GOCACHE="$(cd "$REPO_ROOT" && go env GOCACHE)"
export GOCACHE

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

# new_case NAME: fresh plugin and cache dirs, and a pins file copy in $CASE.
new_case() {
	CASE="$WORK/$1"
	mkdir -p "$CASE/plugins" "$CASE/cache/mhalab/wheels"
	cp "$REPO_ROOT/scripts/pins.env" "$CASE/pins.env"
}

# pin KEY VALUE: set KEY in the case's pins file.
pin() { sed -i "s|^$1=.*|$1=$2|" "$CASE/pins.env"; }

# run_setup ARGS...: run the xla-cpu step of setup.sh for the case, offline unless the case
# points the URL at a file. Sets RC and OUT.
run_setup() {
	set +e
	OUT="$(MHALAB_PINS_FILE="$CASE/pins.env" MHALAB_PLUGIN_DIR="$CASE/plugins" XDG_CACHE_HOME="$CASE/cache" \
		PIP_NO_INDEX=1 PIP_FIND_LINKS="" bash "$SETUP" --only xla-cpu "$@" 2>&1)"
	RC=$?
	set -e
}

plugin="$XLA_CPU_PLUGIN_FILE"
expect() { # expect DESCRIPTION CONDITION...
	local what="$1"
	shift
	if "$@"; then pass "$what"; else
		fail "$what"
		printf '%s\n' "$OUT" | sed 's/^/      | /'
	fi
}
contains() { [[ "$OUT" == *"$1"* ]]; }
no_plugin() { [[ ! -e "$CASE/plugins/$plugin" ]] && [[ -z "$(ls -A "$CASE/plugins")" ]]; }

# make_wheel ZIP CONTENT: a zip holding CONTENT as the plugin member.
make_wheel() {
	python3 - "$1" "$XLA_CPU_WHEEL_MEMBER" "$2" <<'EOF'
import sys, zipfile
path, member, content = sys.argv[1:]
with zipfile.ZipFile(path, "w") as z:
    z.writestr(member, content)
EOF
}

# 1. Hash mismatch: the download (a fake wheel behind a file:// URL) does not match the pin.
new_case mismatch
make_wheel "$CASE/served.whl" "not the real plugin"
pin XLA_CPU_WHEEL_URL "file://$CASE/served.whl"
run_setup
expect "hash mismatch: exit 1, message, download deleted, nothing installed" \
	eval '[[ $RC == 1 ]] && contains "sha256 mismatch" && contains "nothing was installed" && no_plugin &&
		[[ -z "$(find "$CASE/cache" -name "*.whl")" ]]'

# 2. No network: PyPI and the pinned URL unreachable.
new_case offline
pin XLA_CPU_WHEEL_URL "http://127.0.0.1:9/$XLA_CPU_WHEEL_FILE"
run_setup
expect "no network: exit 1, names PyPI and the offline fix, nothing installed" \
	eval '[[ $RC == 1 ]] && contains "could not download xla-cpu-pjrt 0.0.1 from PyPI" && contains "Offline: copy" && no_plugin'

# 3. Not a PJRT plugin: a wheel whose member is garbage, with pins matching it.
new_case notpjrt
make_wheel "$CASE/cache/mhalab/wheels/$XLA_CPU_WHEEL_FILE" "garbage, not an ELF file"
pin XLA_CPU_WHEEL_SHA256 "$(sha256sum "$CASE/cache/mhalab/wheels/$XLA_CPU_WHEEL_FILE" | cut -d' ' -f1)"
pin XLA_CPU_PLUGIN_SHA256 "$(printf 'garbage, not an ELF file' | sha256sum | cut -d' ' -f1)"
run_setup
expect "not a PJRT plugin: exit 1, go-xla check fails, nothing installed" \
	eval '[[ $RC == 1 ]] && contains "does not load with go-xla" && contains "is not a PJRT plugin" && no_plugin'

if [[ ! -f "$REAL_WHEEL" ]]; then
	printf 'skip: cases 4-7 need %s (run scripts/setup.sh first)\n' "$REAL_WHEEL"
else
	# 4. Corrupt cached wheel: deleted and downloaded again (here from a file:// URL).
	new_case corrupt
	printf 'corrupt' >"$CASE/cache/mhalab/wheels/$XLA_CPU_WHEEL_FILE"
	pin XLA_CPU_WHEEL_URL "file://$REAL_WHEEL"
	run_setup
	expect "corrupt cached wheel: deleted, fetched again, installed" \
		eval '[[ $RC == 0 ]] && contains "wrong sha256; deleting it" && contains "ok: installed" &&
			[[ "$(sha256sum "$CASE/plugins/$plugin" | cut -d" " -f1)" == "$XLA_CPU_PLUGIN_SHA256" ]]'

	# 7. A second run skips.
	run_setup
	expect "second run: skips" eval '[[ $RC == 0 ]] && contains "skipping"'

	# 5. A broken file where the plugin goes: replaced.
	new_case broken
	cp "$REAL_WHEEL" "$CASE/cache/mhalab/wheels/"
	printf 'broken' >"$CASE/plugins/$plugin"
	run_setup
	expect "broken installed plugin: replaced" \
		eval '[[ $RC == 0 ]] && contains "does not load, replacing it" &&
			[[ "$(sha256sum "$CASE/plugins/$plugin" | cut -d" " -f1)" == "$XLA_CPU_PLUGIN_SHA256" ]]'

	# 6. A different plugin that loads (the real one plus a trailing byte): kept; --force replaces.
	new_case foreign
	cp "$REAL_WHEEL" "$CASE/cache/mhalab/wheels/"
	python3 - "$REAL_WHEEL" "$XLA_CPU_WHEEL_MEMBER" "$CASE/plugins/$plugin" <<'EOF'
import shutil, sys, zipfile
archive, member, out = sys.argv[1:]
with zipfile.ZipFile(archive) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
    dst.write(b"\0")
EOF
	run_setup
	expect "different working plugin: kept with a warning" \
		eval '[[ $RC == 0 ]] && contains "is not the pinned plugin" && contains "--force" &&
			[[ "$(sha256sum "$CASE/plugins/$plugin" | cut -d" " -f1)" != "$XLA_CPU_PLUGIN_SHA256" ]]'
	run_setup --force
	expect "--force: replaced by the pinned plugin" \
		eval '[[ $RC == 0 ]] && [[ "$(sha256sum "$CASE/plugins/$plugin" | cut -d" " -f1)" == "$XLA_CPU_PLUGIN_SHA256" ]]'
fi

printf 'setup_test: %d passed, %d failed\n' "$PASSED" "$FAILED"
[[ $FAILED == 0 ]]
