#!/usr/bin/env bash
# build.sh: builds Nomad and Consul from the sources of sources.tsv into
# $BENCHFLOW_STACK_DIR/bin, skipping what is already built there.
#   nomad   hashicorp/nomad v1.6.5: `go build` of the root package, no build tags (no
#           UI, no generated codec). The snapshot's missing blobs are left out; the
#           build is refused unless each of them is one the plain build does not use.
#   consul  arenadata/consul consul/v1.16.4 (the hashicorp/consul snapshot is too large
#           to fetch; the fork's tag is the same code).
# Go's module and build caches go under $BENCHFLOW_STACK_DIR/go (so that removing that
# folder frees everything the stack took), unless BENCHFLOW_STACK_GO_CACHES=default keeps
# Go's own (GOMODCACHE, GOCACHE). Building both needs about 7 GB free there: 3.4 GB of
# modules, 2.3 GB of build cache, 0.3 GB of binaries and the extracted sources; the
# build refuses to start with less (BENCHFLOW_STACK_MIN_FREE_GB, default 7). Release
# binaries of the same versions put in $BENCHFLOW_STACK_DIR/bin are used as they are
# (docs/gateway.md, "The short route").
# usage: build.sh [nomad|consul]...   (default: both; they build one after the other)
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
export GOFLAGS="-buildvcs=false -modcacherw"   # -modcacherw: rm -rf of the stack folder works
if [ "${BENCHFLOW_STACK_GO_CACHES:-}" != default ]; then
  export GOMODCACHE=$STACK/go/mod GOCACHE=$STACK/go/build
fi
MIN_FREE_GB=${BENCHFLOW_STACK_MIN_FREE_GB:-7}

# room: refuse to start a build with less than MIN_FREE_GB free where it writes
room() {
  local d free
  for d in "$STACK" "$(go env GOMODCACHE)" "$(go env GOCACHE)"; do
    mkdir -p "$d"
    free=$(df -Pk "$d" | awk 'NR == 2 {print int($4 / 1048576)}')
    [ "$free" -ge "$MIN_FREE_GB" ] ||
      die "$1: $free GB free on the filesystem of $d; building Nomad and Consul takes about $MIN_FREE_GB GB (Go modules, build cache, sources, binaries). Free some, point BENCHFLOW_STACK_DIR elsewhere, or set BENCHFLOW_STACK_MIN_FREE_GB to go on"
  done
}

# Blobs the hashicorp/nomad v1.6.5 snapshot lacks; none is compiled without build tags:
# bindata_assetfs.go is `//go:build ui` (stub_asset.go serves instead), structs.generated.go
# `//go:build codegen_generated`, the other two are test fixtures.
NOMAD_MAY_MISS="command/agent/bindata_assetfs.go
drivers/docker/test-resources/docker/busybox_glibc.tar
drivers/qemu/test-resources/linux-0.2.img
nomad/structs/structs.generated.go"

# lock PIECE: one build of PIECE at a time (a second build.sh would extract over the
# tree the first one compiles)
lock() {
  mkdir -p "$STACK"
  exec 9> "$STACK/build-$1.lock"
  flock -n 9 || die "$1: another build.sh is building it (lock $STACK/build-$1.lock)"
}

# source_tree NAME DIR: DIR holds NAME's source at its manifest commit; extracted once
# (the commit is kept in DIR.commit), so a rebuild after a failure reuses it
source_tree() {
  local commit; commit=$(row "$1" | cut -f4)
  if [ -d "$2" ] && [ "$(cat "$2.commit" 2>/dev/null)" = "$commit" ]; then log "$1: source in $2"; return; fi
  log "$1: extracting to $2"
  rm -f "$2.commit"; extract "$1" "$2"; echo "$commit" > "$2.commit"
}

build_nomad() {
  local out=$BIN/nomad src=$STACK/src/nomad-$NOMAD_VERSION
  if [ -x "$out" ] && "$out" version 2>/dev/null | grep -q "Nomad v$NOMAD_VERSION"; then log "nomad $NOMAD_VERSION: built already ($out)"; return; fi
  need go "the Go toolchain builds Nomad"
  lock nomad
  room nomad
  source_tree nomad "$src"
  if [ -f "$src.missing" ]; then
    local extra; extra=$(grep -vxF "$NOMAD_MAY_MISS" "$src.missing" || true)
    [ -z "$extra" ] || die "nomad: the source lacks files a build needs: $extra"
    log "nomad: left out (not in the snapshot, not needed without build tags): $(tr '\n' ' ' < "$src.missing")"
  fi
  mkdir -p "$BIN"; cd "$src"
  log "nomad $NOMAD_VERSION: go build (uptime: $(uptime | sed 's/.*load/load/'))"
  local t0=$SECONDS
  go build -p "$(nproc)" -trimpath -o "$out.tmp" .
  mv "$out.tmp" "$out"
  log "nomad $NOMAD_VERSION: built in $((SECONDS - t0)) s (uptime: $(uptime | sed 's/.*load/load/')): $("$out" version | head -1)"
}

build_consul() {
  local out=$BIN/consul src=$STACK/src/consul-$CONSUL_VERSION
  if [ -x "$out" ] && "$out" version 2>/dev/null | grep -q "Consul v$CONSUL_VERSION"; then log "consul $CONSUL_VERSION: built already ($out)"; return; fi
  need go "the Go toolchain builds Consul"
  lock consul
  room consul
  source_tree consul "$src"
  [ ! -f "$src.missing" ] || die "consul: the source lacks files: $(tr '\n' ' ' < "$src.missing")"
  mkdir -p "$BIN"; cd "$src"
  log "consul $CONSUL_VERSION: go build (uptime: $(uptime | sed 's/.*load/load/'))"
  local t0=$SECONDS
  go build -p "$(nproc)" -trimpath -o "$out.tmp" .
  mv "$out.tmp" "$out"
  log "consul $CONSUL_VERSION: built in $((SECONDS - t0)) s (uptime: $(uptime | sed 's/.*load/load/')): $("$out" version | head -1)"
}

what=${*:-nomad consul}
for w in $what; do
  case $w in
    nomad) build_nomad ;;
    consul) build_consul ;;
    *) die "build.sh: unknown piece '$w' (nomad, consul)" ;;
  esac
done
log "disk: $(du -sh "$STACK" 2>/dev/null | cut -f1) in $STACK$( [ "${BENCHFLOW_STACK_GO_CACHES:-}" = default ] && echo ", plus Go's own caches ($(go env GOMODCACHE), $(go env GOCACHE))")"
