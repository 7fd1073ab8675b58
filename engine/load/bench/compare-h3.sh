#!/usr/bin/env bash
# compare-h3.sh BENCHFLOW_BIN — run h3floor (quic-go's plain http3 client
# loop, engine/load/bench/h3floor) and `benchflow load --h3` alternately
# against an HTTP/3 server on loopback and print, per case (body size ×
# streams per connection), the median req/s of both, their ratio, the
# client CPU per request of both and `eff` = floor CPU ÷ benchflow CPU. The
# floor does nothing per request but quic-go's ClientConn.RoundTrip and
# reading the body: eff >= 1.2 (issue 43's target) means benchflow spends at
# most 1/1.2 of what the library's own loop spends per request.
#
# Both clients get the same load: THREADS threads (GOMAXPROCS), CONNS QUIC
# connections, STREAMS concurrent streams per connection (h3floor -m,
# benchflow --streams), DURATION of measurement, no warm-up for either,
# neither verifying the certificate. CPU per request is the client's user +
# system time (/usr/bin/time, the whole process: handshakes included) over
# its completed requests; h3floor also prints its own (getrusage, the load
# alone) on its `cpu:` line.
#
# The server: SERVER=h3server (the default; engine/load/bench/h3server,
# quic-go's http3.Server with the bodies in memory and a self-signed
# certificate it makes) or SERVER=caddy (BENCHFLOW_CADDY names the caddy
# binary: file_server over h1, h2 and h3 on one port, certificate from
# openssl), with SERVER_THREADS Go processors (default 1, as nginx's one
# worker in the other scripts). If H2LOAD_H3 names an h2load built with
# HTTP/3 (engine/load/bench/build-h2load-h3.sh), each pair also runs
# `h2load --alpn-list=h3` (the newer name of --npn-list) and each row
# adds its req/s, CPU per request and benchflow's ratios to it.
#
# Errors of each client are counted per case (h3floor and h2load: failed
# requests and non-2xx responses; benchflow: every error class of its JSON
# summary; any: a run that exits non-zero or completes nothing) and shown
# in the errors column; the first error output of a client goes to stderr.
# A row with errors does not measure what it says.
#
# Environment: PAIRS (default 5), DURATION (default 5s), CONNS (default
#   16), THREADS (default 1), STREAMS (default "1 10"), CASES (default
#   "6b 64k": bodies of 6 bytes and 64 KiB), PIN (default 0: shared cores;
#   1: server on core 1, clients on core 0), SERVER (default h3server),
#   SERVER_THREADS (default 1), H3FLOOR and H3SERVER (default: h3floor and
#   h3server next to BENCHFLOW_BIN, as make bench builds them),
#   BENCHFLOW_CADDY (for SERVER=caddy), H2LOAD_H3 (see above), PORT
#   (default: a free one, UDP and TCP), BFFLAGS (extra flags for benchflow
#   load).
set -euo pipefail

BF=${1:?usage: compare-h3.sh path/to/benchflow}
BF=$(cd "$(dirname "$BF")" && pwd)/$(basename "$BF")
PAIRS=${PAIRS:-5}
DURATION=${DURATION:-5s}
CONNS=${CONNS:-16}
THREADS=${THREADS:-1}
read -r -a STREAMS <<<"${STREAMS:-1 10}"
CASES=${CASES:-"6b 64k"}
SERVER=${SERVER:-h3server}
SERVER_THREADS=${SERVER_THREADS:-1}
H3FLOOR=${H3FLOOR:-$(dirname "$BF")/h3floor}
H3SERVER=${H3SERVER:-$(dirname "$BF")/h3server}
H2LOAD_H3=${H2LOAD_H3:-}
read -r -a BFFLAGS <<<"${BFFLAGS:-}"

