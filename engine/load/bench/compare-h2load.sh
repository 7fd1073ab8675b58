#!/usr/bin/env bash
# compare-h2load.sh BENCHFLOW_BIN — run h2load (nghttp2) and `benchflow load
# --h2` alternately against Debian's nginx serving HTTP/2 over TLS on
# loopback and print, per case (body size × streams per connection), the
# median ratio of req/s (benchflow / h2load) and the client CPU per request
# of both. A ratio >= 1.0 means benchflow is at least as fast as h2load on
# this machine; eff >= 1.0 means it spends at most h2load's CPU per request.
#
# Both clients get the same load: THREADS threads, CONNS keep-alive
# HTTP/2 connections over TLS (ALPN h2), STREAMS concurrent streams per
# connection (h2load -m, benchflow --streams), DURATION of measurement,
# no warm-up for either. The certificate is self-signed, made with openssl
# at run time; neither client verifies it. Each client negotiates its own
# TLS 1.3 cipher (printed in the header): OpenSSL's and Go's preferences
# differ.
#
# Errors of either client are counted per case (h2load: failed requests,
# 4xx/5xx responses included; benchflow: every error class of its JSON
# summary; either: a run that exits non-zero or completes nothing) and
# shown in the last column; the first error output of a client goes to
# stderr. A row with errors does not measure what it says.
#
# PROTOS (default "tls h2c") chooses the servers: nginx serving HTTP/2
# over TLS (ALPN h2) and over cleartext (h2c, prior knowledge: h2load's
# and benchflow --h2's way with http:// URLs), one server block each.
# Each row also shows nginx's CPU time per completed request under each
# client's traffic (srv_*_us, from /proc/PID/stat around each run): on
# loopback a client's wake-ups are paid on the server's core.
# With FLOOR (a binary built from ./engine/load/bench/h2floor, the least
# any HTTP/2 client must do here) each row also shows the floor's req/s and
# its ratio to h2load's, its CPU per request, measured in the same pairs,
# benchflow's over it, and nginx's CPU per request under it.
#
# Environment: PAIRS (default 5), DURATION (default 5s), CONNS (default 16:
#   HTTP/2 multiplexes, so fewer connections than compare-wrk's 64 carry
#   the same requests in flight with STREAMS 10), THREADS (default 1),
#   STREAMS (default "1 10"), CASES (default "6b 1k": bodies of 6 bytes and
#   1 KiB), PROTOS (default "tls h2c"), PIN (default 0: shared cores; 1:
#   server on core 1, clients on core 0), FLOOR (see above), PORT and
#   PORT2 (default: free ones), NGINX (default /usr/sbin/nginx), H2LOAD
#   (default h2load), BFFLAGS (extra flags for benchflow load).
set -euo pipefail

BF=${1:?usage: compare-h2load.sh path/to/benchflow}
BF=$(cd "$(dirname "$BF")" && pwd)/$(basename "$BF")
PAIRS=${PAIRS:-5}
DURATION=${DURATION:-5s}
CONNS=${CONNS:-16}
THREADS=${THREADS:-1}
read -r -a STREAMS <<<"${STREAMS:-1 10}"
CASES=${CASES:-"6b 1k"}
NGINX=${NGINX:-/usr/sbin/nginx}
H2LOAD=${H2LOAD:-h2load}
read -r -a BFFLAGS <<<"${BFFLAGS:-}"
read -r -a PROTOS <<<"${PROTOS:-tls h2c}"
FLOOR=${FLOOR:-}
[ -z "$FLOOR" ] || [ -x "$FLOOR" ] || { echo "compare-h2load: FLOOR=$FLOOR is not executable (go build -o h2floor ./engine/load/bench/h2floor)" >&2; exit 1; }
for p in "${PROTOS[@]}"; do
	case $p in tls | h2c) ;; *) echo "compare-h2load: PROTOS: $p: want tls or h2c" >&2; exit 1 ;; esac
done

