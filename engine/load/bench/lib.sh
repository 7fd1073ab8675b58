# lib.sh — what compare-wrk.sh and compare-h2load.sh share: a temporary
# folder removed on exit, a free loopback port, Debian's nginx (one
# worker, no access log, sendfile) started on it and stopped on exit, and
# the median and ratio helpers. Sourced by them after NAME (the script's
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

# A free loopback port: bind to 0 and read what the kernel picked.
PORT=${PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')}
mkdir -p "$DIR/www" "$DIR/logs" "$DIR/tmp"

# start_nginx SCHEME LISTEN_FLAGS KEEPALIVE_REQUESTS [HTTP_LINES]: writes
# $DIR/nginx.conf serving $DIR/www on 127.0.0.1:$PORT (LISTEN_FLAGS after
# the address, e.g. "ssl http2"; HTTP_LINES added to the http block),
# starts nginx and waits until SCHEME://127.0.0.1:$PORT/6b answers.
start_nginx() {
	local scheme=$1 flags=$2 keepalive=$3 extra=${4:-}
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
$extra
    server {
        listen 127.0.0.1:$PORT${flags:+ $flags};
        root $DIR/www;
    }
}
CONF
	"$NGINX" -p "$DIR" -c "$DIR/nginx.conf" &
	NGINX_PID=$!
	for _ in $(seq 50); do
		curl -fsk -o /dev/null "$scheme://127.0.0.1:$PORT/6b" 2>/dev/null && return 0
		sleep 0.1
	done
	curl -fsk -o /dev/null "$scheme://127.0.0.1:$PORT/6b" || { echo "$NAME: nginx did not start:" >&2; cat "$DIR/logs/error.log" >&2; exit 1; }
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.4f\n", (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.4f", a/b; else print 0}'; }
