# Shared by up.sh, down.sh and check.sh: paths, the before-state snapshot, helpers.
# shellcheck shell=bash
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/versions.env"
CACHE=$BENCHFLOW_CLUSTER_CACHE
STATE=$BENCHFLOW_CLUSTER_STATE
KBIN=$CACHE/kubernetes-$K8S_VERSION/bin
TBIN=$CACHE/traefik-$TRAEFIK_VERSION/bin
KUBECONFIG_FILE=$STATE/admin.kubeconfig
CTR_SOCK=$STATE/containerd/containerd.sock
CTR="ctr -a $CTR_SOCK -n k8s.io"
# The processes up.sh starts, in start order; down.sh stops them in reverse.
COMPONENTS="etcd containerd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy traefik"
# Sysctls the kubelet (protectKernelDefaults=false), kube-proxy or the CNI bridge
# plugin may set; recorded before and put back after.
SYSCTLS="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward net.ipv4.conf.all.forwarding net.ipv6.conf.all.forwarding net.ipv4.conf.all.route_localnet net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables net.netfilter.nf_conntrack_max net.netfilter.nf_conntrack_tcp_timeout_established net.netfilter.nf_conntrack_tcp_timeout_close_wait"

log() { echo "[cluster $(date -u +%H:%M:%S)] $*"; }
die() { echo "cluster: $*" >&2; exit 1; }

# cannot_host REASON: the machine cannot run the cluster; exit 3 so callers can tell.
cannot_host() { echo "cluster: this machine cannot host the local cluster: $*" >&2; exit 3; }

pid_of() { local f=$STATE/pids/$1.pid; [ -f "$f" ] && cat "$f"; }
alive() { local p; p=$(pid_of "$1") && [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }

# snapshot DIR: what the cluster may change, filtered to what it owns, so that a
# concurrent Docker container or another tool on this shared machine does not count.
snapshot() {
  local d=$1; mkdir -p "$d"
  for ipt in iptables ip6tables; do
    { $ipt-save 2>/dev/null || true; } | sed -e 's/\[[0-9]*:[0-9]*\]//' -e '/^#/d' |
      grep -E 'KUBE|CNI|bfk-|10\.244\.|10\.96\.|10\.245\.' | sort > "$d/$ipt.txt" || true
  done
  { nft list tables 2>/dev/null || true; } | sort > "$d/nft-tables.txt"
  for s in $SYSCTLS; do v=$(sysctl -n "$s" 2>/dev/null) && echo "$s=$v"; done > "$d/sysctl.txt"
  { grep -E " $STATE/| /run/netns/cni-|/var/run/netns/cni-" /proc/mounts || true; } | awk '{print $2}' | sort > "$d/mounts.txt"
  # interfaces: ours by name, plus any veth enslaved to our pod bridge
  { ip -o link show 2>/dev/null || true; } | awk -F': ' '{print $2}' | sed 's/@.*//' |
    grep -E "^($NODE_BRIDGE|$POD_BRIDGE|cni[0-9]*)$" | sort > "$d/links.txt" || true
  { ip -o link show master "$POD_BRIDGE" 2>/dev/null || true; } | awk -F': ' '{print $2}' | sed 's/@.*//' | sort >> "$d/links.txt"
  { ls /run/netns 2>/dev/null | grep '^cni-' || true; } | sort > "$d/netns.txt"
}

# compare A B: prints differences and returns 1 if the snapshots differ.
compare() {
  local a=$1 b=$2 rc=0 f
  for f in iptables.txt ip6tables.txt nft-tables.txt sysctl.txt mounts.txt links.txt netns.txt; do
    if ! diff -u "$a/$f" "$b/$f" > "$b/$f.diff" 2>&1; then
      echo "cluster: ${f%.txt} differs from before cluster-up:" >&2; sed 's/^/  /' "$b/$f.diff" >&2; rc=1
    else rm -f "$b/$f.diff"; fi
  done
  return $rc
}
