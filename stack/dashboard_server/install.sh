#!/usr/bin/env bash
# Installs the dashboard server (config.sh; INSTALL_DIR=<dir> overrides):
#   - its folder into $INSTALL_DIR/dashboard_server: start.sh, stop.sh, conf/dashboard_server.ini,
#     provisioning/ (an operator's edited ini and provisioning files are kept, the new shipped
#     version goes beside as <file>.shipped) and dashboards/ (the shipped, generated dashboards:
#     replaced, and ones no longer shipped removed)
#   - Grafana $DASHBOARD_SERVER_VERSION into $DASHBOARD_INSTALL_DIR (download.sh), unless it is there
#   - the JSON datasource plugin simpod-json-datasource $DASHBOARD_PLUGIN_VERSION into
#     dashboard_server/plugins, with Grafana's own `grafana cli plugins install`, unless it is there
#     (offline: copy the plugin's zip into $INSTALL_DIR/downloads/ as
#     simpod-json-datasource-<version>.zip and it is installed from there)
# DASHBOARD_SERVER_DOWNLOAD=0 installs the folder only. Exit status: 0 done; 3 the folder is
# installed but Grafana or the plugin could not be fetched (offline; the message says what to do);
# 1 anything else.
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
# Run from an installed tree (<INSTALL_DIR>/dashboard_server/; the checkout's stack/ has install.sh
# beside config.sh, the installed tree not), INSTALL_DIR is that tree unless set.
if [ -z "${INSTALL_DIR:-}" ] && [ ! -f "$DIR/../install.sh" ]; then INSTALL_DIR=$(cd "$DIR/.." && pwd); fi
# shellcheck source=../config.sh
. "$DIR/../config.sh"
# shellcheck source=../lib/download.sh
. "$DIR/../lib/download.sh"
export INSTALL_DIR

dest="$INSTALL_DIR/dashboard_server"
plugin=simpod-json-datasource
plugins="$dest/plugins"
later="$dest/install.sh"

# The folder, unless this is the installed copy itself.
mkdir -p "$dest"
if [ ! "$DIR" -ef "$dest" ]; then
  install_component_files "$DIR" dashboard_server
  # The installed dashboards are exactly the shipped ones.
  for installed in "$dest"/dashboards/*.json "$dest"/dashboards/*.json.shipped; do
    [ -e "$installed" ] || continue
    base=$(basename "$installed")
    if [ ! -f "$DIR/dashboards/${base%.shipped}" ] || [ "$base" != "${base%.shipped}" ]; then
      rm -f "$installed"
      echo "dashboard_server: removed dashboards/$base (no longer shipped)"
    fi
  done
  mkdir -p "$INSTALL_DIR/lib"
  cp "$DIR/../lib/"*.sh "$INSTALL_DIR/lib/"
  # The installed install.sh, download.sh and start.sh read the settings from the tree's config.sh.
  if [ ! -e "$INSTALL_DIR/config.sh" ]; then cp "$DIR/../config.sh" "$INSTALL_DIR/config.sh"; fi
fi
mkdir -p "$dest/dashboards" "$dest/provisioning/plugins" "$dest/provisioning/alerting" "$plugins" "$dest/data" "$dest/log"
echo "dashboard_server: folder installed in $dest"

if [ "${DASHBOARD_SERVER_DOWNLOAD:-1}" = 0 ]; then
  echo "dashboard_server: Grafana and its plugin skipped (DASHBOARD_SERVER_DOWNLOAD=0); run $later to install them"
  exit 0
fi

# Grafana: the release this config pins, unless it is the one installed.
tarball="grafana-${DASHBOARD_SERVER_VERSION}.linux-${ARCH}.tar.gz"
if [ -x "$DASHBOARD_INSTALL_DIR/bin/grafana" ] && [ "$(cat "$DASHBOARD_INSTALL_DIR/.cachemon-release" 2>/dev/null)" = "$tarball" ]; then
  echo "dashboard_server: using Grafana $DASHBOARD_SERVER_VERSION in $DASHBOARD_INSTALL_DIR"
else
  status=0
  "$DIR/download.sh" || status=$?
  if [ "$status" -eq 3 ]; then
    echo "dashboard_server: Grafana is not installed; run $later when the release can be had (see above)" >&2
    exit 3
  elif [ "$status" -ne 0 ]; then
    exit 1
  fi
fi

# The JSON datasource plugin, pinned; its plugin.json says which version is there.
plugin_version() { # <plugin.json>
  [ -f "$1" ] || return 0
  if command -v node >/dev/null 2>&1; then
    node -e 'try { console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).info.version ?? "") } catch { console.log("") }' "$1"
  elif command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json, sys
try: print(json.load(open(sys.argv[1]))["info"]["version"])
except Exception: print("")' "$1"
  fi
}
have=$(plugin_version "$plugins/$plugin/plugin.json")
if [ "$have" = "$DASHBOARD_PLUGIN_VERSION" ]; then
  echo "dashboard_server: using $plugin $have in $plugins"
  exit 0
fi
# Another version is set aside, and put back if the pinned one cannot be had.
rm -rf "${plugins:?}/.$plugin.old"
if [ -e "$plugins/$plugin" ]; then mv "$plugins/$plugin" "$plugins/.$plugin.old"; fi
copy="$INSTALL_DIR/downloads/$plugin-$DASHBOARD_PLUGIN_VERSION.zip"
grafana=("$DASHBOARD_INSTALL_DIR/bin/grafana" cli --homepath "$DASHBOARD_INSTALL_DIR" --pluginsDir "$plugins")
if [ -f "$copy" ]; then
  echo "dashboard_server: installing $plugin from $copy"
  cmd=("${grafana[@]}" --pluginUrl "$copy" plugins install "$plugin")
else
  echo "dashboard_server: installing $plugin $DASHBOARD_PLUGIN_VERSION from $DASHBOARD_PLUGIN_REPO"
  cmd=("${grafana[@]}" --repo "$DASHBOARD_PLUGIN_REPO" plugins install "$plugin" "$DASHBOARD_PLUGIN_VERSION")
fi
status=0
out=$("${cmd[@]}" 2>&1) || status=$?
have=$(plugin_version "$plugins/$plugin/plugin.json")
if [ "$status" -ne 0 ] || [ "$have" != "$DASHBOARD_PLUGIN_VERSION" ]; then
  echo "$out" | tail -n 20 >&2
  rm -rf "${plugins:?}/$plugin"
  if [ -e "$plugins/.$plugin.old" ]; then mv "$plugins/.$plugin.old" "$plugins/$plugin"; fi
  if [ "$status" -ne 0 ]; then
    echo "dashboard_server: cannot install the JSON datasource plugin $plugin $DASHBOARD_PLUGIN_VERSION (grafana cli exited $status)." >&2
  else
    echo "dashboard_server: grafana cli installed $plugin ${have:-of no version}, not $DASHBOARD_PLUGIN_VERSION." >&2
  fi
  echo "  Offline: copy $DASHBOARD_PLUGIN_REPO/$plugin/versions/$DASHBOARD_PLUGIN_VERSION/download as $copy" >&2
  echo "  from a machine that can reach it, then run $later again." >&2
  exit 3
fi
rm -rf "${plugins:?}/.$plugin.old"
echo "dashboard_server: installed $plugin $have in $plugins"
