#!/usr/bin/env bash
# docker/verify.sh — what `make docker-verify` runs: build both CPU classroom images — the full
# one (localhost/mhalab:cpu, with PyTorch) and the student one (localhost/mhalab:slim, without) —
# and check them from the outside, the way a teacher and a student use them. Needs podman (or
# docker) and root for podman; the full image took 18 min from nothing on 2 cores, the second
# shares every layer but the setup's.
#
#   docker/verify.sh [--no-build] [--only cpu|slim] [--skip CHECK]...
#
# Checks (each prints PASS/FAIL with the image; the script exits 1 if any failed):
#   static     go test ./docker/ (pins, setup as non-root, token-only Jupyter, hub config)
#   build      docker/build.sh cpu / slim (skipped with --no-build)
#   user       the image runs as a non-root user; prints ~/image-versions.txt
#   backends   `mhalab backends` in the image: go and xla:cpu available, offline (--network none)
#   jupyter    `docker run -p …` the default command: JupyterLab answers 403 without the token,
#              200 with the token from the log (/api/status and the /lab page), offers GoNB
#   notebooks  `make notebooks` in the image, offline; results copied to build/docker-verify/
#              (in the slim image the parity notebook runs on the committed fixtures)
#   torch      full: PyTorch imports; slim: there is none (the image is the student one)
#   generate   `mhalab generate --chat` in the image, offline: the setup step's SmolLM2 answers
#              "What is the capital of France?" with Paris (the model is in the image)
#   notebooks-xla  full image only: the same on the XLA CPU backend
#   hub        full image only, or the student image with --only slim (the same Dockerfile and
#              hub): docker/hub_test.py in the image,
#              as root: shared password and PAM, each with a throw-away student account (each
#              logs in, gets a server, runs a Go cell)
#   security   as hub: mhalab-notebook refuses `--ServerApp.token ""` (exit 2);
#              docker/notebook_security_test.py in the image (every spelling that would turn the
#              token or the XSRF check off: refused; with a token: 403 without it); /etc/mhalab is
#              root's, 0700; docker/hub_security_test.py as root with the image's JupyterHub
#              (each student's server under their own uid, hub state / students file / TLS key
#              unreadable by a student, HTTPS with a self-signed certificate, the clear-text
#              warning without one)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=1
flavours=(cpu slim)
skip=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	--no-build) build=0; shift ;;
	--only) flavours=("${2:?}"); shift 2 ;;
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

skipped() { local s; for s in ${skip[@]+"${skip[@]}"}; do [[ "$s" == "$1" ]] && return 0; done; return 1; }
# check NAME COMMAND...: runs COMMAND, logs to $out/<flavour>-NAME.log, records PASS/FAIL with
# the time.
check() {
	local name="$1" label="$flavour $1"
	shift
	if skipped "$name"; then
		results+=("SKIP $label")
		return 0
	fi
	echo "==> $label"
	local t0=$SECONDS rc
	"$@" 2>&1 | tee "$out/$flavour-$name.log"
	rc=${PIPESTATUS[0]}
	if [[ $rc == 0 ]]; then
		results+=("PASS $label ($((SECONDS - t0)) s)")
	else
		results+=("FAIL $label ($((SECONDS - t0)) s, exit $rc; log $out/$flavour-$name.log)")
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
	status="$(curl -s -o "$out/lab-page.html" -w '%{http_code}' "http://127.0.0.1:$port/lab?token=$tok")"
	echo "JupyterLab page /lab: HTTP $status, $(grep -c JupyterLab "$out/lab-page.html") mentions of JupyterLab"
	[[ "$status" == 200 ]] && grep -q JupyterLab "$out/lab-page.html" || return 1
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
	local backend="$1" dest="$PWD/$out/notebooks-$flavour" name="mhalab-verify-nb-$$" rc dir
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

# check_torch: the full image has PyTorch, the student image has none.
check_torch() {
	if [[ "$flavour" == slim ]]; then
		run_in "$image" bash -c 'test ! -e ~/.cache/mhalab/torch-venv && echo "no PyTorch venv (student image)"'
	else
		run_in --network none "$image" bash -c '~/.cache/mhalab/torch-venv/bin/python -c "import torch; print(\"torch\", torch.__version__)"'
	fi
}

check_generate() {
	run_in --network none "$image" bash -c 'set -e; go run ./cmd/mhalab generate --backend go --chat --max-new-tokens 12 "What is the capital of France?" | tee /tmp/g; grep -q Paris /tmp/g'
}

# The image's JupyterHub is the Jupyter venv's (/usr/local/bin/jupyterhub links to it); the hub
# tests run with that venv's Python (hub_test.py talks to the kernel with its jupyter_client).
hub_python='"$(dirname "$(readlink -f /usr/local/bin/jupyterhub)")/python"'

check_hub() {
	run_in --user root "$image" bash -c "$hub_python docker/hub_test.py --mode shared-password" &&
		run_in --user root "$image" bash -c "$hub_python docker/hub_test.py --mode pam"
}

# hub_security_test.py finds each student's server by its environment (/proc/PID/environ of
# another uid), which root may read only with CAP_SYS_PTRACE; container engines leave that
# capability out, hence --cap-add for the test's container (the hub does not need it, and the
# students' processes, under their own uids, get no capabilities: the test checks that they
# cannot read the hub's environment).
check_security() {
	local out rc
	out="$(run_in "$image" mhalab-notebook --ServerApp.token "" 2>&1)"
	rc=$?
	echo "mhalab-notebook --ServerApp.token \"\": exit $rc: $(grep 'refusing' <<<"$out")"
	[[ $rc == 2 ]] && grep -q 'refusing to start' <<<"$out" || return 1
	out="$(run_in "$image" stat -c '%a %U' /etc/mhalab)"
	echo "/etc/mhalab: $out"
	[[ "$out" == "700 root" ]] || return 1
	run_in "$image" python3 docker/notebook_security_test.py &&
		run_in --user root --cap-add SYS_PTRACE "$image" bash -c "python3 docker/hub_security_test.py --hub-python $hub_python"
}

flavour=all
check static go test -count=1 ./docker/
sizes=()
for flavour in "${flavours[@]}"; do
	image="localhost/mhalab:$flavour"
	if [[ $build == 1 ]]; then
		check build docker/build.sh "$flavour" --tag "$image"
	fi
	if "$engine" image inspect "$image" >/dev/null 2>&1; then
		check user check_user
		check backends check_backends
		check jupyter check_jupyter
		check torch check_torch
		check generate check_generate
		check notebooks check_notebooks go
		if [[ "$flavour" == cpu ]]; then
			check notebooks-xla check_notebooks xla:cpu
		fi
		# Both images have the same hub: checked in the full one, or in the student one when it is
		# the only one checked (--only slim).
		if [[ "$flavour" == cpu || " ${flavours[*]} " != *" cpu "* ]]; then
			check hub check_hub
			check security check_security
		fi
	else
		results+=("FAIL image $image not found (build it: make docker-$flavour)")
		failed=1
	fi
	sizes+=("$image $("$engine" image inspect --format '{{.Size}}' "$image" 2>/dev/null | awk '{printf "%.2f GB (%.0f bytes)", $1 / 1e9, $1}')")
done

echo
echo "==> docker/verify.sh: $((SECONDS - start)) s"
printf '    size: %s\n' "${sizes[@]}"
printf '    %s\n' "${results[@]}"
exit "$failed"
