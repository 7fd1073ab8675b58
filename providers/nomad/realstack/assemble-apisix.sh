#!/usr/bin/env bash
# assemble-apisix.sh: puts APISIX 3.9.1 together on Debian's nginx + Lua packages in
# $BENCHFLOW_STACK_DIR/apisix-3.9.1, from the sources of sources.tsv:
#   1. the Debian packages of versions.env (installed with apt-get when run as root);
#   2. APISIX's tree at its tag, with one edit: ext-plugin/init.lua loads ngx.pipe with
#      pcall (Debian's lua-nginx-module lacks OpenResty's patch for it; without the pcall
#      no worker starts). ext-plugin itself is not in the plugin list;
#   3. every Lua library of sources.tsv copied into deps/share/lua/5.1 as its row says,
#      and the C parts built with gcc into deps/lib/lua/5.1 (radixtree and balancer and
#      signal with their own Makefiles, lua-cjson and lua-protobuf against LuaJIT's
#      headers);
#   4. our stand-ins (standins/resty/*.lua: resty.ngxvar, resty.ctxdump) and aliases:
#      resty.X for each nginx.X module Debian's lua-nginx-* packages install (resty.string,
#      resty.random, resty.sha*, resty.aes, resty.cookie, resty.redis, resty.dns.resolver,
#      resty.websocket.*), rex_pcre for Debian's rex_pcre2;
#   5. bin/openresty: a wrapper that runs /usr/sbin/nginx (APISIX's CLI calls `openresty`);
#   6. conf/config.yaml from apisix-config.yaml, with a fresh admin key (kept in
#      $BENCHFLOW_STACK_DIR/apisix-admin-key) and the plugin list below;
#   7. a check that every module APISIX's core and those plugins require is found.
# Idempotent: a second run with the same inputs says so and changes nothing.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

# The plugins APISIX loads: every one of them was loaded and its requires resolved on
# this stack (the default list names plugins whose libraries are not here).
PLUGINS="real-ip client-control proxy-control fault-injection serverless-pre-function
cors ip-restriction ua-restriction referer-restriction uri-blocker request-validation
basic-auth key-auth consumer-restriction forward-auth proxy-mirror proxy-rewrite workflow
api-breaker limit-conn limit-count limit-req gzip traffic-split redirect response-rewrite
prometheus echo http-logger tcp-logger udp-logger file-logger serverless-post-function"

SHARE=$APISIX_HOME/deps/share/lua/5.1
CLIB=$APISIX_HOME/deps/lib/lua/5.1
LUAJIT_INC=/usr/include/luajit-2.1

stamp() { cat "$MANIFEST" "$HERE/versions.env" "$HERE/apisix-config.yaml" "$0" "$HERE"/standins/resty/*.lua | sha256sum | cut -c1-16; }

packages() {
  local missing="" p
  for p in $DEBIAN_PACKAGES; do
    [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing="$missing $p"
  done
  [ -z "$missing" ] && { log "debian packages: all $(echo $DEBIAN_PACKAGES | wc -w) installed"; return; }
  [ "$(id -u)" = 0 ] || die "install these Debian packages first (as root): apt-get install -y$missing"
  log "debian packages: installing$missing"
  local t0=$SECONDS
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
  log "debian packages: installed in $((SECONDS - t0)) s"
}

# copy_lib NAME SRC: the row's copy spec, each entry FROM (into the root of SHARE; FROM/
# copies FROM's contents there).
copy_lib() {
  local name=$1 src=$2 spec e
  spec=$(row "$name" | cut -f6)
  for e in $spec; do
    case $e in
      */) [ -d "$src/$e" ] || die "$name: no folder $e in its source"; cp -a "$src/$e." "$SHARE/" ;;
      *) [ -e "$src/$e" ] || die "$name: no $e in its source"; cp -a "$src/$e" "$SHARE/" ;;
    esac
  done
}

