#!/usr/bin/env bash
# Starts the dashboard server (Grafana) in the background.
#   start.sh [name]     name: conf/<name>.ini (default dashboard_server); writes run/<name>.pid,
#                       logs to log/ (Grafana's own log file, per the ini's [paths] logs and [log];
#                       what it prints before that goes to log/<name>.out)
# Runs $DASHBOARD_INSTALL_DIR/bin/grafana server --homepath $DASHBOARD_INSTALL_DIR
# --config conf/<name>.ini --pidfile run/<name>.pid, with CACHEMON_DASHBOARD_SERVER_DIR set to this
# folder: the ini ($__env{...}) and the provisioning files (${...}) find data/, log/, plugins/,
# provisioning/ and dashboards/ through it. Refuses when the ini's port is taken, or when Grafana or
# the JSON datasource plugin is not installed (install.sh installs both).
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
LIB="$DIR/lib/daemon.sh"; [ -f "$LIB" ] || LIB="$DIR/../lib/daemon.sh"
# shellcheck source=../lib/daemon.sh
. "$LIB"
# Run from an installed tree (<INSTALL_DIR>/dashboard_server/; the checkout's stack/ has install.sh
# beside config.sh, the installed tree not), INSTALL_DIR is that tree unless set.
if [ -z "${INSTALL_DIR:-}" ] && [ ! -f "$DIR/../install.sh" ]; then INSTALL_DIR=$(cd "$DIR/.." && pwd); fi
# shellcheck source=../config.sh
if [ -f "$DIR/../config.sh" ]; then . "$DIR/../config.sh"; fi
: "${DASHBOARD_INSTALL_DIR:=$DIR/../grafana}"

if [ "$#" -gt 1 ]; then
  echo "usage: $(basename "$0") [name]   (conf/<name>.ini; default dashboard_server)" >&2
  exit 2
fi
name=${1:-dashboard_server}
if ! [[ "$name" =~ ^[A-Za-z0-9._-]+$ ]]; then
  echo "dashboard_server: $name: a name is letters, digits, '.', '_' and '-' (conf/<name>.ini)" >&2
  exit 2
fi
conf="$DIR/conf/$name.ini"
pidfile="$DIR/run/$name.pid"
need_file "dashboard_server $name" "config file" "$conf"

grafana="$DASHBOARD_INSTALL_DIR/bin/grafana"
if [ ! -x "$grafana" ]; then
  echo "dashboard_server $name: Grafana is not installed ($grafana is missing); install it with $DIR/install.sh" >&2
  exit 1
fi
plugin_json="$DIR/plugins/simpod-json-datasource/plugin.json"
if [ ! -f "$plugin_json" ]; then
  echo "dashboard_server $name: the JSON datasource plugin simpod-json-datasource is not installed ($plugin_json is missing); install it with $DIR/install.sh" >&2
  exit 1
fi

# A key of a section of the ini ("" when absent); comments start with # or ;.
ini_value() { # <file> <section> <key>
  awk -v want="$2" -v key="$3" '
    /^[[:space:]]*[#;]/ { next }
    /^[[:space:]]*\[/ { s = $0; gsub(/[][[:space:]]/, "", s); in_section = (s == want); next }
    in_section {
      line = $0; sub(/^[[:space:]]+/, "", line)
      eq = index(line, "=")
      if (eq == 0) next
      k = substr(line, 1, eq - 1); sub(/[[:space:]]+$/, "", k)
      if (k != key) next
      v = substr(line, eq + 1); sub(/^[[:space:]]+/, "", v); sub(/[[:space:]]+$/, "", v)
      value = v
    }
    END { print value }' "$1"
}
# Grafana's own environment overrides (GF_SERVER_HTTP_ADDR, GF_SERVER_HTTP_PORT) win over the ini.
addr=${GF_SERVER_HTTP_ADDR:-$(ini_value "$conf" server http_addr)}
port=${GF_SERVER_HTTP_PORT:-$(ini_value "$conf" server http_port)}
port=${port:-3000}
if ! [[ "$port" =~ ^[0-9]+$ ]]; then
  echo "dashboard_server $name: $conf: [server] http_port=$port is not a port number" >&2
  exit 1
fi
can_start "dashboard_server $name" "$pidfile" "${addr:-0.0.0.0}:$port" "by another process; change [server] http_port in $conf" || exit 1

export CACHEMON_DASHBOARD_SERVER_DIR="$DIR"
mkdir -p "$DIR/data" "$DIR/log" "$DIR/plugins" "$DIR/dashboards" "$DIR/provisioning/plugins" "$DIR/provisioning/alerting"
daemon_start --listen "${addr:-0.0.0.0}:$port" "dashboard_server $name" "$pidfile" "$DIR/log/$name.out" \
  "$grafana" server --homepath "$DASHBOARD_INSTALL_DIR" --config "$conf" --pidfile "$pidfile"
echo "dashboard_server $name: http://${addr:-0.0.0.0}:$port/ (logs in $DIR/log/)"
