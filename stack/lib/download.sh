# Shared by the components' download.sh and install.sh (sourced, not run).
#   fetch_verified <url> <file name> <checksums url> <pinned sha256 or ""> <dest dir>
#       downloads <url> to <dest dir>/<file name> unless it is already there and verified, and
#       checks it against its line in the release's checksum file (and the pinned SHA256 if set); a
#       checksum file holding one bare hash (Grafana's <file>.sha256) is that file's checksum
#   have_system <executable...>   the first executable found on PATH, if any
#   missing_debian_packages       the Debian packages of the off-the-shelf programs neither the
#                                 system nor $INSTALL_DIR/bin has
#   apt_install <who> <package...>  installs them with apt-get where it may (root, apt-get, APT_INSTALL)

have_system() {
  local exe
  for exe in "$@"; do
    if command -v "$exe" >/dev/null 2>&1; then
      command -v "$exe"
      return 0
    fi
  done
  return 1
}

# The off-the-shelf programs, one per line: <program in $INSTALL_DIR/bin> <Debian package> <its
# executables on PATH...> (the Debian name first).
OFFSHELF_PROGRAMS=(
  "victoria-metrics victoria-metrics victoria-metrics"
  "vmalert victoria-metrics vmalert"
  "vmagent victoria-metrics vmagent"
  "alertmanager prometheus-alertmanager prometheus-alertmanager alertmanager"
  "node_exporter prometheus-node-exporter prometheus-node-exporter node_exporter"
)

debian_package_of() { # <program in bin/>
  local entry fields
  for entry in "${OFFSHELF_PROGRAMS[@]}"; do
    read -r -a fields <<<"$entry"
    if [ "${fields[0]}" = "$1" ]; then echo "${fields[1]}" && return 0; fi
  done
  return 1
}

missing_debian_packages() {
  [ "${CACHEMON_FORCE_DOWNLOAD:-}" != 1 ] || return 0
  local entry fields out=()
  for entry in "${OFFSHELF_PROGRAMS[@]}"; do
    read -r -a fields <<<"$entry"
    if [ -x "$INSTALL_DIR/bin/${fields[0]}" ] || have_system "${fields[@]:2}" >/dev/null; then continue; fi
    case " ${out[*]} " in *" ${fields[1]} "*) ;; *) out+=("${fields[1]}") ;; esac
  done
  if [ "${#out[@]}" -gt 0 ]; then echo "${out[*]}"; fi
}

apt_install_line() { # <package...>
  echo "DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $*"
}

