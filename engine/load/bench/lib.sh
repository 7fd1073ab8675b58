# lib.sh — what compare-wrk.sh, compare-h2load.sh and compare-h3.sh share: a temporary
# folder removed on exit, free loopback ports, a self-signed certificate,
# the placement (PIN), Debian's nginx (one worker, no access log, sendfile)
# started on them and stopped on exit, and the median and ratio helpers. Sourced by them after NAME (the script's
# name, for messages) and NGINX are set.

DIR=$(mktemp -d "/tmp/benchflow-$NAME.XXXXXX")
NGINX_PID=
cleanup() {
	if [ -n "$NGINX_PID" ] && kill -0 "$NGINX_PID" 2>/dev/null; then
		kill "$NGINX_PID" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$NGINX_PID" 2>/dev/null || break; sleep 0.1; done
	fi
	rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

# Free loopback ports: bind to 0 and read what the kernel picked. PORT
# is the main server's; PORT2 a second server block's (the other protocol).
# With PORT_PROTO=udp (set before sourcing), PORT is free for UDP and TCP
# both: an HTTP/3 server listens on UDP, Caddy on both.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
free_udp_port() {
	python3 -c '
import socket
for _ in range(100):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0))
    port = u.getsockname()[1]
    t = socket.socket()
    try:
        t.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        t.close(); u.close()
    print(port); break
else:
    raise SystemExit("no port free for both UDP and TCP")'
}
if [ "${PORT_PROTO:-tcp}" = udp ]; then PORT=${PORT:-$(free_udp_port)}; else PORT=${PORT:-$(free_port)}; fi
PORT2=${PORT2:-$(free_port)}
mkdir -p "$DIR/www" "$DIR/logs" "$DIR/tmp"

# PIN=1 places the server on core 1 and every client on core 0 (taskset),
# so that each has a core of its own and a client's CPU per request is
# its own; PIN=0 (the default) lets the kernel place them on shared cores,
# as a user's run does. The placement is printed in each script's header.
PIN=${PIN:-0}
SERVER_ON=()
CLIENT_ON=()
case $PIN in
0) PLACEMENT="shared cores" ;;
1)
	[ "$(nproc)" -ge 2 ] || { echo "$NAME: PIN=1 needs 2 cores, this machine has $(nproc)" >&2; exit 1; }
	command -v taskset >/dev/null || { echo "$NAME: PIN=1 needs taskset (apt-get install util-linux)" >&2; exit 1; }
	SERVER_ON=(taskset -c 1)
	CLIENT_ON=(taskset -c 0)
	PLACEMENT="pinned: server on core 1, client on core 0"
	;;
*) echo "$NAME: PIN=$PIN: want 0 (shared cores) or 1 (pinned)" >&2; exit 1 ;;
esac

# make_cert writes a self-signed certificate for 127.0.0.1 to
# $DIR/cert.pem and $DIR/key.pem (neither client verifies it).
make_cert() {
	command -v openssl >/dev/null || { echo "$NAME: openssl not found (apt-get install openssl)" >&2; exit 1; }
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
		-subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
		-keyout "$DIR/key.pem" -out "$DIR/cert.pem" 2>"$DIR/openssl.log" ||
		{ echo "$NAME: openssl could not make a certificate:" >&2; cat "$DIR/openssl.log" >&2; exit 1; }
}

# start_nginx SCHEME LISTEN_FLAGS KEEPALIVE_REQUESTS SCHEME2 LISTEN_FLAGS2
# [CURL_FLAGS2]: makes a certificate (make_cert), writes $DIR/nginx.conf
# serving $DIR/www on 127.0.0.1:$PORT (LISTEN_FLAGS after the address,
# e.g. "ssl http2") and on 127.0.0.1:$PORT2 (LISTEN_FLAGS2: the scripts'
# other protocol), both with that certificate, starts nginx and waits until
# SCHEME://127.0.0.1:$PORT/6b answers, then checks that
# SCHEME2://127.0.0.1:$PORT2/6b answers curl with CURL_FLAGS2.
start_nginx() {
	local scheme=$1 flags=$2 keepalive=$3 scheme2=$4 flags2=$5 curl2=${6:-}
	make_cert
	cat >"$DIR/nginx.conf" <<CONF
worker_processes 1;
daemon off;
master_process off;
pid $DIR/nginx.pid;
error_log $DIR/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests $keepalive;
    client_body_temp_path $DIR/tmp;
    proxy_temp_path $DIR/tmp;
    fastcgi_temp_path $DIR/tmp;
    uwsgi_temp_path $DIR/tmp;
    scgi_temp_path $DIR/tmp;
    default_type application/octet-stream;
    ssl_certificate $DIR/cert.pem;
    ssl_certificate_key $DIR/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    server {
        listen 127.0.0.1:$PORT${flags:+ $flags};
        root $DIR/www;
    }
    server {
        listen 127.0.0.1:$PORT2${flags2:+ $flags2};
        root $DIR/www;
    }
}
CONF
	"${SERVER_ON[@]}" "$NGINX" -p "$DIR" -c "$DIR/nginx.conf" &
	NGINX_PID=$!
	for _ in $(seq 50); do
		curl -fsk -o /dev/null "$scheme://127.0.0.1:$PORT/6b" 2>/dev/null && break
		sleep 0.1
	done
	curl -fsk -o /dev/null "$scheme://127.0.0.1:$PORT/6b" || { echo "$NAME: nginx did not start:" >&2; cat "$DIR/logs/error.log" >&2; exit 1; }
	# shellcheck disable=SC2086 # CURL_FLAGS2 are flags
	curl -fsk $curl2 -o /dev/null "$scheme2://127.0.0.1:$PORT2/6b" ||
		{ echo "$NAME: nginx does not answer $scheme2 ($flags2) on port $PORT2:" >&2; cat "$DIR/logs/error.log" >&2; exit 1; }
}

# server_ticks prints the CPU time (user + system) nginx has used so far,
# in clock ticks of CLK_TCK a second (master_process off: NGINX_PID is its
# one worker), so that a script can say what a client's traffic cost the
# server.
server_ticks() { awk '{print $14 + $15}' "/proc/$NGINX_PID/stat"; }
CLK_TCK=$(getconf CLK_TCK)

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.4f\n", (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.4f", a/b; else print 0}'; }