[ -x "$BF" ] || { echo "compare-h3: $BF is not executable (run make build)" >&2; exit 1; }
[ -x "$H3FLOOR" ] || { echo "compare-h3: H3FLOOR=$H3FLOOR is not executable (go build -o bin/h3floor ./engine/load/bench/h3floor)" >&2; exit 1; }
case $SERVER in
h3server) [ -x "$H3SERVER" ] || { echo "compare-h3: H3SERVER=$H3SERVER is not executable (go build -o bin/h3server ./engine/load/bench/h3server)" >&2; exit 1; } ;;
caddy)
	[ -n "${BENCHFLOW_CADDY:-}" ] && [ -x "$BENCHFLOW_CADDY" ] || { echo "compare-h3: SERVER=caddy needs BENCHFLOW_CADDY, the path of a caddy binary (go install github.com/caddyserver/caddy/v2/cmd/caddy@v2.11.9)" >&2; exit 1; }
	command -v openssl >/dev/null || { echo "compare-h3: openssl not found (apt-get install openssl)" >&2; exit 1; }
	;;
*) echo "compare-h3: SERVER=$SERVER: want h3server or caddy" >&2; exit 1 ;;
esac
[ -z "$H2LOAD_H3" ] || [ -x "$H2LOAD_H3" ] || { echo "compare-h3: H2LOAD_H3=$H2LOAD_H3 is not executable (engine/load/bench/build-h2load-h3.sh builds one)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "compare-h3: /usr/bin/time not found (apt-get install time)" >&2; exit 1; }
command -v jq >/dev/null || { echo "compare-h3: jq not found (apt-get install jq)" >&2; exit 1; }

NAME=compare-h3
PORT_PROTO=udp # QUIC listens on UDP (Caddy on TCP too): a port free for both
. "$(dirname "$0")/lib.sh"

# start_server starts $SERVER on 127.0.0.1:$PORT (lib.sh's cleanup stops
# it: NGINX_PID is its pid) and waits until h3floor gets a 200 for /6b.
start_server() {
	case $SERVER in
	h3server)
		"${SERVER_ON[@]}" "$H3SERVER" -addr "127.0.0.1:$PORT" -t "$SERVER_THREADS" 2>"$DIR/logs/server.log" &
		NGINX_PID=$!
		local quic
		quic=$(go version -m "$H3SERVER" 2>/dev/null | awk '$2 == "github.com/quic-go/quic-go" {print $3}') || true
		SERVER_NAME="h3server, quic-go ${quic:-?}"
		# It says so once it listens: before that, a QUIC handshake would
		# wait for its timeout (nothing answers an unconnected UDP socket).
		for _ in $(seq 50); do
			grep -q '^h3server: serving' "$DIR/logs/server.log" 2>/dev/null && break
			kill -0 "$NGINX_PID" 2>/dev/null || break
			sleep 0.1
		done
		;;
	caddy)
		make_cert
		printf 'hello\n' >"$DIR/www/6b"
		head -c 65536 /dev/urandom >"$DIR/www/64k"
		cat >"$DIR/Caddyfile" <<CONF
{
	admin off
	auto_https off
	persist_config off
	storage file_system {
		root $DIR/caddy
	}
	servers {
		protocols h1 h2 h3
	}
}
https://127.0.0.1:$PORT {
	bind 127.0.0.1
	tls $DIR/cert.pem $DIR/key.pem
	root * $DIR/www
	file_server
}
CONF
		XDG_DATA_HOME=$DIR/caddy XDG_CONFIG_HOME=$DIR/caddy GOMAXPROCS=$SERVER_THREADS \
			"${SERVER_ON[@]}" "$BENCHFLOW_CADDY" run --adapter caddyfile --config "$DIR/Caddyfile" 2>"$DIR/logs/server.log" &
		NGINX_PID=$!
		local v
		v=$("$BENCHFLOW_CADDY" version | cut -d' ' -f1)
		# A caddy from go install says "unknown": its module says more.
		[ "$v" != unknown ] || v=$(go version -m "$BENCHFLOW_CADDY" 2>/dev/null | awk '$2 == "github.com/caddyserver/caddy/v2" {print $3}') || true
		SERVER_NAME="caddy ${v:-?}"
		;;
	esac
	for _ in $(seq 50); do
		"$H3FLOOR" -c 1 -m 1 -n 1 "https://127.0.0.1:$PORT/6b" >/dev/null 2>&1 && return
		kill -0 "$NGINX_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "$NAME: $SERVER does not answer HTTP/3 on 127.0.0.1:$PORT:" >&2
	"$H3FLOOR" -c 1 -m 1 -n 1 "https://127.0.0.1:$PORT/6b" >&2 || true
	tail -n 20 "$DIR/logs/server.log" >&2
	exit 1
}
start_server

