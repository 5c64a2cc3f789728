#!/usr/bin/env bash
# Downloads and verifies the pinned Grafana release and unpacks it into $DASHBOARD_INSTALL_DIR (the
# Grafana home; a previous one is replaced). config.sh: DASHBOARD_SERVER_VERSION, DASHBOARD_SERVER_URL,
# DASHBOARD_SERVER_SHA256 (optional pin), DASHBOARD_INSTALL_DIR.
#
# The tarball grafana-<version>.linux-<arch>.tar.gz is checked against Grafana's published
# <tarball>.sha256 (one bare hash) and against DASHBOARD_SERVER_SHA256 when set. Offline: copy the
# tarball and its .sha256 (or the tarball alone with DASHBOARD_SERVER_SHA256 set) into
# $INSTALL_DIR/downloads/ and run this again; a copy there that verifies is used without fetching.
# Exit status: 0 installed, 1 refused (checksum, archive), 3 the release site could not be reached.
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
# Run from an installed tree (<INSTALL_DIR>/dashboard_server/; the checkout's stack/ has install.sh
# beside config.sh, the installed tree not), INSTALL_DIR is that tree unless set.
if [ -z "${INSTALL_DIR:-}" ] && [ ! -f "$DIR/../install.sh" ]; then INSTALL_DIR=$(cd "$DIR/.." && pwd); fi
# shellcheck source=../config.sh
. "$DIR/../config.sh"
# shellcheck source=../lib/download.sh
. "$DIR/../lib/download.sh"

release="grafana-${DASHBOARD_SERVER_VERSION}"
tarball="$release.linux-${ARCH}.tar.gz"
url="$DASHBOARD_SERVER_URL/$tarball"
downloads="$INSTALL_DIR/downloads"
sums="$downloads/$tarball.sha256sums" # fetch_verified's copy of the checksum file
pin=$DASHBOARD_SERVER_SHA256
FETCH_ADVICE="This machine cannot reach $DASHBOARD_SERVER_URL. Copy $tarball and $tarball.sha256 into $downloads/ from a machine that can (or set DASHBOARD_SERVER_URL to a mirror) and run this again."
mkdir -p "$downloads"

# A tarball an operator copied in: its .sha256 beside it, or the pin, verifies it without network.
if [ ! -f "$sums" ] && [ -f "$downloads/$tarball.sha256" ]; then
  cp "$downloads/$tarball.sha256" "$sums"
fi
if [ ! -f "$sums" ] && [ -f "$downloads/$tarball" ] && [ -n "$pin" ]; then
  actual=$(sha256sum "$downloads/$tarball" | cut -d' ' -f1)
  if [ "$actual" != "$pin" ]; then
    rm -f "$downloads/$tarball"
    echo "$downloads/$tarball: checksum $actual differs from the one pinned in config.sh ($pin); the file was removed" >&2
    exit 1
  fi
  printf '%s  %s\n' "$actual" "$tarball" >"$sums"
fi
# Otherwise the small checksum file first, once and with short timeouts: an unreachable site (no
# network, no DNS) is reported at once instead of after the tarball's retries.
if [ ! -f "$sums" ]; then
  if ! err=$(curl -fsSL --connect-timeout 5 --max-time 60 -o "$sums.part" "$url.sha256" 2>&1); then
    rm -f "$sums.part"
    echo "dashboard_server: cannot download $url (its checksum file $url.sha256: ${err:-failed})" >&2
    echo "  $FETCH_ADVICE" >&2
    exit 3
  fi
  mv "$sums.part" "$sums"
fi
fetch_verified "$url" "$tarball" "$url.sha256" "$pin" "$downloads" || exit 1

# Unpack beside the Grafana home (same file system), then swap it in whole.
parent=$(dirname "$DASHBOARD_INSTALL_DIR")
mkdir -p "$parent"
tmp=$(mktemp -d "$parent/.grafana-unpack.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if ! tar -xzf "$downloads/$tarball" -C "$tmp"; then
  echo "$downloads/$tarball: cannot unpack it; remove it and run this again" >&2
  exit 1
fi
home=""
for candidate in "$tmp/grafana-v${DASHBOARD_SERVER_VERSION}" "$tmp/$release"; do
  if [ -x "$candidate/bin/grafana" ]; then
    home=$candidate
    break
  fi
done
if [ -z "$home" ]; then
  echo "$tarball holds no grafana-v${DASHBOARD_SERVER_VERSION}/bin/grafana; is it a Grafana release?" >&2
  exit 1
fi
echo "$tarball" >"$home/.cachemon-release"
rm -rf "$DASHBOARD_INSTALL_DIR.old"
if [ -e "$DASHBOARD_INSTALL_DIR" ]; then mv "$DASHBOARD_INSTALL_DIR" "$DASHBOARD_INSTALL_DIR.old"; fi
mv "$home" "$DASHBOARD_INSTALL_DIR"
rm -rf "$DASHBOARD_INSTALL_DIR.old"
echo "installed Grafana $DASHBOARD_SERVER_VERSION in $DASHBOARD_INSTALL_DIR"
