#!/usr/bin/env bash
# Starts the host exporter (node_exporter) on this machine, in the background, with the shipped
# command: one core at most (GOMAXPROCS=1) and only the collectors the dashboards and alerts read,
# so it costs the cache node next to nothing.
#   start.sh            reads host_exporter.env (HOST_EXPORTER_LISTEN_ADDRESS, HOST_EXPORTER_LOG_LEVEL),
#                       writes run/host_exporter.pid, logs to log/host_exporter.log
# The binary is bin/node_exporter beside this script (the batch install puts it there), else
# bin/node_exporter of the installed tree, else Debian's prometheus-node-exporter or node_exporter
# on PATH (HOST_EXPORTER_BINARY overrides).
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
LIB="$DIR/lib/daemon.sh"; [ -f "$LIB" ] || LIB="$DIR/../lib/daemon.sh"
# shellcheck source=../lib/daemon.sh
. "$LIB"

no_arguments "starts the host exporter with host_exporter.env" "$@"
env_file="$DIR/host_exporter.env"
need_file host_exporter "env file" "$env_file"
unset HOST_EXPORTER_LISTEN_ADDRESS HOST_EXPORTER_LOG_LEVEL
# shellcheck disable=SC1090
. "$env_file"
listen=${HOST_EXPORTER_LISTEN_ADDRESS:-0.0.0.0:9100}
level=${HOST_EXPORTER_LOG_LEVEL:-error}
case "$level" in debug | info | warn | error) ;; *)
  echo "host_exporter: $env_file: HOST_EXPORTER_LOG_LEVEL=$level: one of debug, info, warn, error" >&2
  exit 1
  ;;
esac
bin=$(system_bin "$DIR" node_exporter "${HOST_EXPORTER_BINARY:-}" prometheus-node-exporter node_exporter)
can_start host_exporter "$DIR/run/host_exporter.pid" "$listen" "(another host exporter?); one host exporter per machine" || exit 1
GOMAXPROCS=1 daemon_start --listen "$listen" host_exporter "$DIR/run/host_exporter.pid" "$DIR/log/host_exporter.log" \
  "$bin" \
  --collector.disable-defaults \
  --collector.cpu --collector.meminfo --collector.stat --collector.vmstat --collector.diskstats \
  --collector.netstat --collector.netdev --collector.loadavg --collector.filefd --collector.processes \
  --web.listen-address="$listen" \
  --log.level="$level"
