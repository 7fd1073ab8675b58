#!/usr/bin/env bash
# up.sh: starts the gateway study's real stack on loopback, in order: etcd (Debian's,
# data in $BENCHFLOW_STACK_DIR/run/etcd), Consul (dev agent), Nomad (dev agent with
# raw_exec, registering in that Consul), APISIX (assembled by assemble-apisix.sh, its
# routes in that etcd, Consul discovery). Each is waited for over HTTP; pids go to
# $BENCHFLOW_STACK_DIR/run/pids, logs to run/logs. Prints the environment to export on
# stdout (eval "$(up.sh)"), and writes it to $BENCHFLOW_STACK_DIR/env too.
# A piece already running from here is left as it is. Stop everything with down.sh.
# usage: up.sh [etcd|consul|nomad|apisix]...   (default: all four, in that order)
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
exec 3>&1 1>&2   # progress on stderr, the environment on stdout

WANT=" ${*:-$COMPONENTS} "
want() { [[ $WANT == *" $1 "* ]]; }
for w in $WANT; do [[ " $COMPONENTS " == *" $w "* ]] || die "up.sh: unknown piece '$w' ($COMPONENTS)"; done
! want nomad || [ -x "$BIN/nomad" ] || die "no $BIN/nomad: run build.sh first"
! want consul || [ -x "$BIN/consul" ] || die "no $BIN/consul: run build.sh first"
! want apisix || no_root_home
! want apisix || [ -f "$APISIX_HOME/.assembled" ] || die "APISIX is not assembled in $APISIX_HOME: run assemble-apisix.sh first"
! want etcd || need /usr/bin/etcd "apt-get install etcd-server"
mkdir -p "$PIDS" "$LOGS"

# start NAME PORT... -- CMD...: runs CMD in the background (own session) unless NAME runs
start() {
  local name=$1; shift; local ports=()
  while [ "$1" != -- ]; do ports+=("$1"); shift; done; shift
  if alive "$name"; then log "$name: running already (pid $(pid_of "$name"))"; return 1; fi
  local p; for p in "${ports[@]}"; do port_free "$p" || die "$name: $BIND:$p is in use by another program"; done
  setsid "$@" >> "$LOGS/$name.log" 2>&1 < /dev/null 3>&- &   # fd 3 is our stdout: not theirs
  echo $! > "$PIDS/$name.pid"
}

t_all=$SECONDS
# etcd
if want etcd && start etcd "$ETCD_CLIENT_PORT" "$ETCD_PEER_PORT" -- /usr/bin/etcd --name benchflow-stack \
    --data-dir "$RUN/etcd" --listen-client-urls "http://$BIND:$ETCD_CLIENT_PORT" \
    --advertise-client-urls "http://$BIND:$ETCD_CLIENT_PORT" --listen-peer-urls "http://$BIND:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://$BIND:$ETCD_PEER_PORT" \
    --initial-cluster "benchflow-stack=http://$BIND:$ETCD_PEER_PORT"; then
  t=$SECONDS; wait_http etcd "http://$BIND:$ETCD_CLIENT_PORT/health" 60; log "etcd: up in $((SECONDS - t)) s (pid $(pid_of etcd))"
fi

