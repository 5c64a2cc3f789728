#!/usr/bin/env bash
# Stops the host exporter started by start.sh (SIGTERM by pid; SIGKILL after 15 s).
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
LIB="$DIR/lib/daemon.sh"; [ -f "$LIB" ] || LIB="$DIR/../lib/daemon.sh"
# shellcheck source=../lib/daemon.sh
. "$LIB"

if [ "$#" -ne 0 ]; then
  echo "usage: $(basename "$0")" >&2
  exit 2
fi
daemon_stop host_exporter "$DIR/run/host_exporter.pid"
