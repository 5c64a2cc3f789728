#!/usr/bin/env bash
# Installs the short term store into $INSTALL_DIR/short_term_store (config.sh; INSTALL_DIR=<dir> overrides),
# keeping an operator's edited config. The program: the system's (victoria-metrics) when
# present, else the pinned release (download.sh).
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
STACK=$DIR/..
# shellcheck source=../config.sh
. "$STACK/config.sh"
# shellcheck source=../lib/download.sh
. "$STACK/lib/download.sh"
if [ "${CACHEMON_FORCE_DOWNLOAD:-}" != 1 ] && found=$(have_system victoria-metrics); then
  echo "short_term_store: using the system's $found"
elif [ -x "$INSTALL_DIR/bin/victoria-metrics" ]; then
  echo "short_term_store: using $INSTALL_DIR/bin/victoria-metrics"
else
  "$DIR/download.sh"
fi
install_component_files "$DIR" short_term_store
mkdir -p "$INSTALL_DIR/lib"
cp "$STACK/lib/"*.sh "$INSTALL_DIR/lib/"
echo "short_term_store: installed in $INSTALL_DIR/short_term_store"
