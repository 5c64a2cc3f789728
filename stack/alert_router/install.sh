#!/usr/bin/env bash
# Installs the alert router into $INSTALL_DIR/alert_router (config.sh; INSTALL_DIR=<dir> overrides),
# keeping an operator's edited config. The program: the system's (prometheus-alertmanager or alertmanager) when
# present, else the pinned release (download.sh).
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../config.sh
. "$DIR/../config.sh"
# shellcheck source=../lib/download.sh
. "$DIR/../lib/download.sh"
install_offshelf_component "$DIR" alert_router alertmanager prometheus-alertmanager alertmanager
