#!/usr/bin/env bash
# docker/install-go.sh — install a pinned Go toolchain into /usr/local/go using only Debian's
# Go and the Go module proxy (Go's own download site is not needed).
#
#   docker/install-go.sh VERSION SUM       e.g. 1.26.8 h1:ZOmGe1OnfREDMIdb1Qi4G9JSuDPBLGExZMQ4nis1RXM=
#
# Go publishes every toolchain as the module golang.org/toolchain@v0.0.1-goVERSION.linux-amd64
# (the module GOTOOLCHAIN switching downloads). Debian bookworm's golang-go (1.19) is too old for
# GOTOOLCHAIN, but it downloads modules: `go mod download` fetches the toolchain module through
# GOPROXY, checks it against the checksum database (GOSUMDB), and this script also compares its
# hash with SUM (the "Sum" of `go mod download -json`). The module's files are a complete GOROOT;
# they are copied to /usr/local/go and the executables get their mode back (module zips do not
# keep it). Debian's golang-go is removed again. Runs as root, in image builds.
set -euo pipefail
die() { printf 'install-go: %s\n' "$*" >&2; exit 1; }
[[ $# == 2 ]] || die "usage: docker/install-go.sh VERSION SUM"
version="$1" want_sum="$2"
[[ "$(uname -m)" == x86_64 ]] || die "this installs linux-amd64 toolchains; this machine is $(uname -m)"
module="golang.org/toolchain@v0.0.1-go${version}.linux-amd64"
export DEBIAN_FRONTEND=noninteractive

installed_debian_go=0
if ! command -v go >/dev/null; then
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends golang-go ca-certificates >/dev/null
	installed_debian_go=1
fi
work="$(mktemp -d)"
trap 'rm -rf -- "$work"' EXIT
echo "install-go: go mod download $module (with $(go version | cut -d' ' -f3))"
GOPATH="$work/gopath" GOFLAGS=-modcacherw GO111MODULE=on \
	go mod download -json "$module" >"$work/download.json" ||
	die "go mod download $module failed: $(cat "$work/download.json")"
field() { sed -n "s/^[[:space:]]*\"$1\": \"\(.*\)\",\{0,1\}$/\1/p" "$work/download.json"; }
err="$(field Error)"
[[ -z "$err" ]] || die "go mod download $module: $err"
got_sum="$(field Sum)"
[[ "$got_sum" == "$want_sum" ]] || die "$module has hash $got_sum, pinned $want_sum"
dir="$(field Dir)"
[[ -x "$dir/bin" || -d "$dir/bin" ]] || die "$module has no bin/ in $dir"

rm -rf /usr/local/go
cp -a "$dir" /usr/local/go
chmod -R u+w,go-w /usr/local/go
chmod 0755 /usr/local/go/bin/* /usr/local/go/pkg/tool/linux_amd64/*
if [[ $installed_debian_go == 1 ]]; then
	apt-get purge -y -qq --auto-remove golang-go >/dev/null
	rm -rf /var/lib/apt/lists/*
fi
got="$(/usr/local/go/bin/go env GOVERSION)"
[[ "$got" == "go$version" ]] || die "/usr/local/go/bin/go reports $got, wanted go$version"
echo "install-go: /usr/local/go is $got ($want_sum)"
