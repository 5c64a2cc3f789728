#!/usr/bin/env bash
# Starts the topology provider in the background.
#   start.sh            uses conf/config.json, writes run/topology_provider.pid, and sends the
#                       process's own output to log/topology_provider.out (its log goes where the
#                       config's log block says; relative log paths are under this directory)
# Extra flags (see `bin/topology-provider -help`) go in TOPOLOGY_PROVIDER_FLAGS, set in
# conf/topology_provider.env or the environment (the environment wins).
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
LIB="$DIR/lib/daemon.sh"; [ -f "$LIB" ] || LIB="$DIR/../lib/daemon.sh"
# shellcheck source=../lib/daemon.sh
. "$LIB"

no_arguments "starts the topology provider with conf/config.json" "$@"
conf="$DIR/conf/config.json"
need_file topology_provider "config file" "$conf"
env_file="$DIR/conf/topology_provider.env"
if [ -f "$env_file" ]; then load_env "$env_file" TOPOLOGY_PROVIDER_FLAGS; fi
bin=$(cachemon_bin "$DIR" topology-provider)
cd "$DIR"
# shellcheck disable=SC2086 # the flags are words; checked too, before anything starts
checked=$("$bin" -config-file="$conf" ${TOPOLOGY_PROVIDER_FLAGS:-} -check-config)
# "<file>: valid (ensembles <names>, listen <address>)": refuse a port already taken before starting.
listen=${checked##*, listen }
listen=${listen%)}
can_start topology_provider "$DIR/run/topology_provider.pid" "$listen" "by another process; change listen in $conf" || exit 1
# shellcheck disable=SC2086 # the flags are words
daemon_start --listen "$listen" topology_provider "$DIR/run/topology_provider.pid" "$DIR/log/topology_provider.out" "$bin" -config-file="$conf" ${TOPOLOGY_PROVIDER_FLAGS:-}
