#!/usr/bin/env bash
# down.sh: stops what up.sh started (by the pids in $BENCHFLOW_STACK_DIR/run/pids), in
# reverse order: APISIX (`apisix stop`, a fast shutdown: a graceful quit would wait out
# Consul's 60 s long poll), Nomad, Consul, etcd. Nomad's allocations (raw_exec
# processes) are stopped with it. etcd's data (APISIX's routes) stays in run/etcd.
# With no pid file at all it refuses (exit 1) rather than say "stack down": the stack
# may have been started with another BENCHFLOW_STACK_DIR (up.sh writes it into
# $BENCHFLOW_STACK_DIR/env; `. that/env` first). It names the stack's ports that still
# answer, since something else may hold them.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

stop_pid() { # NAME PID: TERM, then KILL after 20 s
  local name=$1 pid=$2 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 200; i++)); do kill -0 "$pid" 2>/dev/null || { log "$name: stopped (pid $pid)"; return 0; }; sleep 0.1; done
  log "$name: still running after 20 s, killing pid $pid"; kill -KILL "$pid" 2>/dev/null || true
}

t=$SECONDS
found=0 stopped=0
for c in $COMPONENTS; do [ -f "$PIDS/$c.pid" ] && found=$((found + 1)); done
if [ "$found" = 0 ]; then
  busy=""
  for p in "$NOMAD_HTTP_PORT" "$CONSUL_HTTP_PORT" "$APISIX_ADMIN_PORT" "$ETCD_CLIENT_PORT"; do port_free "$p" || busy="$busy $BIND:$p"; done
  msg="nothing to stop: no pid files in $PIDS (BENCHFLOW_STACK_DIR=$STACK)"
  [ -z "$busy" ] || msg="$msg, yet the stack's ports answer:$busy. A stack started with another BENCHFLOW_STACK_DIR? Set it (up.sh writes it into that folder's env file: . DIR/env), then run down.sh again"
  die "$msg"
fi
for c in $(echo $COMPONENTS | tr ' ' '\n' | tac); do
  pid=$(pid_of "$c" || true)
  if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
    [ ! -f "$PIDS/$c.pid" ] || log "$c: not running (pid ${pid:-?} has exited; its pid file removed)"
    rm -f "$PIDS/$c.pid"; continue
  fi
  stopped=$((stopped + 1))
  if [ "$c" = apisix ]; then
    (cd "$APISIX_HOME" && PATH=$BIN:$PATH luajit ./apisix/cli/apisix.lua stop) >> "$LOGS/apisix.log" 2>&1 || true
    for ((i = 0; i < 200; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && stop_pid apisix "$pid" || log "apisix: stopped (pid $pid)"
  elif [ "$c" = nomad ]; then
    # the dev agent stops its allocations on SIGINT; SIGTERM would leave raw_exec tasks
    kill -INT "$pid" 2>/dev/null || true
    for ((i = 0; i < 300; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && stop_pid nomad "$pid" || log "nomad: stopped (pid $pid)"
  else
    stop_pid "$c" "$pid"
  fi
  rm -f "$PIDS/$c.pid"
done
log "stack down in $((SECONDS - t)) s ($stopped of $found started here were running)"
