#!/usr/bin/env bash
# check-sources.sh [DIR]: checks a folder of sources against sources.tsv. DIR (default
# $BENCHFLOW_STACK_SOURCES) holds one entry per repository, found as any of
#   DIR/owner+name/repo   a git dir, as the search tool's `fetch github:owner/name` leaves it
#   DIR/owner+name        a git dir (e.g. git clone --bare) or an extracted tree
#   DIR/owner/name, DIR/name   a clone (with .git) or an extracted tree
# A git dir must hold the row's commit; blobs it lacks are listed (Nomad's four known
# ones are fine: build.sh leaves them out). An extracted tree cannot show its commit: it
# is taken as the row's ref, and said so. Prints one line per source and, for each
# missing one, how to get it; exit 1 if any is missing.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
SOURCES=${1:-$SOURCES}
[ -d "$SOURCES" ] || { echo "check-sources: no folder $SOURCES" >&2; exit 2; }

bad=0 n=0 trees=0
while IFS=$'\t' read -r name repo ref commit kind _; do
  n=$((n + 1))
  if ! where=$(locate "$repo"); then
    echo "MISSING  $name: $repo at $ref ($commit)"
    echo "         get it: fetch github:$repo   (then it is /work/.mirror/${repo/\//+}/repo; or: git clone --bare https://github.com/$repo $SOURCES/${repo/\//+} && git -C $SOURCES/${repo/\//+} fetch origin $ref)"
    bad=$((bad + 1)); continue
  fi
  kind_=${where%% *}; d=${where#* }
  if [ "$kind_" = tree ]; then
    echo "tree     $name: $d (an extracted tree: its commit cannot be checked; taken as $ref)"; trees=$((trees + 1)); continue
  fi
  if ! got=$(git --git-dir="$d" rev-parse -q --verify "$commit^{commit}" 2>/dev/null); then
    tagc=$(git --git-dir="$d" rev-parse -q --verify "$ref^{commit}" 2>/dev/null || true)
    echo "MISSING  $name: $d lacks commit $commit ($ref)${tagc:+; its $ref is $tagc, not the manifest commit}"
    echo "         get it: git --git-dir=$d fetch https://github.com/$repo $ref   (or fetch github:$repo again)"
    bad=$((bad + 1)); continue
  fi
  lacks=$(git --git-dir="$d" ls-tree -r "$got" | awk '$2 == "blob" {print $3}' | git --git-dir="$d" cat-file --batch-check | grep -c ' missing$' || true)
  note=""
  if [ "$lacks" -gt 0 ]; then
    note="; the snapshot lacks $lacks blob(s)"
    [ "$name" != nomad ] || note="$note, which build.sh leaves out if they are the four it knows"
  fi
  echo "ok       $name: $d at $ref ($(echo "$commit" | cut -c1-12))$note"
done < <(manifest)
echo "check-sources: $n sources, $((n - bad)) found ($trees as extracted trees), $bad missing"
[ "$bad" = 0 ]
