#!/usr/bin/env bash
# down.sh: stops what up.sh started (by the pids it recorded, nothing else), removes
# the pods' containers and network namespaces, kube-proxy's, the kubelet's and the
# CNI plugins' iptables chains, the two bridges and the kubelet's mounts, restores
# the sysctls recorded before up.sh, deletes the cluster's data, then checks that
# iptables (kube/CNI chains), nft tables, those sysctls, mounts and interfaces equal
# their before-state. Exit status 1 if anything differs (the differences are printed).
set -uo pipefail
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
[ "$(id -u)" = 0 ] || cannot_host "it must run as root"
[ -d "$STATE" ] || { log "no cluster state in $STATE: nothing to stop"; exit 0; }
K="$KBIN/kubectl --kubeconfig $KUBECONFIG_FILE --request-timeout=10s"

stop() { # stop NAME: TERM, wait up to 15 s, then KILL; only the recorded pid
  local n=$1 p i
  p=$(pid_of "$n") || return 0
  if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
    kill "$p" 2>/dev/null
    for ((i = 0; i < 30; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$p" 2>/dev/null; then kill -9 "$p" 2>/dev/null; log "$n (pid $p) killed"; else log "$n (pid $p) stopped"; fi
  fi
  rm -f "$STATE/pids/$n.pid"
}

rm -f "$STATE/env"
stop traefik
# Pods first, while the kubelet and containerd still run, so the CNI plugins
# remove their veths, IP allocations and iptables rules.
if alive kube-apiserver && alive kubelet; then
  $K delete namespace -l dev.benchflow.managed=true --wait=false >/dev/null 2>&1
  $K delete pods --all-namespaces --all --grace-period=1 --timeout=60s >/dev/null 2>&1
fi
stop kube-proxy; stop kubelet; stop kube-scheduler; stop kube-controller-manager; stop kube-apiserver; stop etcd
# Sandboxes or containers still there: remove them through our containerd.
if alive containerd; then
  for t in $($CTR tasks ls -q 2>/dev/null); do $CTR tasks kill -s KILL "$t" >/dev/null 2>&1; done
  for t in $($CTR tasks ls -q 2>/dev/null); do
    for ((i = 0; i < 10; i++)); do $CTR tasks delete "$t" >/dev/null 2>&1 && break; sleep 0.5; done
  done
  for c in $($CTR containers ls -q 2>/dev/null); do $CTR containers delete "$c" >/dev/null 2>&1; done
fi
stop containerd
# containerd-shims of our containerd (their socket lives in our state dir) that outlived it.
for p in $(pgrep -f "containerd-shim-runc-v2 -namespace k8s.io -id [0-9a-f]* -address $CTR_SOCK" || true); do
  kill -9 "$p" 2>/dev/null && log "stale shim $p killed"
done

# kube-proxy's chains (iptables and nftables modes).
[ -x "$KBIN/kube-proxy" ] && "$KBIN/kube-proxy" --cleanup --v=0 >/dev/null 2>&1
# CNI firewall/portmap plugin chains.
for ch in CNI-FORWARD CNI-ADMIN; do iptables -F "$ch" 2>/dev/null; done
while iptables -D FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD 2>/dev/null; do :; done
for ch in CNI-FORWARD CNI-ADMIN; do iptables -X "$ch" 2>/dev/null; done
for t in nat filter; do
  for ch in $(iptables -t $t -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^CNI-/ {print $2}'); do iptables -t $t -F "$ch" 2>/dev/null; done
  iptables -t $t -S 2>/dev/null | grep -E '^-A [A-Z]+ .*-j CNI-' | sed 's/^-A/-D/' | while read -r r; do eval iptables -t $t "$r" 2>/dev/null; done
  for ch in $(iptables -t $t -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^CNI-/ {print $2}'); do iptables -t $t -X "$ch" 2>/dev/null; done
done
# The kubelet's own chains, which kube-proxy --cleanup leaves, IPv4 and IPv6.
for ipt in iptables ip6tables; do
  while $ipt -D INPUT -j KUBE-FIREWALL 2>/dev/null; do :; done
  while $ipt -D OUTPUT -j KUBE-FIREWALL 2>/dev/null; do :; done
  $ipt -F KUBE-FIREWALL 2>/dev/null; $ipt -X KUBE-FIREWALL 2>/dev/null
  for t in filter nat mangle; do $ipt -t $t -F KUBE-KUBELET-CANARY 2>/dev/null; $ipt -t $t -X KUBE-KUBELET-CANARY 2>/dev/null; done
  $ipt -t mangle -X KUBE-IPTABLES-HINT 2>/dev/null
done
# nft tables the kubelet or kube-proxy created (iptables-nft makes the table on
# first use) that did not exist before and are empty now.
if [ -f "$STATE/before/nft-tables.txt" ]; then
  nft list tables 2>/dev/null | while read -r _ fam name; do
    grep -qx "table $fam $name" "$STATE/before/nft-tables.txt" && continue
    if ! nft list table "$fam" "$name" 2>/dev/null | grep -qE '^[[:space:]]+(ip|ip6|meta|ct|counter|jump|goto|accept|drop|reject|tcp|udp|iifname|oifname)'; then
      nft delete table "$fam" "$name" 2>/dev/null && log "empty nft table $fam $name removed"
    fi
  done
fi

# Network namespaces CNI made for our pods (only those whose IPs came from our range).
for n in /run/netns/cni-*; do
  [ -e "$n" ] || continue
  if ip netns exec "$(basename "$n")" ip -o addr show 2>/dev/null | grep -q " ${POD_CIDR%.*}\."; then
    umount "$n" 2>/dev/null; rm -f "$n"
  fi
done
for l in "$POD_BRIDGE" "$NODE_BRIDGE"; do ip link del "$l" 2>/dev/null && log "interface $l removed"; done
# The kubelet bind-mounts its root and mounts volumes below it; containerd mounts
# snapshots and shm below its state: unmount deepest first.
grep -E " $STATE/" /proc/mounts | awk '{print $2}' | sort -r | while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done
# Kernel settings back to their recorded values.
if [ -f "$STATE/before/sysctl.txt" ]; then
  while IFS== read -r k v; do [ "$(sysctl -n "$k" 2>/dev/null)" = "$v" ] || sysctl -qw "$k=$v" 2>/dev/null || log "could not restore $k=$v"; done < "$STATE/before/sysctl.txt"
fi

rc=0
if [ -d "$STATE/before" ]; then
  rm -rf "$STATE/after"; snapshot "$STATE/after"
  if compare "$STATE/before" "$STATE/after"; then log "iptables, nft tables, sysctls, mounts and interfaces are as before cluster-up"
  else rc=1; fi
fi
if [ $rc = 0 ]; then
  # Cluster data goes; logs stay for inspection until the next cluster-up.
  rm -rf "$STATE"/{etcd,containerd,kubelet,cni,pki,pids,before,after} "$STATE"/*.kubeconfig "$STATE"/*.yaml "$STATE/env"
  log "stopped; logs kept in $STATE/logs"
else
  log "stopped, but the machine is not as it was (see above); state kept in $STATE"
fi
exit $rc
