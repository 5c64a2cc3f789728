#!/usr/bin/env bash
# Installs the whole stack into INSTALL_DIR (config.sh; INSTALL_DIR=<dir> stack/install.sh
# overrides it), without prompting:
#   - cachemon's own daemons (built from this checkout) and their docs into $INSTALL_DIR/cachemon
#   - every component's folder (start.sh, stop.sh, configs) into $INSTALL_DIR/<component>, with the
#     scale-out settings of config.sh (STORE_SHARDS, ...; docs/scaling.md) written into them
#   - the off-the-shelf programs: the system's packages when present, else pinned, verified
#     release downloads into $INSTALL_DIR/bin
#   - the dashboard server: Grafana into $DASHBOARD_INSTALL_DIR and its JSON datasource plugin;
#     when they cannot be downloaded (offline) a warning says what to run later, and the install
#     goes on (DASHBOARD_SERVER_DOWNLOAD=0 does not try)
# Running it again updates scripts and programs and keeps operators' edited configs (a new
# shipped version goes beside as <file>.shipped) and all data.
set -euo pipefail
STACK=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$STACK/.." && pwd)
# shellcheck source=config.sh
. "$STACK/config.sh"
# shellcheck source=lib/download.sh
. "$STACK/lib/download.sh"
# shellcheck source=lib/debian-uis.sh
. "$STACK/lib/debian-uis.sh"

node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt "$NODE_MIN_VERSION" ]; then
  echo "install: Node.js $NODE_MIN_VERSION or newer is needed (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi
for pkg in "$ROOT"/packages/*/; do
  if [ ! -d "$pkg/dist/src" ]; then
    echo "install: $pkg is not built; run npm ci && npm run build in $ROOT first" >&2
    exit 1
  fi
done

# The scale-out settings of config.sh (docs/scaling.md) into the tree, by cachemon's own helper:
# checked before anything is installed, written once the components' files are in place.
scale_out() { # [--check]
  STORE_SHARDS=$STORE_SHARDS STORE_REPLICAS=$STORE_REPLICAS STORE_WRITE_URL=$STORE_WRITE_URL \
    STORE_QUERY_URL=$STORE_QUERY_URL LONG_STORE_WRITE_URL=$LONG_STORE_WRITE_URL LONG_STORE_QUERY_URL=$LONG_STORE_QUERY_URL \
    node "$ROOT/packages/stack/dist/src/apply-scale-out.js" "$@" "$INSTALL_DIR"
}
scale_out --check

echo "install: into $INSTALL_DIR"
mkdir -p "$INSTALL_DIR/lib"
cp "$STACK"/lib/*.sh "$INSTALL_DIR/lib/"
if [ -e "$INSTALL_DIR/config.sh" ] && ! cmp -s "$STACK/config.sh" "$INSTALL_DIR/config.sh"; then
  cp "$STACK/config.sh" "$INSTALL_DIR/config.sh.shipped"
  echo "install: kept your config.sh (the shipped version is config.sh.shipped)"
else
  cp "$STACK/config.sh" "$INSTALL_DIR/config.sh"
fi

# cachemon itself: executables, built packages and their dependencies, swapped in whole.
app="$INSTALL_DIR/cachemon"
rm -rf "$app.new" "$app.old"
mkdir -p "$app.new/packages"
# docs/ too: each daemon's --help names its doc there.
cp -a "$ROOT/bin" "$ROOT/docs" "$ROOT/package.json" "$ROOT/package-lock.json" "$ROOT/node_modules" "$app.new/"
for pkg in "$ROOT"/packages/*/; do
  name=$(basename "$pkg")
  mkdir -p "$app.new/packages/$name"
  cp -a "$pkg/package.json" "$pkg/dist" "$app.new/packages/$name/"
  if [ -d "$pkg/ui" ]; then cp -a "$pkg/ui" "$app.new/packages/$name/"; fi
done
if [ -d "$app" ]; then mv "$app" "$app.old"; fi
mv "$app.new" "$app"
rm -rf "$app.old"
echo "install: cachemon in $app"
# The command that runs and changes this tree; it finds the tree from its own place.
mkdir -p "$INSTALL_DIR/bin"
ln -sfn ../cachemon/bin/cachemon "$INSTALL_DIR/bin/cachemon"

# Components run by cachemon's daemons: their folders only.
for component in cache_exporter coordination_exporter topology_provider query_proxy; do
  install_component_files "$STACK/$component" "$component"
  echo "$component: installed in $INSTALL_DIR/$component"
done
# Components run by off-the-shelf programs: their Debian packages, when missing, in one apt-get
# (as root, APT_INSTALL=1); then their own install.sh finds the program or downloads it.
missing=$(missing_debian_packages)
if [ -n "$missing" ]; then
  # shellcheck disable=SC2086 # a list of package names
  apt_install install $missing || true
  export CACHEMON_APT_TRIED=1
fi
for component in short_term_store collector rule_evaluator alert_router host_exporter; do
  "$STACK/$component/install.sh"
done
scale_out
# The dashboard server: its folder always; Grafana and the JSON datasource plugin when they can be
# had (DASHBOARD_SERVER_DOWNLOAD=0 skips them). Offline, the rest of the stack is installed anyway.
status=0
"$STACK/dashboard_server/install.sh" || status=$?
if [ "$status" -eq 3 ]; then
  echo "install: WARNING: the dashboard server's Grafana or plugin could not be downloaded (see above); everything" >&2
  echo "  else is installed. Run $INSTALL_DIR/dashboard_server/install.sh (or" >&2
  echo "  INSTALL_DIR=$INSTALL_DIR $STACK/dashboard_server/install.sh) when they can be had." >&2
elif [ "$status" -ne 0 ]; then
  exit "$status"
fi
debian_uis_note "$INSTALL_DIR" | sed '1s/^/install: /'
echo "install: done. Next: fill alert_router/alert_router.yml, then $INSTALL_DIR/bin/cachemon start (docs/operations.md)."