build_c() {
  local name=$1 src=$2
  case $name in
    lua-resty-radixtree)
      # its own flags: -DBUILDING_SO with -fvisibility=hidden only at link (an extra
      # -fvisibility=hidden at compile time hides the symbols the FFI looks up)
      make -s -C "$src" OR_EXEC=/bin/true LUAROCKS_VER= librestyradixtree.so
      cp "$src/librestyradixtree.so" "$CLIB/" ;;
    lua-resty-balancer) make -s -C "$src" librestychash.so; cp "$src/librestychash.so" "$CLIB/" ;;
    lua-resty-signal) make -s -C "$src" librestysignal.so; cp "$src/librestysignal.so" "$CLIB/" ;;
    lua-cjson)
      # openresty's fork: Debian's lua-cjson lacks encode_escape_forward_slash
      make -s -C "$src" LUA_INCLUDE_DIR=$LUAJIT_INC cjson.so; cp "$src/cjson.so" "$CLIB/" ;;
    lua-protobuf)
      gcc -O2 -fPIC -shared -I$LUAJIT_INC -o "$src/pb.so" "$src/pb.c"; cp "$src/pb.so" "$CLIB/" ;;
    *) die "$name: kind lua+c but no C build known for it" ;;
  esac
}

aliases() {
  local f rel mod
  # Debian installs lua-resty-{string,dns,cookie,redis,websocket} as nginx.*
  while IFS= read -r f; do
    rel=${f#/usr/share/lua/5.1/nginx/}; mod=nginx.$(echo "${rel%.lua}" | tr / .)
    [ -e "$SHARE/resty/$rel" ] && continue
    mkdir -p "$(dirname "$SHARE/resty/$rel")"
    printf -- '-- alias written by assemble-apisix.sh: Debian installs this module as %s\nreturn require("%s")\n' "$mod" "$mod" > "$SHARE/resty/$rel"
  done < <(find /usr/share/lua/5.1/nginx -name '*.lua' | sort)
  printf -- '-- alias written by assemble-apisix.sh: Debian 12 has only the PCRE2 binding\nreturn require("rex_pcre2")\n' > "$SHARE/rex_pcre.lua"
}

config() {
  local key nofile plugins
  [ -s "$STACK/apisix-admin-key" ] || { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$STACK/apisix-admin-key"; chmod 600 "$STACK/apisix-admin-key"; }
  key=$(cat "$STACK/apisix-admin-key")
  nofile=$(ulimit -Hn); [ "$nofile" = unlimited ] || [ "$nofile" -gt 16384 ] && nofile=16384
  plugins=$(for p in $PLUGINS; do echo "  - $p"; done)
  awk -v plugins="$plugins" '{ if ($0 == "@PLUGINS@") print plugins; else print }' "$HERE/apisix-config.yaml" |
    sed -e "s|@BIND@|$BIND|g" -e "s|@APISIX_PROXY_PORT@|$APISIX_PROXY_PORT|g" \
        -e "s|@APISIX_CONTROL_PORT@|$APISIX_CONTROL_PORT|g" -e "s|@APISIX_ADMIN_PORT@|$APISIX_ADMIN_PORT|g" \
        -e "s|@APISIX_PROMETHEUS_PORT@|$APISIX_PROMETHEUS_PORT|g" -e "s|@APISIX_ALLOW_ADMIN@|$APISIX_ALLOW_ADMIN|g" \
        -e "s|@ETCD_CLIENT_PORT@|$ETCD_CLIENT_PORT|g" -e "s|@CONSUL_HTTP_PORT@|$CONSUL_HTTP_PORT|g" \
        -e "s|@NOFILE@|$nofile|g" -e "s|@ADMIN_KEY@|$key|g" > "$APISIX_HOME/conf/config.yaml"
  grep -q '@[A-Z_]*@' "$APISIX_HOME/conf/config.yaml" && die "config.yaml: a placeholder was left: $(grep -o '@[A-Z_]*@' "$APISIX_HOME/conf/config.yaml" | head -1)"
  return 0
}

# check_requires: every require("x") of APISIX's core (apisix/*.lua, apisix/core,
# admin, discovery/consul, ...) and of the listed plugins resolves, transitively,
# against the paths APISIX's nginx.conf sets. Optional requires (pcall) are skipped.
check_requires() {
  local plugin_files="" p
  for p in $PLUGINS; do plugin_files="$plugin_files apisix/plugins/$p.lua"; done
  (cd "$APISIX_HOME" && luajit "$HERE/check-requires.lua" "$SHARE" "$CLIB" \
     apisix/init.lua apisix/discovery/consul/init.lua apisix/cli/apisix.lua $plugin_files)
}

main() {
  no_root_home
  local want; want=$(stamp)
  if [ -f "$APISIX_HOME/.assembled" ] && [ "$(cat "$APISIX_HOME/.assembled")" = "$want" ]; then
    log "apisix $APISIX_VERSION: assembled already in $APISIX_HOME (same inputs)"; return
  fi
  if [ -f "$RUN/apisix.pid" ] && kill -0 "$(cat "$RUN/apisix.pid")" 2>/dev/null; then
    die "APISIX is running from $APISIX_HOME: run down.sh first"
  fi
  local t0=$SECONDS
  packages
  log "apisix $APISIX_VERSION: extracting to $APISIX_HOME"
  mkdir -p "$STACK" "$BIN"
  extract apisix "$APISIX_HOME"
  [ ! -f "$APISIX_HOME.missing" ] || die "apisix: the source lacks files: $(tr '\n' ' ' < "$APISIX_HOME.missing")"
  local ext=$APISIX_HOME/apisix/plugins/ext-plugin/init.lua
  grep -q '^    ngx_pipe = require("ngx.pipe")$' "$ext" || die "$ext: the ngx.pipe line to make optional is not there"
  sed -i 's|^    ngx_pipe = require("ngx.pipe")$|    local ok_pipe; ok_pipe, ngx_pipe = pcall(require, "ngx.pipe"); if not ok_pipe then ngx_pipe = nil end  -- assemble-apisix.sh: Debian has no ngx.pipe|' "$ext"
  mkdir -p "$SHARE" "$CLIB" "$APISIX_HOME/logs"
  local t1=$SECONDS name kind n=0 nc=0 tc=0 t
  while IFS=$'\t' read -r name _ _ _ kind _; do
    case $kind in lua|lua+c) ;; *) continue ;; esac
    local src=$STACK/src/lua/$name commit
    commit=$(row "$name" | cut -f4)
    # a source already extracted at the same commit is reused (C objects and all)
    if [ "$(cat "$src.commit" 2>/dev/null)" != "$commit" ]; then extract "$name" "$src"; echo "$commit" > "$src.commit"; fi
    [ ! -f "$src.missing" ] || die "$name: the source lacks files: $(tr '\n' ' ' < "$src.missing")"
    copy_lib "$name" "$src"; n=$((n + 1))
    if [ "$kind" = lua+c ]; then t=$SECONDS; build_c "$name" "$src"; tc=$((tc + SECONDS - t)); nc=$((nc + 1)); fi
  done < <(manifest)
  log "lua libraries: $n copied into deps/share/lua/5.1, $nc C parts built with gcc in $tc s ($((SECONDS - t1)) s in all)"
  cp -a "$HERE"/standins/resty/*.lua "$SHARE/resty/"
  aliases
  printf '#!/bin/sh\n# written by assemble-apisix.sh: APISIX'"'"'s CLI runs `openresty`; here it is Debian'"'"'s nginx\nexec /usr/sbin/nginx "$@"\n' > "$BIN/openresty"
  chmod +x "$BIN/openresty"
  config
  check_requires
  echo "$want" > "$APISIX_HOME/.assembled"
  log "apisix $APISIX_VERSION: assembled in $((SECONDS - t0)) s (uptime: $(uptime | sed 's/.*load/load/'))"
}
main "$@"
