# Installation settings, read by install.sh and by every component's download.sh and install.sh.
# A variable already set in the environment wins: INSTALL_DIR=/opt/cachemon stack/install.sh
#
# The spec's GO_VERSION, GO_INSTALL_DIR and GOPATH have no counterpart: cachemon's own daemons are
# TypeScript, built once (npm ci && npx tsc -b) and run by Node.js; NODE_MIN_VERSION says which.

# Where everything is installed: one folder per component, bin/ for the off-the-shelf binaries,
# cachemon/ for cachemon's own daemons.
: "${INSTALL_DIR:=$HOME/cachemon}"

# cachemon's own daemons (exporters, topology provider, query proxy) run on Node.js.
: "${NODE_MIN_VERSION:=20}"

# Missing Debian packages of the off-the-shelf parts are installed with apt-get when the installer
# runs as root on a machine with apt-get (1); 0 never does, and downloads the releases instead.
: "${APT_INSTALL:=1}"

# Off-the-shelf parts, pinned. The system's packages are used when present (Debian:
# victoria-metrics, prometheus-alertmanager, prometheus-node-exporter); otherwise these releases
# are downloaded into $INSTALL_DIR/downloads and verified against the release's own checksum
# file, and against the SHA256 below when one is set (pin it for a download you have vetted).
# CACHEMON_FORCE_DOWNLOAD=1 (environment) takes the releases even where the packages are.
: "${VICTORIA_METRICS_VERSION:=1.79.5}"
: "${VICTORIA_METRICS_URL:=https://github.com/VictoriaMetrics/VictoriaMetrics/releases/download/v${VICTORIA_METRICS_VERSION}}"
: "${VICTORIA_METRICS_SHA256:=}"
: "${VMUTILS_SHA256:=}"
: "${ALERTMANAGER_VERSION:=0.25.0}"
: "${ALERTMANAGER_URL:=https://github.com/prometheus/alertmanager/releases/download/v${ALERTMANAGER_VERSION}}"
: "${ALERTMANAGER_SHA256:=}"
: "${NODE_EXPORTER_VERSION:=1.5.0}"
: "${NODE_EXPORTER_URL:=https://github.com/prometheus/node_exporter/releases/download/v${NODE_EXPORTER_VERSION}}"
: "${NODE_EXPORTER_SHA256:=}"

# The dashboard server and its JSON datasource plugin (installed by dashboard_server/install.sh).
# Grafana's standalone release grafana-<version>.linux-<arch>.tar.gz is downloaded from
# DASHBOARD_SERVER_URL (a mirror works) and verified against Grafana's <tarball>.sha256 beside it,
# and against DASHBOARD_SERVER_SHA256 when set; it is unpacked into DASHBOARD_INSTALL_DIR (the
# Grafana home, replaced on upgrade). The plugin comes from DASHBOARD_PLUGIN_REPO through Grafana's
# own `grafana cli plugins install`. DASHBOARD_SERVER_DOWNLOAD=0 installs the folder only.
: "${DASHBOARD_SERVER_VERSION:=11.2.2}"
: "${DASHBOARD_PLUGIN_VERSION:=0.6.5}"
: "${DASHBOARD_INSTALL_DIR:=$INSTALL_DIR/grafana}"
: "${DASHBOARD_SERVER_URL:=https://dl.grafana.com/oss/release}"
: "${DASHBOARD_SERVER_SHA256:=}"
: "${DASHBOARD_PLUGIN_REPO:=https://grafana.com/api/plugins}"

# Past one store (docs/scaling.md). install.sh writes what is set here into the installed tree
# (collector/collector.env, short_term_store/short.env, rule_evaluator/rule_evaluator.env,
# query_proxy/conf/promxy.yml); left empty, a setting changes nothing there, and the shipped layout is
# one short-term store scraping every target.
# vmagent shards that scrape the short-term store's jobs in its place, each about 1/STORE_SHARDS of
# the targets (1: none; the store scrapes).
: "${STORE_SHARDS:=}"
# How many shards scrape each target (1 .. STORE_SHARDS); above 1, the short-term store
# deduplicates (TS_DEDUP_MIN_SCRAPE_INTERVAL=5s).
: "${STORE_REPLICAS:=}"
# Where the shards write, a remote write URL: one for all (a store's http://<host>:8428/api/v1/write,
# a VictoriaMetrics cluster's vminsert http://<host>:8480/insert/0/prometheus/api/v1/write), or one
# per shard, space-separated (a store per shard). Empty: this tree's short-term store.
: "${STORE_WRITE_URL:=}"
# Where the short-term data is read (the rule evaluator's datasource, the query proxy's scrape=short
# group): a store's http://<host>:8428, or a cluster's vmselect http://<host>:8481/select/0/prometheus.
: "${STORE_QUERY_URL:=}"
# The long-term store's: where the rule evaluator writes the downsampled series (a remote write
# URL, e.g. http://<host>:8480/insert/1/prometheus/api/v1/write) and where the query proxy's
# scrape=long group reads them (e.g. http://<host>:8481/select/1/prometheus).
: "${LONG_STORE_WRITE_URL:=}"
: "${LONG_STORE_QUERY_URL:=}"

# Machine architecture of the downloads (amd64, arm64).
: "${ARCH:=$(case "$(uname -m)" in aarch64 | arm64) echo arm64 ;; *) echo amd64 ;; esac)}"
