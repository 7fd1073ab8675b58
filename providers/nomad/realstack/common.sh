# Shared by the scripts of this folder: paths, the manifest, helpers.
# shellcheck shell=bash
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/versions.env"
STACK=$BENCHFLOW_STACK_DIR
SOURCES=$BENCHFLOW_STACK_SOURCES
MANIFEST=$HERE/sources.tsv
BIN=$STACK/bin
RUN=$STACK/run
APISIX_HOME=$STACK/apisix-$APISIX_VERSION

# no_root_home: APISIX's CLI refuses to start from a folder under /root ("It is
# forbidden to run APISIX in the /root directory": its workers run as nobody)
no_root_home() {
  case $APISIX_HOME/ in
    /root/*) die "APISIX cannot run from $APISIX_HOME (under /root, which its workers, run as nobody, cannot read): set BENCHFLOW_STACK_DIR to a folder outside /root, e.g. /var/cache/benchflow-stack" ;;
  esac
}
log() { echo "[stack $(date -u +%H:%M:%S)] $*"; }
die() { echo "stack: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null || die "$1 not found ($2)"; }

# manifest: the rows of sources.tsv without comments: name repo ref commit kind copy
manifest() { grep -v '^#' "$MANIFEST" | grep -v '^[[:space:]]*$'; }
# row NAME: that row
row() { manifest | awk -F'\t' -v n="$1" '$1 == n' | head -1; }

# locate REPO: prints "git DIR" or "tree DIR" for owner/name in $SOURCES, or fails.
locate() {
  local repo=$1 o=${1%%/*} n=${1#*/} d
  for d in "$SOURCES/$o+$n/repo" "$SOURCES/$o+$n" "$SOURCES/$o/$n" "$SOURCES/$n"; do
    [ -e "$d" ] || continue
    if [ -f "$d/HEAD" ] && [ -d "$d/objects" ]; then echo "git $d"; return 0; fi
    if [ -d "$d/.git" ]; then echo "git $d/.git"; return 0; fi
    if [ -d "$d" ] && [ -n "$(ls -A "$d" 2>/dev/null)" ]; then echo "tree $d"; return 0; fi
  done
  return 1
}

# extract NAME DEST: puts the source of manifest row NAME at its ref into DEST (a fresh
# folder). From a git dir, blobs the snapshot lacks are left out and listed in
# DEST.missing (the caller decides whether that matters).
extract() {
  local name=$1 dest=$2 r repo ref commit where kind d
  r=$(row "$name"); [ -n "$r" ] || die "no row '$name' in $MANIFEST"
  repo=$(echo "$r" | cut -f2); ref=$(echo "$r" | cut -f3); commit=$(echo "$r" | cut -f4)
  where=$(locate "$repo") || die "source $repo not found under $SOURCES (run check-sources.sh $SOURCES)"
  kind=${where%% *}; d=${where#* }
  rm -rf "$dest" "$dest.missing"; mkdir -p "$dest"
  if [ "$kind" = tree ]; then cp -a "$d/." "$dest/"; return; fi
  local got; got=$(git --git-dir="$d" rev-parse -q --verify "$commit^{commit}" 2>/dev/null) ||
    die "$repo: commit $commit ($ref) is not in $d"
  local tmp; tmp=$(mktemp)
  git --git-dir="$d" ls-tree -r "$got" | awk -F'\t' '{split($1, a, " "); if (a[2] == "blob") print a[3] "\t" $2}' > "$tmp"
  cut -f1 "$tmp" | git --git-dir="$d" cat-file --batch-check | awk '$2 == "missing" {print $1}' |
    while read -r sha; do awk -F'\t' -v s="$sha" '$1 == s {print $2}' "$tmp"; done > "$dest.missing"
  local ex=(); while IFS= read -r p; do ex+=(":(exclude,literal)$p"); done < "$dest.missing"
  # git archive still reports each left-out missing blob as "invalid object": they are
  # listed in DEST.missing, so only other messages are shown
  git --git-dir="$d" archive --format=tar "$got" -- . "${ex[@]}" 2> >(grep -v '^error: \(invalid object\|cannot read\) ' >&2) | tar -x -C "$dest"
  # git archive leaves out what the tree's .gitattributes marks export-ignore
  # (lua-cjson's build scripts): those files are written from their blobs
  local sha p
  while IFS=$'\t' read -r sha p; do
    [ -e "$dest/$p" ] || [ -L "$dest/$p" ] || grep -qxF "$p" "$dest.missing" && continue
    mkdir -p "$dest/$(dirname "$p")"; git --git-dir="$d" cat-file blob "$sha" > "$dest/$p"
  done < "$tmp"
  local want_n got_n; want_n=$(( $(wc -l < "$tmp") - $(wc -l < "$dest.missing") ))
  got_n=$(find "$dest" \( -type f -o -type l \) | wc -l)
  [ "$got_n" -ge "$want_n" ] || die "$repo: extracted $got_n files of $want_n from $d"
  rm -f "$tmp"; [ -s "$dest.missing" ] || rm -f "$dest.missing"
}

# The processes up.sh starts, in start order; down.sh stops them in reverse.
COMPONENTS="etcd consul nomad apisix"
PIDS=$RUN/pids
LOGS=$RUN/logs
pid_of() { local f=$PIDS/$1.pid; [ -f "$f" ] && cat "$f"; }
alive() { local p; p=$(pid_of "$1") && [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }
# port_free PORT: nothing listens on 127.0.0.1:PORT (TCP)
port_free() { ! (exec 3<>"/dev/tcp/$BIND/$1") 2>/dev/null; }
# wait_http NAME URL SECONDS [CURL ARGS]: until URL answers 2xx, or fail naming the log
wait_http() {
  local name=$1 url=$2 secs=$3 i; shift 3
  for ((i = 0; i < secs * 10; i++)); do
    curl -fsS -o /dev/null --max-time 2 "$@" "$url" 2>/dev/null && return 0
    if [ "$name" != apisix ] && ! alive "$name"; then die "$name exited; see $LOGS/$name.log: $(tail -3 "$LOGS/$name.log" 2>/dev/null)"; fi
    sleep 0.1
  done
  die "$name did not answer $url within $secs s; see $LOGS/$name.log"
}
admin_key() { cat "$STACK/apisix-admin-key"; }
# env_lines: what the nomad provider, its acceptance tests and benchflow read, and
# BENCHFLOW_STACK_DIR, so that down.sh and check.sh in another shell find this stack
env_lines() {
  cat <<EOT
export BENCHFLOW_STACK_DIR=$STACK
export NOMAD_ADDR=http://$BIND:$NOMAD_HTTP_PORT
export CONSUL_HTTP_ADDR=$BIND:$CONSUL_HTTP_PORT
export APISIX_ADMIN=http://$BIND:$APISIX_ADMIN_PORT
export APISIX_GATEWAY=http://$BIND:$APISIX_PROXY_PORT
export APISIX_CONTROL=http://$BIND:$APISIX_CONTROL_PORT
export APISIX_ETCD=http://$BIND:$ETCD_CLIENT_PORT
export APISIX_PID_FILE=$APISIX_HOME/logs/nginx.pid
export APISIX_ADMIN_KEY=$(admin_key)
export NOMAD_BIN=$BIN/nomad
EOT
}
