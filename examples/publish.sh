#!/usr/bin/env bash
# Re-measures the examples and regenerates everything published from them:
# for each example, apply its pipeline, publish the run as the example's
# bundle/, reproduce that bundle right after, publish the reproduction as
# reproduced/, and regenerate the README's sections between the
# <!-- benchflow:… --> markers (docs/publishing.md).
#
#   examples/publish.sh                       # every example that runs here
#   examples/publish.sh docker-4k quickstart  # just these
#   examples/publish.sh --list                # the examples and their commands
#
# Run it from the repository's root on a quiet machine: it refuses to start
# while the 1-minute load average is at or above MAX_LOAD (default 2; set
# MAX_LOAD=inf to measure anyway) and prints the load average before and
# after each example, since figures measured under load do not reproduce.
# Docker examples need `make images` (done here) and a Docker engine.
# Runs go to $WORK (default: a new folder under /tmp); nothing else outside
# the examples' folders is written.
set -euo pipefail
cd "$(dirname "$0")/.."

bf=./bin/benchflow
max_load=${MAX_LOAD:-2}

# name | pipeline | apply flags | reproduce flags (the grants its plan
# needs beyond the sandbox) | publish/report flags
# The flags shorten the studies' loads so that each example, measured and
# reproduced, takes a few minutes here; a bundle records the variables it
# ran with and reproduce reuses them.
examples=(
  "quickstart|pipelines/quickstart.hcl|--repetitions 3|--var duration=1s|"
  "docker-overhead|examples/docker-overhead/pipeline.hcl|--var duration=5s|--allow docker|--baseline deploy=host"
  "docker-4k|examples/docker-4k/pipeline.hcl|--var duration=5s|--allow docker|--baseline deploy=host"
  "nginx-vs-httpd|examples/nginx-vs-httpd/pipeline.hcl|--var requests=2000|--allow docker|"
  "httpd-network-modes|examples/httpd-network-modes/pipeline.hcl|--var requests=20000|--allow docker|--baseline deploy=host"
  "nginx-long-short|examples/nginx-long-short/study.hcl|--var duration=3s||"
  "nginx-http2|examples/nginx-http2/pipeline.hcl|--var duration=3s||--baseline tls=off"
  "caddy-protocols|examples/caddy-protocols/pipeline.hcl|--var duration=2s||--baseline protocol=http/1.1"
  "nomad-gateway|pipelines/gateway.hcl|--repetitions 5 --var duration=2s --var warm=1s|--allow nomad|--baseline path=direct"
  "two-hosts|examples/two-hosts/study.hcl|--var duration=2s|-|--baseline link=10gbit"
)

# Examples that need a stack this machine may not have: name | variables
# that must be set | what to do otherwise.
needs_stack() {
  case "$1" in
    nomad-gateway) [ -n "${NOMAD_ADDR:-}" ] && [ -n "${APISIX_ADMIN:-}" ] ;;
    caddy-protocols) [ -x /var/cache/benchflow-caddy/caddy ] ;;
    two-hosts) [ "$(id -u)" = 0 ] && [ -x /usr/sbin/sshd ] ;;
    *) true ;;
  esac
}
needs_what() {
  case "$1" in
    caddy-protocols) echo "Caddy in /var/cache/benchflow-caddy/caddy: run make caddy" ;;
    two-hosts) echo "root and Debian's openssh-server, to make its two hosts as network namespaces (examples/two-hosts/hosts.sh)" ;;
    *) echo "a Nomad + Consul + APISIX stack: set NOMAD_ADDR, CONSUL_HTTP_ADDR, APISIX_ADMIN, APISIX_GATEWAY and APISIX_ADMIN_KEY (docs/gateway.md, \"Tested against\")" ;;
  esac
}

field() { local IFS='|'; local a=($1); echo "${a[$2]:-}"; }

