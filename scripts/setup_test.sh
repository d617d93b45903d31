#!/usr/bin/env bash
# scripts/setup_test.sh — checks scripts/setup.sh, each case in its own temporary plugin and
# cache directories (the real installation is not touched). Every run of setup.sh here happens
# with a PATH of shims that lacks the GNU-only tools a Mac does not have (sha256sum, md5sum,
# readlink, realpath, stat, timeout, nproc, tac) and whose sed, sort, cp, mktemp, find, grep and
# date refuse GNU-only options (sed -i, sort -V, cp --parents, mktemp --tmpdir, find -printf,
# grep -P, date -d): the setup must work on macOS's BSD tools.
#
#   lint  setup.sh uses no bash >= 4 feature (macOS's /bin/bash is 3.2): no associative arrays,
#         namerefs, mapfile, ${x,,}, [[ -v ]], &>>, |&; arrays that may be empty are expanded
#         as ${A[@]+"${A[@]}"}. (A real bash 3.2 was not available to run it.)
#   functions (setup.sh sourced with MHALAB_SETUP_LIBRARY=1, under the shims):
#         xla_cpu_arch picks X86_64 for Linux x86_64/amd64, AARCH64 for Linux aarch64/arm64 and
#         nothing for macOS and others; xla_cpu_pins AARCH64 sets the aarch64 pins; every pinned
#         sha256 is 64 hex digits and the four plugin hashes differ; sha256_of without sha256sum;
#         version_ge; elf_machine on the x86_64 plugin, the aarch64 plugin and a text file
#   1. a download whose sha256 differs from the pin: deleted, exit 1, nothing installed
#   2. no network: exit 1, a message naming PyPI and the fix, nothing installed
#   3. a "plugin" that is not a PJRT plugin (sha256 pinned to match): exit 1, nothing installed
#   4. a corrupt cached wheel: deleted, fetched again (from a file:// URL), installed
#   5. a broken file at the plugin path: replaced by the pinned plugin
#   6. a different plugin that loads: kept, with a warning; --force replaces it
#   7. a second run: skips
#   8. Linux aarch64 (uname shim): the aarch64 wheel is chosen and fetched with pip's
#      --platform manylinux_2_27_aarch64 (from a local folder, no index), its sha256 and the
#      extracted .so's sha256 match the pins, the .so is an aarch64 ELF; it cannot load on this
#      x86-64 machine, so nothing is installed (loading it is scripts/arm64_qemu_check.sh's job)
#   9. pins that give the x86-64 wheel to aarch64: stopped by the ELF check, nothing installed
#  10. macOS (uname shim: Darwin arm64): xla-cpu says there is no plugin and succeeds; torch is
#      skipped by a plain setup and refused by --only torch, with the reason
#  11. no root (id shim: uid 1000): a missing C compiler stops the cc step with what to ask the
#      administrator (sudo apt-get install gcc libc6-dev) and runs no apt-get; on macOS it names
#      xcode-select --install
#  12. no Python >= 3.10: a plain setup warns and goes on; --only jupyter stops with how to get one
#  13. a Python without ensurepip (Debian without python3-venv): make_venv makes a venv with pip
#      from the pinned pip wheel (needs that wheel in the cache or PyPI's file host)
#  14. the optional step llama: not run by a plain setup; skipped offline when installed
#
# Cases 4-7 and 9 need the real x86-64 wheel in the cache, 8 the aarch64 wheel
# (${XDG_CACHE_HOME:-~/.cache}/mhalab/wheels/; pip download --platform manylinux_2_27_aarch64
# --only-binary=:all: --no-deps xla-cpu-pjrt==0.0.1 puts it there); without them they are
# skipped, saying so. Needs no network (13 uses it when the pip wheel is not cached).
# Usage: scripts/setup_test.sh
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SETUP="$REPO_ROOT/scripts/setup.sh"
# shellcheck source=pins.env
source "$REPO_ROOT/scripts/pins.env"
USER_WHEELS="${XDG_CACHE_HOME:-$HOME/.cache}/mhalab/wheels"
X86_WHEEL="$USER_WHEELS/$XLA_CPU_X86_64_WHEEL_FILE"
ARM_WHEEL="$USER_WHEELS/$XLA_CPU_AARCH64_WHEEL_FILE"
# Each case sets XDG_CACHE_HOME, which moves Go's default build cache: keep the real one.
GOCACHE="$(cd "$REPO_ROOT" && go env GOCACHE)"
export GOCACHE
case "$(uname -s)/$(uname -m)" in
Linux/x86_64) HOST=X86_64 ;;
Linux/aarch64) HOST=AARCH64 ;;
*) HOST="" ;;
esac

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
skip() { printf 'skip: %s\n' "$*"; }

