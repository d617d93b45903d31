#!/usr/bin/env bash
# deploy/z2jh/singleuser-check.sh [IMAGE] — start the student image the way KubeSpawner starts it
# with deploy/z2jh/values.yaml, in docker or podman, and check it. Needs a container engine and
# the image (make docker-slim); no cluster, no network (--network none; the server shares the
# loopback of the stand-in hub below and nothing else).
#
#   deploy/z2jh/singleuser-check.sh localhost/mhalab:slim
#   ENGINE=podman NOTEBOOK=notebooks/04_mha.ipynb deploy/z2jh/singleuser-check.sh localhost/mhalab:cuda
#
# What KubeSpawner does, and this script too:
#   - an empty volume for the student (a new PVC is empty; Docker's named volumes would copy the
#     image's files in, so this uses an empty host folder) of group fsGid 100, setgid, mounted at
#     singleuser.storage.homeMountPath, /home/mha/mhalab; the process gets group 100 as well;
#   - first the init container mhalab-seed: the same image and uid, the same command as in
#     values.yaml (go test ./deploy/z2jh/ checks that they match), the volume at /seed;
#   - then the server: the image's ENTRYPOINT (tini) with the args `jupyterhub-singleuser`, as uid
#     1000, with the JUPYTERHUB_* variables JupyterHub 5.5 sets, singleuser.extraEnv, the CPU and
#     memory limits of values.yaml (2 CPUs, 4G), no capabilities, no privilege escalation;
#   - the hub's API at 127.0.0.1:8081 (JUPYTERHUB_API_URL): jupyterhub-singleuser >= 4 asks its hub
#     for its version at start and exits when no hub answers (5 tries, ~30 s). A stand-in hub (a
#     container of the same image running a few lines of Python, no network but the loopback
#     it shares with the server: --network container:…) answers GET /hub/api with the version of
#     the chart's hub (kubespawner-traits.yaml) and accepts the activity reports.
# Checks (each prints "ok" or "FAIL", the script exits 1 on any FAIL):
#   version    the image's jupyterhub-singleuser has the major version of the chart's hub
#   seed       the volume holds the repository (go.mod, notebooks/, lessons/) and the marker;
#              a second seeding leaves a student's edit alone
#   listen     the server listens on 0.0.0.0:8888 within 180 s
#   hub        the server asked the (stand-in) hub for its version and stayed up
#   api        GET /user/ada/api answers 200 with the server's version
#   hub-auth   GET /user/ada/lab (JupyterLab's page) redirects to the hub's login (the server is
#              not open)
#   uid        the server process runs as uid 1000, not root
#   kernel     the GoNB kernel spec is found by the server's Jupyter (jupyter kernelspec list)
#   notebook   $NOTEBOOK (default notebooks/01_qkv_projection.ipynb) runs in the student's copy,
#              in the container, under its memory limit (scripts/notebooks.py); NOTEBOOK=none skips
#   writes     `ENGINE diff`: the container changed nothing outside /home/mha and /tmp
#   volume     the files written in the volume belong to uid 1000
set -euo pipefail
image="${1:-localhost/mhalab:slim}"
engine="${ENGINE:-$(command -v podman || command -v docker || true)}"
[[ -n "$engine" ]] || { echo "singleuser-check: no podman or docker here" >&2; exit 2; }
# Podman with the repository's settings (runc, ulimits under the host's limits), as docker/build.sh
# and docker/verify.sh use it: without them podman fails here ("error setting rlimit type 7").
if [[ "$(basename "$engine")" == podman ]]; then
	export CONTAINERS_CONF="${CONTAINERS_CONF:-$(cd "$(dirname "$0")/../.." && pwd)/docker/containers.conf}"
fi
notebook="${NOTEBOOK:-notebooks/01_qkv_projection.ipynb}"
user=ada
prefix="/user/$user/"
# The seeding command of values.yaml (singleuser.initContainers[0].command[2]).
seed_cmd='test -e /seed/.mhalab-seeded || (cp -a -n /home/mha/mhalab/. /seed/ && touch /seed/.mhalab-seeded)'

# The chart's hub version (deploy/z2jh/kubespawner-traits.yaml: the chart's hub image).
hub_version="$(awk '$1 == "jupyterhub:" {print $2}' "$(dirname "$0")/kubespawner-traits.yaml")"
[[ -n "$hub_version" ]] || { echo "singleuser-check: no jupyterhub version in kubespawner-traits.yaml" >&2; exit 2; }
# The stand-in hub: GET /hub/api answers the version (header X-JupyterHub-Version, as JupyterHub
# does), POSTs (activity) get 200; every request is logged.
hub_stub='
import http.server, json, sys
version = sys.argv[1]
class Hub(http.server.BaseHTTPRequestHandler):
    def reply(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"version": version}).encode()
        self.send_response(200)
        self.send_header("X-JupyterHub-Version", version)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = reply
    def log_message(self, fmt, *args):
        print("stand-in hub:", fmt % args, flush=True)
