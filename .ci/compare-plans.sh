#!/usr/bin/env bash
# compare-plans.sh OLD_BINARY NEW_BINARY: runs `validate`, `plan` and
# `plan --json` of both binaries on every .hcl and .star file of the
# repository (pipelines, examples, docs files, error files, testdata) and
# prints the differences, to show that a refactoring changed no output.
# Both binaries run from the same path, since plans may print it. Exit 1
# when an output differs.
#
#   git stash; go build -o /tmp/old ./cmd/benchflow; git stash pop
#   go build -o bin/benchflow ./cmd/benchflow
#   .ci/compare-plans.sh /tmp/old bin/benchflow
set -uo pipefail
[ $# = 2 ] || { echo "usage: $0 OLD_BINARY NEW_BINARY" >&2; exit 2; }
old=$(realpath "$1") new=$(realpath "$2")
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir -p "$out/old" "$out/new" "$out/bin"
mapfile -t files < <(git ls-files -co --exclude-standard '*.hcl' '*.star' | sort)
for side in old new; do
  if [ $side = old ]; then cp "$old" "$out/bin/benchflow"; else cp "$new" "$out/bin/benchflow"; fi
  for f in "${files[@]}"; do
    for cmd in "validate" "plan" "plan --json"; do
      key=$(echo "$f $cmd" | tr '/ ' '__')
      # shellcheck disable=SC2086 # $cmd is a verb and its flags
      timeout 60 "$out/bin/benchflow" $cmd "$f" >"$out/$side/$key" 2>&1
      echo "exit $?" >>"$out/$side/$key"
    done
  done
done
n=0 d=0
for k in $(ls "$out/old"); do
  n=$((n + 1))
  if ! cmp -s "$out/old/$k" "$out/new/$k"; then
    d=$((d + 1))
    echo "=== $k"
    diff "$out/old/$k" "$out/new/$k"
  fi
done
echo "compared $n outputs of ${#files[@]} files: $d differ"
[ $d = 0 ]
