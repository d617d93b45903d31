#!/usr/bin/env bash
# docker/make-base.sh — build a Debian bookworm base image locally with debootstrap and import it
# into podman, for machines that cannot pull base images from a registry.
#
#   docker/make-base.sh [NAME]        (default NAME: localhost/mhalab-bookworm:base; needs root)
#   docker/make-base.sh --print-mirror
#
# The mirror is the one apt on this machine already uses, read from /etc/apt/sources.list.d/
# (deb822 *.sources or one-line *.list files) or /etc/apt/sources.list — nothing is hard-coded.
# --print-mirror prints it and exits ($MHALAB_APT_ETC replaces /etc/apt, for tests).
# The image ID printed last is what pins the base: pass it as --build-arg BASE=<ID>
# (`make docker-cpu` does). A registry build uses the digest-pinned debian:bookworm instead.
set -euo pipefail
NAME="${1:-localhost/mhalab-bookworm:base}"
SUITE=bookworm
APT_ETC="${MHALAB_APT_ETC:-/etc/apt}"

die() { printf 'make-base: %s\n' "$*" >&2; exit 1; }

# debian_mirror prints the first Debian archive URI (not the security archive) apt uses.
debian_mirror() {
	local f
	shopt -s nullglob
	for f in "$APT_ETC"/sources.list.d/*.sources; do
		# deb822: stanzas with "URIs:" and "Suites:"; take a stanza whose suites include bookworm.
		awk -v suite="$SUITE" '
			/^[[:space:]]*$/ { if (uri != "" && ok) print uri; uri = ""; ok = 0; next }
			/^URIs:/ { uri = $2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) ok = 1 }
			END { if (uri != "" && ok) print uri }' "$f"
	done
	for f in "$APT_ETC"/sources.list.d/*.list "$APT_ETC"/sources.list; do
		[[ -f "$f" ]] || continue
		awk -v suite="$SUITE" '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { if ($(i+1) == suite) print $i; break } }' "$f"
	done
}
MIRROR="$(debian_mirror | grep -v -- '-security' | head -n 1 || true)"
[[ -n "$MIRROR" ]] || die "no Debian $SUITE mirror found in $APT_ETC/sources.list{,.d/}"
if [[ "$NAME" == --print-mirror ]]; then
	echo "$MIRROR"
	exit 0
fi
[[ "$(id -u)" == 0 ]] || die "debootstrap needs root"
command -v debootstrap >/dev/null || die "debootstrap not found (apt-get install debootstrap)"
command -v podman >/dev/null || die "podman not found (apt-get install podman)"
echo "make-base: debootstrap --variant=minbase $SUITE from $MIRROR (the mirror apt uses here, $APT_ETC)"

work="$(mktemp -d /var/tmp/mhalab-base.XXXXXX)"
trap 'rm -rf -- "$work"' EXIT
t0=$SECONDS
debootstrap --variant=minbase "$SUITE" "$work/rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 ||
	{ tail -n 20 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
# Smaller and tidier: no apt lists or package cache in the base.
rm -rf "$work/rootfs/var/lib/apt/lists/"* "$work/rootfs/var/cache/apt/"*.bin
echo "make-base: rootfs $(du -sh "$work/rootfs" | cut -f1) in $((SECONDS - t0)) s"
tar --numeric-owner -C "$work/rootfs" -c . |
	podman import --quiet --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' - "$NAME" >/dev/null
id="$(podman image inspect --format '{{.Id}}' "$NAME")"
echo "make-base: imported $NAME, image ID sha256:$id"
echo "$id"