# Installs Debian packages with apt-get, as root, where apt-get is and APT_INSTALL (config.sh) is 1;
# `apt-get update` first when the package lists lack them. 0: installed; 1: not tried (it says why
# when it would have) or failed (with apt-get's last lines). Once per install.sh run
# (CACHEMON_APT_TRIED): a component's install.sh does not try again what install.sh tried.
apt_install() { # <who> <package...>
  local who=$1 out
  shift
  [ "$#" -gt 0 ] || return 0
  if [ "${APT_INSTALL:-1}" != 1 ] || [ -n "${CACHEMON_APT_TRIED:-}" ] || ! command -v apt-get >/dev/null 2>&1; then
    return 1
  fi
  if [ "$(id -u)" != 0 ]; then
    echo "$who: not root, so not installing the Debian packages $* (as root: $(apt_install_line "$@"))"
    return 1
  fi
  echo "$who: installing the Debian packages $* ($(apt_install_line "$@"); APT_INSTALL=0 in config.sh turns this off)"
  if out=$(DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" 2>&1); then return 0; fi
  if apt-get update -qq >/dev/null 2>&1 &&
    out=$(DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" 2>&1); then
    return 0
  fi
  echo "$out" | tail -n 5 >&2
  echo "$who: apt-get could not install $*; the pinned releases are downloaded instead" >&2
  return 1
}

_fetch() { # <url> <output file>
  local url=$1 out=$2 err
  if ! err=$(curl -fsSL --retry 2 --connect-timeout 10 --max-time 600 -o "$out" "$url" 2>&1); then
    rm -f "$out"
    echo "cannot download $url: ${err:-failed}" >&2
    if [ -n "${FETCH_ADVICE:-}" ]; then # a component's own advice (set by its download.sh)
      echo "  $FETCH_ADVICE" >&2
    else
      echo "  This machine cannot reach the release site. Install the system package instead, or copy" >&2
      echo "  the file into $(dirname "$out")/ from a machine that can and run this again." >&2
      if [ -n "${DEBIAN_PACKAGE:-}" ] && command -v apt-get >/dev/null 2>&1; then # set by a download.sh
        echo "  The system package, as root: $(apt_install_line "$DEBIAN_PACKAGE")" >&2
      fi
    fi
    return 1
  fi
}

fetch_verified() { # <url> <file name> <checksums url> <pinned sha256> <dest dir>
  local url=$1 name=$2 sums_url=$3 pinned=$4 dest=$5
  mkdir -p "$dest"
  local file="$dest/$name" sums="$dest/$name.sha256sums"
  if [ ! -f "$file" ]; then
    echo "downloading $url"
    _fetch "$url" "$file.part" || return 1
    mv "$file.part" "$file"
  fi
  [ -f "$sums" ] || _fetch "$sums_url" "$sums" || return 1
  local expected actual
  expected=$(awk -v n="$name" '
    { f = $2; sub(/^\*/, "", f) }
    NF >= 2 && f == n { print $1; found = 1; exit }
    NF == 1 && length($1) == 64 && $1 ~ /^[0-9a-fA-F]+$/ { bare = tolower($1) }
    END { if (!found && NR == 1 && bare != "") print bare }' "$sums")
  if [ -z "$expected" ]; then
    echo "$sums_url lists no checksum for $name; refusing an unverified download" >&2
    rm -f "$sums"
    return 1
  fi
  actual=$(sha256sum "$file" | cut -d' ' -f1)
  if [ "$actual" != "$expected" ]; then
    echo "$file: checksum mismatch (got $actual, the release says $expected); the file was removed, run again" >&2
    rm -f "$file" "$sums"
    return 1
  fi
  if [ -n "$pinned" ] && [ "$actual" != "$pinned" ]; then
    echo "$file: checksum $actual differs from the one pinned in config.sh ($pinned); the file was removed" >&2
    rm -f "$file" "$sums"
    return 1
  fi
  echo "verified $name (sha256 $actual)"
}

# Downloads (verified) a release archive and puts one program of it into $INSTALL_DIR/bin.
install_release_binary() { # <program name in bin/> <base url> <archive> <checksum file> <pinned sha256> <path in archive>
  local program=$1 base=$2 archive=$3 sums=$4 pinned=$5 inner=$6
  fetch_verified "$base/$archive" "$archive" "$base/$sums" "$pinned" "$INSTALL_DIR/downloads" || return 1
  local tmp
  tmp=$(mktemp -d)
  if ! tar -xzf "$INSTALL_DIR/downloads/$archive" -C "$tmp" "$inner" 2>/dev/null; then
    rm -rf "$tmp"
    echo "$archive holds no $inner" >&2
    return 1
  fi
  mkdir -p "$INSTALL_DIR/bin"
  install -m 0755 "$tmp/$inner" "$INSTALL_DIR/bin/$program"
  rm -rf "$tmp"
  echo "installed $INSTALL_DIR/bin/$program"
}

# Copies a component folder of the source tree into $INSTALL_DIR. Scripts, shipped rule files and
# generated dashboards (dashboards/*.json) are replaced; an operator's config, env and target files
# are kept (the new shipped version is put beside one that differs, as <file>.shipped); data/, log/
# and run/ are never touched.
install_component_files() { # <source dir of the component> <component name>
  local src=$1 name=$2 dest="$INSTALL_DIR/$2" rel target
  mkdir -p "$dest"
  while IFS= read -r -d '' rel; do
    rel=${rel#./}
    target="$dest/$rel"
    mkdir -p "$(dirname "$target")"
    case "$rel" in
      *.sh | systemd/* | conf/rules/downsampling.yml | dashboards/*.json)
        cp "$src/$rel" "$target"
        ;;
      *)
        if [ -e "$target" ] && ! cmp -s "$src/$rel" "$target"; then
          cp "$src/$rel" "$target.shipped"
          echo "$name: kept your $rel (the shipped version is $rel.shipped)"
        elif [ ! -e "$target" ]; then
          cp "$src/$rel" "$target"
        fi
        ;;
    esac
  done < <(cd "$src" && find . -type f ! -path './data/*' ! -path './log/*' ! -path './run/*' -print0)
}

# install.sh of a component run by an off-the-shelf program: the system's program when present
# (CACHEMON_FORCE_DOWNLOAD=1 skips it), else one already in $INSTALL_DIR/bin, else its Debian
# package (apt_install), else download.sh; then the component's folder and the shared scripts.
install_offshelf_component() { # <component dir> <component> <program in bin/> <system executables...>
  local dir=$1 component=$2 program=$3 found package
  shift 3
  package=$(debian_package_of "$program")
  if [ "${CACHEMON_FORCE_DOWNLOAD:-}" != 1 ] && found=$(have_system "$@"); then
    echo "$component: using the system's $found"
  elif [ -x "$INSTALL_DIR/bin/$program" ]; then
    echo "$component: using $INSTALL_DIR/bin/$program"
  elif [ "${CACHEMON_FORCE_DOWNLOAD:-}" != 1 ] && apt_install "$component" "$package" && found=$(have_system "$@"); then
    echo "$component: using the system's $found (Debian package $package)"
  else
    "$dir/download.sh"
  fi
  install_component_files "$dir" "$component"
  mkdir -p "$INSTALL_DIR/lib"
  cp "$dir/../lib/"*.sh "$INSTALL_DIR/lib/"
  echo "$component: installed in $INSTALL_DIR/$component"
}
