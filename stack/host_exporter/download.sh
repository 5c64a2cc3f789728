#!/usr/bin/env bash
# Downloads and verifies the pinned node_exporter release into $INSTALL_DIR/bin/node_exporter.
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
STACK=$DIR/..
# shellcheck source=../config.sh
. "$STACK/config.sh"
# shellcheck source=../lib/download.sh
. "$STACK/lib/download.sh"
# Named, with its apt-get line, when the release site cannot be reached.
DEBIAN_PACKAGE=prometheus-node-exporter
release="node_exporter-${NODE_EXPORTER_VERSION}.linux-${ARCH}"
install_release_binary node_exporter "$NODE_EXPORTER_URL" "$release.tar.gz" sha256sums.txt "$NODE_EXPORTER_SHA256" "$release/node_exporter"
