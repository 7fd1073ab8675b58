#!/usr/bin/env bash
# build.sh: builds Caddy, the real HTTP/1.1 + HTTP/2 + HTTP/3 server the
# load generator's tests run against (engine/load caddy_test.go,
# cmd/benchflow caddy_e2e_test.go), from the Go module proxy into a cache
# outside the work tree, and prints the binary's path. Nothing is built when
# the cached binary already reports $CADDY_VERSION.
#   BENCHFLOW_CADDY_CACHE  the cache folder (default /var/cache/benchflow-caddy)
#   CADDY_VERSION          the release (default v2.11.9; the tests expect it)
# usage: build.sh            then: export BENCHFLOW_CADDY=$(build.sh | tail -1)
set -euo pipefail
CADDY_VERSION=${CADDY_VERSION:-v2.11.9}
CACHE=${BENCHFLOW_CADDY_CACHE:-/var/cache/benchflow-caddy}
BIN=$CACHE/caddy
log() { echo "[caddy $(date -u +%H:%M:%S)] $*" >&2; }
command -v go >/dev/null || { echo "build.sh: go not found (the Go toolchain builds Caddy)" >&2; exit 2; }
# The binary's release: `caddy version`, and the module its build info
# records (the CustomVersion below could name any release; this cannot).
built() {
  local v m
  v=$("$BIN" version 2>/dev/null | awk '{print $1}')
  m=$(go version -m "$BIN" 2>/dev/null | awk '$1 == "mod" && $2 == "github.com/caddyserver/caddy/v2" {print $3}')
  [ "$v" = "$m" ] && echo "$v" || echo "caddy version $v, module ${m:-none}"
}
if [ -x "$BIN" ] && [ "$(built)" = "$CADDY_VERSION" ]; then
  log "$CADDY_VERSION: cached in $BIN"
  echo "$BIN"; exit 0
fi
mkdir -p "$CACHE" || { echo "build.sh: cannot create $CACHE (set BENCHFLOW_CADDY_CACHE to a folder you can write)" >&2; exit 1; }
log "$CADDY_VERSION: building from the Go module proxy into $CACHE (minutes cold: dependencies are downloaded and compiled)"
# Outside any module (cd /), so the work tree's go.mod has no say; the
# build uses Caddy's own go.mod, as `go install pkg@version` always does.
cd /
# -buildvcs=false: "/" is no repository. Built as the main module, Caddy
# cannot find its own version in the build info (`caddy version` would say
# "unknown"): CustomVersion, its documented override, names the release.
GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOBIN=$CACHE \
  go install -trimpath -ldflags "-s -w -X github.com/caddyserver/caddy/v2.CustomVersion=$CADDY_VERSION" \
  "github.com/caddyserver/caddy/v2/cmd/caddy@$CADDY_VERSION"
got=$(built)
[ "$got" = "$CADDY_VERSION" ] || { echo "build.sh: built $BIN reports $got, not $CADDY_VERSION" >&2; exit 1; }
log "$CADDY_VERSION: done"
echo "$BIN"
