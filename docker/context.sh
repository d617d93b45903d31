#!/usr/bin/env bash
# docker/context.sh DIR — the build context of the classroom images, made in DIR (empty or new)
# from the committed sources (git archive HEAD), without what students must not get: the
# lessons' reference solutions (*_solution.go; lessons/solutions/files/README.md). docker/build.sh
# uses it; docker/solutions_test.go checks it.
set -euo pipefail
dest="${1:?usage: docker/context.sh DIR}"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mkdir -p "$dest"
git archive --format=tar HEAD | tar -C "$dest" -x
find "$dest" -name '*_solution.go' -type f -delete