# ---- the PATH of shims ------------------------------------------------------------------
# Every program of the real PATH, linked into one folder, except the GNU-only ones; wrappers
# for tools whose GNU-only options a script could use by habit.
SHIMS="$WORK/shims"
mkdir -p "$SHIMS"
GNU_ONLY=" sha1sum sha224sum sha256sum sha384sum sha512sum md5sum b2sum readlink realpath stat timeout nproc tac numfmt "
IFS=: read -r -a path_dirs <<<"$PATH"
for d in "${path_dirs[@]}"; do
	[[ -d "$d" ]] || continue
	for f in "$d"/*; do
		name="${f##*/}"
		[[ -x "$f" && ! -d "$f" && ! -e "$SHIMS/$name" ]] || continue
		[[ "$GNU_ONLY" == *" $name "* ]] && continue
		ln -s "$f" "$SHIMS/$name"
	done
done
# refusing NAME PATTERN...: a wrapper for NAME that fails, naming the option, on any argument
# matching one of the glob PATTERNs, and otherwise runs the real NAME.
refusing() {
	local name="$1" real
	shift
	real="$(command -v "$name")" || return 0
	rm -f "$SHIMS/$name"
	{
		printf '#!/bin/sh\nfor a in "$@"; do\n\tcase "$a" in\n'
		local p
		for p in "$@"; do printf '\t%s) echo "%s: $a is a GNU-only option (not on macOS)" >&2; exit 97 ;;\n' "$p" "$name"; done
		printf '\tesac\ndone\nexec %s "$@"\n' "$real"
	} >"$SHIMS/$name"
	chmod +x "$SHIMS/$name"
}
# python3 and python: the interpreters themselves (a pyenv shim would need readlink).
for py in python3 python; do
	real="$("$py" -c 'import sys; print(sys.executable)' 2>/dev/null)" || continue
	[[ -x "$real" ]] && ln -sf "$real" "$SHIMS/$py"
done
refusing sed '-i*' '--*'
refusing sort '-V' '--version-sort' '-*V*'
refusing cp '--parents' '-t' '--target-directory*'
refusing mktemp '--tmpdir*' '-p' '--suffix*'
refusing find '-printf' '-regextype'
refusing grep '-P' '--perl-regexp'
refusing date '-d' '--date*'
refusing du '--apparent-size' '-b'
SHIM_PATH="$SHIMS"
for tool in sha256sum readlink stat; do
	if PATH="$SHIM_PATH" command -v "$tool" >/dev/null 2>&1; then
		fail "shim PATH still has $tool"
	fi
done
# A uname that tells what FAKE_UNAME_S / FAKE_UNAME_M say (the rest from the real one), and an
# id that says uid FAKE_UID.
real_uname="$(command -v uname)"
real_id="$(command -v id)"
FAKE="$WORK/fake"
mkdir -p "$FAKE"
cat >"$FAKE/uname" <<EOF
#!/bin/sh
case "\$1" in
-s) echo "\${FAKE_UNAME_S:-\$($real_uname -s)}" ;;
-m) echo "\${FAKE_UNAME_M:-\$($real_uname -m)}" ;;
*) exec $real_uname "\$@" ;;
esac
EOF
cat >"$FAKE/id" <<EOF
#!/bin/sh
if [ "\$1" = -u ] && [ -n "\${FAKE_UID:-}" ]; then echo "\$FAKE_UID"; else exec $real_id "\$@"; fi
EOF
chmod +x "$FAKE/uname" "$FAKE/id"

