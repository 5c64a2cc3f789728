#!/usr/bin/env bash
# Installs the host exporter into $INSTALL_DIR/host_exporter (config.sh; INSTALL_DIR=<dir> overrides),
# keeping an operator's edited config. The program: the system's (prometheus-node-exporter or node_exporter) when
# present, else the pinned release (download.sh).
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../config.sh
. "$DIR/../config.sh"
# shellcheck source=../lib/download.sh
. "$DIR/../lib/download.sh"
install_offshelf_component "$DIR" host_exporter node_exporter prometheus-node-exporter node_exporter
