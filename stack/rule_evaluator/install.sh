#!/usr/bin/env bash
# Installs the rule evaluator into $INSTALL_DIR/rule_evaluator (config.sh; INSTALL_DIR=<dir> overrides),
# keeping an operator's edited config. The program: the system's (vmalert) when
# present, else the pinned release (download.sh).
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
STACK=$DIR/..
# shellcheck source=../config.sh
. "$STACK/config.sh"
# shellcheck source=../lib/download.sh
. "$STACK/lib/download.sh"
if [ "${CACHEMON_FORCE_DOWNLOAD:-}" != 1 ] && found=$(have_system vmalert); then
  echo "rule_evaluator: using the system's $found"
elif [ -x "$INSTALL_DIR/bin/vmalert" ]; then
  echo "rule_evaluator: using $INSTALL_DIR/bin/vmalert"
else
  "$DIR/download.sh"
fi
install_component_files "$DIR" rule_evaluator
mkdir -p "$INSTALL_DIR/lib"
cp "$STACK/lib/"*.sh "$INSTALL_DIR/lib/"
echo "rule_evaluator: installed in $INSTALL_DIR/rule_evaluator"
