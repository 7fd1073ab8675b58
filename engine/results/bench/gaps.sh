#!/bin/sh
# End-to-end: TRIALS (default 2000) short trials with the local provider
# and `benchflow serve` (REQUESTS requests each, default 100), then the
# median gap between trials over the first and the last 100. A gap that
# grows with the run is a per-trial cost that grows with it (issue 27).
# Takes a few minutes; run it on a quiet machine. Usage, from the module:
#   engine/results/bench/gaps.sh [TRIALS] [REQUESTS]
set -eu
trials=${1:-2000}
requests=${2:-100}
make build >/dev/null
bin=$PWD/bin/benchflow
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/gaps.hcl" <<HCL
pipeline "gaps" {
  repetitions = $trials
}
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:\${self.port.http}"]
  port "http" {}
  health { http = "/" }
}
step "load" "main" {
  target      = service.web.url
  connections = 1
  threads     = 1
  requests    = $requests
}
HCL
start=$(date +%s)
"$bin" apply "$work/gaps.hcl" --out "$work/results" -q >"$work/apply.log" 2>&1 || { tail -20 "$work/apply.log"; exit 1; }
end=$(date +%s)
echo "apply: $trials trials in $((end - start)) s (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
go run ./engine/results/bench/gaps "$work/results/latest"
