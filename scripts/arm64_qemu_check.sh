#!/usr/bin/env bash
# scripts/arm64_qemu_check.sh — the Linux aarch64 XLA CPU plugin, checked on an x86-64 machine:
# the pinned aarch64 wheel (scripts/pins.env, XLA_CPU_AARCH64_*) is taken from the cache or
# fetched with pip download --platform manylinux_2_27_aarch64, both its sha256 and the .so's are
# checked, internal/plugincheck is cross-compiled for linux/arm64 (cgo, aarch64-linux-gnu-gcc),
# and it loads the plugin and computes 1²+2²+3² under qemu-user. Not part of make test (it needs
# Debian's cross toolchain and qemu, and minutes of emulation).
#
#   scripts/arm64_qemu_check.sh [--timeout SECONDS]
#
# Needs: qemu-aarch64-static or qemu-aarch64 (Debian: qemu-user-static), aarch64-linux-gnu-gcc
# (gcc-aarch64-linux-gnu, libc6-dev-arm64-cross) and the aarch64 C++ runtime the plugin links
# (libstdc++6-arm64-cross): sudo apt-get install qemu-user-static gcc-aarch64-linux-gnu
# libc6-dev-arm64-cross libstdc++6-arm64-cross.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
timeout_s=900
[[ "${1:-}" == --timeout ]] && timeout_s="${2:?--timeout needs seconds}"
die() { printf 'arm64_qemu_check: %s\n' "$*" >&2; exit 1; }

# setup.sh's functions (sha256_of, extract_member, elf_machine) and pins.
MHALAB_SETUP_LIBRARY=1 source "$REPO/scripts/setup.sh"
xla_cpu_pins AARCH64

qemu="$(command -v qemu-aarch64-static || command -v qemu-aarch64 || true)"
[[ -n "$qemu" ]] || die "no qemu-aarch64(-static): apt-get install qemu-user-static"
command -v aarch64-linux-gnu-gcc >/dev/null || die "no aarch64-linux-gnu-gcc: apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross"
sysroot=/usr/aarch64-linux-gnu
[[ -e "$sysroot/lib/libstdc++.so.6" ]] || die "no $sysroot/lib/libstdc++.so.6: apt-get install libstdc++6-arm64-cross"

work="$(mktemp -d "${TMPDIR:-/tmp}/mhalab-arm64.XXXXXX")"
trap 'rm -rf -- "$work"' EXIT
wheel="$WHEEL_DIR/$XLA_CPU_WHEEL_FILE"
if [[ ! -f "$wheel" || "$(sha256_of "$wheel")" != "$XLA_CPU_WHEEL_SHA256" ]]; then
	echo "arm64_qemu_check: pip download --platform $XLA_CPU_WHEEL_PLATFORM $XLA_CPU_WHEEL_PACKAGE==$XLA_CPU_WHEEL_VERSION"
	mkdir -p "$WHEEL_DIR"
	py="$(pip_python)" || die "no Python with pip"
	"$py" -m pip download -q --no-deps --only-binary=:all: --platform "$XLA_CPU_WHEEL_PLATFORM" --dest "$work" \
		"$XLA_CPU_WHEEL_PACKAGE==$XLA_CPU_WHEEL_VERSION" || die "pip download failed"
	mv -f "$work/$XLA_CPU_WHEEL_FILE" "$wheel"
fi
got="$(sha256_of "$wheel")"
[[ "$got" == "$XLA_CPU_WHEEL_SHA256" ]] || die "wheel sha256 $got, pinned $XLA_CPU_WHEEL_SHA256"
echo "arm64_qemu_check: wheel $wheel: sha256 ok"
mkdir -p "$work/plugins"
so="$work/plugins/$XLA_CPU_PLUGIN_FILE"
extract_member "$wheel" "$XLA_CPU_WHEEL_MEMBER" "$so"
got="$(sha256_of "$so")"
[[ "$got" == "$XLA_CPU_PLUGIN_SHA256" ]] || die ".so sha256 $got, pinned $XLA_CPU_PLUGIN_SHA256"
[[ "$(elf_machine "$so")" == aarch64 ]] || die "the .so is $(elf_machine "$so"), not aarch64"
echo "arm64_qemu_check: $XLA_CPU_WHEEL_MEMBER: sha256 ok, ELF aarch64"

t0=$SECONDS
echo "arm64_qemu_check: go build (GOARCH=arm64, cgo with aarch64-linux-gnu-gcc) ./internal/plugincheck"
(cd "$REPO" && CGO_ENABLED=1 GOOS=linux GOARCH=arm64 CC=aarch64-linux-gnu-gcc go build -o "$work/plugincheck" ./internal/plugincheck) ||
	die "cross build failed"
echo "arm64_qemu_check: built in $((SECONDS - t0)) s: $(elf_machine "$work/plugincheck") executable"

t0=$SECONDS
echo "arm64_qemu_check: $qemu -L $sysroot plugincheck xla:cpu (PJRT_PLUGIN_LIBRARY_PATH=$work/plugins)"
set +e
PJRT_PLUGIN_LIBRARY_PATH="$work/plugins" MHALAB_PLUGIN_DIR="$work/plugins" GOMLX_NO_AUTO_INSTALL=1 HOME="$work" \
	timeout "$timeout_s" "$qemu" -L "$sysroot" "$work/plugincheck" xla:cpu 2>&1 | tail -n 20
rc=${PIPESTATUS[0]}
set -e
echo "arm64_qemu_check: exit $rc after $((SECONDS - t0)) s under qemu-user"
[[ $rc == 0 ]] || die "the aarch64 plugin did not load and compute under qemu (exit $rc)"
echo "arm64_qemu_check: ok — the pinned aarch64 plugin loads with go-xla (linux/arm64) and computes, under $qemu"