# all_but STEP: every step of setup.sh but STEP, comma-separated (for --skip: a plain setup in
# which only STEP runs, not named with --only).
all_but() { bash "$SETUP" --list | awk -v s="$1" '$1 != s {printf "%s%s", sep, $1; sep = ","}'; }

# new_case NAME: fresh plugin and cache dirs, and a pins file copy in $CASE.
new_case() {
	CASE="$WORK/$1"
	mkdir -p "$CASE/plugins" "$CASE/cache/mhalab/wheels"
	cp "$REPO_ROOT/scripts/pins.env" "$CASE/pins.env"
}

# pin KEY VALUE: set KEY in the case's pins file (portable: no sed -i).
pin() {
	awk -v k="$1" -v v="$2" 'index($0, k "=") == 1 {print k "=" v; next} {print}' "$CASE/pins.env" >"$CASE/pins.env.new"
	mv "$CASE/pins.env.new" "$CASE/pins.env"
}

# run_setup ARGS...: run setup.sh (default: its xla-cpu step) for the case under the shim PATH,
# offline unless the case points the URL at a file. Sets RC and OUT. Extra environment: $ENV_EXTRA.
run_setup() {
	local args=("$@")
	[[ ${#args[@]} -gt 0 ]] || args=(--only xla-cpu)
	set +e
	OUT="$(env ${ENV_EXTRA:-} PATH="$FAKE:$SHIM_PATH" MHALAB_PINS_FILE="$CASE/pins.env" MHALAB_PLUGIN_DIR="$CASE/plugins" \
		XDG_CACHE_HOME="$CASE/cache" MHALAB_JUPYTER_VENV="$CASE/no-jupyter-venv" \
		PIP_NO_INDEX=1 PIP_FIND_LINKS="${FIND_LINKS:-}" bash "$SETUP" "${args[@]}" 2>&1)"
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
no_plugin() { [[ ! -e "$CASE/plugins/$XLA_CPU_PLUGIN_FILE" ]] && [[ -z "$(ls -A "$CASE/plugins")" ]]; }
hash_of() { python3 -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$1"; }
installed_hash() { hash_of "$CASE/plugins/$XLA_CPU_PLUGIN_FILE"; }

# make_wheel ZIP CONTENT: a zip holding CONTENT as the plugin member.
make_wheel() {
	python3 - "$1" "$XLA_CPU_WHEEL_MEMBER" "$2" <<'EOF'
import sys, zipfile
path, member, content = sys.argv[1:]
with zipfile.ZipFile(path, "w") as z:
    z.writestr(member, content)
EOF
}

# ---- lint: bash 3.2 ---------------------------------------------------------------------
OUT="$(grep -nE 'declare -[aA]*A|local -n|declare -n|mapfile|readarray|\$\{[A-Za-z_]+(,,|\^\^)|\[\[ -v |&>>|\|&|coproc|wait -n|\$\{[A-Za-z_]+@[QEPAa]\}' "$SETUP" || true)"
expect "lint: no bash >= 4 features in setup.sh" test -z "$OUT"
OUT="$(grep -nE '"\$\{[A-Za-z_]+\[@\]\}"' "$SETUP" | grep -vE '"\$\{STEPS\[@\]\}"|\[@\]\+"\$\{' || true)"
expect "lint: arrays that may be empty are expanded with \${A[@]+...}" test -z "$OUT"

# ---- functions ---------------------------------------------------------------------------
lib() { # lib SHELL-CODE: run code with setup.sh's functions, under the shim PATH
	env PATH="$FAKE:$SHIM_PATH" MHALAB_SETUP_LIBRARY=1 XDG_CACHE_HOME="$WORK/libcache" bash -c 's="$1" c="$2"; set --; source "$s"; eval "$c"' _ "$SETUP" "$1" 2>&1 || true # a failure shows in the output
}
OUT="$(lib 'for p in Linux/x86_64 Linux/amd64 Linux/aarch64 Linux/arm64 Darwin/arm64 Darwin/x86_64 Linux/riscv64 MINGW64_NT/x86_64; do
	printf "%s=%s " "$p" "$(xla_cpu_arch "${p%/*}" "${p#*/}" || echo none)"; done')"
expect "xla_cpu_arch: x86_64/amd64 -> X86_64, aarch64/arm64 -> AARCH64, macOS/others -> none ($OUT)" \
	test "$OUT" == "Linux/x86_64=X86_64 Linux/amd64=X86_64 Linux/aarch64=AARCH64 Linux/arm64=AARCH64 Darwin/arm64=none Darwin/x86_64=none Linux/riscv64=none MINGW64_NT/x86_64=none "
OUT="$(lib 'xla_cpu_pins AARCH64; echo "$XLA_CPU_WHEEL_FILE $XLA_CPU_WHEEL_PLATFORM $XLA_CPU_WHEEL_SHA256 $XLA_CPU_PLUGIN_SHA256"')"
expect "xla_cpu_pins AARCH64 sets the aarch64 wheel, platform and hashes" \
	test "$OUT" == "$XLA_CPU_AARCH64_WHEEL_FILE manylinux_2_27_aarch64 $XLA_CPU_AARCH64_WHEEL_SHA256 $XLA_CPU_AARCH64_PLUGIN_SHA256"
OUT="$XLA_CPU_X86_64_WHEEL_SHA256 $XLA_CPU_X86_64_PLUGIN_SHA256 $XLA_CPU_AARCH64_WHEEL_SHA256 $XLA_CPU_AARCH64_PLUGIN_SHA256 $PIP_BOOTSTRAP_SHA256"
expect "pins: every sha256 is 64 hex digits and all differ" \
	eval '[[ "$(printf "%s\n" $OUT | grep -cE "^[0-9a-f]{64}$")" == 5 && "$(printf "%s\n" $OUT | sort -u | wc -l | tr -d " ")" == 5 ]]'
printf 'some bytes\n' >"$WORK/bytes"
OUT="$(lib "sha256_of '$WORK/bytes'")"
expect "sha256_of without sha256sum (shasum/openssl/python) matches hashlib" test "$OUT" == "$(hash_of "$WORK/bytes")"
OUT="$(lib 'for p in 1.26.8:1.26 1.26:1.26 1.25.9:1.26 1.100:1.26 2.0:1.26 1.26rc1:1.26 1.9:1.10; do
	version_ge "${p%:*}" "${p#*:}" && printf "%s>= " "$p" || printf "%s< " "$p"; done')"
expect "version_ge without sort -V ($OUT)" test "$OUT" == "1.26.8:1.26>= 1.26:1.26>= 1.25.9:1.26< 1.100:1.26>= 2.0:1.26>= 1.26rc1:1.26>= 1.9:1.10< "
OUT="$(lib "elf_machine '$WORK/bytes'; elf_machine /bin/sh")"
expect "elf_machine: a text file is not ELF; /bin/sh is this machine's" \
	test "$OUT" == "not ELF
$(uname -m)"
if [[ -f "$ARM_WHEEL" ]]; then
	python3 - "$ARM_WHEEL" "$XLA_CPU_WHEEL_MEMBER" "$WORK/arm.so" <<'EOF'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
EOF
	OUT="$(lib "elf_machine '$WORK/arm.so'")"
	expect "elf_machine: the aarch64 plugin is aarch64" test "$OUT" == aarch64
	rm -f "$WORK/arm.so"
fi

if [[ -n "$HOST" ]]; then
	REAL_WHEEL="$USER_WHEELS/$(eval echo "\$XLA_CPU_${HOST}_WHEEL_FILE")"
	URL_KEY="XLA_CPU_${HOST}_WHEEL_URL"
	WHEEL_FILE="$(eval echo "\$XLA_CPU_${HOST}_WHEEL_FILE")"
	PLUGIN_SHA="$(eval echo "\$XLA_CPU_${HOST}_PLUGIN_SHA256")"

	# 1. Hash mismatch: the download (a fake wheel behind a file:// URL) does not match the pin.
	new_case mismatch
	make_wheel "$CASE/served.whl" "not the real plugin"
	pin "$URL_KEY" "file://$CASE/served.whl"
	run_setup
	expect "hash mismatch: exit 1, message, download deleted, nothing installed" \
		eval '[[ $RC == 1 ]] && contains "sha256 mismatch" && contains "nothing was installed" && no_plugin &&
			[[ -z "$(find "$CASE/cache" -name "*.whl")" ]]'

	# 2. No network: PyPI and the pinned URL unreachable.
	new_case offline
	pin "$URL_KEY" "http://127.0.0.1:9/$WHEEL_FILE"
	run_setup
	expect "no network: exit 1, names PyPI and the offline fix, nothing installed" \
		eval '[[ $RC == 1 ]] && contains "could not download xla-cpu-pjrt 0.0.1 from PyPI" && contains "Offline: copy" && no_plugin'

	# 3. Not a PJRT plugin: a wheel whose member is garbage, with pins matching it.
	new_case notpjrt
	make_wheel "$CASE/cache/mhalab/wheels/$WHEEL_FILE" "garbage, not an ELF file"
	pin "XLA_CPU_${HOST}_WHEEL_SHA256" "$(hash_of "$CASE/cache/mhalab/wheels/$WHEEL_FILE")"
	printf 'garbage, not an ELF file' >"$WORK/garbage"
	pin "XLA_CPU_${HOST}_PLUGIN_SHA256" "$(hash_of "$WORK/garbage")"
	run_setup
	expect "not a PJRT plugin: exit 1, go-xla check fails, nothing installed" \
		eval '[[ $RC == 1 ]] && contains "does not load with go-xla" && contains "is not a PJRT plugin" && no_plugin'

	if [[ ! -f "$REAL_WHEEL" ]]; then
		skip "cases 4-7 and 9 need $REAL_WHEEL (run scripts/setup.sh first)"
	else
		# 4. Corrupt cached wheel: deleted and downloaded again (here from a file:// URL).
		new_case corrupt
		printf 'corrupt' >"$CASE/cache/mhalab/wheels/$WHEEL_FILE"
		pin "$URL_KEY" "file://$REAL_WHEEL"
		run_setup
		expect "corrupt cached wheel: deleted, fetched again, installed" \
			eval '[[ $RC == 0 ]] && contains "wrong sha256; deleting it" && contains "ok: installed" && [[ "$(installed_hash)" == "$PLUGIN_SHA" ]]'

		# 7. A second run skips.
		run_setup
		expect "second run: skips" eval '[[ $RC == 0 ]] && contains "skipping"'

		# 5. A broken file where the plugin goes: replaced.
		new_case broken
		cp "$REAL_WHEEL" "$CASE/cache/mhalab/wheels/"
		printf 'broken' >"$CASE/plugins/$XLA_CPU_PLUGIN_FILE"
		run_setup
		expect "broken installed plugin: replaced" \
			eval '[[ $RC == 0 ]] && contains "does not load, replacing it" && [[ "$(installed_hash)" == "$PLUGIN_SHA" ]]'

		# 6. A different plugin that loads (the real one plus a trailing byte): kept; --force replaces.
		new_case foreign
		cp "$REAL_WHEEL" "$CASE/cache/mhalab/wheels/"
		python3 - "$REAL_WHEEL" "$XLA_CPU_WHEEL_MEMBER" "$CASE/plugins/$XLA_CPU_PLUGIN_FILE" <<'EOF'
import shutil, sys, zipfile
archive, member, out = sys.argv[1:]
with zipfile.ZipFile(archive) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
    dst.write(b"\0")
EOF
		run_setup
		expect "different working plugin: kept with a warning" \
			eval '[[ $RC == 0 ]] && contains "is not the pinned plugin" && contains "--force" && [[ "$(installed_hash)" != "$PLUGIN_SHA" ]]'
		run_setup --only xla-cpu --force
		expect "--force: replaced by the pinned plugin" eval '[[ $RC == 0 ]] && [[ "$(installed_hash)" == "$PLUGIN_SHA" ]]'
	fi
else
	skip "cases 1-7: this is $(uname -s) $(uname -m), which has no XLA CPU plugin"
fi

# 8. Linux aarch64, by a uname shim: wheel selection, pip --platform download, hashes, extraction.
if [[ ! -f "$ARM_WHEEL" ]]; then
	skip "case 8 needs $ARM_WHEEL (pip download --platform manylinux_2_27_aarch64 --only-binary=:all: --no-deps --dest $USER_WHEELS xla-cpu-pjrt==0.0.1)"
else
	new_case aarch64
	mkdir -p "$CASE/links"
	cp "$ARM_WHEEL" "$CASE/links/"
	[[ -f "$X86_WHEEL" ]] && cp "$X86_WHEEL" "$CASE/links/" # both on offer: the platform must choose
	FIND_LINKS="$CASE/links" ENV_EXTRA="FAKE_UNAME_M=aarch64" run_setup
	expect "aarch64: its wheel is picked, downloaded by pip --platform manylinux_2_27_aarch64, both sha256 match, the .so is aarch64; it cannot load on $(uname -m): nothing installed" \
		eval '[[ $RC == 1 ]] && contains "Linux aarch64: wheel $XLA_CPU_AARCH64_WHEEL_FILE" && contains "(manylinux_2_27_aarch64, with" &&
			contains "sha256 ok" && contains "ELF shared object for aarch64" && contains "does not load with go-xla" && no_plugin &&
			[[ "$(hash_of "$CASE/cache/mhalab/wheels/$XLA_CPU_AARCH64_WHEEL_FILE")" == "$XLA_CPU_AARCH64_WHEEL_SHA256" ]]'
fi

# 9. Pins that hand the x86-64 wheel to aarch64: the ELF check stops it before loading.
if [[ -f "$X86_WHEEL" ]]; then
	new_case swapped
	cp "$X86_WHEEL" "$CASE/cache/mhalab/wheels/"
	for k in WHEEL_FILE WHEEL_SHA256 PLUGIN_SHA256; do pin "XLA_CPU_AARCH64_$k" "$(eval echo "\$XLA_CPU_X86_64_$k")"; done
	ENV_EXTRA="FAKE_UNAME_M=aarch64" run_setup
	expect "x86-64 plugin pinned for aarch64: refused by the ELF check, nothing installed" \
		eval '[[ $RC == 1 ]] && contains "is built for x86_64, not for aarch64" && no_plugin'
fi

# 10. macOS (Darwin arm64), by a uname shim.
new_case macos
ENV_EXTRA="FAKE_UNAME_S=Darwin FAKE_UNAME_M=arm64" run_setup
expect "macOS: xla-cpu says there is no plugin on PyPI for macOS, exit 0, nothing installed" \
	eval '[[ $RC == 0 ]] && contains "no XLA CPU plugin for macOS" && contains "pure-Go backend" && no_plugin'
ENV_EXTRA="FAKE_UNAME_S=Darwin FAKE_UNAME_M=arm64 MHALAB_TORCH_VENV=$CASE/no-torch" run_setup --skip "$(all_but torch)"
expect "macOS: a plain setup skips torch with the reason, exit 0" \
	eval '[[ $RC == 0 ]] && contains "skipped: parity/requirements.txt pins" && contains "committed fixtures"'
ENV_EXTRA="FAKE_UNAME_S=Darwin FAKE_UNAME_M=arm64 MHALAB_TORCH_VENV=$CASE/no-torch" run_setup --only torch
expect "macOS: --only torch stops with the reason, exit 1" eval '[[ $RC == 1 ]] && contains "this is Darwin arm64"'

# 11. Not root, no C compiler: what to ask for, and no apt-get.
new_case nocc
ENV_EXTRA="FAKE_UID=1000 CC=no-such-cc" run_setup --only cc
expect "no root, no C compiler: exit 1, names sudo apt-get install gcc libc6-dev, runs no apt-get" \
	eval '[[ $RC == 1 ]] && contains "sudo apt-get install gcc libc6-dev" && contains "administrator" && ! contains "installing gcc"'
ENV_EXTRA="FAKE_UID=1000 CC=no-such-cc FAKE_UNAME_S=Darwin" run_setup --only cc
expect "macOS, no C compiler: names xcode-select --install" eval '[[ $RC == 1 ]] && contains "xcode-select --install"'

# 12. No Python >= 3.10 (MHALAB_PYTHON and PATH's pythons hidden): plain setup warns, --only stops.
new_case nopython
mkdir -p "$CASE/nopy"
for f in "$SHIMS"/*; do case "${f##*/}" in python*) ;; *) cp -P "$f" "$CASE/nopy/" ;; esac; done
saved_shims="$SHIM_PATH"
SHIM_PATH="$CASE/nopy"
run_setup --skip "$(all_but jupyter)"
expect "no Python: a plain setup warns about Jupyter and succeeds" eval '[[ $RC == 0 ]] && contains "needs Python >= 3.10"'
run_setup --only jupyter
expect "no Python: --only jupyter stops with how to get one (no root: conda, pyenv)" \
	eval '[[ $RC == 1 ]] && contains "needs Python >= 3.10" && contains "without root"'
SHIM_PATH="$saved_shims"

# 13. No ensurepip: venv --without-pip, then pip from the pinned wheel.
new_case noensurepip
if [[ -f "$USER_WHEELS/$PIP_BOOTSTRAP_FILE" ]]; then cp "$USER_WHEELS/$PIP_BOOTSTRAP_FILE" "$CASE/cache/mhalab/wheels/"; fi
set +e
OUT="$(env PATH="$FAKE:$SHIM_PATH" MHALAB_SETUP_LIBRARY=1 MHALAB_TEST_NO_ENSUREPIP=1 XDG_CACHE_HOME="$CASE/cache" \
	bash -c 's="$1" v="$2"; set --; source "$s"; make_venv "$(find_python)" "$v" && "$v/bin/python" -m pip --version' _ "$SETUP" "$CASE/venv" 2>&1)"
RC=$?
set -e
if [[ $RC != 0 && "$OUT" == *"could not download $PIP_BOOTSTRAP_FILE"* ]]; then
	skip "case 13: $PIP_BOOTSTRAP_FILE is not cached and PyPI's file host cannot be reached"
else
	expect "no ensurepip: a venv with pip ${PIP_BOOTSTRAP_FILE#pip-} from the pinned wheel, no root" \
		eval '[[ $RC == 0 ]] && contains "has no ensurepip" && contains "pip ${PIP_BOOTSTRAP_FILE:4:4}"'
fi

# 14. The optional step llama: a plain setup never runs it; --only llama, with llama-cpp-python
#     already importable in its venv (a fake python that says yes), skips it offline.
new_case llama
mkdir -p "$CASE/llama-venv/bin"
printf '#!/bin/sh\nexit 0\n' >"$CASE/llama-venv/bin/python"
chmod +x "$CASE/llama-venv/bin/python"
ENV_EXTRA="MHALAB_LLAMA_VENV=$CASE/llama-venv" run_setup --skip "$(all_but cc)"
expect "llama: a plain setup does not run the optional step" eval '[[ $RC == 0 ]] && ! contains "[optional] llama"'
ENV_EXTRA="MHALAB_LLAMA_VENV=$CASE/llama-venv" run_setup --only llama
expect "llama: --only llama with llama-cpp-python installed skips it, offline" \
	eval '[[ $RC == 0 ]] && contains "[optional] llama" && contains "ok: llama-cpp-python $LLAMA_CPP_PYTHON_VERSION in $CASE/llama-venv, skipping"'
ENV_EXTRA=""

printf 'setup_test: %d passed, %d failed\n' "$PASSED" "$FAILED"
[[ $FAILED == 0 ]]
