#!/usr/bin/env bash
# Starts the stores in the background.
#   start.sh            both: the short-term store (short.env) and the long-term store (long.env)
#   start.sh short      only the short-term store
#   start.sh long       only the long-term store
# Each env file's TS_* variables are translated into the store binary's flags. Writes
# run/<short|long>.pid and logs to log/<short|long>.log. The binary is bin/victoria-metrics of the
# installed tree, else victoria-metrics on PATH (TS_BINARY overrides); extra flags go in
# TS_EXTRA_FLAGS: from the caller's environment for both stores, or in an env file for that store
# (which then replaces the caller's). When the collector's shards scrape a store's
# TS_PROMSCRAPE_CONFIG (../collector/collector.env: STORE_SHARDS above 1, or STORE_WRITE_URL set),
# that store scrapes nothing and takes what they write.
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
LIB="$DIR/lib/daemon.sh"; [ -f "$LIB" ] || LIB="$DIR/../lib/daemon.sh"
# shellcheck source=../lib/daemon.sh
. "$LIB"

roles=()
select_roles "short long" "$@"
CALLER_EXTRA_FLAGS=${TS_EXTRA_FLAGS:-}

bin=$(system_bin "$DIR" victoria-metrics "${TS_BINARY:-}")
# Stream aggregation came with later store releases; ask this one.
supports_streamaggr() { "$bin" -help 2>&1 | grep -q -- '-streamAggr.config'; }

