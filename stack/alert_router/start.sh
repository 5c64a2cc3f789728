#!/usr/bin/env bash
# Starts the alert router (Alertmanager) in the background.
#   start.sh            reads alert_router.env (ALERTROUTER_LISTEN_ADDRESS), serves alert_router.yml,
#                       keeps its state in data/, writes run/alert_router.pid, logs to log/alert_router.log
# Refuses to start while alert_router.yml has fields marked <FILL: ...>. The binary is
# bin/alertmanager of the installed tree, else Debian's prometheus-alertmanager or alertmanager on
# PATH (ALERTROUTER_BINARY overrides); ALERTROUTER_EXTERNAL_URL (optional) is the address alert
# links point at; extra flags go in ALERTROUTER_EXTRA_FLAGS.
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
LIB="$DIR/lib/daemon.sh"; [ -f "$LIB" ] || LIB="$DIR/../lib/daemon.sh"
# shellcheck source=../lib/daemon.sh
. "$LIB"

no_arguments "starts the alert router with alert_router.yml and alert_router.env" "$@"
conf="$DIR/alert_router.yml"
env_file="$DIR/alert_router.env"
need_file alert_router "config file" "$conf"
need_file alert_router "env file" "$env_file"
unset ALERTROUTER_LISTEN_ADDRESS
# shellcheck disable=SC1090
. "$env_file"
[ -n "${ALERTROUTER_LISTEN_ADDRESS:-}" ] || { echo "alert_router: $env_file: ALERTROUTER_LISTEN_ADDRESS not set" >&2; exit 1; }

unfilled=$(grep -n '<FILL:' "$conf" | grep -v '^[0-9]*:[[:space:]]*#' || true)
if [ -n "$unfilled" ]; then
  echo "alert_router: $conf has fields to fill before it can start:" >&2
  echo "$unfilled" | sed -E 's/^([0-9]+):[[:space:]]*-?[[:space:]]*([a-z_]+):.*<FILL: ([^>]*)>.*/  line \1: \2 (\3)/' >&2
  exit 1
fi
bin=$(system_bin "$DIR" alertmanager "${ALERTROUTER_BINARY:-}" prometheus-alertmanager alertmanager)
can_start alert_router "$DIR/run/alert_router.pid" "$ALERTROUTER_LISTEN_ADDRESS" "by another process; change ALERTROUTER_LISTEN_ADDRESS in $env_file" || exit 1
port=${ALERTROUTER_LISTEN_ADDRESS##*:}
mkdir -p "$DIR/data"
# shellcheck disable=SC2086 # the extra flags are words
daemon_start --listen "$ALERTROUTER_LISTEN_ADDRESS" alert_router "$DIR/run/alert_router.pid" "$DIR/log/alert_router.log" \
  "$bin" --config.file="$conf" --storage.path="$DIR/data" \
  --web.listen-address="$ALERTROUTER_LISTEN_ADDRESS" \
  --web.external-url="${ALERTROUTER_EXTERNAL_URL:-http://127.0.0.1:$port}" \
  --cluster.listen-address= \
  ${ALERTROUTER_EXTRA_FLAGS:-}