# Each measure_* runs its client under /usr/bin/time and prints "RPS
# CPU_US_PER_REQUEST ERRORS CIPHER": req/s, the client CPU time
# (user+system) per completed request, the failed requests and error
# responses, and the negotiated TLS cipher. A run with errors also copies
# the client's output to stderr (once per client and case: see $shown).
# They run in this shell (not in a subshell) so that $shown persists.
# h3floor prints h2load's summary lines, so measure_h2style reads both.
measure_floor() { measure_h2style floor "$H3FLOOR" -t "$THREADS" -c "$CONNS" -m "$1" -d "$DURATION" "$2"; }
measure_h2load() { measure_h2style h2load "$H2LOAD_H3" --alpn-list=h3 -t"$THREADS" -c"$CONNS" -m"$1" -D "$DURATION" "$2"; }
measure_h2style() {
	local who=$1 rc=0
	shift
	/usr/bin/time -o "$DIR/time" -f 'CPUSECS %U %S' \
		"${CLIENT_ON[@]}" "$@" >"$DIR/out" 2>&1 || rc=$?
	awk -v rc="$rc" '
		/^finished in/ {rps=$4}
		/^requests:/ {done=$6; failed=$10; errored=$12+$14}
		/^status codes:/ {bad=$5+$7+$9}
		/Cipher:/ {cipher=$NF}
		/^CPUSECS/ {cpu=$2+$3}
		END {
			err = failed
			if (errored > err) err = errored
			if (bad > err) err = bad
			err += (rc != 0 || done == 0)
			printf "%s %.3f %d %s\n", rps+0, (done > 0 ? cpu*1e6/done : 0), err, (cipher == "" ? "?" : cipher)
		}' "$DIR/out" "$DIR/time"
	if [ "$rc" != 0 ] || ! awk '/^requests:/ {f=$10+$12+$14; d=$6} /^status codes:/ {f+=$5+$7+$9; n++} END {exit !(n == 1 && f == 0 && d > 0)}' "$DIR/out"; then
		[ -n "${shown[$who]:-}" ] || { echo "$NAME: $who errors (exit $rc):" >&2; grep -v '^progress' "$DIR/out" | tail -n 20 >&2; }
		shown[$who]=1
	fi
}
measure_bf() {
	local streams=$1 url=$2 rc=0
	/usr/bin/time -o "$DIR/time" -f 'CPUSECS %U %S' \
		"${CLIENT_ON[@]}" "$BF" load --json --h3 -t"$THREADS" -c"$CONNS" --streams "$streams" -d"$DURATION" "${BFFLAGS[@]}" "$url" >"$DIR/out" 2>"$DIR/err" || rc=$?
	local cpu
	cpu=$(awk '/^CPUSECS/ {print $2+$3}' "$DIR/time")
	if ! jq -r --arg cpu "$cpu" --arg rc "$rc" '
		"\(.rps) \(if .requests > 0 then ($cpu|tonumber)*1e6/.requests else 0 end) \(.errors + (if $rc != "0" or .requests == 0 then 1 else 0 end)) \(.tls_cipher // "?" | gsub(" "; "_"))"' "$DIR/out" 2>/dev/null; then
		echo "0 0 1 ?"
		[ "$rc" != 0 ] || rc="0, no JSON summary"
	fi
	if [ "$rc" != 0 ] || [ "$(jq -r '.errors' "$DIR/out" 2>/dev/null)" != 0 ]; then
		[ -n "${shown[benchflow]:-}" ] || {
			echo "$NAME: benchflow errors (exit $rc):" >&2
			jq -c '{requests, errors, errors_by, status, error_samples}' "$DIR/out" >&2 2>/dev/null || true
			tail -n 20 "$DIR/err" >&2
		}
		shown[benchflow]=1
	fi
}