http.server.HTTPServer(("127.0.0.1", 8081), Hub).serve_forever()
'

work="$(mktemp -d)"
name="mhalab-singleuser-check-$$"
cleanup() {
	# The server first: the stand-in hub's container is in use while the server shares its network.
	"$engine" rm -f "$name" >/dev/null 2>&1 || true
	"$engine" rm -f "$name-hub" >/dev/null 2>&1 || true
	rm -rf -- "$work"
}
trap cleanup EXIT
vol="$work/volume"
mkdir -p "$vol"
chown 1000:100 "$vol" 2>/dev/null || chmod 0777 "$vol"
chmod 2775 "$vol" 2>/dev/null || true

failed=0
ok() { echo "ok    $1"; }
fail() { echo "FAIL  $1"; failed=1; }
# Every container: no network (the server: only the stand-in hub's loopback), uid 1000, group 100.
common=(--user 1000 --group-add 100 --cap-drop ALL --security-opt no-new-privileges)

echo "singleuser-check: $image with $engine (the chart's hub: JupyterHub $hub_version)"
if have="$("$engine" run --rm --network none "${common[@]}" "$image" jupyterhub-singleuser --version 2>&1)" && [[ "${have%%.*}" == "${hub_version%%.*}" ]]; then
	ok "version (jupyterhub-singleuser $have, hub $hub_version)"
else
	fail "version: the image's jupyterhub-singleuser is '$have', the chart's hub $hub_version: the major versions must match"
fi
"$engine" run --rm --network none "${common[@]}" -v "$vol:/seed" --entrypoint /bin/sh "$image" -c "$seed_cmd"
if [[ -f "$vol/go.mod" && -d "$vol/notebooks" && -d "$vol/lessons" && -e "$vol/.mhalab-seeded" ]]; then
	echo "student edit" >"$vol/notebooks/README.md"
	"$engine" run --rm --network none "${common[@]}" -v "$vol:/seed" --entrypoint /bin/sh "$image" -c "$seed_cmd"
	if [[ "$(cat "$vol/notebooks/README.md")" == "student edit" ]]; then ok seed; else fail "seed (a second seeding overwrote a student's edit)"; fi
	git -C "$(dirname "$0")/../.." show HEAD:notebooks/README.md >"$vol/notebooks/README.md" 2>/dev/null || true
else
	fail "seed (the volume lacks go.mod, notebooks/, lessons/ or the marker)"
fi

token="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
"$engine" run -d --name "$name-hub" --network none "${common[@]}" "$image" python3 -c "$hub_stub" "$hub_version" >/dev/null
# The server shares the stand-in hub's network namespace (loopback only: still no network).
"$engine" run -d --name "$name" --network "container:$name-hub" "${common[@]}" --cpus 2 --memory 4g \
	-v "$vol:/home/mha/mhalab" \
	-e HOME=/home/mha -e MHALAB_DIR=/home/mha/mhalab -e GOMLX_NO_AUTO_INSTALL=1 -e GOTOOLCHAIN=local \
	-e JUPYTERHUB_API_TOKEN="$token" -e JPY_API_TOKEN="$token" \
	-e JUPYTERHUB_CLIENT_ID="jupyterhub-user-$user" -e JUPYTERHUB_USER="$user" -e JUPYTERHUB_SERVER_NAME= \
	-e JUPYTERHUB_HOST= -e JUPYTERHUB_BASE_URL=/ \
	-e JUPYTERHUB_API_URL=http://127.0.0.1:8081/hub/api \
	-e JUPYTERHUB_ACTIVITY_URL="http://127.0.0.1:8081/hub/api/users/$user/activity" \
	-e JUPYTERHUB_OAUTH_CALLBACK_URL="${prefix}oauth_callback" \
	-e JUPYTERHUB_OAUTH_SCOPES="[\"access:servers!server=$user/\"]" \
	-e JUPYTERHUB_OAUTH_ACCESS_SCOPES="[\"access:servers!server=$user/\"]" \
	-e JUPYTERHUB_OAUTH_CLIENT_ALLOWED_SCOPES='[]' \
	-e JUPYTERHUB_SERVICE_PREFIX="$prefix" -e JUPYTERHUB_SERVICE_URL="http://0.0.0.0:8888$prefix" \
	-e JUPYTERHUB_PUBLIC_URL= -e JUPYTERHUB_PUBLIC_HUB_URL= -e JUPYTERHUB_COOKIE_HOST_PREFIX_ENABLED=0 \
	-e JUPYTER_IMAGE="$image" -e JUPYTER_IMAGE_SPEC="$image" \
	-e MEM_GUARANTEE=2147483648 -e MEM_LIMIT=4294967296 -e CPU_GUARANTEE=0.5 -e CPU_LIMIT=2.0 \
	"$image" jupyterhub-singleuser >/dev/null

