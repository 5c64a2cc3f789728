#!/usr/bin/env bash
# Installs the host exporter into $INSTALL_DIR/host_exporter (config.sh; INSTALL_DIR=<dir> overrides),
# keeping an operator's edited config. The program: the system's (prometheus-node-exporter or node_exporter) when
# present, else the pinned release (download.sh).
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
STACK=$DIR/..
# shellcheck source=../config.sh
. "$STACK/config.sh"
# shellcheck source=../lib/download.sh
. "$STACK/lib/download.sh"
if [ "${CACHEMON_FORCE_DOWNLOAD:-}" != 1 ] && found=$(have_system prometheus-node-exporter node_exporter); then
  echo "host_exporter: using the system's $found"
elif [ -x "$INSTALL_DIR/bin/node_exporter" ]; then
  echo "host_exporter: using $INSTALL_DIR/bin/node_exporter"
else
  "$DIR/download.sh"
fi
install_component_files "$DIR" host_exporter
mkdir -p "$INSTALL_DIR/lib"
cp "$STACK/lib/"*.sh "$INSTALL_DIR/lib/"
echo "host_exporter: installed in $INSTALL_DIR/host_exporter"
