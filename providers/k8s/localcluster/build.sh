#!/usr/bin/env bash
# build.sh: builds what the local test cluster runs into $BENCHFLOW_CLUSTER_CACHE,
# reusing whatever is already there. Pieces:
#   k8s      kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
#            kube-proxy and kubectl at $K8S_VERSION (Go module proxy, ~17 min cold
#            on 2 busy cores, ~2.7 GB peak memory)
#   traefik  the ingress controller at $TRAEFIK_VERSION (~12 min cold, ~3.3 GB)
#   images   the pause image (static C program) and benchflow/nginx:local, in Docker
# usage: build.sh [k8s|traefik|images]...   (default: all three)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
. "$HERE/versions.env"
CACHE=$BENCHFLOW_CLUSTER_CACHE
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
log() { echo "[build $(date -u +%H:%M:%S)] $*"; }
need() { command -v "$1" >/dev/null || { echo "build.sh: $1 not found ($2)" >&2; exit 2; }; }

build_k8s() {
  local dir=$CACHE/kubernetes-$K8S_VERSION bins="kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl"
  if [ -f "$dir/bin/.complete" ]; then log "kubernetes $K8S_VERSION: cached in $dir/bin"; return; fi
  need go "the Go toolchain builds Kubernetes"
  mkdir -p "$dir/build" "$dir/bin"; cd "$dir/build"
  log "kubernetes $K8S_VERSION: fetching the module"
  local modjson gomod
  modjson=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION")
  gomod=$(printf '%s' "$modjson" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
  [ -f "$gomod" ] || { echo "build.sh: no go.mod for k8s.io/kubernetes@$K8S_VERSION" >&2; exit 1; }
  # k8s.io/kubernetes replaces its staging modules with ./staging; the wrapper
  # replaces each with its published release instead.
  { echo "module benchflow.local/k8s-build"; echo; echo "go $(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/').0"; echo
    echo "require k8s.io/kubernetes $K8S_VERSION"; echo; echo "replace ("
    grep '=> ./staging' "$gomod" | awk -v v="$K8S_STAGING_VERSION" '{print "\t" $1 " => " $1 " " v}'
    echo ")"; } > go.mod
  local pkgs=""; for b in $bins; do pkgs="$pkgs k8s.io/kubernetes/cmd/$b"; done
  log "kubernetes $K8S_VERSION: resolving dependencies"
  go get "k8s.io/kubernetes@$K8S_VERSION" $pkgs
  local minor; minor=$(echo "$K8S_VERSION" | cut -d. -f2)
  local ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  log "kubernetes $K8S_VERSION: compiling $bins"
  go build -p "$(nproc)" -trimpath -ldflags "$ld" -o "$dir/bin/" $pkgs
  touch "$dir/bin/.complete"
  log "kubernetes $K8S_VERSION: done"
}

build_traefik() {
  local dir=$CACHE/traefik-$TRAEFIK_VERSION
  if [ -f "$dir/bin/.complete" ]; then log "traefik $TRAEFIK_VERSION: cached in $dir/bin"; return; fi
  need go "the Go toolchain builds Traefik"
  mkdir -p "$dir/build" "$dir/bin"; cd "$dir/build"
  log "traefik $TRAEFIK_VERSION: fetching the module"
  local gomod
  gomod=$(go mod download -json "github.com/traefik/traefik/v3@$TRAEFIK_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
  [ -f "$gomod" ] || { echo "build.sh: no go.mod for traefik $TRAEFIK_VERSION" >&2; exit 1; }
  # Traefik's own replace directives (forks of two dependencies) apply to the wrapper too.
  { echo "module benchflow.local/traefik-build"; echo; echo "go $(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/').0"; echo
    echo "require github.com/traefik/traefik/v3 $TRAEFIK_VERSION"; echo; } > go.mod
  # Copy every replace whose target is a module version (local-path ones cannot apply here).
  awk '/^replace[[:space:]]*\(/{b=1; next} b && /^\)/{b=0; next}
       b || /^replace[[:space:]]/ { sub(/^replace[[:space:]]+/, ""); print }' "$gomod" |
    awk '$0 ~ /=>/ { split($0, a, "=>"); n=split(a[1], l, " "); m=split(a[2], r, " ");
         if (m == 2 && r[1] !~ /^\./) print "-replace=" l[1] (n == 2 ? "@" l[2] : "") "=" r[1] "@" r[2] }' |
    xargs -r go mod edit
  log "traefik $TRAEFIK_VERSION: resolving dependencies"
  go get "github.com/traefik/traefik/v3/cmd/traefik@$TRAEFIK_VERSION"
  log "traefik $TRAEFIK_VERSION: compiling"
  go build -p "$(nproc)" -trimpath -ldflags "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$TRAEFIK_VERSION" \
    -o "$dir/bin/traefik" github.com/traefik/traefik/v3/cmd/traefik
  touch "$dir/bin/.complete"
  log "traefik $TRAEFIK_VERSION: done"
}

build_images() {
  need docker "images are built locally with Docker"
  if ! docker image inspect "$PAUSE_IMAGE" >/dev/null 2>&1; then
    need gcc "the pause image is a static C program"
    local dir=$CACHE/images/pause; mkdir -p "$dir"
    cp "$HERE/pause.c" "$dir/pause.c"
    gcc -Os -static -o "$dir/pause" "$dir/pause.c" && strip "$dir/pause"
    printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' > "$dir/Dockerfile"
    DOCKER_BUILDKIT=0 docker build -q -t "$PAUSE_IMAGE" "$dir" >/dev/null
    log "image $PAUSE_IMAGE built"
  else log "image $PAUSE_IMAGE: present"; fi
  if ! docker image inspect "$NGINX_IMAGE_LOCAL" >/dev/null 2>&1; then
    "$REPO/providers/docker/images/build.sh" nginx
    log "image $NGINX_IMAGE_LOCAL built"
  else log "image $NGINX_IMAGE_LOCAL: present"; fi
  # The load agents' image holds this tree's benchflow: its build script
  # rebuilds it only when the source changed (agents and the controller
  # must speak the same protocol).
  "$REPO/providers/docker/images/build.sh" agent | sed 's/^/  /'
}

[ $# -gt 0 ] || set -- k8s traefik images
mkdir -p "$CACHE"
for piece in "$@"; do
  case $piece in k8s|traefik|images) ;; *) echo "build.sh: unknown piece $piece (k8s, traefik, images)" >&2; exit 2 ;; esac
  # One build of a piece at a time (a second make cluster-up waits, then reuses it).
  exec 9>"$CACHE/.build-$piece.lock"
  if ! flock -n 9; then log "$piece: another build is running; waiting for it"; flock 9; fi
  case $piece in k8s) build_k8s ;; traefik) build_traefik ;; images) build_images ;; esac
  exec 9>&-
done
