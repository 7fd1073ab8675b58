#!/usr/bin/env bash
# Builds the Docker images benchflow's tests and examples use, without any
# registry:
#
#   benchflow/nginx:local  Debian's nginx from this host (docker import)
#   benchflow/httpd:local  Debian's apache2 from this host (docker import)
#   benchflow/serve:local  FROM scratch around a static `benchflow serve`
#   benchflow/agent:local  the same image under the name load agents use
#                          (`benchflow agent` in Kubernetes pods)
#
# Usage: build.sh [--force] [nginx] [httpd] [serve] [agent]   (default: all four)
#
# Idempotent and fast when nothing changed: every image carries the label
# dev.benchflow.image.hash, a hash of what went into it; an image whose hash
# matches is kept. --force rebuilds. Needs `docker` and a reachable engine.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
force=0
want=()
for a in "$@"; do
  case "$a" in
    --force) force=1 ;;
    nginx|httpd|serve|agent) want+=("$a") ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "build.sh: unknown argument $a (want nginx, httpd, serve, agent or --force)" >&2; exit 2 ;;
  esac
done
[ ${#want[@]} -gt 0 ] || want=(nginx httpd serve agent)

command -v docker >/dev/null || { echo "build.sh: docker CLI not found" >&2; exit 1; }
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
  { echo "build.sh: no Docker engine reachable (DOCKER_HOST=${DOCKER_HOST:-unix:///var/run/docker.sock})" >&2; exit 1; }

# One build at a time on this machine (test packages run in parallel).
exec 9>"${TMPDIR:-/tmp}/benchflow-images.lock"
flock 9

work="$(mktemp -d "${TMPDIR:-/tmp}/benchflow-images.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# current_hash IMAGE prints the hash label of an existing image, or nothing.
current_hash() {
  docker image inspect --format '{{index .Config.Labels "dev.benchflow.image.hash"}}' "$1" 2>/dev/null || true
}

# copy_with_libs ROOT FILE... copies each file and every shared library it
# needs (ldd) into ROOT, keeping paths.
copy_with_libs() {
  local root="$1"; shift
  local f lib real dir
  for f in "$@"; do
    put "$root" "$f"
    for lib in $(ldd "$f" 2>/dev/null | awk '/=> \//{print $3} /^[ \t]*\/[^ ]+ \(/{print $1}'); do
      put "$root" "$lib"
    done
  done
}

# put ROOT PATH copies the file PATH resolves to into ROOT at its real path,
# plus a symlink where PATH's (resolved) folder expects it.
put() {
  local root="$1" path="$2" real dir
  real="$(readlink -f "$path")"
  dir="$(readlink -f "$(dirname "$path")")"
  if [ ! -e "$root$real" ]; then
    mkdir -p "$root$(dirname "$real")"
    cp -L "$real" "$root$real"
  fi
  if [ "$dir/$(basename "$path")" != "$real" ] && [ ! -e "$root$dir/$(basename "$path")" ]; then
    mkdir -p "$root$dir"
    ln -s "$real" "$root$dir/$(basename "$path")"
  fi
}

# base_root ROOT fills the files every image shares.
base_root() {
  local root="$1"
  mkdir -p "$root"/{etc,run,tmp,var/run,var/lock,usr/lib,usr/lib64,usr/bin,usr/sbin}
  # Debian's merged /usr, so paths ldd prints resolve the same way.
  ln -s usr/lib "$root/lib"; ln -s usr/lib64 "$root/lib64"
  ln -s usr/bin "$root/bin"; ln -s usr/sbin "$root/sbin"
  chmod 1777 "$root/tmp"
  cat >"$root/etc/passwd" <<'P'
root:x:0:0:root:/root:/usr/sbin/nologin
www-data:x:33:33:www-data:/var/www:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
P
  cat >"$root/etc/group" <<'G'
root:x:0:
www-data:x:33:
nogroup:x:65534:
G
  printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$root/etc/nsswitch.conf"
  printf '127.0.0.1 localhost\n::1 localhost\n' >"$root/etc/hosts"
  cp /etc/mime.types "$root/etc/mime.types" 2>/dev/null || true
}

# import ROOT IMAGE HASH CHANGE... tars ROOT into a new image.
import() {
  local root="$1" image="$2" hash="$3"; shift 3
  local args=(--change "LABEL dev.benchflow.image.hash=$hash" --change "LABEL org.opencontainers.image.source=benchflow/providers/docker/images/build.sh")
  local c
  for c in "$@"; do args+=(--change "$c"); done
  local old
  old="$(docker image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)"
  tar -C "$root" --numeric-owner -cf - . | docker import "${args[@]}" - "$image" >/dev/null
  # Drop the image this one replaces (kept if a container still uses it).
  if [ -n "$old" ] && [ "$old" != "$(docker image inspect --format '{{.Id}}' "$image")" ]; then
    docker rmi "$old" >/dev/null 2>&1 || true
  fi
  echo "built $image ($(du -sh "$root" | cut -f1))"
}

build_nginx() {
  local image=benchflow/nginx:local
  local hash
  hash="$(cat /usr/sbin/nginx "$0" | sha256sum | cut -c1-16)"
  if [ $force = 0 ] && [ "$(current_hash $image)" = "$hash" ]; then echo "$image is up to date"; return; fi
  [ -x /usr/sbin/nginx ] || { echo "build.sh: /usr/sbin/nginx missing (apt-get install nginx)" >&2; exit 1; }
  local root="$work/nginx"
  base_root "$root"
  copy_with_libs "$root" /usr/sbin/nginx
  mkdir -p "$root/etc/nginx/conf.d" "$root/etc/nginx/modules-enabled" "$root/var/log/nginx" \
    "$root/var/lib/nginx" "$root/usr/share/nginx/html" "$root/var/cache/nginx"
  local f
  for f in mime.types fastcgi_params fastcgi.conf proxy_params scgi_params uwsgi_params koi-utf koi-win win-utf; do
    [ -e "/etc/nginx/$f" ] && cp "/etc/nginx/$f" "$root/etc/nginx/$f"
  done
  # The official nginx image's layout: conf.d/default.conf serves
  # /usr/share/nginx/html, logs go to the container's stdout/stderr.
  cat >"$root/etc/nginx/nginx.conf" <<'N'
user  www-data;
worker_processes  auto;
error_log  /var/log/nginx/error.log notice;
pid        /run/nginx.pid;
events {
    worker_connections  1024;
}
http {
    include       /etc/nginx/mime.types;
    default_type  application/octet-stream;
    log_format  main  '$remote_addr - $remote_user [$time_local] "$request" '
                      '$status $body_bytes_sent "$http_referer" '
                      '"$http_user_agent" "$http_x_forwarded_for"';
    access_log  /var/log/nginx/access.log  main;
    sendfile        on;
    keepalive_timeout  65;
    include /etc/nginx/conf.d/*.conf;
}
N
  cat >"$root/etc/nginx/conf.d/default.conf" <<'N'
server {
    listen       80;
    server_name  localhost;
    location / {
        root   /usr/share/nginx/html;
        index  index.html index.htm;
    }
}
N
  if [ -e /usr/share/nginx/html/index.html ]; then
    cp /usr/share/nginx/html/index.html "$root/usr/share/nginx/html/index.html"
  else
    printf '<!DOCTYPE html>\n<html><body><h1>Welcome to nginx!</h1></body></html>\n' >"$root/usr/share/nginx/html/index.html"
  fi
  ln -sf /dev/stdout "$root/var/log/nginx/access.log"
  ln -sf /dev/stderr "$root/var/log/nginx/error.log"
  import "$root" $image "$hash" 'CMD ["nginx","-g","daemon off;"]' 'EXPOSE 80'
}

build_httpd() {
  local image=benchflow/httpd:local
  local hash
  hash="$(cat /usr/sbin/apache2 "$0" | sha256sum | cut -c1-16)"
  if [ $force = 0 ] && [ "$(current_hash $image)" = "$hash" ]; then echo "$image is up to date"; return; fi
  [ -x /usr/sbin/apache2 ] || { echo "build.sh: /usr/sbin/apache2 missing (apt-get install apache2)" >&2; exit 1; }
  local root="$work/httpd"
  base_root "$root"
  copy_with_libs "$root" /usr/sbin/apache2
  mkdir -p "$root/usr/lib/apache2"
  local m
  for m in /usr/lib/apache2/modules/*; do
    copy_with_libs "$root" "$m"
  done
  cp -rL /etc/apache2 "$root/etc/"
  # Logs go to the container's stdout/stderr, like the official httpd image.
  sed -i -e 's#^ErrorLog .*#ErrorLog /proc/self/fd/2#' "$root/etc/apache2/apache2.conf"
  sed -i -e 's#^\(\s*\)CustomLog .*#\1CustomLog /proc/self/fd/1 combined#' \
    "$root/etc/apache2/sites-available/000-default.conf"
  # The official image's ServerName warning is noise in logs.
  echo 'ServerName localhost' >>"$root/etc/apache2/apache2.conf"
  mkdir -p "$root/var/www/html" "$root/var/run/apache2" "$root/var/lock/apache2" "$root/var/log/apache2"
  # The official httpd image's page.
  printf '<html><body><h1>It works!</h1></body></html>\n' >"$root/var/www/html/index.html"
  import "$root" $image "$hash" \
    'ENV APACHE_RUN_USER=www-data' 'ENV APACHE_RUN_GROUP=www-data' \
    'ENV APACHE_PID_FILE=/var/run/apache2/apache2.pid' 'ENV APACHE_RUN_DIR=/var/run/apache2' \
    'ENV APACHE_LOCK_DIR=/var/lock/apache2' 'ENV APACHE_LOG_DIR=/var/log/apache2' 'ENV LANG=C' \
    'CMD ["apache2","-DFOREGROUND"]' 'EXPOSE 80'
}

build_serve() {
  local image=benchflow/serve:local
  if ! grep -rqs '"serve' "$repo/cmd/benchflow/"; then
    echo "build.sh: skipping $image: this tree has no \`benchflow serve\` command yet" >&2
    return
  fi
  command -v go >/dev/null || { echo "build.sh: go not found (needed for $image)" >&2; exit 1; }
  # The source state (commit, changed files and their contents) decides
  # whether the binary must be rebuilt at all: go build takes a while.
  local src=""
  if git -C "$repo" rev-parse HEAD >/dev/null 2>&1; then
    src="$( (git -C "$repo" rev-parse HEAD; cd "$repo" && git status --porcelain -- '*.go' go.mod go.sum |
      while read -r _ f; do echo "$f"; [ -f "$f" ] && sha256sum "$f"; done; cat "$0") | sha256sum | cut -c1-16)"
    if [ $force = 0 ] && [ "$(docker image inspect --format '{{index .Config.Labels "dev.benchflow.image.src"}}' $image 2>/dev/null)" = "$src" ]; then
      echo "$image is up to date"
      return
    fi
  fi
  local root="$work/serve"
  mkdir -p "$root/tmp"
  if ! (cd "$repo" && CGO_ENABLED=0 go build -trimpath -o "$root/benchflow" ./cmd/benchflow); then
    if [ -n "$(current_hash $image)" ]; then
      echo "build.sh: go build failed; keeping the existing $image" >&2
      return
    fi
    echo "build.sh: go build of ./cmd/benchflow failed; cannot build $image" >&2
    exit 1
  fi
  local hash
  hash="$(cat "$root/benchflow" "$0" | sha256sum | cut -c1-16)"
  if [ $force = 0 ] && [ "$(current_hash $image)" = "$hash" ]; then echo "$image is up to date"; return; fi
  rm -f "$root/Dockerfile"
  # The equivalent of FROM scratch + COPY: a root holding only the binary.
  import "$root" $image "$hash" "LABEL dev.benchflow.image.src=$src" 'ENTRYPOINT ["/benchflow"]' 'CMD ["serve","--addr","0.0.0.0:8080"]' 'EXPOSE 8080'
}

# The agent image is the serve image (its /benchflow runs `agent` too),
# tagged under its own name so pipelines and the local cluster name it.
build_agent() {
  if ! grep -rqs '"agent' "$repo/cmd/benchflow/"; then
    echo "build.sh: skipping benchflow/agent:local: this tree has no \`benchflow agent\` command yet" >&2
    return
  fi
  build_serve
  docker tag benchflow/serve:local benchflow/agent:local
  echo "tagged benchflow/agent:local"
}

for w in "${want[@]}"; do "build_$w"; done
