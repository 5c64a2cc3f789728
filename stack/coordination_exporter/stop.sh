#!/usr/bin/env bash
# Stops the coordination exporter started by start.sh <name> (SIGTERM by pid; SIGKILL after 15 s).
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
LIB="$DIR/lib/daemon.sh"; [ -f "$LIB" ] || LIB="$DIR/../lib/daemon.sh"
# shellcheck source=../lib/daemon.sh
. "$LIB"

name=${1:-}
if [ -z "$name" ] || [ "$#" -ne 1 ]; then
  echo "usage: $0 <name>" >&2
  exit 2
fi
daemon_stop "coordination_exporter $name" "$DIR/run/$name.pid"
