#!/usr/bin/env bash
# Installs the alert router into $INSTALL_DIR/alert_router (config.sh; INSTALL_DIR=<dir> overrides),
# keeping an operator's edited config. The program: the system's (prometheus-alertmanager or alertmanager) when
# present, else the pinned release (download.sh).
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
STACK=$DIR/..
# shellcheck source=../config.sh
. "$STACK/config.sh"
# shellcheck source=../lib/download.sh
. "$STACK/lib/download.sh"
if [ "${CACHEMON_FORCE_DOWNLOAD:-}" != 1 ] && found=$(have_system prometheus-alertmanager alertmanager); then
  echo "alert_router: using the system's $found"
elif [ -x "$INSTALL_DIR/bin/alertmanager" ]; then
  echo "alert_router: using $INSTALL_DIR/bin/alertmanager"
else
  "$DIR/download.sh"
fi
install_component_files "$DIR" alert_router
mkdir -p "$INSTALL_DIR/lib"
cp "$STACK/lib/"*.sh "$INSTALL_DIR/lib/"
echo "alert_router: installed in $INSTALL_DIR/alert_router"
