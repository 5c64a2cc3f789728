#!/usr/bin/env bash
# Reloads the scrape config (COLLECTOR_SCRAPE_CONFIG) in the collector's running shards: the
# collector's counterpart of the short-term store's POST /-/reload, after scrape.yml was edited.
#   reload.sh           every shard running here
#   reload.sh <shard>   only that one
# The config is checked with vmagent's dry run first; an invalid one is refused with the reason,
# and the shards keep the config they run. Target files need no reload: every shard re-reads them
# every 5 s. A shard elsewhere: run this there, or POST /-/reload to its listen address.
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
LIB="$DIR/lib/daemon.sh"; [ -f "$LIB" ] || LIB="$DIR/../lib/daemon.sh"
# shellcheck source=../lib/daemon.sh
. "$LIB"
# shellcheck source=collector.sh
. "$DIR/collector.sh"

collector_load || exit 1
shards=()
collector_shards "$@"
bin=$(system_bin "$DIR" vmagent "${COLLECTOR_BINARY:-}")
collector_check_scrape "$bin" || exit 1
reloaded=0
for shard in "${shards[@]}"; do
  if pid=$(daemon_pid "$(collector_pidfile "$shard")"); then
    kill -HUP "$pid"
    echo "collector shard $shard: reloaded (SIGHUP to pid $pid)"
    reloaded=$((reloaded + 1))
  elif [ "$#" -eq 1 ]; then
    echo "collector shard $shard: not running" >&2
    exit 1
  fi
done
[ "$reloaded" -gt 0 ] || echo "collector: no shard running here"
