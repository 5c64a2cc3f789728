# Shared by the collector's start.sh, stop.sh and reload.sh (sourced, not run), after lib/daemon.sh,
# with DIR set to the collector's directory.
#   collector_load                 reads and checks collector.env into the COLLECTOR_* and STORE_* variables
#   collector_active               whether any shard runs (STORE_SHARDS > 1, or STORE_WRITE_URL set)
#   collector_shards <args...>     the shard numbers a script acts on, into the array `shards`
#   collector_check_scrape <bin>   vmagent's own dry run of the scrape config

COLLECTOR_ENV="$DIR/collector.env"

# Absolute path of a setting relative to this directory.
collector_abs() { case "$1" in /*) echo "$1" ;; *) realpath -m "$DIR/$1" ;; esac; }

collector_load() {
  need_file collector "env file" "$COLLECTOR_ENV"
  # Only the file's values count.
  unset STORE_SHARDS STORE_REPLICAS STORE_WRITE_URL COLLECTOR_LISTEN_ADDRESS COLLECTOR_SCRAPE_CONFIG COLLECTOR_LOG_LEVEL
  # shellcheck disable=SC1090
  . "$COLLECTOR_ENV"
  local missing=() name
  for name in STORE_SHARDS STORE_REPLICAS COLLECTOR_LISTEN_ADDRESS COLLECTOR_SCRAPE_CONFIG COLLECTOR_LOG_LEVEL; do
    [ -n "${!name:-}" ] || missing+=("$name")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "collector: $COLLECTOR_ENV: ${missing[*]} not set" >&2
    return 1
  fi
  if ! [[ "$STORE_SHARDS" =~ ^[1-9][0-9]{0,2}$ ]]; then
    echo "collector: $COLLECTOR_ENV: STORE_SHARDS=$STORE_SHARDS: a whole number from 1 (no shards) to 999" >&2
    return 1
  fi
  if ! [[ "$STORE_REPLICAS" =~ ^[1-9][0-9]{0,2}$ ]] || [ "$STORE_REPLICAS" -gt "$STORE_SHARDS" ]; then
    echo "collector: $COLLECTOR_ENV: STORE_REPLICAS=$STORE_REPLICAS: how many shards scrape each target, from 1 to STORE_SHARDS ($STORE_SHARDS)" >&2
    return 1
  fi
  read -r -a COLLECTOR_WRITE_URLS <<<"${STORE_WRITE_URL:-}"
  local url
  for url in "${COLLECTOR_WRITE_URLS[@]}"; do
    if ! [[ "$url" =~ ^https?://[^/?#[:space:]]+(/[^[:space:]]*)?$ ]]; then
      echo "collector: $COLLECTOR_ENV: STORE_WRITE_URL: $url is not an http:// or https:// URL" >&2
      return 1
    fi
  done
  local count=${#COLLECTOR_WRITE_URLS[@]}
  if [ "$count" -gt 1 ] && [ "$count" -ne "$STORE_SHARDS" ]; then
    echo "collector: $COLLECTOR_ENV: STORE_WRITE_URL has $count URLs for $STORE_SHARDS shards: give one (every shard writes there) or one per shard" >&2
    return 1
  fi
  if ! [[ "$COLLECTOR_LISTEN_ADDRESS" =~ ^(.*):([0-9]{1,5})$ ]] || [ $((BASH_REMATCH[2] + STORE_SHARDS - 1)) -gt 65535 ]; then
    echo "collector: $COLLECTOR_ENV: COLLECTOR_LISTEN_ADDRESS=$COLLECTOR_LISTEN_ADDRESS: host:port or :port, the port + STORE_SHARDS - 1 at most 65535" >&2
    return 1
  fi
  COLLECTOR_HOST=${BASH_REMATCH[1]}
  COLLECTOR_PORT=${BASH_REMATCH[2]}
  case "$COLLECTOR_LOG_LEVEL" in INFO | WARN | ERROR | FATAL | PANIC) ;; *)
    echo "collector: $COLLECTOR_ENV: COLLECTOR_LOG_LEVEL=$COLLECTOR_LOG_LEVEL: one of INFO, WARN, ERROR, FATAL, PANIC" >&2
    return 1
    ;;
  esac
}

collector_active() {
  [ "$STORE_SHARDS" -gt 1 ] || [ ${#COLLECTOR_WRITE_URLS[@]} -gt 0 ]
}

collector_listen() { # <shard>
  echo "$COLLECTOR_HOST:$((COLLECTOR_PORT + $1))"
}

collector_pidfile() { # <shard>
  echo "$DIR/run/shard-$1.pid"
}

# No argument: every shard of collector.env; one: that shard (0 .. STORE_SHARDS-1). Else usage, exit 2.
collector_shards() { # <args...>
  if [ "$#" -gt 1 ] || { [ "$#" -eq 1 ] && ! { [[ "$1" =~ ^(0|[1-9][0-9]*)$ ]] && [ "$1" -lt "$STORE_SHARDS" ]; }; }; then
    echo "usage: $(basename "$0") [shard]   (a shard number from 0 to $((STORE_SHARDS - 1)); no argument: every shard)" >&2
    exit 2
  fi
  if [ "$#" -eq 1 ]; then
    shards=("$1")
  else
    shards=()
    local i
    for ((i = 0; i < STORE_SHARDS; i++)); do shards+=("$i"); done
  fi
}

collector_check_scrape() { # <vmagent binary>
  local scrape
  scrape=$(collector_abs "$COLLECTOR_SCRAPE_CONFIG")
  mkdir -p "$DIR/log"
  if ! "$1" -promscrape.config="$scrape" -promscrape.config.dryRun -loggerLevel=ERROR >"$DIR/log/collector.check" 2>&1; then
    echo "collector: $scrape is not a valid scrape config:" >&2
    grep -v '^$' "$DIR/log/collector.check" | tail -n 5 >&2
    return 1
  fi
}
