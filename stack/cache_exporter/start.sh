#!/usr/bin/env bash
# Starts the cache exporter of one ensemble in the background.
#   start.sh <name>     uses conf/<name>.json, writes run/<name>.pid, and sends the process's
#                       own output to log/<name>.out (its log goes where the config's log block says;
#                       relative log paths are under this directory)
#   CACHE_EXPORTER_FLAGS       extra exporter flags (e.g. -qos-interval=10s)
#   CACHE_EXPORTER_NODE_FLAGS  node flags instead of bin/cache-exporter's own (e.g. --max-old-space-size=2048)
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
LIB="$DIR/lib/daemon.sh"; [ -f "$LIB" ] || LIB="$DIR/../lib/daemon.sh"
# shellcheck source=../lib/daemon.sh
. "$LIB"

name=$(instance_name "starts the exporter with conf/<name>.json" "$@") || exit 2
conf="$DIR/conf/$name.json"
need_file cache_exporter "config file" "$conf" "copy conf/example.json and edit it"
bin=$(cachemon_bin "$DIR" cache-exporter)
cd "$DIR"
# The flags too: one that would refuse the start (a bad value, a web config file that does not load)
# is said here, before anything starts.
# shellcheck disable=SC2086 # the flags are words
checked=$("$bin" -config-file="$conf" ${CACHE_EXPORTER_FLAGS:-} -check-config)
# "<file>: valid (ensemble <name>, listen <address>)": refuse a port already taken before starting.
listen=${checked##*, listen }
listen=${listen%)}
can_start "cache_exporter $name" "$DIR/run/$name.pid" "$listen" "by another process; change listen in $conf" || exit 1
# bin/cache-exporter carries node flags of its own (its first line); CACHE_EXPORTER_NODE_FLAGS
# runs it with these instead, e.g. a larger heap for an ensemble of many thousand nodes.
run=("$bin")
if [ -n "${CACHE_EXPORTER_NODE_FLAGS:-}" ]; then
  node=$(command -v node) || { echo "cache_exporter $name: CACHE_EXPORTER_NODE_FLAGS is set but node is not on PATH" >&2; exit 1; }
  # shellcheck disable=SC2206 # the flags are words
  run=("$node" ${CACHE_EXPORTER_NODE_FLAGS} "$bin")
fi
daemon_start --listen "$listen" "cache_exporter $name" "$DIR/run/$name.pid" "$DIR/log/$name.out" "${run[@]}" -config-file="$conf" ${CACHE_EXPORTER_FLAGS:-}
