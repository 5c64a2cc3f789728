#!/usr/bin/env bash
# Installs the collector into $INSTALL_DIR/collector (config.sh; INSTALL_DIR=<dir> overrides),
# keeping an operator's edited collector.env. The program: the system's (vmagent, in Debian's
# victoria-metrics package) when present, else the pinned release (download.sh).
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../config.sh
. "$DIR/../config.sh"
# shellcheck source=../lib/download.sh
. "$DIR/../lib/download.sh"
install_offshelf_component "$DIR" collector vmagent vmagent
