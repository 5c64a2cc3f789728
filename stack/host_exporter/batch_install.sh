#!/usr/bin/env bash
# Installs and starts the host exporter on many cache machines over SSH, from the monitoring machine.
#
#   INSTALL_DIR=/home/arcus/cachemon HOST_PATTERN=cache-%s.example.com SEQ_START=1 SEQ_END=40 \
#     batch_install.sh [--dry-run] [--yes]
#   INSTALL_DIR=/home/arcus/cachemon HOSTS="cache-a cache-b" batch_install.sh [--dry-run] [--yes]
#
#   INSTALL_DIR   directory on each cache machine; the exporter goes to $INSTALL_DIR/host_exporter
#   HOST_PATTERN  the machines' host name, %s where the number goes (printf: %03d works too)
#   SEQ_START, SEQ_END   the range of numbers
#   HOSTS         instead of the three above: the machines' names, separated by spaces
#   SSH, SCP      the commands used (default ssh and scp, with BatchMode so nothing prompts)
#
# On EVERY machine it stops a running host exporter and DELETES and recreates
# $INSTALL_DIR/host_exporter: whatever is in that directory is lost. It asks before it starts
# unless --yes; --dry-run prints what it would run and changes nothing. Machines must be reachable
# over SSH from here. The store's exporter/host_exporter.yml still needs their <host>:9100 targets
# (`cachemon hosts add` runs this script and adds them). A machine that fails is named on stderr as
# "batch_install: <host> failed: <reason>"; the others go on.
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)

dry_run=false
yes=false
for arg in "$@"; do
  case "$arg" in
    --dry-run) dry_run=true ;;
    --yes) yes=true ;;
    *) echo "usage: INSTALL_DIR=... {HOST_PATTERN=...%s... SEQ_START=N SEQ_END=M | HOSTS=\"h1 h2\"} $(basename "$0") [--dry-run] [--yes]" >&2; exit 2 ;;
  esac
done
hosts=()
if [ -n "${HOSTS:-}" ]; then
  if [ -n "${HOST_PATTERN:-}${SEQ_START:-}${SEQ_END:-}" ]; then
    echo "batch_install: set HOSTS or HOST_PATTERN SEQ_START SEQ_END, not both" >&2
    exit 2
  fi
  [ -n "${INSTALL_DIR:-}" ] || { echo "batch_install: set INSTALL_DIR (see the header of $0)" >&2; exit 2; }
  read -r -a hosts <<<"$HOSTS"
else
  missing=()
  for name in INSTALL_DIR HOST_PATTERN SEQ_START SEQ_END; do
    [ -n "${!name:-}" ] || missing+=("$name")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "batch_install: set ${missing[*]} (or HOSTS instead of the machine range; see the header of $0)" >&2
    exit 2
  fi
  case "$HOST_PATTERN" in *%*) ;; *) echo "batch_install: HOST_PATTERN=$HOST_PATTERN has no %s for the machine number" >&2; exit 2 ;; esac
  if ! [[ "$SEQ_START" =~ ^[0-9]+$ && "$SEQ_END" =~ ^[0-9]+$ ]] || [ "$SEQ_START" -gt "$SEQ_END" ]; then
    echo "batch_install: SEQ_START=$SEQ_START SEQ_END=$SEQ_END is not a range of numbers" >&2
    exit 2
  fi
  for ((n = SEQ_START; n <= SEQ_END; n++)); do
    # shellcheck disable=SC2059 # the pattern is the format
    hosts+=("$(printf "$HOST_PATTERN" "$n")")
  done
fi
case "$INSTALL_DIR" in /*) ;; *) echo "batch_install: INSTALL_DIR=$INSTALL_DIR must be an absolute path" >&2; exit 2 ;; esac

# The exporter binary shipped to the machines: the installed tree's, else this machine's package.
lib="$DIR/lib/daemon.sh"; [ -f "$lib" ] || lib="$DIR/../lib/daemon.sh"
# shellcheck source=../lib/daemon.sh
. "$lib"
bin=$(system_bin "$DIR" node_exporter "${HOST_EXPORTER_BINARY:-}" prometheus-node-exporter node_exporter) || exit 1

SSH=${SSH:-ssh -o BatchMode=yes -o ConnectTimeout=10}
SCP=${SCP:-scp -q -o BatchMode=yes -o ConnectTimeout=10}
target="$INSTALL_DIR/host_exporter"

if [ ${#hosts[@]} -le 20 ]; then
  echo "batch_install: ${#hosts[@]} machines: ${hosts[*]}"
else
  echo "batch_install: ${#hosts[@]} machines: ${hosts[0]} ${hosts[1]} ${hosts[2]} .. ${hosts[-1]}"
fi
echo "WARNING: on each machine a running host exporter is stopped and $target is deleted and recreated; files there are lost."
echo "  (cachemon hosts add and cachemon doctor name the files of each machine that would be lost)"
if ! $dry_run && ! $yes; then
  read -r -p "Continue? [y/N] " answer
  [ "$answer" = y ] || [ "$answer" = Y ] || { echo "batch_install: nothing done"; exit 1; }
fi

run() {
  if $dry_run; then
    echo "  $*"
  else
    "$@"
  fi
}
# SSH gets no standard input: it would take what is meant for the loop (or wait on a terminal).
# Only a host exporter of this install directory is killed (one started without its stop.sh);
# another one on the port makes start.sh say so.
install_on() { # <host>
  local host=$1
  # shellcheck disable=SC2086 # SSH and SCP are commands with their options
  run $SSH "$host" "if [ -x '$target/stop.sh' ]; then '$target/stop.sh' || true; fi; pkill -f '^$target/bin/node_exporter' || true; rm -rf '$target' && mkdir -p '$target/bin' '$target/lib'" </dev/null &&
    run $SCP "$bin" "$host:$target/bin/node_exporter" &&
    run $SCP "$DIR/start.sh" "$DIR/stop.sh" "$DIR/host_exporter.env" "$host:$target/" &&
    run $SCP "$lib" "$host:$target/lib/daemon.sh" &&
    run $SSH "$host" "'$target/start.sh'" </dev/null
}
errors=$(mktemp)
trap 'rm -f "$errors"' EXIT
failed=()
for host in "${hosts[@]}"; do
  echo "== $host"
  if install_on "$host" 2>"$errors"; then
    cat "$errors" >&2
  else
    cat "$errors" >&2
    failed+=("$host")
    # The last thing said on stderr is why: ssh's "Could not resolve hostname", "Connection refused".
    reason=$(grep -v '^[[:space:]]*$' "$errors" | tail -n 1 | tr -d '\r')
    echo "batch_install: $host failed: ${reason:-exited with an error}; going on with the others" >&2
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "batch_install: failed on ${#failed[@]} machines: ${failed[*]}" >&2
  exit 1
fi
$dry_run && echo "batch_install: dry run; nothing was changed" || echo "batch_install: done on ${#hosts[@]} machines"
