#!/bin/sh
# Sets the link between this machine (the client) and the server to a
# rate, both ways, with tc's token bucket filter on each end's egress
# (the pipeline's exec step runs it before each trial's load):
#
#   link.sh RATE SERVER [SERVER_EXEC…]
#
# RATE is tc's ("10gbit", "1gbit", "500mbit"), or "native" to remove the
# shaping and leave the link as it is. SERVER is the server's address; the
# device used is the one routing to it. SERVER_EXEC is a command prefix
# that runs a command on the server ("ip netns exec bf2h-server" for
# hosts.sh's namespaces; "ssh bench@10.0.0.2 sudo" for another machine);
# without it only this side is shaped. tc needs root (CAP_NET_ADMIN).
set -eu
rate=$1 server=$2
shift 2

route=$(ip -o route get "$server")
dev=$(echo "$route" | sed -n 's/.* dev \([^ ]*\).*/\1/p')
src=$(echo "$route" | sed -n 's/.* src \([^ ]*\).*/\1/p')

# The bucket: 10 ms of the rate, at least 256 KiB (bigger than a GSO
# packet); the queue: 50 ms of the rate beyond it.
bits=$(echo "$rate" | awk '{ r = tolower($0); n = r + 0
  if (r ~ /gbit$/) n *= 1e9; else if (r ~ /mbit$/) n *= 1e6; else if (r ~ /kbit$/) n *= 1e3
  printf "%d", n }')
burst=$(awk -v b="$bits" 'BEGIN { x = b / 8 / 100; if (x < 262144) x = 262144; printf "%d", x }')
limit=$(awk -v b="$bits" -v u="$burst" 'BEGIN { printf "%d", b / 8 / 20 + u }')

shape() { # shape DEV, run through "$@"
  d=$1; shift
  if [ "$rate" = native ]; then
    "$@" tc qdisc del dev "$d" root 2>/dev/null || true
  else
    [ "$bits" -gt 0 ] || { echo "link.sh: rate \"$rate\" is not one of tc's (10gbit, 1gbit, 500mbit, native)" >&2; exit 2; }
    "$@" tc qdisc replace dev "$d" root tbf rate "$rate" burst "$burst" limit "$limit"
  fi
}

sdev="(not shaped: no SERVER_EXEC)"
shape "$dev"
if [ $# -gt 0 ]; then
  sdev=$("$@" ip -o route get "$src" | sed -n 's/.* dev \([^ ]*\).*/\1/p')
  [ -n "$sdev" ] || { echo "link.sh: the server has no route back to $src" >&2; exit 1; }
  shape "$sdev" "$@"
fi
echo "link to $server: $rate (this side $dev, the server's $sdev)"