# Inside the container (its network is the stand-in hub's loopback): python3 is Debian's, in the image.
probe() { "$engine" exec "$name" python3 -c "$1"; }
listening=0
for _ in $(seq 180); do
	# 0.0.0.0:8888 in LISTEN state (0A) in /proc/net/tcp: 00000000:22B8
	if "$engine" exec "$name" grep -q ' 00000000:22B8 00000000:0000 0A ' /proc/net/tcp 2>/dev/null; then listening=1; break; fi
	sleep 1
done
if ((listening)); then ok "listen (0.0.0.0:8888)"; else fail "listen (nothing on 0.0.0.0:8888 after 180 s)"; "$engine" logs "$name" 2>&1 | tail -n 30; fi
hub_log="$("$engine" logs "$name-hub" 2>&1 || true)"
running="$("$engine" inspect --format '{{.State.Running}}' "$name" 2>/dev/null || true)"
if grep -q '"GET /hub/api ' <<<"$hub_log" && [[ "$running" == true ]]; then
	ok "hub (the server asked the stand-in hub for its version: $(grep -c '"GET /hub/api ' <<<"$hub_log") request(s); still running)"
else
	fail "hub: the server did not reach the stand-in hub or stopped (running: $running); stand-in hub's log: $(tail -n 5 <<<"$hub_log")"
fi

if out="$(probe "import json, urllib.request; r = urllib.request.urlopen('http://127.0.0.1:8888${prefix}api'); print(r.status, json.load(r)['version'])" 2>&1)"; then
	ok "api ($out)"
else
	fail "api: $out"
fi
redirect="$(probe "
import http.client
c = http.client.HTTPConnection('127.0.0.1', 8888); c.request('GET', '${prefix}lab'); r = c.getresponse()
print(r.status, r.getheader('Location'))" 2>&1 || true)"
case "$redirect" in
3*oauth2/authorize* | 3*/hub/login*) ok "hub-auth ($redirect)" ;;
*) fail "hub-auth: GET ${prefix}lab gave: $redirect" ;;
esac

uids="$("$engine" exec "$name" sh -c 'for p in /proc/[0-9]*; do if tr "\0" " " <$p/cmdline 2>/dev/null | grep -q jupyterhub-singleuser; then awk "/^Uid:/ {print \$2}" $p/status; fi; done' | sort -u | tr '\n' ' ' || true)"
if [[ "$uids" == "1000 " ]]; then ok "uid (1000)"; else fail "uid: the server runs as uid(s) '$uids'"; fi

if out="$("$engine" exec "$name" sh -c 'jupyter kernelspec list 2>/dev/null || "$("$MHALAB_DIR/scripts/jupyter_python.sh")" -m jupyter kernelspec list' 2>&1)" && grep -q gonb <<<"$out"; then
	ok "kernel (gonb)"
else
	fail "kernel: no GoNB kernel spec: $out"
fi

if [[ "$notebook" != none ]]; then
	if out="$("$engine" exec -w /home/mha/mhalab "$name" sh -c "\"\$(scripts/jupyter_python.sh)\" scripts/notebooks.py --no-html --out /tmp/nb $notebook" 2>&1)"; then
		ok "notebook ($(tail -n 1 <<<"$out"))"
	else
		fail "notebook $notebook: $(tail -n 20 <<<"$out")"
	fi
fi

# The engine's own entries are allowed: /etc/hosts, hostname, resolv.conf and the directory /etc
# itself (podman 4.3 lists "C /etc" for any container, even one that only sleeps); a file written
# under /etc would still be listed by its own path.
outside="$("$engine" diff "$name" | awk '{print $2}' | grep -vE '^/(home/mha|tmp)(/|$)' | grep -vE '^/(home|run|dev|etc|etc/(hosts|hostname|resolv\.conf))$' || true)"
if [[ -z "$outside" ]]; then ok "writes (only under /home/mha and /tmp)"; else fail "writes outside the home: $(tr '\n' ' ' <<<"$outside")"; fi

others="$(find "$vol" ! -uid 1000 -newer "$vol/.mhalab-seeded" | head -n 5)"
if [[ -z "$others" ]]; then ok "volume (files of uid 1000)"; else fail "volume: files not of uid 1000: $others"; fi

"$engine" logs "$name" >"$work/server.log" 2>&1 || true
if ((failed)); then
	echo "singleuser-check: FAILED; the server's log:"
	tail -n 40 "$work/server.log"
	exit 1
fi
echo "singleuser-check: all checks passed ($image)"
