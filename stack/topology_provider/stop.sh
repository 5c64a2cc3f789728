#!/usr/bin/env bash
# Stops the topology provider started by start.sh (SIGTERM by pid; SIGKILL after 15 s).
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
LIB="$DIR/lib/daemon.sh"; [ -f "$LIB" ] || LIB="$DIR/../lib/daemon.sh"
# shellcheck source=../lib/daemon.sh
. "$LIB"
stop_single topology_provider "$@"
