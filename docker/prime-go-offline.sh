#!/usr/bin/env bash
# docker/prime-go-offline.sh — make the notebooks' first cell work without network (image builds).
#
# Each notebook starts with `go mod edit -replace github.com/mhalab/mhalab=… && go get
# github.com/janpfeifer/gonb@VERSION` in a fresh module GoNB creates. That module has no go.sum,
# so `go` checks every module it adds against Go's checksum database — over the network, even
# when the module cache already holds them. This script does the same once, while the build has
# network: a throwaway module like GoNB's that imports every package the notebooks import
# (read from notebooks/*.ipynb), then `go mod tidy`. The go command keeps the checksum database's
# answers in the module cache (cache/download/sumdb), and later runs find them there, offline.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$PWD"
# shellcheck source=../scripts/pins.env
source scripts/pins.env
: "${GONB_VERSION:?scripts/pins.env has no GONB_VERSION}"
work="$(mktemp -d)"
trap 'rm -rf -- "$work"' EXIT

python3 - notebooks/*.ipynb >"$work/imports" <<'PY'
import json, re, sys
found = set()
for path in sys.argv[1:]:
    for cell in json.load(open(path))["cells"]:
        if cell["cell_type"] == "code":
            found.update(re.findall(r'"([a-z0-9.-]+\.[a-z]+/[^"\s]+)"', "".join(cell["source"])))
print("\n".join(sorted(found)))
PY
cd "$work"
go mod init mhalab.notebook/prime >/dev/null 2>&1
go mod edit -replace "github.com/mhalab/mhalab=$repo" -require github.com/mhalab/mhalab@v0.0.0
go get "github.com/janpfeifer/gonb@$GONB_VERSION"
{
	printf 'package main\n\nimport (\n'
	sed 's/.*/\t_ "&"/' imports
	printf ')\n\nfunc main() {}\n'
} >main.go
go mod tidy
go build -o /dev/null .
echo "prime-go-offline: the modules of $(wc -l <imports) packages the notebooks import are checked; checksum database answers kept in $(go env GOMODCACHE)/cache/download/sumdb"
