#!/usr/bin/env bash
# Stops the stores started by start.sh (SIGTERM by pid, SIGKILL after 60 s: a store flushes its
# data on the way out).
#   stop.sh             both
#   stop.sh short|long  only that one
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
LIB="$DIR/lib/daemon.sh"; [ -f "$LIB" ] || LIB="$DIR/../lib/daemon.sh"
# shellcheck source=../lib/daemon.sh
. "$LIB"

roles=()
select_roles "short long" "$@"
for role in "${roles[@]}"; do
  daemon_stop "store $role" "$DIR/run/$role.pid" 60
done
