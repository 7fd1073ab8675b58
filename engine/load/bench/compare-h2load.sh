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
# Environment: PAIRS (default 5), DURATION (default 5s), CONNS (default 16:
#   HTTP/2 multiplexes, so fewer connections than compare-wrk's 64 carry
#   the same requests in flight with STREAMS 10), THREADS (default 1),
#   STREAMS (default "1 10"), CASES (default "6b 1k": bodies of 6 bytes and
#   1 KiB), PORT (default: a free one), NGINX (default /usr/sbin/nginx),
#   H2LOAD (default h2load), BFFLAGS (extra flags for benchflow load).
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
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
	-subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
	-keyout "$DIR/key.pem" -out "$DIR/cert.pem" 2>"$DIR/openssl.log" ||
	{ echo "compare-h2load: openssl could not make a certificate:" >&2; cat "$DIR/openssl.log" >&2; exit 1; }
# keepalive_requests also bounds the streams of an HTTP/2 connection
# (nginx >= 1.19.7): high enough that no GOAWAY ends one mid-run.
start_nginx https "ssl http2" 100000000 "    ssl_certificate $DIR/cert.pem;
    ssl_certificate_key $DIR/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;"

# Each measure_* runs its client under /usr/bin/time and prints
# "RPS CPU_US_PER_REQUEST ERRORS CIPHER": req/s, the client CPU time
# (user+system) per completed request, the failed requests and error
# responses, and the negotiated TLS cipher. A run with errors also copies
# the client's output to stderr (once per client and case: see $shown).
# They run in this shell (not in a subshell) so that $shown persists.
measure_h2load() {
	local streams=$1 url=$2 rc=0
	/usr/bin/time -o "$DIR/time" -f 'CPUSECS %U %S' \
		"$H2LOAD" -t"$THREADS" -c"$CONNS" -m"$streams" -D "$DURATION" "$url" >"$DIR/out" 2>&1 || rc=$?
	awk -v rc="$rc" '
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
			printf "%s %.3f %d %s\n", rps+0, (done > 0 ? cpu*1e6/done : 0), err, (cipher == "" ? "?" : cipher)
		}' "$DIR/out" "$DIR/time"
	if [ "$rc" != 0 ] || ! awk '/^requests:/ {f=$10+$12+$14} /^status codes:/ {f+=$7+$9; n++} END {exit !(n == 1 && f == 0)}' "$DIR/out"; then
		[ -n "${shown[h2load]:-}" ] || { echo "compare-h2load: h2load errors (exit $rc):" >&2; grep -v '^progress' "$DIR/out" | tail -n 20 >&2; }
		shown[h2load]=1
	fi
}
measure_bf() {
	local streams=$1 url=$2 rc=0
	/usr/bin/time -o "$DIR/time" -f 'CPUSECS %U %S' \
		"$BF" load --json --h2 -t"$THREADS" -c"$CONNS" --streams "$streams" -d"$DURATION" "${BFFLAGS[@]}" "$url" >"$DIR/out" 2>"$DIR/err" || rc=$?
	local cpu
	cpu=$(awk '/^CPUSECS/ {print $2+$3}' "$DIR/time")
	if ! jq -r --arg cpu "$cpu" --arg rc "$rc" '
		"\(.rps) \(if .requests > 0 then ($cpu|tonumber)*1e6/.requests else 0 end) \(.errors + (if $rc != "0" or .requests == 0 then 1 else 0 end)) \(.tls_cipher // "?" | gsub(" "; "_"))"' "$DIR/out" 2>/dev/null; then
		echo "0 0 1 ?"
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

echo "nginx $($NGINX -v 2>&1 | sed 's/.*\///') (TLS + HTTP/2), $("$H2LOAD" --version | head -1), $(nproc) cores, -t$THREADS -c$CONNS -D$DURATION, $PAIRS pairs${BFFLAGS:+, benchflow ${BFFLAGS[*]}}, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %7s %10s %10s %7s   %12s %12s %7s   %s\n' case streams h2load_rps bf_rps ratio h2load_cpu_us bf_cpu_us eff 'errors h2load/bf'
echo "(ratio = benchflow req/s ÷ h2load req/s; cpu_us = client CPU µs per request; eff = h2load cpu ÷ benchflow cpu; all medians; errors summed over the pairs)"
ciphers=
for c in $CASES; do
	url="https://127.0.0.1:$PORT/$c"
	for m in "${STREAMS[@]}"; do
		declare -A shown=()
		h_all=() hc_all=() b_all=() bc_all=() ratios=() effs=()
		h_err=0 b_err=0
		for _ in $(seq "$PAIRS"); do
			measure_h2load "$m" "$url" >"$DIR/res"
			read -r h hc he hcipher <"$DIR/res"
			measure_bf "$m" "$url" >"$DIR/res"
			read -r b bc be bcipher <"$DIR/res"
			h_all+=("$h") hc_all+=("$hc") b_all+=("$b") bc_all+=("$bc")
			ratios+=("$(ratio "$b" "$h")") effs+=("$(ratio "$hc" "$bc")")
			h_err=$((h_err + he)) b_err=$((b_err + be))
			[ -n "$ciphers" ] || ciphers="TLS ciphers: h2load $hcipher, benchflow $bcipher"
		done
		printf '%-6s %7s %10.0f %10.0f %7.3f   %12.2f %12.2f %7.3f   %s/%s   (pair ratios: %s)\n' "$c" "$m" \
			"$(printf '%s\n' "${h_all[@]}" | median)" "$(printf '%s\n' "${b_all[@]}" | median)" \
			"$(printf '%s\n' "${ratios[@]}" | median)" \
			"$(printf '%s\n' "${hc_all[@]}" | median)" "$(printf '%s\n' "${bc_all[@]}" | median)" \
			"$(printf '%s\n' "${effs[@]}" | median)" "$h_err" "$b_err" "${ratios[*]}"
		unset shown
	done
done
echo "$ciphers"
