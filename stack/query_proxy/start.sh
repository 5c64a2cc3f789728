#!/usr/bin/env bash
# Starts the query proxy in the background.
#   start.sh            reads conf/query_proxy.env (PROXY_LISTEN_ADDRESS; the caller's environment
#                       wins), serves conf/promxy.yml, writes run/query_proxy.pid, logs to
#                       log/query_proxy.log (rotated at 20 MB, 10 backups, 30 days)
# Extra flags (see `bin/query-proxy --help`) go in QUERY_PROXY_FLAGS.
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
LIB="$DIR/lib/daemon.sh"; [ -f "$LIB" ] || LIB="$DIR/../lib/daemon.sh"
# shellcheck source=../lib/daemon.sh
. "$LIB"

no_arguments "starts the query proxy with conf/promxy.yml and conf/query_proxy.env" "$@"
conf="$DIR/conf/promxy.yml"
env_file="$DIR/conf/query_proxy.env"
need_file query_proxy "config file" "$conf"
if [ -f "$env_file" ]; then load_env "$env_file" PROXY_LISTEN_ADDRESS; fi
if [ -z "${PROXY_LISTEN_ADDRESS:-}" ]; then
  echo "query_proxy: PROXY_LISTEN_ADDRESS is not set (in $env_file or the environment)" >&2
  exit 1
fi
bin=$(cachemon_bin "$DIR" query-proxy)
cd "$DIR"
# shellcheck disable=SC2086 # the flags are words; checked too, before anything starts
"$bin" --config="$conf" ${QUERY_PROXY_FLAGS:-} --check-config >/dev/null
can_start query_proxy "$DIR/run/query_proxy.pid" "$PROXY_LISTEN_ADDRESS" "by another process; change PROXY_LISTEN_ADDRESS in $env_file" || exit 1
# shellcheck disable=SC2086 # the flags are words
daemon_start --listen "$PROXY_LISTEN_ADDRESS" query_proxy "$DIR/run/query_proxy.pid" "$DIR/log/query_proxy.out" \
  "$bin" --bind-addr="$PROXY_LISTEN_ADDRESS" --config="$conf" --log.file="$DIR/log/query_proxy.log" ${QUERY_PROXY_FLAGS:-}
