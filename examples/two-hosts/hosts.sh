#!/usr/bin/env bash
# Two "machines" on this one, for examples/two-hosts: network namespaces
# joined by one veth pair, a client (where benchflow runs) and a server
# (running Debian's sshd), as two VMs on one network would be.
#
#   examples/two-hosts/hosts.sh up        # make them; prints the --var flags
#   examples/two-hosts/hosts.sh vars      # print the --var flags again
#   examples/two-hosts/hosts.sh run CMD…  # run CMD on the client
#   examples/two-hosts/hosts.sh down      # remove everything `up` made
#
# Needs root, iproute2 (ip, tc) and openssh-server (/usr/sbin/sshd). The
# client is 10.214.0.1, the server 10.214.0.2 (SUBNET=10.214.7 picks
# another /24); the namespaces are $NAME-client and $NAME-server (NAME,
# default bf2h); keys, known_hosts and sshd's files go to $DIR (default
# /tmp/$NAME). Both namespaces share this machine's files and CPUs: only
# the network is separate, so the server's copy of benchflow goes to this
# machine's ~/.cache/benchflow/bin/<sha256>/: `down` removes the copy of
# ./bin/benchflow if `up` came before it. The link has no rate until the
# pipeline's exec step sets one (link.sh).
set -euo pipefail

name=${NAME:-bf2h}
subnet=${SUBNET:-10.214.0}
dir=${DIR:-/tmp/$name}
client=$name-client server=$name-server
client_addr=$subnet.1 server_addr=$subnet.2

die() { echo "hosts.sh: $*" >&2; exit 1; }

vars() {
  echo "--var server=$server_addr --var user=root --var identity=$dir/id_ed25519 --var known_hosts=$dir/known_hosts --var 'server_exec=ip netns exec $server'"
}

up() {
  [ "$(id -u)" = 0 ] || die "making network namespaces needs root"
  [ -x /usr/sbin/sshd ] || die "/usr/sbin/sshd is missing (Debian: apt-get install openssh-server)"
  command -v tc >/dev/null || die "tc is missing (Debian: apt-get install iproute2)"
  for ns in "$client" "$server"; do
    [ ! -e "/run/netns/$ns" ] || die "namespace $ns exists already: run '$0 down' first (or set NAME)"
  done
  if ip -4 -o addr show | grep -q " $subnet\."; then
    die "$subnet.0/24 is in use on this machine: set SUBNET=10.214.N"
  fi
  mkdir -p "$dir" /run/sshd
  chmod 700 "$dir"
  touch "$dir/.up"
  trap 'echo "hosts.sh: up failed; removing what it made" >&2; down' ERR
  ip netns add "$client"
  ip netns add "$server"
  ip link add eth0 netns "$client" type veth peer name eth0 netns "$server"
  ip -n "$client" addr add "$client_addr/24" dev eth0
  ip -n "$server" addr add "$server_addr/24" dev eth0
  for ns in "$client" "$server"; do
    ip -n "$ns" link set lo up
    ip -n "$ns" link set eth0 up
  done
  rm -f "$dir/id_ed25519" "$dir/id_ed25519.pub" "$dir/host_key" "$dir/host_key.pub"
  ssh-keygen -q -t ed25519 -N '' -C benchflow-two-hosts -f "$dir/id_ed25519"
  ssh-keygen -q -t ed25519 -N '' -C "$server" -f "$dir/host_key"
  cp "$dir/id_ed25519.pub" "$dir/authorized_keys"
  # The server's key, as ssh-keyscan would print it: known here because
  # it was made here (on real machines, check the fingerprint).
  echo "$server_addr $(cut -d' ' -f1,2 "$dir/host_key.pub")" > "$dir/known_hosts"
  cat > "$dir/sshd_config" <<CONF
ListenAddress $server_addr
HostKey $dir/host_key
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
UseDNS no
StrictModes no
Subsystem sftp internal-sftp
CONF
  /usr/sbin/sshd -t -f "$dir/sshd_config"
  ip netns exec "$server" /usr/sbin/sshd -f "$dir/sshd_config" -E "$dir/sshd.log"
  for _ in $(seq 100); do
    ip netns exec "$client" bash -c "exec 3<>/dev/tcp/$server_addr/22" 2>/dev/null && break
    sleep 0.1
  done
  trap - ERR
  echo "client $client ($client_addr), server $server ($server_addr, sshd); files in $dir"
  echo "pipeline variables: $(vars)"
}

down() {
  for ns in "$client" "$server"; do
    [ -e "/run/netns/$ns" ] || continue
    for _ in $(seq 50); do
      pids=$(ip netns pids "$ns")
      [ -n "$pids" ] || break
      # shellcheck disable=SC2086 # one pid a word
      kill -9 $pids 2>/dev/null || true
      sleep 0.1
    done
    ip netns del "$ns"
  done
  # The server's copy of this build, made since up (the hosts share this
  # machine's files; another build's copy is left alone).
  if [ -f "$dir/.up" ] && [ -f bin/benchflow ]; then
    copy=$HOME/.cache/benchflow/bin/$(sha256sum bin/benchflow | cut -d' ' -f1)
    if [ -d "$copy" ] && [ "$copy" -nt "$dir/.up" ]; then rm -rf "$copy"; fi
  fi
  rm -rf "$dir"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  vars) vars ;;
  run) shift; [ $# -gt 0 ] || die "run what? ($0 run bin/benchflow apply …)"; exec ip netns exec "$client" "$@" ;;
  *) sed -n '2,19p' "$0"; exit 2 ;;
esac