if [ "${1:-}" = "--list" ] || [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  [ "${1:-}" = "--list" ] || sed -n '2,18p' "$0"
  for e in "${examples[@]}"; do
    n=$(field "$e" 0); p=$(field "$e" 1); a=$(field "$e" 2); r=$(field "$e" 3); b=$(field "$e" 4)
    echo "$n:"
    if [ "$r" = - ]; then # two hosts in namespaces; no sandboxed reproduction yet
      echo "  examples/$n/hosts.sh up"
      echo "  eval \"examples/$n/hosts.sh run $bf apply $p \$(examples/$n/hosts.sh vars) ${a:+$a }--out \$WORK/$n\""
      echo "  examples/$n/hosts.sh down"
      echo "  $bf publish \$WORK/$n/latest examples/$n/bundle --force${b:+ $b}"
      echo "  $bf report --update examples/$n/README.md"
      continue
    fi
    echo "  $bf apply $p ${a:+$a }--out \$WORK/$n"
    echo "  $bf publish \$WORK/$n/latest examples/$n/bundle --force${b:+ $b}"
    echo "  $bf reproduce examples/$n/bundle ${r:+$r }--yes --out \$WORK/$n-again --exit-on none"
    echo "  $bf publish \$WORK/$n-again/latest examples/$n/reproduced --force${b:+ $b}"
    echo "  $bf report --update examples/$n/README.md"
  done
  exit 0
fi

want=("$@")
if [ ${#want[@]} -eq 0 ]; then
  for e in "${examples[@]}"; do
    n=$(field "$e" 0)
    if needs_stack "$n"; then want+=("$n"); else
      echo "publish.sh: skipping $n: it needs $(needs_what "$n")" >&2
    fi
  done
fi
for w in "${want[@]}"; do
  if ! needs_stack "$w"; then
    echo "publish.sh: $w needs $(needs_what "$w")" >&2
    exit 2
  fi
done
selected=()
for w in "${want[@]}"; do
  found=""
  for e in "${examples[@]}"; do [ "$(field "$e" 0)" = "$w" ] && found=$e; done
  if [ -z "$found" ]; then
    echo "publish.sh: no example \"$w\" (examples/publish.sh --list names them)" >&2
    exit 2
  fi
  selected+=("$found")
done

load1() { cut -d' ' -f1 /proc/loadavg; }
quiet() { awk -v l="$(load1)" -v m="$max_load" 'BEGIN { exit !(m == "inf" || l + 0 < m + 0) }'; }
if ! quiet; then
  echo "publish.sh: load average $(load1) is not below $max_load: figures measured now would not reproduce." >&2
  echo "            Wait for a quiet machine (uptime), or set MAX_LOAD=inf to measure anyway." >&2
  exit 1
fi

make build >/dev/null
needs_docker=0
for e in "${selected[@]}"; do
  case "$(field "$e" 0)" in docker-*|nginx-vs-httpd|httpd-*) needs_docker=1 ;; esac
done
[ $needs_docker = 0 ] || make images >/dev/null

WORK=${WORK:-$(mktemp -d /tmp/benchflow-examples.XXXXXX)}
echo "runs in $WORK"
for e in "${selected[@]}"; do
  n=$(field "$e" 0); p=$(field "$e" 1); a=$(field "$e" 2); r=$(field "$e" 3); b=$(field "$e" 4)
  echo "== $(date -u +%H:%M:%S) $n (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  rm -rf "$WORK/$n" "$WORK/$n-again"
  if [ "$r" = - ]; then # two hosts in namespaces; no sandboxed reproduction yet
    "examples/$n/hosts.sh" up >/dev/null
    trap '"examples/$n/hosts.sh" down' EXIT
    eval "examples/$n/hosts.sh run $bf apply $p $(examples/$n/hosts.sh vars) $a --out $WORK/$n -q"
    "examples/$n/hosts.sh" down
    trap - EXIT
    # shellcheck disable=SC2086 # the flags are words on purpose
    $bf publish "$WORK/$n/latest" "examples/$n/bundle" --force $b
    $bf report --update "examples/$n/README.md"
    echo "== $(date -u +%H:%M:%S) $n done (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    continue
  fi
  # shellcheck disable=SC2086 # the flags are words on purpose
  $bf apply "$p" $a --out "$WORK/$n" -q
  $bf publish "$WORK/$n/latest" "examples/$n/bundle" --force $b
  $bf reproduce "examples/$n/bundle" $r --yes --out "$WORK/$n-again" -q --exit-on none
  $bf publish "$WORK/$n-again/latest" "examples/$n/reproduced" --force $b
  $bf report --update "examples/$n/README.md"
  echo "== $(date -u +%H:%M:%S) $n done (load average $(cut -d' ' -f1-3 /proc/loadavg))"
done
