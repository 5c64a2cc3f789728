#!/usr/bin/env bash
# Downloads and verifies the pinned vmutils release (VictoriaMetrics' tools) and puts its vmagent
# into $INSTALL_DIR/bin/vmagent.
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
STACK=$DIR/..
# shellcheck source=../config.sh
. "$STACK/config.sh"
# shellcheck source=../lib/download.sh
. "$STACK/lib/download.sh"
# Named, with its apt-get line, when the release site cannot be reached.
DEBIAN_PACKAGE=victoria-metrics
release="vmutils-linux-${ARCH}-v${VICTORIA_METRICS_VERSION}"
install_release_binary vmagent "$VICTORIA_METRICS_URL" "$release.tar.gz" "${release}_checksums.txt" "$VMUTILS_SHA256" vmagent-prod
