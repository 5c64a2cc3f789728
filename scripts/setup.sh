#!/usr/bin/env bash
# Installs what the build and the test suite need, then builds. Run by `npm test` (as pretest) and
# safe to run again: each step is skipped when its result is already there.
#   - Debian packages of the real components the tests start (as root, with apt-get)
#   - npm packages (npm ci when node_modules is missing or older than the lock file)
#   - the TypeScript build
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian package -> a file that proves it is installed.
declare -A PACKAGES=(
  [zookeeper]=/usr/share/java/zookeeper.jar
  [memcached]=/usr/bin/memcached
  [victoria-metrics]=/usr/bin/victoria-metrics
  [prometheus-alertmanager]=/usr/bin/prometheus-alertmanager
  [prometheus-node-exporter]=/usr/bin/prometheus-node-exporter
  # the query proxy UI test drives it headless with playwright-core
  [chromium]=/usr/bin/chromium
  # promtool checks the process metrics' names
  [prometheus]=/usr/bin/promtool
  # the cache machines of the cachemon hosts tests are this one, reached over SSH
  [openssh-server]=/usr/sbin/sshd
)

missing=()
for pkg in "${!PACKAGES[@]}"; do
  [ -e "${PACKAGES[$pkg]}" ] || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup: missing Debian packages: ${missing[*]}; install them (as root: apt-get install ${missing[*]})" >&2
    exit 1
  fi
fi

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: installing npm packages"
  npm ci --no-audit --no-fund --loglevel=error
fi

echo "setup: building"
npx --no-install tsc -b
