#!/usr/bin/env bash
# Starts the coordination exporter of one ensemble in the background.
#   start.sh <name>     reads conf/<name>.env, writes run/<name>.pid, logs to log/<name>.log
#
# conf/<name>.env sets LISTEN_PORT and exactly one of
#   ZK_DOMAIN=<domain>:<port>           every address of the domain is reported as its own server
#   ZK_SERVERS=(<host>:<port> ...)      a bash array of the ensemble's servers
# Extra exporter flags (e.g. --timeout=2s) may go in COORDINATION_EXPORTER_FLAGS.
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
LIB="$DIR/lib/daemon.sh"; [ -f "$LIB" ] || LIB="$DIR/../lib/daemon.sh"
# shellcheck source=../lib/daemon.sh
. "$LIB"

name=$(instance_name "starts the exporter with conf/<name>.env" "$@") || exit 2
env_file="$DIR/conf/$name.env"
need_file coordination_exporter "env file" "$env_file" "copy conf/example.env and edit it"

LISTEN_PORT='' ZK_DOMAIN=''
unset ZK_SERVERS
# shellcheck source=/dev/null
. "$env_file"

if ! [[ "$LISTEN_PORT" =~ ^[0-9]+$ ]] || [ "$LISTEN_PORT" -lt 1 ] || [ "$LISTEN_PORT" -gt 65535 ]; then
  echo "coordination_exporter: $env_file: LISTEN_PORT must be a port number (1-65535), got '${LISTEN_PORT}'" >&2
  exit 1
fi
servers_set=0
servers_decl=$(declare -p ZK_SERVERS 2>/dev/null || true)
case "$servers_decl" in
  'declare -a'*) if [ "${#ZK_SERVERS[@]}" -gt 0 ]; then servers_set=1; fi ;;
  '') ;;
  *)
    # A plain string: empty counts as unset; anything else is a mistake for an array.
    if [ -n "$ZK_SERVERS" ]; then
      echo "coordination_exporter: $env_file: ZK_SERVERS must be a bash array, ZK_SERVERS=(<host>:<port> ...), got the string '$ZK_SERVERS'. Nothing started." >&2
      exit 1
    fi
    ;;
esac
if [ -n "$ZK_DOMAIN" ] && [ "$servers_set" = 1 ]; then
  echo "coordination_exporter: $env_file sets both ZK_DOMAIN and ZK_SERVERS; set exactly one. Nothing started." >&2
  exit 1
fi
if [ -z "$ZK_DOMAIN" ] && [ "$servers_set" = 0 ]; then
  echo "coordination_exporter: $env_file sets neither ZK_DOMAIN nor ZK_SERVERS; set exactly one. Nothing started." >&2
  exit 1
fi
if [ -n "$ZK_DOMAIN" ]; then
  zk_hosts=$ZK_DOMAIN
else
  zk_hosts=$(IFS=,; echo "${ZK_SERVERS[*]}")
fi

bin=$(cachemon_bin "$DIR" coordination-exporter)
cd "$DIR"
mkdir -p log
# The flags checked first: a bad one (in COORDINATION_EXPORTER_FLAGS too) is said here, before
# anything starts. The exporter's answer names the address it will listen on: a --listen in
# COORDINATION_EXPORTER_FLAGS comes last and counts.
# "coordination-exporter flags: valid (servers <list>, listen <address>)"
# shellcheck disable=SC2086 # COORDINATION_EXPORTER_FLAGS is a list of flags
checked=$("$bin" --listen="0.0.0.0:$LISTEN_PORT" --zk-hosts="$zk_hosts" ${COORDINATION_EXPORTER_FLAGS:-} --check-config) || {
  echo "coordination_exporter $name: the flags are refused (above); nothing started" >&2
  exit 1
}
listen=${checked##*, listen }
listen=${listen%)}
can_start "coordination_exporter $name" "$DIR/run/$name.pid" "$listen" "by another process; change LISTEN_PORT in $env_file" || exit 1
# shellcheck disable=SC2086 # COORDINATION_EXPORTER_FLAGS is a list of flags
daemon_start --listen "$listen" "coordination_exporter $name" "$DIR/run/$name.pid" "$DIR/log/$name.log" \
  "$bin" --listen="0.0.0.0:$LISTEN_PORT" --zk-hosts="$zk_hosts" ${COORDINATION_EXPORTER_FLAGS:-}
