#!/usr/bin/env bash
# docker/verify.sh — what `make docker-verify` runs: build the CPU classroom image and check it
# from the outside, the way a teacher and a student use it. Needs podman (or docker) and root
# for podman; takes 10-20 minutes from nothing on 2 cores, a few minutes with a warm build cache.
#
#   docker/verify.sh [--no-build] [--image TAG] [--skip CHECK]...
#
# Checks (each prints PASS/FAIL; the script exits 1 if any failed):
#   static     go test ./docker/ (pins, setup as non-root, token-only Jupyter, hub config)
#   build      docker/build.sh cpu (skipped with --no-build)
#   user       the image runs as a non-root user; prints ~/image-versions.txt
#   backends   `mhalab backends` in the image: go and xla:cpu available, offline (--network none)
#   jupyter    `docker run -p …` the default command: 403 without the token, 200 with the token
#              from the log, the GoNB kernel offered
#   notebooks  `make notebooks` in the image, offline; results copied to build/docker-verify/
#   notebooks-xla  the same on the XLA CPU backend
#   hub        docker/hub_test.py in the image: shared password as the image user, and PAM with
#              a throw-away student account as root (each logs in, gets a server, runs a Go cell)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=1
image=localhost/mhalab:cpu
skip=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	--no-build) build=0; shift ;;
	--image) image="${2:?}"; shift 2 ;;
	--skip) skip+=("${2:?}"); shift 2 ;;
	*) echo "docker/verify.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
engine="${CONTAINER_ENGINE:-}"
[[ -n "$engine" ]] || { command -v podman >/dev/null && engine=podman || engine=docker; }
[[ "$engine" == podman ]] && export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/docker/containers.conf}"
out=build/docker-verify
mkdir -p "$out"
results=()
failed=0
start=$SECONDS

skipped() { local s; for s in "${skip[@]}"; do [[ "$s" == "$1" ]] && return 0; done; return 1; }
# check NAME COMMAND...: runs COMMAND, logs to $out/NAME.log, records PASS/FAIL with the time.
check() {
	local name="$1"
	shift
	if skipped "$name"; then
		results+=("SKIP $name")
		return 0
	fi
	echo "==> $name"
	local t0=$SECONDS rc
	"$@" 2>&1 | tee "$out/$name.log"
	rc=${PIPESTATUS[0]}
	if [[ $rc == 0 ]]; then
		results+=("PASS $name ($((SECONDS - t0)) s)")
	else
		results+=("FAIL $name ($((SECONDS - t0)) s, exit $rc; log $out/$name.log)")
		failed=1
	fi
	return "$rc"
}

run_in() { "$engine" run --rm "$@"; }

check_user() {
	run_in "$image" bash -c 'set -e; echo "uid $(id -u) ($(id -un))"; test "$(id -u)" != 0; cat ~/image-versions.txt'
}

check_backends() {
	run_in --network none "$image" bash -c 'set -e; go run ./cmd/mhalab backends | tee /tmp/b; grep -q "^xla:cpu *yes" /tmp/b; grep -q "^go *yes" /tmp/b'
}

check_jupyter() {
	local name="mhalab-verify-$$" port=18888 tok status
	"$engine" rm -f "$name" >/dev/null 2>&1
	"$engine" run -d --name "$name" -p "127.0.0.1:$port:8888" "$image" >/dev/null || return 1
	trap '"$engine" rm -f "$name" >/dev/null 2>&1' RETURN
	for _ in $(seq 60); do
		tok="$("$engine" logs "$name" 2>&1 | grep -o 'token=[0-9a-f]\{16,\}' | head -n 1 | cut -d= -f2)"
		[[ -n "$tok" ]] && curl -fs -o /dev/null "http://127.0.0.1:$port/api/status?token=$tok" && break
		sleep 1
	done
	[[ -n "$tok" ]] || { echo "no token in the log:"; "$engine" logs "$name"; return 1; }
	status="$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/api/status")"
	echo "without the token: HTTP $status"
	[[ "$status" == 403 ]] || return 1
	status="$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/api/status?token=$tok")"
	echo "with the token from the log (${#tok} characters): HTTP $status"
	[[ "$status" == 200 ]] || return 1
	curl -s "http://127.0.0.1:$port/api/kernelspecs?token=$tok" | python3 -c '
import json, sys
specs = json.load(sys.stdin)["kernelspecs"]
print("kernels offered:", ", ".join(sorted(specs)))
sys.exit(0 if "gonb" in specs else 1)'
}

# check_notebooks BACKEND: make notebooks in the image, offline (everything a notebook needs must
# be in the image); the results (executed notebooks, HTML, timings) are copied to
# build/docker-verify/notebooks/BACKEND (":" as "-"); a missing result fails the check.
check_notebooks() {
	local backend="$1" dest="$PWD/$out/notebooks" name="mhalab-verify-nb-$$" rc dir
	dir="${backend//:/-}" # scripts/notebooks.py writes xla:cpu's results to xla-cpu
	mkdir -p "$dest"
	rm -rf "${dest:?}/$dir"
	"$engine" rm -f "$name" >/dev/null 2>&1
	"$engine" run --name "$name" --network none "$image" make notebooks NOTEBOOKS_BACKEND="$backend"
	rc=$?
	"$engine" cp "$name:/home/mha/mhalab/build/notebooks/$dir" "$dest/$dir" && echo "results in $dest/$dir" || rc=1
	"$engine" rm -f "$name" >/dev/null
	return "$rc"
}

check_hub() {
	run_in "$image" docker/hub_test.py --mode shared-password &&
		run_in --user root "$image" docker/hub_test.py --mode pam
}

check static go test -count=1 ./docker/
if [[ $build == 1 ]]; then
	check build docker/build.sh cpu --tag "$image"
fi
if "$engine" image inspect "$image" >/dev/null 2>&1; then
	check user check_user
	check backends check_backends
	check jupyter check_jupyter
	check notebooks check_notebooks go
	check notebooks-xla check_notebooks xla:cpu
	check hub check_hub
else
	results+=("FAIL image $image not found (build it: make docker-cpu)")
	failed=1
fi

echo
size="$("$engine" image inspect --format '{{.Size}}' "$image" 2>/dev/null | awk '{printf "%.2f GB", $1 / 1e9}')"
echo "==> docker/verify.sh: $image (${size:-absent}), $((SECONDS - start)) s"
printf '    %s\n' "${results[@]}"
exit "$failed"
