#!/usr/bin/env bash
# Stops the alert router started by start.sh (SIGTERM by pid; SIGKILL after 15 s).
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
LIB="$DIR/lib/daemon.sh"; [ -f "$LIB" ] || LIB="$DIR/../lib/daemon.sh"
# shellcheck source=../lib/daemon.sh
. "$LIB"

if [ "$#" -ne 0 ]; then
  echo "usage: $(basename "$0")" >&2
  exit 2
fi
daemon_stop alert_router "$DIR/run/alert_router.pid"