# Absolute path of a setting relative to this directory.
abs() { case "$1" in /*) echo "$1" ;; *) echo "$DIR/$1" ;; esac; }

# The scrape config the collector's shards run in a store's place (../collector/collector.env),
# as an absolute path; fails when no shard is configured to run (STORE_SHARDS=1, no STORE_WRITE_URL).
collector_scrape_config() {
  local env="$DIR/../collector/collector.env" out shards url config
  [ -f "$env" ] || return 1
  # shellcheck disable=SC1090
  out=$(unset STORE_SHARDS STORE_WRITE_URL COLLECTOR_SCRAPE_CONFIG && . "$env" >/dev/null 2>&1 &&
    echo "${STORE_SHARDS:-1}|${STORE_WRITE_URL:-}|${COLLECTOR_SCRAPE_CONFIG:-}") || return 1
  IFS='|' read -r shards url config <<<"$out"
  { [[ "$shards" =~ ^[0-9]+$ ]] && [ "$shards" -gt 1 ]; } || [ -n "$url" ] || return 1
  [ -n "$config" ] || return 1
  case "$config" in /*) ;; *) config="$DIR/../collector/$config" ;; esac
  realpath -m "$config"
}

start_role() {
  local role=$1 env_file="$DIR/$1.env"
  if [ ! -f "$env_file" ]; then
    echo "store $role: no env file $env_file" >&2
    return 1
  fi
  # Only the file's values count: unset what a previous role or the caller's environment set.
  unset TS_LISTEN_ADDRESS TS_RETENTION_PERIOD TS_STORAGE_DATA_PATH TS_PROMSCRAPE_CONFIG TS_STREAMAGGR_CONFIG TS_SEARCH_MAX_QUERY_LEN TS_DEDUP_MIN_SCRAPE_INTERVAL TS_LOG_LEVEL
  TS_EXTRA_FLAGS=$CALLER_EXTRA_FLAGS
  # shellcheck disable=SC1090
  . "$env_file"
  local missing=() name
  for name in TS_LISTEN_ADDRESS TS_RETENTION_PERIOD TS_STORAGE_DATA_PATH TS_LOG_LEVEL; do
    [ -n "${!name:-}" ] || missing+=("$name")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "store $role: $env_file: ${missing[*]} not set" >&2
    return 1
  fi
  if ! [[ "$TS_RETENTION_PERIOD" =~ ^[0-9]+[ywdh]$ ]]; then
    echo "store $role: $env_file: TS_RETENTION_PERIOD=$TS_RETENTION_PERIOD: a number with unit y, w, d or h (e.g. 14d, 2y)" >&2
    return 1
  fi
  if [[ "$TS_RETENTION_PERIOD" =~ ^([0-9]+)h$ ]] && [ "${BASH_REMATCH[1]}" -lt 24 ]; then
    echo "store $role: $env_file: TS_RETENTION_PERIOD=$TS_RETENTION_PERIOD: at least 24h" >&2
    return 1
  fi
  if [ -n "${TS_SEARCH_MAX_QUERY_LEN:-}" ] && ! [[ "$TS_SEARCH_MAX_QUERY_LEN" =~ ^[1-9][0-9]*$ ]]; then
    echo "store $role: $env_file: TS_SEARCH_MAX_QUERY_LEN=$TS_SEARCH_MAX_QUERY_LEN: a whole number of characters (e.g. 65536)" >&2
    return 1
  fi
  if [ -n "${TS_DEDUP_MIN_SCRAPE_INTERVAL:-}" ] && ! [[ "$TS_DEDUP_MIN_SCRAPE_INTERVAL" =~ ^[1-9][0-9]*(ms|s|m|h)$ ]]; then
    echo "store $role: $env_file: TS_DEDUP_MIN_SCRAPE_INTERVAL=$TS_DEDUP_MIN_SCRAPE_INTERVAL: a duration such as 5s (the shortest scrape interval)" >&2
    return 1
  fi
  case "$TS_LOG_LEVEL" in INFO | WARN | ERROR | FATAL | PANIC) ;; *)
    echo "store $role: $env_file: TS_LOG_LEVEL=$TS_LOG_LEVEL: one of INFO, WARN, ERROR, FATAL, PANIC" >&2
    return 1
    ;;
  esac
  can_start "store $role" "$DIR/run/$role.pid" "$TS_LISTEN_ADDRESS" "by another process; change TS_LISTEN_ADDRESS in $env_file" || return 1
  local flags=(
    -httpListenAddr="$TS_LISTEN_ADDRESS"
    -retentionPeriod="$TS_RETENTION_PERIOD"
    -storageDataPath="$(abs "$TS_STORAGE_DATA_PATH")"
    -loggerLevel="$TS_LOG_LEVEL"
  )
  # Unset: the store's own default (16 KiB).
  [ -z "${TS_SEARCH_MAX_QUERY_LEN:-}" ] || flags+=(-search.maxQueryLen="$TS_SEARCH_MAX_QUERY_LEN")
  # Samples of one series closer than this are one: several collector shards scraping each target
  # (STORE_REPLICAS) write every sample more than once.
  [ -z "${TS_DEDUP_MIN_SCRAPE_INTERVAL:-}" ] || flags+=(-dedup.minScrapeInterval="$TS_DEDUP_MIN_SCRAPE_INTERVAL")
  local scrape='' sharded=''
  if [ -n "${TS_PROMSCRAPE_CONFIG:-}" ]; then
    scrape=$(abs "$TS_PROMSCRAPE_CONFIG")
    # Scraped by the collector's shards: the store only receives what they write.
    if sharded=$(collector_scrape_config) && [ "$(realpath -m "$scrape")" = "$sharded" ]; then
      echo "store $role: the collector's shards scrape $TS_PROMSCRAPE_CONFIG (collector/collector.env); this store scrapes nothing and takes what they write"
      scrape=''
    fi
  fi
  if [ -n "$scrape" ]; then
    if ! "$bin" -promscrape.config="$scrape" -promscrape.config.dryRun >"$DIR/log/$role.check" 2>&1; then
      echo "store $role: $scrape is not a valid scrape config:" >&2
      grep -v '^$' "$DIR/log/$role.check" | tail -n 5 >&2
      return 1
    fi
    # The store re-reads the target files (conf/exporter/*.yml) on its own schedule only: a reload
    # of an unchanged scrape.yml does not re-read them. Every 5 s makes an edit take effect within
    # seconds, with or without the reload the procedures ask for (which re-reads scrape.yml).
    flags+=(-promscrape.config="$scrape" -promscrape.fileSDCheckInterval=5s)
  fi
  if [ -n "${TS_STREAMAGGR_CONFIG:-}" ]; then
    if supports_streamaggr; then
      flags+=(-streamAggr.config="$(abs "$TS_STREAMAGGR_CONFIG")")
    else
      echo "store $role: notice: this store has no stream aggregation (-streamAggr.config); $TS_STREAMAGGR_CONFIG is not applied (nothing depends on it)"
    fi
  fi
  # shellcheck disable=SC2086 # the extra flags are words
  daemon_start --listen "$TS_LISTEN_ADDRESS" "store $role" "$DIR/run/$role.pid" "$DIR/log/$role.log" "$bin" "${flags[@]}" ${TS_EXTRA_FLAGS:-}
}

mkdir -p "$DIR/log"
status=0
for role in "${roles[@]}"; do
  start_role "$role" || status=1
done
exit "$status"
