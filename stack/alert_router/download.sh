#!/usr/bin/env bash
# Downloads and verifies the pinned Alertmanager release into $INSTALL_DIR/bin/alertmanager.
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
STACK=$DIR/..
# shellcheck source=../config.sh
. "$STACK/config.sh"
# shellcheck source=../lib/download.sh
. "$STACK/lib/download.sh"
# Named, with its apt-get line, when the release site cannot be reached.
DEBIAN_PACKAGE=prometheus-alertmanager
release="alertmanager-${ALERTMANAGER_VERSION}.linux-${ARCH}"
install_release_binary alertmanager "$ALERTMANAGER_URL" "$release.tar.gz" sha256sums.txt "$ALERTMANAGER_SHA256" "$release/alertmanager"
