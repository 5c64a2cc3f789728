#!/usr/bin/env bash
# Stops the collector's shards started by start.sh (SIGTERM by pid, SIGKILL after 30 s: a shard
# sends what it has scraped on its way out).
#   stop.sh             every shard running here (also those of a larger STORE_SHARDS than now)
#   stop.sh <shard>     only that one
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
LIB="$DIR/lib/daemon.sh"; [ -f "$LIB" ] || LIB="$DIR/../lib/daemon.sh"
# shellcheck source=../lib/daemon.sh
. "$LIB"

if [ "$#" -gt 1 ] || { [ "$#" -eq 1 ] && ! [[ "$1" =~ ^(0|[1-9][0-9]*)$ ]]; }; then
  echo "usage: $(basename "$0") [shard]   (no argument: every shard)" >&2
  exit 2
fi
if [ "$#" -eq 1 ]; then
  daemon_stop "collector shard $1" "$DIR/run/shard-$1.pid" 30
  exit
fi
shopt -s nullglob
pidfiles=("$DIR"/run/shard-*.pid)
if [ ${#pidfiles[@]} -eq 0 ]; then
  echo "collector: no shard running"
  exit 0
fi
status=0
for pidfile in "${pidfiles[@]}"; do
  shard=${pidfile##*/shard-}
  daemon_stop "collector shard ${shard%.pid}" "$pidfile" 30 || status=1
done
exit "$status"
