#!/usr/bin/env bash
# compare-outputs.sh OLD_BINARY NEW_BINARY: runs report (text, markdown,
# csv, json, --html), export (every table, csv and jsonl), compare
# (bundle vs reproduced) and reproduce --plan (text and json) with both
# binaries on every example bundle and prints the differences, to show that
# a refactoring changed no output (the counterpart of compare-plans.sh for
# what reads results). Both binaries run from the same path.
# Exit 1 when an output differs.
set -uo pipefail
[ $# = 2 ] || { echo "usage: $0 OLD_BINARY NEW_BINARY" >&2; exit 2; }
old=$(realpath "$1") new=$(realpath "$2")
cd "$(git rev-parse --show-toplevel)"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir -p "$out/old" "$out/new" "$out/bin"
tables="trials latency timeseries processes system network probes agents claims"
for side in old new; do
  if [ $side = old ]; then cp "$old" "$out/bin/benchflow"; else cp "$new" "$out/bin/benchflow"; fi
  b="$out/bin/benchflow"
  for dir in examples/*/bundle examples/*/reproduced; do
    [ -d "$dir" ] || continue
    k=$(echo "$dir" | tr '/' '_')
    for f in text markdown csv json; do
      timeout 120 "$b" report "$dir" --format $f >"$out/$side/$k.report.$f" 2>&1; echo "exit $?" >>"$out/$side/$k.report.$f"
    done
    timeout 120 "$b" report "$dir" --html "$out/$side/$k.html" >/dev/null 2>&1; echo "exit $?" >>"$out/$side/$k.html"
    for t in $tables; do
      for f in csv jsonl; do
        timeout 120 "$b" export "$dir" --table $t --format $f >"$out/$side/$k.export.$t.$f" 2>&1; echo "exit $?" >>"$out/$side/$k.export.$t.$f"
      done
    done
    case $dir in */bundle)
      timeout 120 "$b" reproduce "$dir" --plan >"$out/$side/$k.plan" 2>&1; echo "exit $?" >>"$out/$side/$k.plan"
      timeout 120 "$b" reproduce "$dir" --plan --json >"$out/$side/$k.planjson" 2>&1; echo "exit $?" >>"$out/$side/$k.planjson"
      r=${dir%/bundle}/reproduced
      if [ -d "$r" ]; then
        for f in text markdown csv json; do
          timeout 120 "$b" compare "$dir" "$r" --format $f >"$out/$side/$k.compare.$f" 2>&1; echo "exit $?" >>"$out/$side/$k.compare.$f"
        done
      fi;;
    esac
  done
  # README sections regenerated from bundles must be unchanged.
  for md in examples/*/README.md; do
    k=$(echo "$md" | tr '/' '_')
    timeout 120 "$b" report --update "$md" --check >"$out/$side/$k.check" 2>&1; echo "exit $?" >>"$out/$side/$k.check"
  done
done
# Temporary folders that reproduce --plan names differ from run to run.
sed -i -E "s#/tmp/benchflow-reproduce-[0-9]+#/tmp/benchflow-reproduce-N#g" "$out"/old/* "$out"/new/*
n=$(ls "$out/old" | wc -l)
if diff -r "$out/old" "$out/new" >"$out/diff"; then
  echo "compare-outputs: $n outputs identical"
else
  cat "$out/diff"; echo "compare-outputs: outputs differ (of $n)"; exit 1
fi