# Consul: a dev agent (in memory), on loopback, gRPC off (nothing here uses Connect)
cat > "$RUN/consul.hcl" <<EOT
bind_addr = "$BIND"
client_addr = "$BIND"
advertise_addr = "$BIND"
disable_update_check = true
ports {
  http = $CONSUL_HTTP_PORT
  dns = $CONSUL_DNS_PORT
  server = $CONSUL_SERVER_PORT
  serf_lan = $CONSUL_SERF_LAN_PORT
  serf_wan = $CONSUL_SERF_WAN_PORT
  grpc = -1
  grpc_tls = -1
}
EOT
if want consul && start consul "$CONSUL_HTTP_PORT" "$CONSUL_SERVER_PORT" "$CONSUL_SERF_LAN_PORT" -- "$BIN/consul" agent -dev -config-file "$RUN/consul.hcl"; then
  t=$SECONDS
  wait_http consul "http://$BIND:$CONSUL_HTTP_PORT/v1/status/leader" 60
  for ((i = 0; i < 300; i++)); do
    [ "$(curl -fsS "http://$BIND:$CONSUL_HTTP_PORT/v1/status/leader" 2>/dev/null)" != '""' ] && break; sleep 0.1
  done
  log "consul: up in $((SECONDS - t)) s (pid $(pid_of consul))"
fi

# Nomad: a dev agent (server + client), raw_exec on, the client on lo, no cloud
# metadata look-ups, registering services in the Consul above
cat > "$RUN/nomad.hcl" <<EOT
bind_addr = "$BIND"
data_dir = "$RUN/nomad"
disable_update_check = true
ports {
  http = $NOMAD_HTTP_PORT
  rpc = $NOMAD_RPC_PORT
  serf = $NOMAD_SERF_PORT
}
advertise {
  http = "$BIND"
  rpc = "$BIND"
  serf = "$BIND"
}
client {
  network_interface = "lo"
  min_dynamic_port = ${NOMAD_DYNAMIC_PORTS%-*}
  max_dynamic_port = ${NOMAD_DYNAMIC_PORTS#*-}
  options = {
    "fingerprint.denylist" = "env_aws,env_gce,env_azure,env_digitalocean"
  }
}
plugin "raw_exec" {
  config {
    enabled = true
  }
}
consul {
  address = "$BIND:$CONSUL_HTTP_PORT"
}
EOT
if want nomad && start nomad "$NOMAD_HTTP_PORT" "$NOMAD_RPC_PORT" "$NOMAD_SERF_PORT" -- "$BIN/nomad" agent -dev -config "$RUN/nomad.hcl"; then
  t=$SECONDS
  wait_http nomad "http://$BIND:$NOMAD_HTTP_PORT/v1/agent/health?type=client" 120
  for ((i = 0; i < 600; i++)); do
    curl -fsS "http://$BIND:$NOMAD_HTTP_PORT/v1/nodes" 2>/dev/null | grep -q '"Status":"ready"' && break; sleep 0.1
  done
  log "nomad: up in $((SECONDS - t)) s (pid $(pid_of nomad))"
fi

# APISIX: after Consul, so that its discovery's first fetch succeeds
if ! want apisix; then :
elif alive apisix; then log "apisix: running already (pid $(pid_of apisix))"
else
  for p in "$APISIX_PROXY_PORT" "$APISIX_ADMIN_PORT" "$APISIX_CONTROL_PORT" "$APISIX_PROMETHEUS_PORT"; do
    port_free "$p" || die "apisix: $BIND:$p is in use by another program"
  done
  t=$SECONDS
  # `bin/apisix` guesses LuaJIT's path from nginx's prefix, wrongly on Debian; the CLI
  # run as ./apisix/cli/apisix.lua from APISIX's folder takes that folder as its home
  (cd "$APISIX_HOME" && PATH=$BIN:$PATH luajit ./apisix/cli/apisix.lua start) >> "$LOGS/apisix.log" 2>&1 3>&- ||
    die "apisix: start failed; see $LOGS/apisix.log and $APISIX_HOME/logs/error.log: $(tail -3 "$LOGS/apisix.log")"
  for ((i = 0; i < 100; i++)); do [ -s "$APISIX_HOME/logs/nginx.pid" ] && break; sleep 0.1; done
  cp "$APISIX_HOME/logs/nginx.pid" "$PIDS/apisix.pid"
  wait_http apisix "http://$BIND:$APISIX_ADMIN_PORT/apisix/admin/routes" 60 -H "X-API-KEY: $(admin_key)"
  log "apisix: up in $((SECONDS - t)) s (pid $(pid_of apisix))"
fi
log "stack up in $((SECONDS - t_all)) s; check it with check.sh, stop it with down.sh"
env_lines > "$STACK/env"
env_lines >&3
