#!/usr/bin/env bash
# down.sh: stops what up.sh started (by the pids in $BENCHFLOW_STACK_DIR/run/pids), in
# reverse order: APISIX (`apisix stop`, a fast shutdown: a graceful quit would wait out
# Consul's 60 s long poll), Nomad, Consul, etcd. Nomad's allocations (raw_exec
# processes) are stopped with it. etcd's data (APISIX's routes) stays in run/etcd.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

stop_pid() { # NAME PID: TERM, then KILL after 20 s
  local name=$1 pid=$2 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 200; i++)); do kill -0 "$pid" 2>/dev/null || { log "$name: stopped (pid $pid)"; return 0; }; sleep 0.1; done
  log "$name: still running after 20 s, killing pid $pid"; kill -KILL "$pid" 2>/dev/null || true
}

t=$SECONDS
for c in $(echo $COMPONENTS | tr ' ' '\n' | tac); do
  pid=$(pid_of "$c" || true)
  if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then rm -f "$PIDS/$c.pid"; continue; fi
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
log "stack down in $((SECONDS - t)) s"
