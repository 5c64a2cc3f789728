#!/usr/bin/env bash
# Stops the dashboard server started by start.sh [name] (default dashboard_server): SIGTERM to the
# pid in run/<name>.pid, SIGKILL after 15 s.
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
LIB="$DIR/lib/daemon.sh"; [ -f "$LIB" ] || LIB="$DIR/../lib/daemon.sh"
# shellcheck source=../lib/daemon.sh
. "$LIB"
if [ "$#" -gt 1 ]; then
  echo "usage: $(basename "$0") [name]   (default dashboard_server)" >&2
  exit 2
fi
name=${1:-dashboard_server}
daemon_stop "dashboard_server $name" "$DIR/run/$name.pid"
