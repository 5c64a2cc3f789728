#!/usr/bin/env bash
# Starts the collector's shards (vmagent) in the background, from collector.env.
#   start.sh            every shard, 0 .. STORE_SHARDS-1
#   start.sh <shard>    only that one (with the shards spread over machines, each starts its own)
# Each shard scrapes its part of the short-term store's jobs (COLLECTOR_SCRAPE_CONFIG, its target
# files re-read every 5 s), writes to STORE_WRITE_URL, buffers what the store has not taken yet
# in data/shard-<i>/, writes run/shard-<i>.pid and logs to log/shard-<i>.log. With STORE_SHARDS=1
# and no STORE_WRITE_URL nothing starts: the short-term store scrapes itself. The binary is
# bin/vmagent of the installed tree, else vmagent on PATH (COLLECTOR_BINARY overrides); extra flags
# go in COLLECTOR_EXTRA_FLAGS.
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
if ! collector_active; then
  echo "collector: STORE_SHARDS=1 and no STORE_WRITE_URL in $COLLECTOR_ENV: the short-term store scrapes conf/scrape.yml itself; no shard started"
  exit 0
fi
store_dir=$(realpath -m "$DIR/../short_term_store")

# Where a shard writes: its own URL, the one URL, or this tree's short-term store.
write_url() { # <shard>
  local count=${#COLLECTOR_WRITE_URLS[@]} listen host
  if [ "$count" -gt 1 ]; then
    echo "${COLLECTOR_WRITE_URLS[$1]}"
  elif [ "$count" -eq 1 ]; then
    echo "${COLLECTOR_WRITE_URLS[0]}"
  else
    if [ ! -f "$store_dir/short.env" ]; then
      echo "collector: STORE_WRITE_URL is empty in $COLLECTOR_ENV and there is no short-term store ($store_dir/short.env) to write to" >&2
      return 1
    fi
    listen=$(unset TS_LISTEN_ADDRESS && . "$store_dir/short.env" && echo "${TS_LISTEN_ADDRESS:-}")
    host=${listen%:*}
    case "$host" in "" | 0.0.0.0 | "[::]" | "::") host=127.0.0.1 ;; esac
    echo "http://$host:${listen##*:}/api/v1/write"
  fi
}

# The short-term store of this tree started before the shards were configured still scrapes the
# jobs itself: with the shards too, every target would be scraped twice.
if pid=$(daemon_pid "$store_dir/run/short.pid") && tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -q '^-promscrape.config='; then
  echo "collector: the short-term store (pid $pid) scrapes the jobs itself; with the shards every target would be scraped twice." >&2
  echo "  Restart it, so that it leaves the scraping to them: $store_dir/stop.sh short && $store_dir/start.sh short" >&2
  exit 1
fi

bin=$(system_bin "$DIR" vmagent "${COLLECTOR_BINARY:-}")
collector_check_scrape "$bin" || exit 1
scrape=$(collector_abs "$COLLECTOR_SCRAPE_CONFIG")

start_shard() { # <shard>
  local i=$1 listen url pidfile
  listen=$(collector_listen "$i")
  pidfile=$(collector_pidfile "$i")
  url=$(write_url "$i") || return 1
  can_start "collector shard $i" "$pidfile" "$listen" "by another process; change COLLECTOR_LISTEN_ADDRESS in $COLLECTOR_ENV (shard $i listens on its port + $i)" || return 1
  local flags=(
    -httpListenAddr="$listen"
    -promscrape.config="$scrape"
    # As the short-term store: a target file edited takes effect within seconds, reload or not.
    -promscrape.fileSDCheckInterval=5s
    -remoteWrite.url="$url"
    -remoteWrite.tmpDataPath="$DIR/data/shard-$i"
    -loggerLevel="$COLLECTOR_LOG_LEVEL"
  )
  # One shard alone scrapes everything: no cluster of scrapers.
  if [ "$STORE_SHARDS" -gt 1 ]; then
    flags+=(
      -promscrape.cluster.membersCount="$STORE_SHARDS"
      -promscrape.cluster.memberNum="$i"
      -promscrape.cluster.replicationFactor="$STORE_REPLICAS"
    )
  fi
  mkdir -p "$DIR/data"
  # shellcheck disable=SC2086 # the extra flags are words
  daemon_start --listen "$listen" "collector shard $i" "$pidfile" "$DIR/log/shard-$i.log" "$bin" "${flags[@]}" ${COLLECTOR_EXTRA_FLAGS:-}
}

status=0
for shard in "${shards[@]}"; do
  start_shard "$shard" || status=1
done
exit "$status"
