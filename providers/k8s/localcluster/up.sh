#!/usr/bin/env bash
# up.sh: starts the local single-node test cluster from the binaries build.sh made
# (building them first if they are missing): a private containerd, etcd, the API
# server, controller-manager, scheduler, kubelet, kube-proxy and Traefik as the
# ingress controller for class "nginx". Everything listens on loopback, the node
# address $NODE_IP (a port-less bridge) or the pod bridge; state lives in
# $BENCHFLOW_CLUSTER_STATE. down.sh undoes all of it.
# Exit status: 0 up, 1 failed (down.sh has cleaned up), 3 this machine cannot host it.
# usage: up.sh [--no-ingress]   (--no-ingress: no Traefik, nor its build)
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
ingress=1
for a in "$@"; do
  case $a in
    --no-ingress) ingress=0 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) die "unknown argument $a (--no-ingress)" ;;
  esac
done

usage() {
  local ing="ingress class \"nginx\" (Traefik) on $INGRESS_ADDRESS"
  alive traefik || ing="no ingress controller"
  cat <<X
The cluster is up (Kubernetes $K8S_VERSION, node $NODE_NAME at $NODE_IP, $ing).
  export KUBECONFIG=$KUBECONFIG_FILE
  $KBIN/kubectl get nodes
  make testacc-k8s                                  # the k8s acceptance tests
  bin/benchflow apply pipelines/k8s-ingress.hcl --var kubeconfig=$KUBECONFIG_FILE --var ingress_address=$INGRESS_ADDRESS
  make cluster-down                                 # stop it and restore the machine
X
}

# --- can this machine host it? -------------------------------------------------
[ "$(id -u)" = 0 ] || cannot_host "it must run as root (it creates bridges, iptables rules and mounts; the kubelet manages cgroups)"
[ "$(uname -s)" = Linux ] || cannot_host "it needs Linux"
for c in etcd containerd containerd-shim-runc-v2 runc iptables ip6tables iptables-save nft ip ctr openssl docker sysctl; do
  command -v "$c" >/dev/null || cannot_host "$c is not installed (Debian packages: $DEBIAN_PACKAGES; .ci/run installs them)"
done
for p in bridge host-local portmap firewall loopback; do
  [ -x /usr/lib/cni/$p ] || cannot_host "CNI plugin /usr/lib/cni/$p is missing (Debian package containernetworking-plugins)"
done
[ -d /sys/fs/cgroup ] || cannot_host "no cgroup filesystem"
docker version >/dev/null 2>&1 || cannot_host "no Docker engine reachable (images are built with Docker)"
[ "$(swapon --show --noheadings 2>/dev/null | wc -l)" = 0 ] || cannot_host "swap is on (the kubelet refuses to start with swap)"

if alive kube-apiserver && "$KBIN/kubectl" --kubeconfig "$KUBECONFIG_FILE" get --raw /readyz >/dev/null 2>&1; then
  log "already up"; usage; exit 0
