# Which web UIs the Debian builds of the off-the-shelf programs leave out, and how to get them
# (sourced, not run; needs download.sh's have_system). install.sh prints it at its end;
# elsewhere: . <tree>/lib/download.sh; . <tree>/lib/debian-uis.sh; debian_uis_note <tree>
#   debian_uis_note <installed tree>   prints the note when a component runs a Debian build that
#                                      lacks its UI (nothing otherwise)

# The program a component's start.sh runs is <tree>/bin/<program> when there, else the system's:
# a Debian build when dpkg knows the package.
_uses_debian_build() { # <tree> <program in bin/> <Debian package> <system executables...>
  local tree=$1 program=$2 package=$3
  shift 3
  [ ! -x "$tree/bin/$program" ] && have_system "$@" >/dev/null &&
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null)" = installed ]
}

debian_uis_note() { # <installed tree>
  local tree=$1 lines=() components=()
  if _uses_debian_build "$tree" victoria-metrics victoria-metrics victoria-metrics; then
    lines+=("  - stores (Debian's victoria-metrics): vmui, the query UI at /vmui, answers 404")
    components+=(short_term_store)
  fi
  if _uses_debian_build "$tree" vmalert victoria-metrics vmalert; then
    lines+=("  - rule evaluator (Debian's vmalert): its web UI's static files (styles, scripts) are missing")
    components+=(rule_evaluator)
  fi
  if _uses_debian_build "$tree" alertmanager prometheus-alertmanager prometheus-alertmanager alertmanager; then
    lines+=("  - alert router (Debian's prometheus-alertmanager): no web app (its page says so; the API and amtool work)")
    components+=(alert_router)
  fi
  [ "${#lines[@]}" -gt 0 ] || return 0
  echo "Debian's builds leave out these web UIs (everything else works):"
  printf '%s\n' "${lines[@]}"
  echo "  The pinned upstream releases have them. Where the release site can be reached (or with the"
  echo "  release archives copied into $tree/downloads/), put them into $tree/bin,"
  echo "  which the start scripts prefer, and restart those components:"
  local component
  for component in "${components[@]}"; do echo "    INSTALL_DIR=$tree $tree/$component/download.sh"; done
  echo "    $tree/bin/cachemon restart ${components[*]}"
  echo "  (or, from cachemon's source tree, every program from its release:"
  echo "  CACHEMON_FORCE_DOWNLOAD=1 INSTALL_DIR=$tree stack/install.sh)"
}
