#!/usr/bin/env bash
# compare-wrk.sh BENCHFLOW_BIN — run wrk and `benchflow load` (on each of
# ENGINES) alternately against Debian's nginx on loopback and print, per
# case and engine, the median ratio of req/s (benchflow / wrk) and the
# client CPU per request of both. A ratio >= 1.0 means benchflow is at
# least as fast as wrk on this machine; eff >= 1.25 means it spends at
# most 0.80x wrk's CPU per request.
#
# Environment: PAIRS (default 5), DURATION (default 5s), CONNS (default 64),
#   THREADS (default 1), CASES (default "6b 6b-close 1k 1k-close 1m 1m-close
#   6b-tls 1k-tls": -close sends Connection: close on every request, -tls
#   goes over TLS 1.3 to a second server block, keep-alive, certificate not
#   verified), PIN (default 0: shared cores; 1: nginx on core 1, the
#   clients on core 0),
#   ENGINES (default "auto"; e.g. "uring epoll": BENCHFLOW_LOAD_ENGINE for
#   each benchflow run), PORT (default: a free one), NGINX (default
#   /usr/sbin/nginx), WRK (default wrk), BFFLAGS (extra flags for
#   benchflow load, e.g. "--busy-poll 20us"), FLOOR (a binary built from
#   ./engine/load/bench/floor: measured in the same pairs as a "floor" row
#   of the keep-alive cases — the CPU per request under any epoll client).
set -euo pipefail

BF=${1:?usage: compare-wrk.sh path/to/benchflow}
BF=$(cd "$(dirname "$BF")" && pwd)/$(basename "$BF")
PAIRS=${PAIRS:-5}
DURATION=${DURATION:-5s}
CONNS=${CONNS:-64}
THREADS=${THREADS:-1}
CASES=${CASES:-"6b 6b-close 1k 1k-close 1m 1m-close 6b-tls 1k-tls"}
read -r -a ENGINES <<<"${ENGINES:-auto}"
NGINX=${NGINX:-/usr/sbin/nginx}
WRK=${WRK:-wrk}
read -r -a BFFLAGS <<<"${BFFLAGS:-}"
FLOOR=${FLOOR:-}
[ -z "$FLOOR" ] || [ -x "$FLOOR" ] || { echo "compare-wrk: FLOOR=$FLOOR is not executable (go build -o floor ./engine/load/bench/floor)" >&2; exit 1; }

command -v "$WRK" >/dev/null || { echo "compare-wrk: wrk not found (apt-get install wrk)" >&2; exit 1; }
[ -x "$NGINX" ] || { echo "compare-wrk: nginx not found at $NGINX (apt-get install nginx)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "compare-wrk: /usr/bin/time not found (apt-get install time)" >&2; exit 1; }
[ -x "$BF" ] || { echo "compare-wrk: $BF is not executable (run make build)" >&2; exit 1; }

NAME=compare-wrk
. "$(dirname "$0")/lib.sh"
printf 'hello\n' >"$DIR/www/6b"
head -c 1024 /dev/urandom >"$DIR/www/1k"
head -c 1048576 /dev/urandom >"$DIR/www/1m"
# The TLS cases go to the second server block (PORT2).
start_nginx http "" 1000000 https ssl

# measure TOOL ARGS… prints "RPS CPU_US_PER_REQUEST": the tool's req/s and
# the client CPU time (user+system) it spent per completed request.
measure() {
	local out
	out=$( { /usr/bin/time -f 'CPUSECS %U %S' "${CLIENT_ON[@]}" "$@"; } 2>&1 )
	awk '/^Requests\/sec:/ {rps=$2} / requests in / {n=$1} /^CPUSECS/ {cpu=$2+$3}
		END {if (n > 0) printf "%s %.3f\n", rps, cpu*1e6/n; else printf "%s 0\n", rps}' <<<"$out"
}

echo "nginx $($NGINX -v 2>&1 | sed 's/.*\///'), $(wrk -v 2>&1 | head -1 | awk '{print $1, $2}'), $(nproc) cores, $PLACEMENT, -t$THREADS -c$CONNS -d$DURATION, $PAIRS pairs${BFFLAGS:+, benchflow ${BFFLAGS[*]}}, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %-10s %10s %10s %7s   %12s %12s %7s\n' case engine wrk_rps bf_rps ratio wrk_cpu_us bf_cpu_us eff
echo "(ratio = benchflow req/s ÷ wrk req/s; cpu_us = client CPU µs per request; eff = wrk cpu ÷ benchflow cpu; all medians)"
for c in $CASES; do
	file=${c%-close}
	extra=()
	bfextra=()
	url="http://127.0.0.1:$PORT/$file"
	if [ "$c" != "$file" ]; then
		extra=(-H 'Connection: close')
		bfextra=(--close)
	elif [ "${c%-tls}" != "$c" ]; then
		file=${c%-tls}
		url="https://127.0.0.1:$PORT2/$file"
	fi
	w_all=()
	wc_all=()
	declare -A b_all=() bc_all=() ratios=() effs=()
	rows=("${ENGINES[@]}")
	if [ -n "$FLOOR" ] && [ "$c" = "$file" ]; then rows+=(floor); fi
	for i in $(seq "$PAIRS"); do
		read -r w wc < <(measure "$WRK" -t"$THREADS" -c"$CONNS" -d"$DURATION" "${extra[@]}" "$url")
		w_all+=("$w")
		wc_all+=("$wc")
		for e in "${ENGINES[@]}"; do
			read -r b bc < <(BENCHFLOW_LOAD_ENGINE=$e measure "$BF" load -t"$THREADS" -c"$CONNS" -d"$DURATION" "${bfextra[@]}" "${BFFLAGS[@]}" "$url")
			b_all[$e]+="$b "
			bc_all[$e]+="$bc "
			ratios[$e]+="$(ratio "$b" "$w") "
			effs[$e]+="$(ratio "$wc" "$bc") "
		done
		if [ "${rows[-1]}" = floor ]; then
			read -r b bc < <(measure "$FLOOR" -c "$CONNS" -d "$DURATION" "$url")
			b_all[floor]+="$b "
			bc_all[floor]+="$bc "
			ratios[floor]+="$(ratio "$b" "$w") "
			effs[floor]+="$(ratio "$wc" "$bc") "
		fi
	done
	for e in "${rows[@]}"; do
		printf '%-10s %-10s %10.0f %10.0f %7.3f   %12.2f %12.2f %7.3f   (pair ratios: %s)\n' "$c" "$e" \
			"$(printf '%s\n' "${w_all[@]}" | median)" "$(tr ' ' '\n' <<<"${b_all[$e]}" | grep . | median)" \
			"$(tr ' ' '\n' <<<"${ratios[$e]}" | grep . | median)" \
			"$(printf '%s\n' "${wc_all[@]}" | median)" "$(tr ' ' '\n' <<<"${bc_all[$e]}" | grep . | median)" \
			"$(tr ' ' '\n' <<<"${effs[$e]}" | grep . | median)" "${ratios[$e]% }"
	done
	unset b_all bc_all ratios effs
done
