#!/usr/bin/env bash
# Downloads and verifies the pinned VictoriaMetrics release into $INSTALL_DIR/bin/victoria-metrics.
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
STACK=$DIR/..
# shellcheck source=../config.sh
. "$STACK/config.sh"
# shellcheck source=../lib/download.sh
. "$STACK/lib/download.sh"
# Named, with its apt-get line, when the release site cannot be reached.
DEBIAN_PACKAGE=victoria-metrics
release="victoria-metrics-linux-${ARCH}-v${VICTORIA_METRICS_VERSION}"
install_release_binary victoria-metrics "$VICTORIA_METRICS_URL" "$release.tar.gz" "${release}_checksums.txt" "$VICTORIA_METRICS_SHA256" victoria-metrics-prod