command -v "$H2LOAD" >/dev/null || { echo "compare-h2load: h2load not found (apt-get install nghttp2-client)" >&2; exit 1; }
[ -x "$NGINX" ] || { echo "compare-h2load: nginx not found at $NGINX (apt-get install nginx)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "compare-h2load: /usr/bin/time not found (apt-get install time)" >&2; exit 1; }
command -v openssl >/dev/null || { echo "compare-h2load: openssl not found (apt-get install openssl)" >&2; exit 1; }
command -v jq >/dev/null || { echo "compare-h2load: jq not found (apt-get install jq)" >&2; exit 1; }
[ -x "$BF" ] || { echo "compare-h2load: $BF is not executable (run make build)" >&2; exit 1; }

NAME=compare-h2load
. "$(dirname "$0")/lib.sh"
printf 'hello\n' >"$DIR/www/6b"
head -c 1024 /dev/urandom >"$DIR/www/1k"
# keepalive_requests also bounds the streams of an HTTP/2 connection
# (nginx >= 1.19.7): high enough that no GOAWAY ends one mid-run. The h2c
# cases go to the second server block (PORT2).
start_nginx https "ssl http2" 100000000 http http2 --http2-prior-knowledge

# Each measure_* runs its client under /usr/bin/time and prints
# "RPS CPU_US_PER_REQUEST ERRORS CIPHER SERVER_US_PER_REQUEST": req/s, the
# client CPU time (user+system) per completed request, the failed requests
# and error responses, the negotiated TLS cipher, and nginx's CPU time over
# the client's run per completed request. A run with errors also copies
# the client's output to stderr (once per client and case: see $shown).
# They run in this shell (not in a subshell) so that $shown persists.
# measure_h2load and measure_floor print h2load's summary the same way
# (h2floor prints h2load's lines).
measure_h2load() { measure_h2style h2load "$1" "$2" "$H2LOAD" -t"$THREADS" -c"$CONNS" -m"$1" -D "$DURATION" "$2"; }
measure_floor() { measure_h2style floor "$1" "$2" "$FLOOR" -t "$THREADS" -c "$CONNS" -m "$1" -d "$DURATION" "$2"; }
measure_h2style() {
	local who=$1 rc=0 t0 t1
	shift 3
	t0=$(server_ticks)
	/usr/bin/time -o "$DIR/time" -f 'CPUSECS %U %S' \
		"${CLIENT_ON[@]}" "$@" >"$DIR/out" 2>&1 || rc=$?
	t1=$(server_ticks)
	awk -v rc="$rc" -v ticks="$((t1 - t0))" -v hz="$CLK_TCK" '
		/^finished in/ {rps=$4}
		/^requests:/ {done=$6; failed=$10; errored=$12+$14}
		/^status codes:/ {bad=$7+$9}
		/Cipher:/ {cipher=$NF}
		/^CPUSECS/ {cpu=$2+$3}
		END {
			# "failed" counts error responses (4xx, 5xx) as well as
			# errored and timed-out requests: the largest of them.
			err = failed
			if (errored > err) err = errored
			if (bad > err) err = bad
			err += (rc != 0 || done == 0)
			printf "%s %.3f %d %s %.3f\n", rps+0, (done > 0 ? cpu*1e6/done : 0), err, (cipher == "" ? "?" : cipher), (done > 0 ? ticks*1e6/hz/done : 0)
		}' "$DIR/out" "$DIR/time"
	if [ "$rc" != 0 ] || ! awk '/^requests:/ {f=$10+$12+$14} /^status codes:/ {f+=$7+$9; n++} END {exit !(n == 1 && f == 0)}' "$DIR/out"; then
		[ -n "${shown[$who]:-}" ] || { echo "compare-h2load: $who errors (exit $rc):" >&2; grep -v '^progress' "$DIR/out" | tail -n 20 >&2; }
		shown[$who]=1
	fi
}
measure_bf() {
	local streams=$1 url=$2 rc=0 t0 t1
	t0=$(server_ticks)
	/usr/bin/time -o "$DIR/time" -f 'CPUSECS %U %S' \
		"${CLIENT_ON[@]}" "$BF" load --json --h2 -t"$THREADS" -c"$CONNS" --streams "$streams" -d"$DURATION" "${BFFLAGS[@]}" "$url" >"$DIR/out" 2>"$DIR/err" || rc=$?
	t1=$(server_ticks)
	local cpu
	cpu=$(awk '/^CPUSECS/ {print $2+$3}' "$DIR/time")
	if ! jq -r --arg cpu "$cpu" --arg rc "$rc" --arg srv "$(awk -v t="$((t1 - t0))" -v hz="$CLK_TCK" 'BEGIN {print t * 1e6 / hz}')" '
		"\(.rps) \(if .requests > 0 then ($cpu|tonumber)*1e6/.requests else 0 end) \(.errors + (if $rc != "0" or .requests == 0 then 1 else 0 end)) \(.tls_cipher // "?" | gsub(" "; "_")) \(if .requests > 0 then ($srv|tonumber)/.requests else 0 end)"' "$DIR/out" 2>/dev/null; then
		echo "0 0 1 ? 0"
		[ "$rc" != 0 ] || rc="0, no JSON summary"
	fi
	if [ "$rc" != 0 ] || [ "$(jq -r '.errors' "$DIR/out" 2>/dev/null)" != 0 ]; then
		[ -n "${shown[benchflow]:-}" ] || {
			echo "compare-h2load: benchflow errors (exit $rc):" >&2
			jq -c '{requests, errors, errors_by, status, error_samples}' "$DIR/out" >&2 2>/dev/null || true
			tail -n 20 "$DIR/err" >&2
		}
		shown[benchflow]=1
	fi
}

echo "nginx $($NGINX -v 2>&1 | sed 's/.*\///') (HTTP/2: ${PROTOS[*]}), $("$H2LOAD" --version | head -1), $(nproc) cores, $PLACEMENT, -t$THREADS -c$CONNS -D$DURATION, $PAIRS pairs${BFFLAGS:+, benchflow ${BFFLAGS[*]}}${FLOOR:+, floor $FLOOR}, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-5s %7s %10s %10s %7s   %12s %12s %7s   %10s %10s' case proto streams h2load_rps bf_rps ratio h2load_cpu_us bf_cpu_us eff srv_h2l_us srv_bf_us
[ -z "$FLOOR" ] || printf '   %9s %9s %12s %8s %10s' floor_rps floor/h2l floor_cpu_us bf/floor srv_fl_us
printf '   %s\n' 'errors h2load/bf'
echo "(ratio = benchflow req/s ÷ h2load req/s; cpu_us = client CPU µs per request; eff = h2load cpu ÷ benchflow cpu; srv_*_us = nginx's CPU µs per request under h2load, benchflow${FLOOR:+, the floor; floor/h2l = floor req/s ÷ h2load req/s; bf/floor = benchflow cpu ÷ floor cpu}; all medians; errors summed over the pairs)"
ciphers=
for c in $CASES; do
	for proto in "${PROTOS[@]}"; do
		if [ "$proto" = tls ]; then url="https://127.0.0.1:$PORT/$c"; else url="http://127.0.0.1:$PORT2/$c"; fi
		for m in "${STREAMS[@]}"; do
			declare -A shown=()
			h_all=() hc_all=() b_all=() bc_all=() ratios=() effs=() hs_all=() bs_all=()
			f_all=() fratios=() fc_all=() floors=() fs_all=()
			h_err=0 b_err=0
			for _ in $(seq "$PAIRS"); do
				measure_h2load "$m" "$url" >"$DIR/res"
				read -r h hc he hcipher hs <"$DIR/res"
				measure_bf "$m" "$url" >"$DIR/res"
				read -r b bc be bcipher bs <"$DIR/res"
				h_all+=("$h") hc_all+=("$hc") b_all+=("$b") bc_all+=("$bc") hs_all+=("$hs") bs_all+=("$bs")
				ratios+=("$(ratio "$b" "$h")") effs+=("$(ratio "$hc" "$bc")")
				h_err=$((h_err + he)) b_err=$((b_err + be))
				if [ -n "$FLOOR" ]; then
					measure_floor "$m" "$url" >"$DIR/res"
					read -r f fc _ _ fs <"$DIR/res"
					f_all+=("$f") fratios+=("$(ratio "$f" "$h")") fc_all+=("$fc") floors+=("$(ratio "$bc" "$fc")") fs_all+=("$fs")
				fi
				[ -n "$ciphers" ] || [ "$proto" != tls ] || ciphers="TLS ciphers: h2load $hcipher, benchflow $bcipher"
			done
			printf '%-6s %-5s %7s %10.0f %10.0f %7.3f   %12.2f %12.2f %7.3f' "$c" "$proto" "$m" \
				"$(printf '%s\n' "${h_all[@]}" | median)" "$(printf '%s\n' "${b_all[@]}" | median)" \
				"$(printf '%s\n' "${ratios[@]}" | median)" \
				"$(printf '%s\n' "${hc_all[@]}" | median)" "$(printf '%s\n' "${bc_all[@]}" | median)" \
				"$(printf '%s\n' "${effs[@]}" | median)"
			printf '   %10.2f %10.2f' "$(printf '%s\n' "${hs_all[@]}" | median)" "$(printf '%s\n' "${bs_all[@]}" | median)"
			[ -z "$FLOOR" ] || printf '   %9.0f %9.3f %12.2f %8.3f %10.2f' "$(printf '%s\n' "${f_all[@]}" | median)" "$(printf '%s\n' "${fratios[@]}" | median)" \
				"$(printf '%s\n' "${fc_all[@]}" | median)" "$(printf '%s\n' "${floors[@]}" | median)" "$(printf '%s\n' "${fs_all[@]}" | median)"
			printf '   %s/%s   (pair ratios: %s)\n' "$h_err" "$b_err" "${ratios[*]}"
			unset shown
		done
	done
done
echo "${ciphers:-no TLS case}"
