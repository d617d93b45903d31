#!/usr/bin/env bash
# docker/build.sh — build an mhalab classroom image from the committed sources (git archive HEAD),
# with podman (or docker), on hosts with or without access to a container registry.
#
#   docker/build.sh cpu|slim|cuda [--base auto|registry|local|IMAGE] [--tag TAG] [-- EXTRA BUILD ARGS]
#
#   cpu    docker/Dockerfile: the full CPU image (with PyTorch for live parity)
#   slim   docker/Dockerfile with SETUP_SKIP=torch: the student image, without PyTorch (the
#          parity notebook uses the committed fixtures)
#   cuda   docker/Dockerfile.cuda
#
#   --base registry   the digest-pinned base of the Dockerfile (pulled from a registry)
#   --base local      a Debian bookworm base made here with debootstrap (docker/make-base.sh),
#                     referenced by its image ID; reused when it already exists
#   --base auto       registry if the pinned base is present or can be pulled, else local (default)
#   --base IMAGE      any image reference or ID
#   --tag TAG         default localhost/mhalab:cpu, :slim or :cuda
#
# The CUDA image's pinned base is nvidia/cuda; "--base local" builds it on the Debian base
# instead (everything but the GPU can be checked that way: the CUDA libraries come from pip).
# With podman, docker/containers.conf is used (runc, ulimits). When the host has a CA bundle
# (/etc/ssl/certs/ca-certificates.crt, or $MHALAB_BUILD_CA), it is passed to the build as the
# secret "build-ca" so that downloads work behind a TLS-inspecting proxy; it is not stored in
# the image (docker/with-build-ca). The uncommitted changes of the working tree are NOT in the
# image: commit first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
die() { printf 'docker/build.sh: %s\n' "$*" >&2; exit 1; }

[[ $# -ge 1 ]] || die "usage: docker/build.sh cpu|slim|cuda [--base auto|registry|local|IMAGE] [--tag TAG] [-- BUILD ARGS]"
flavour="$1"
shift
flavour_args=()
case "$flavour" in
cpu) dockerfile=docker/Dockerfile ;;
slim) dockerfile=docker/Dockerfile flavour_args=(--build-arg SETUP_SKIP=torch) ;;
cuda) dockerfile=docker/Dockerfile.cuda ;;
*) die "unknown image '$flavour': cpu, slim or cuda" ;;
esac
base=auto
tag="localhost/mhalab:$flavour"
extra=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	--base) base="${2:?--base needs a value}"; shift 2 ;;
	--tag) tag="${2:?--tag needs a value}"; shift 2 ;;
	--) shift; extra=("$@"); break ;;
	*) die "unknown argument '$1'" ;;
	esac
done

engine="${CONTAINER_ENGINE:-}"
if [[ -z "$engine" ]]; then
	if command -v podman >/dev/null; then engine=podman; else engine=docker; fi
fi
command -v "$engine" >/dev/null || die "neither podman nor docker found"
if [[ "$engine" == podman ]]; then
	export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/docker/containers.conf}"
fi

# The pinned base: the first ARG BASE= line of the Dockerfile.
pinned="$(sed -n 's/^ARG BASE=//p' "$dockerfile" | head -n 1)"
[[ -n "$pinned" ]] || die "$dockerfile has no ARG BASE="
local_base() {
	local name=localhost/mhalab-bookworm:base
	if ! "$engine" image inspect "$name" >/dev/null 2>&1; then
		[[ "$engine" == podman ]] || die "--base local needs podman (docker/make-base.sh imports into podman)"
		docker/make-base.sh "$name" >&2
	fi
	"$engine" image inspect --format '{{.Id}}' "$name"
}
case "$base" in
registry) base_ref="$pinned" ;;
local) base_ref="$(local_base)" ;;
auto)
	if "$engine" image inspect "$pinned" >/dev/null 2>&1 || timeout 120 "$engine" pull -q "$pinned" >/dev/null 2>&1; then
		base_ref="$pinned"
	else
		echo "docker/build.sh: cannot pull $pinned; using a local debootstrap base (docker/make-base.sh)"
		base_ref="$(local_base)"
	fi
	;;
*) base_ref="$base" ;;
esac

context="$(mktemp -d "${TMPDIR:-/var/tmp}/mhalab-context.XXXXXX")"
trap 'rm -rf -- "$context"' EXIT
docker/context.sh "$context" # committed sources, without the lessons' reference solutions
commit="$(git rev-parse --short HEAD)"
args=(--file "$context/$dockerfile" --tag "$tag" --build-arg "BASE=$base_ref" ${flavour_args[@]+"${flavour_args[@]}"}
	--label "org.opencontainers.image.revision=$commit" --label "org.opencontainers.image.source=mhalab")
ca="${MHALAB_BUILD_CA:-/etc/ssl/certs/ca-certificates.crt}"
[[ -s "$ca" ]] && args+=(--secret "id=build-ca,src=$ca")
[[ "$engine" == podman ]] && args+=(--layers)
if ! git diff --quiet HEAD -- 2>/dev/null; then
	echo "docker/build.sh: note: uncommitted changes are not in the image (building commit $commit)"
fi
echo "docker/build.sh: $engine build $dockerfile (commit $commit, base $base_ref) -> $tag"
t0=$SECONDS
"$engine" build "${args[@]}" "${extra[@]}" "$context"
echo "docker/build.sh: built $tag in $((SECONDS - t0)) s; size $("$engine" image inspect --format '{{.Size}}' "$tag" | awk '{printf "%.2f GB", $1 / 1e9}')"