fi
if [ -d "$STATE/pids" ] && ls "$STATE/pids"/*.pid >/dev/null 2>&1; then
  log "a previous cluster left processes or state; stopping it first"
  "$HERE/down.sh" || die "could not clean up the previous cluster (see above)"
fi
for port in 127.0.0.1:$ETCD_CLIENT_PORT 127.0.0.1:$ETCD_PEER_PORT 127.0.0.1:$ETCD_METRICS_PORT :$APISERVER_PORT 127.0.0.1:10248 127.0.0.1:10249 127.0.0.1:10256 127.0.0.1:10257 127.0.0.1:10259 "$INGRESS_ADDRESS"; do
  if ss -Hltn "sport = :${port##*:}" | grep -q .; then
    die "port ${port##*:} is already in use ($(ss -Hltnp "sport = :${port##*:}" | awk '{print $NF}' | head -1)); the cluster needs it"
  fi
done
ip link show "$NODE_BRIDGE" >/dev/null 2>&1 && die "interface $NODE_BRIDGE exists but no cluster of ours runs: run make cluster-down"

# --- build what is missing ------------------------------------------------------
if [ $ingress = 1 ]; then "$HERE/build.sh" k8s traefik images; else "$HERE/build.sh" k8s images; fi

# --- from here on, any failure tears down what was started ---------------------
mkdir -p "$STATE"/{pids,logs,pki,etcd,containerd/root,containerd/state,kubelet,cni/net.d,cni/ipam}
chmod 700 "$STATE" "$STATE/pki"
[ -d "$STATE/before" ] || snapshot "$STATE/before"
started=0
fail() { trap - ERR; echo "cluster: up failed: $*" >&2; echo "cluster: logs in $STATE/logs; cleaning up" >&2; "$HERE/down.sh" >&2 || true; exit 1; }
trap 'fail "command failed at line $LINENO"' ERR

start() { # start NAME CMD...
  local n=$1; shift
  setsid "$@" > "$STATE/logs/$n.log" 2>&1 < /dev/null &
  echo $! > "$STATE/pids/$n.pid"
  log "$n started (pid $!, log $STATE/logs/$n.log)"
}
wait_for() { # wait_for WHAT SECONDS CMD...
  local what=$1 secs=$2 i; shift 2
  for ((i = 0; i < secs; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    for n in $COMPONENTS; do
      if [ -f "$STATE/pids/$n.pid" ] && ! alive "$n"; then fail "$n exited; last lines of its log:
$(tail -5 "$STATE/logs/$n.log")"; fi
    done
    sleep 1
  done
  fail "timed out after ${secs}s waiting for $what"
}

# --- PKI and kubeconfigs --------------------------------------------------------
P=$STATE/pki
cert() { # cert NAME CN O [SANs]
  local n=$1 cn=$2 o=$3 san=${4:-}
  openssl genrsa -out "$P/$n.key" 2048 2>/dev/null
  openssl req -new -key "$P/$n.key" -subj "/CN=$cn${o:+/O=$o}" -out "$P/$n.csr"
  { echo "basicConstraints=CA:FALSE"; echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [ -n "$san" ]; then echo "extendedKeyUsage=serverAuth,clientAuth"; echo "subjectAltName=$san"; else echo "extendedKeyUsage=clientAuth"; fi
  } > "$P/$n.ext"
  openssl x509 -req -in "$P/$n.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial -days 30 -sha256 -extfile "$P/$n.ext" -out "$P/$n.crt" 2>/dev/null
  rm -f "$P/$n.csr" "$P/$n.ext"
}
kubeconfig() { # kubeconfig FILE CERTNAME
  cat > "$STATE/$1" <<X
apiVersion: v1
kind: Config
clusters:
- name: benchflow-local
  cluster:
    server: https://$NODE_IP:$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 "$P/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 "$P/$2.crt")
    client-key-data: $(base64 -w0 "$P/$2.key")
contexts:
- name: benchflow-local
  context: {cluster: benchflow-local, user: $2}
current-context: benchflow-local
X
  chmod 600 "$STATE/$1"
}
if [ ! -f "$P/ca.crt" ]; then
  log "generating the cluster's CA and certificates"
  openssl genrsa -out "$P/ca.key" 2048 2>/dev/null
  openssl req -x509 -new -nodes -key "$P/ca.key" -sha256 -days 30 -subj "/CN=benchflow-local-ca" -out "$P/ca.crt"
  cert apiserver kube-apiserver "" "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:$SERVICE_IP,IP:$NODE_IP"
  cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
  cert admin kubernetes-admin system:masters
  cert kcm system:kube-controller-manager ""
  cert sched system:kube-scheduler ""
  cert proxy system:kube-proxy ""
  cert kubelet "system:node:$NODE_NAME" system:nodes
  cert kubelet-serving "$NODE_NAME" "" "DNS:$NODE_NAME,DNS:localhost,IP:127.0.0.1,IP:$NODE_IP"
  openssl genrsa -out "$P/sa.key" 2048 2>/dev/null
  openssl rsa -in "$P/sa.key" -pubout -out "$P/sa.pub" 2>/dev/null
  # a static bearer token for the ingress controller, which runs on the host
  echo "$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'),ingress-controller,ingress-controller,system:masters" > "$P/tokens.csv"
  chmod 600 "$P"/*.key "$P/tokens.csv"
fi
kubeconfig admin.kubeconfig admin
kubeconfig kcm.kubeconfig kcm
kubeconfig sched.kubeconfig sched
kubeconfig proxy.kubeconfig proxy
kubeconfig kubelet.kubeconfig kubelet

# --- configuration files --------------------------------------------------------
cat > "$STATE/containerd/config.toml" <<X
version = 2
root = "$STATE/containerd/root"
state = "$STATE/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$CTR_SOCK"
[ttrpc]
  address = "$CTR_SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # Some VMs (firecracker here) withhold CAP_SYS_RESOURCE: runc cannot then give
  # sandboxes a negative oom_score_adj; clamp it to containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni/net.d"
X
cat > "$STATE/cni/net.d/10-benchflow.conflist" <<X
{
  "cniVersion": "0.4.0",
  "name": "benchflow",
  "plugins": [
    {"type": "bridge", "bridge": "$POD_BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$POD_GATEWAY"}]],
              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$STATE/cni/ipam"}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "firewall", "backend": "iptables"}
  ]
}
X
cat > "$STATE/kubelet.yaml" <<X
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# kubelet >= 1.35 refuses cgroup v1 by default; containerd 1.6 cannot report its
# cgroup driver (no RuntimeConfig call), so the kubelet uses this one.
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$CTR_SOCK
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $P/ca.crt}
authorization:
  mode: Webhook
tlsCertFile: $P/kubelet-serving.crt
tlsPrivateKeyFile: $P/kubelet-serving.key
resolvConf: /etc/resolv.conf
maxPods: 30
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "2%"
  imagefs.available: "2%"
failSwapOn: true
protectKernelDefaults: false
serializeImagePulls: false
X
cat > "$STATE/kube-proxy.yaml" <<X
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: $STATE/proxy.kubeconfig
hostnameOverride: $NODE_NAME
mode: iptables
clusterCIDR: $CLUSTER_CIDR
nodePortAddresses: ["$NODE_IP/32"]
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
X

# --- start ------------------------------------------------------------------------
K="$KBIN/kubectl --kubeconfig $KUBECONFIG_FILE"
t0=$(date +%s)
# the node address: a bridge with no ports (no dummy netdev on every kernel)
ip link add "$NODE_BRIDGE" type bridge
ip addr add "$NODE_IP/32" dev "$NODE_BRIDGE"
ip link set "$NODE_BRIDGE" up
start etcd etcd --name benchflow-local --data-dir "$STATE/etcd/data" \
  --listen-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "benchflow-local=http://127.0.0.1:$ETCD_PEER_PORT" --listen-metrics-urls "http://127.0.0.1:$ETCD_METRICS_PORT"
start containerd containerd --config "$STATE/containerd/config.toml"
wait_for containerd 60 ctr -a "$CTR_SOCK" version
for img in "$PAUSE_IMAGE" "$NGINX_IMAGE_LOCAL"; do
  docker save "$img" | $CTR images import - >/dev/null
done
$CTR images tag --force "docker.io/$NGINX_IMAGE_LOCAL" "$NGINX_IMAGE_ALIAS" >/dev/null
log "images imported: $PAUSE_IMAGE, $NGINX_IMAGE_LOCAL (also as $NGINX_IMAGE_ALIAS)"
# The load agents' image (benchflow at /benchflow), built by build.sh above
# (or `make images`); without it agents cannot run on this cluster.
AGENT_IMAGE_LOCAL=${AGENT_IMAGE_LOCAL:-benchflow/agent:local}
if docker image inspect "$AGENT_IMAGE_LOCAL" >/dev/null 2>&1; then
  docker save "$AGENT_IMAGE_LOCAL" | $CTR images import - >/dev/null
  log "image imported: $AGENT_IMAGE_LOCAL"
else
  log "no $AGENT_IMAGE_LOCAL image (make images builds it): load agents cannot run on this cluster"
fi
start kube-apiserver "$KBIN/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$ETCD_CLIENT_PORT" \
  --bind-address="$NODE_IP" --secure-port="$APISERVER_PORT" --advertise-address="$NODE_IP" \
  --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" --client-ca-file="$P/ca.crt" \
  --kubelet-client-certificate="$P/apiserver-kubelet-client.crt" --kubelet-client-key="$P/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
  --service-cluster-ip-range="$SERVICE_CIDR" --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
  --token-auth-file="$P/tokens.csv" --allow-privileged=true --profiling=false --v=1
wait_for kube-apiserver 120 $K get --raw /readyz
start kube-controller-manager "$KBIN/kube-controller-manager" \
  --kubeconfig="$STATE/kcm.kubeconfig" --authentication-kubeconfig="$STATE/kcm.kubeconfig" --authorization-kubeconfig="$STATE/kcm.kubeconfig" \
  --bind-address=127.0.0.1 --leader-elect=false \
  --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" --use-service-account-credentials=true \
  --cluster-signing-cert-file="$P/ca.crt" --cluster-signing-key-file="$P/ca.key" \
  --service-cluster-ip-range="$SERVICE_CIDR" --cluster-cidr="$CLUSTER_CIDR" --allocate-node-cidrs=false --v=1
start kube-scheduler "$KBIN/kube-scheduler" \
  --kubeconfig="$STATE/sched.kubeconfig" --authentication-kubeconfig="$STATE/sched.kubeconfig" --authorization-kubeconfig="$STATE/sched.kubeconfig" \
  --bind-address=127.0.0.1 --leader-elect=false --v=1
start kubelet "$KBIN/kubelet" --config="$STATE/kubelet.yaml" --kubeconfig="$STATE/kubelet.kubeconfig" \
  --root-dir="$STATE/kubelet" --cert-dir="$STATE/kubelet/pki" --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" --v=1
start kube-proxy "$KBIN/kube-proxy" --config="$STATE/kube-proxy.yaml" --v=1
wait_for "node $NODE_NAME Ready" 180 $K wait --for=condition=Ready "node/$NODE_NAME" --timeout=1s
wait_for "the default ServiceAccount" 60 $K -n default get serviceaccount default
# The kubelet changed kernel defaults at start (it does not look at them again): put them back.
while IFS== read -r k v; do [ "$(sysctl -n "$k" 2>/dev/null)" = "$v" ] || sysctl -qw "$k=$v" || true; done < "$STATE/before/sysctl.txt"
if [ $ingress = 1 ]; then
$K apply -f - >/dev/null <<X
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec: {controller: traefik.io/ingress-controller}
X
start traefik "$TBIN/traefik" --entryPoints.web.address="$INGRESS_ADDRESS" \
  --providers.kubernetesingress=true --providers.kubernetesingress.endpoint="https://$NODE_IP:$APISERVER_PORT" \
  --providers.kubernetesingress.token="$(cut -d, -f1 "$P/tokens.csv")" \
  --providers.kubernetesingress.certauthfilepath="$P/ca.crt" \
  --providers.kubernetesingress.ingressclass=nginx --providers.kubernetesingress.ingressendpoint.ip=127.0.0.1 \
  --global.checknewversion=false --global.sendanonymoususage=false --log.level=INFO
wait_for "traefik on $INGRESS_ADDRESS" 60 bash -c "ss -Hltn 'sport = :${INGRESS_ADDRESS##*:}' | grep -q ."
fi
# What the acceptance tests (make testacc-k8s) and other tools read.
cat > "$STATE/env" <<X
KUBECONFIG=$KUBECONFIG_FILE
BENCHFLOW_K8S_INGRESS_ADDRESS=$INGRESS_ADDRESS
BENCHFLOW_K8S_INGRESS_CLASS=nginx
BENCHFLOW_K8S_LOCAL_CLUSTER=$STATE
X
trap - ERR
log "up in $(( $(date +%s) - t0 ))s"
usage
