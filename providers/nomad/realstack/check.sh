#!/usr/bin/env bash
# check.sh: checks the stack up.sh started answers: etcd's /version, Consul's leader,
# Nomad's ready node, APISIX's Admin and control APIs, then one route through APISIX
# to an upstream found by Consul discovery (Nomad's own `nomad-client` service, port
# $NOMAD_HTTP_PORT), deleted again afterwards. Prints each piece's version; exit 1 on
# the first failure, saying which.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
fail() { echo "check: FAIL $*" >&2; exit 1; }
ok() { echo "check: ok   $*"; }
get() { curl -fsS --max-time 5 "$@"; }

v=$(get "http://$BIND:$ETCD_CLIENT_PORT/version") || fail "etcd does not answer on $BIND:$ETCD_CLIENT_PORT"
ok "etcd $(echo "$v" | sed -n 's/.*"etcdserver":"\([^"]*\)".*/\1/p') at http://$BIND:$ETCD_CLIENT_PORT"

l=$(get "http://$BIND:$CONSUL_HTTP_PORT/v1/status/leader") || fail "consul does not answer on $BIND:$CONSUL_HTTP_PORT"
[ "$l" != '""' ] || fail "consul has no leader"
v=$(get "http://$BIND:$CONSUL_HTTP_PORT/v1/agent/self" | tr -d ' \n' | grep -o '"Version":"[^"]*"' | head -1 | cut -d'"' -f4 || true)
ok "consul $v at http://$BIND:$CONSUL_HTTP_PORT (leader $l)"

n=$(get "http://$BIND:$NOMAD_HTTP_PORT/v1/nodes") || fail "nomad does not answer on $BIND:$NOMAD_HTTP_PORT"
echo "$n" | grep -q '"Status":"ready"' || fail "nomad has no ready client node: $n"
echo "$n" | grep -o '"raw_exec":{"Attributes":{[^}]*}[^}]*}' | grep -q '"Healthy":true' || fail "nomad's client has no healthy raw_exec driver"
v=$(get "http://$BIND:$NOMAD_HTTP_PORT/v1/agent/self" | grep -o '"Version":"[0-9][^"]*"' | head -1 | cut -d'"' -f4 || true)
ok "nomad $v at http://$BIND:$NOMAD_HTTP_PORT (a ready node, raw_exec healthy)"

key=$(admin_key); A=http://$BIND:$APISIX_ADMIN_PORT/apisix/admin
h=$(curl -fsS -D - -o /dev/null --max-time 5 -H "X-API-KEY: $key" "$A/routes") || fail "APISIX's Admin API does not answer on $BIND:$APISIX_ADMIN_PORT"
v=$(echo "$h" | tr -d '\r' | sed -n 's/^[Ss]erver: APISIX\/\(.*\)/\1/p')
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$A/routes")
[ "$code" = 401 ] || fail "APISIX's Admin API answers $code without the key (want 401)"
get "http://$BIND:$APISIX_CONTROL_PORT/v1/schema" > /dev/null || fail "APISIX's control API does not answer on $BIND:$APISIX_CONTROL_PORT"
ok "apisix $v: Admin API at $A (key required), control API at http://$BIND:$APISIX_CONTROL_PORT"

# a route through the gateway to an upstream APISIX finds in Consul
id=benchflow-stack-check
cleanup() {
  curl -s -o /dev/null -X DELETE -H "X-API-KEY: $key" "$A/routes/$id" || true
  curl -s -o /dev/null -X DELETE -H "X-API-KEY: $key" "$A/upstreams/$id" || true
}
trap cleanup EXIT
get -X PUT -H "X-API-KEY: $key" "$A/upstreams/$id" -o /dev/null \
  -d '{"type":"roundrobin","discovery_type":"consul","service_name":"nomad-client","scheme":"http"}' || fail "APISIX refused the upstream"
get -X PUT -H "X-API-KEY: $key" "$A/routes/$id" -o /dev/null \
  -d "{\"uri\":\"/v1/agent/health\",\"upstream_id\":\"$id\"}" || fail "APISIX refused the route"
code="" body=""
for ((i = 0; i < 150; i++)); do
  body=$(curl -s --max-time 3 -w '\n%{http_code}' "http://$BIND:$APISIX_PROXY_PORT/v1/agent/health?type=client") || true
  code=${body##*$'\n'}; [ "$code" = 200 ] && break; sleep 0.2
done
[ "$code" = 200 ] || fail "GET http://$BIND:$APISIX_PROXY_PORT/v1/agent/health through APISIX answers '$code' (want 200 from Nomad via Consul discovery); see $APISIX_HOME/logs/error.log"
echo "$body" | grep -q '"ok":true' || fail "the route answered 200 but not Nomad's health: ${body%$'\n'*}"
ok "route http://$BIND:$APISIX_PROXY_PORT/v1/agent/health -> Consul service nomad-client -> Nomad: 200 (after $((i * 2 / 10)) s)"