rmem=$(cat /proc/sys/net/core/rmem_max 2>/dev/null || echo '?')
echo "$SERVER_NAME, server GOMAXPROCS $SERVER_THREADS, $(nproc) cores, $PLACEMENT, -t$THREADS -c$CONNS -D$DURATION, $PAIRS pairs, floor $H3FLOOR${H2LOAD_H3:+, $("$H2LOAD_H3" --version | head -1) ($H2LOAD_H3)}${BFFLAGS:+, benchflow ${BFFLAGS[*]}}, net.core.rmem_max $rmem, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %7s %10s %10s %7s   %12s %12s %7s' case streams floor_rps bf_rps ratio floor_cpu_us bf_cpu_us eff
[ -z "$H2LOAD_H3" ] || printf '   %10s %13s %8s %8s' h2load_rps h2load_cpu_us bf/h2load eff_h2l
printf '   %s\n' "errors floor/bf${H2LOAD_H3:+/h2load}"
echo "(ratio = benchflow req/s ÷ floor req/s; cpu_us = client CPU µs per request; eff = floor cpu ÷ benchflow cpu, target ≥ 1.2${H2LOAD_H3:+; bf/h2load = benchflow req/s ÷ h2load req/s; eff_h2l = h2load cpu ÷ benchflow cpu}; all medians; errors summed over the pairs)"
ciphers=
for c in $CASES; do
	url="https://127.0.0.1:$PORT/$c"
	for m in "${STREAMS[@]}"; do
		declare -A shown=()
		f_all=() fc_all=() b_all=() bc_all=() ratios=() effs=() h_all=() hc_all=() hratios=() heffs=()
		f_err=0 b_err=0 h_err=0
		for _ in $(seq "$PAIRS"); do
			measure_floor "$m" "$url" >"$DIR/res"
			read -r f fc fe fcipher <"$DIR/res"
			measure_bf "$m" "$url" >"$DIR/res"
			read -r b bc be bcipher <"$DIR/res"
			f_all+=("$f") fc_all+=("$fc") b_all+=("$b") bc_all+=("$bc")
			ratios+=("$(ratio "$b" "$f")") effs+=("$(ratio "$fc" "$bc")")
			f_err=$((f_err + fe)) b_err=$((b_err + be))
			hcipher=
			if [ -n "$H2LOAD_H3" ]; then
				measure_h2load "$m" "$url" >"$DIR/res"
				read -r h hc he hcipher <"$DIR/res"
				h_all+=("$h") hc_all+=("$hc") hratios+=("$(ratio "$b" "$h")") heffs+=("$(ratio "$hc" "$bc")")
				h_err=$((h_err + he))
			fi
			[ -n "$ciphers" ] || ciphers="TLS ciphers: floor $fcipher, benchflow $bcipher${hcipher:+, h2load $hcipher}"
		done
		printf '%-6s %7s %10.0f %10.0f %7.3f   %12.2f %12.2f %7.3f' "$c" "$m" \
			"$(printf '%s\n' "${f_all[@]}" | median)" "$(printf '%s\n' "${b_all[@]}" | median)" \
			"$(printf '%s\n' "${ratios[@]}" | median)" \
			"$(printf '%s\n' "${fc_all[@]}" | median)" "$(printf '%s\n' "${bc_all[@]}" | median)" \
			"$(printf '%s\n' "${effs[@]}" | median)"
		[ -z "$H2LOAD_H3" ] || printf '   %10.0f %13.2f %8.3f %8.3f' \
			"$(printf '%s\n' "${h_all[@]}" | median)" "$(printf '%s\n' "${hc_all[@]}" | median)" \
			"$(printf '%s\n' "${hratios[@]}" | median)" "$(printf '%s\n' "${heffs[@]}" | median)"
		printf '   %s/%s%s   (pair effs: %s)\n' "$f_err" "$b_err" "${H2LOAD_H3:+/$h_err}" "${effs[*]}"
		unset shown
	done
done
echo "${ciphers:-no case}"
