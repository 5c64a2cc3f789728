#!/usr/bin/env bash
# Installs the short term store into $INSTALL_DIR/short_term_store (config.sh; INSTALL_DIR=<dir> overrides),
# keeping an operator's edited config. The program: the system's (victoria-metrics) when
# present, else the pinned release (download.sh).
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../config.sh
. "$DIR/../config.sh"
# shellcheck source=../lib/download.sh
. "$DIR/../lib/download.sh"
install_offshelf_component "$DIR" short_term_store victoria-metrics victoria-metrics
