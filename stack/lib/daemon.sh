# Shared by the component start.sh / stop.sh scripts (sourced, not run).
#   daemon_start [--listen <address>] <name> <pidfile> <outfile> <command...>
#                                                          start in the background, write the pid file,
#                                                          wait until the address accepts connections
#   daemon_stop <name> <pidfile> [timeout seconds]         SIGTERM by pid, wait, SIGKILL after the timeout
#   instance_name <what it uses> "$@"                      the one <name> argument of start.sh / stop.sh
#   stop_instance <component> "$@"                         all of a component's stop.sh
# daemon_start and daemon_stop hold <pidfile>.lock while they run (flock), so that two start.sh or
# stop.sh runs of one instance at once take turns: the second sees what the first did.

# The pid in <pidfile>, when that process runs and is the one the file was written for. A process
# that started after the file was written (allowing 2 minutes for clock steps), or a file written
# before the last boot, only reuses the number: after a reboot, a crash or a kill -9, the file is
# stale, and neither start.sh nor stop.sh must take that process for the daemon.
daemon_pid() { # <pidfile>
  local pidfile=$1 pid stat rest written btime hz
  [ -f "$pidfile" ] || return 1
  pid=$(cat "$pidfile" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[1-9][0-9]*$ ]] || return 1
  if stat=$(cat "/proc/$pid/stat" 2>/dev/null) && btime=$(awk '$1 == "btime" { print $2 }' /proc/stat 2>/dev/null) && [ -n "$btime" ]; then
    rest=${stat##*) }
    local -a fields
    read -r -a fields <<<"$rest"
    hz=$(getconf CLK_TCK 2>/dev/null || echo 100)
    written=$(stat -c %Y "$pidfile") || return 1
    [ "$written" -ge "$btime" ] || return 1
    # fields[19] is the process's start (field 22 of /proc/<pid>/stat), in clock ticks since boot.
    [ $((btime + fields[19] / hz)) -le $((written + 120)) ] || return 1
  elif [ ! -d /proc/1 ]; then
    # No /proc to tell by: only whether the number is in use.
    kill -0 "$pid" 2>/dev/null || [ -n "$(ps -p "$pid" -o pid= 2>/dev/null)" ] || return 1
  else
    return 1
  fi
  echo "$pid"
}

daemon_running() { # <pidfile>
  daemon_pid "$1" >/dev/null
}

# Sources an env file; each variable named after it keeps the value the caller's environment gave
# it, when that is not empty (the environment wins over the file).
load_env() { # <env file> [variable...]
  local _file=$1 _name
  shift
  local -A _given=()
  for _name in "$@"; do _given[$_name]=${!_name-}; done
  # shellcheck disable=SC1090
  . "$_file"
  for _name in "$@"; do
    if [ -n "${_given[$_name]}" ]; then printf -v "$_name" '%s' "${_given[$_name]}"; fi
  done
}

# Holds <pidfile>.lock (its descriptor in DAEMON_LOCK_FD) until daemon_unlock: another start.sh or
# stop.sh of the same instance waits for it, up to DAEMON_LOCK_WAIT seconds (default 120). Without
# flock (util-linux), nothing is locked.
daemon_lock() { # <name> <pidfile>
  local name=$1 lockfile="$2.lock" limit=${DAEMON_LOCK_WAIT:-120}
  command -v flock >/dev/null || return 0
  if ! mkdir -p "$(dirname "$lockfile")" || ! exec {DAEMON_LOCK_FD}>>"$lockfile"; then
    unset DAEMON_LOCK_FD
    echo "$name: cannot open $lockfile; nothing done" >&2
    return 1
  fi
  if ! flock -w "$limit" "$DAEMON_LOCK_FD"; then
    exec {DAEMON_LOCK_FD}>&-
    unset DAEMON_LOCK_FD
    echo "$name: another start.sh or stop.sh of it has held $lockfile for ${limit}s; nothing done" >&2
    return 1
  fi
}

daemon_unlock() {
  if [ -n "${DAEMON_LOCK_FD:-}" ]; then
    exec {DAEMON_LOCK_FD}>&-
    unset DAEMON_LOCK_FD
  fi
}

# Starts <command> in the background and writes its pid to <pidfile>. Done when the process has
# lived for a second, or, with --listen, once <address> accepts connections (at most
# DAEMON_START_WAIT seconds, default 60): "started" then means ready to be scraped or queried. A
# process that exits meanwhile is reported with the last lines of <outfile>.
daemon_start() { # [--listen <address>] <name> <pidfile> <outfile> <command...>
  local listen=''
  if [ "${1:-}" = --listen ]; then
    listen=$2
    shift 2
  fi
  local name=$1 pidfile=$2 outfile=$3
  shift 3
  daemon_lock "$name" "$pidfile" || return 1
  local status=0
  daemon_spawn "$name" "$pidfile" "$outfile" "$listen" "$@" || status=$?
  daemon_unlock
  return "$status"
}

daemon_spawn() { # <name> <pidfile> <outfile> <listen address or ""> <command...>
  local name=$1 pidfile=$2 outfile=$3 listen=$4 running
  shift 4
  if running=$(daemon_pid "$pidfile"); then
    echo "$name: already running (pid $running)" >&2
    return 1
  fi
  mkdir -p "$(dirname "$pidfile")" "$(dirname "$outfile")" || return 1
  # No open pipe to the caller: output goes to a file, stdin from /dev/null. A session of its own
  # (setsid), so that a Ctrl-C or a hang-up of the caller's terminal does not reach it. setsid
  # runs the command in its own place (no fork: a background job is no process group leader), so
  # $! is the daemon's pid. The lock's descriptor is not the daemon's to keep: it would hold the
  # lock for as long as it runs.
  local detach=()
  if command -v setsid >/dev/null; then detach=(setsid); fi
  (
    if [ -n "${DAEMON_LOCK_FD:-}" ]; then exec {DAEMON_LOCK_FD}>&-; fi
    exec nohup "${detach[@]}" "$@" >>"$outfile" 2>&1 </dev/null
  ) &
  local pid=$!
  # daemon_start calls this in a condition, where set -e does not act: each failure is handled.
  if ! echo "$pid" 2>/dev/null >"$pidfile"; then
    kill -TERM "$pid" 2>/dev/null || true
    echo "$name: cannot write the pid file $pidfile; stopped what had started" >&2
    return 1
  fi
  # A process that dies at once (port taken, bad flag) is reported here, not discovered later.
  local limit=${DAEMON_START_WAIT:-60} tenths=0
  [[ "$limit" =~ ^[0-9]+$ ]] || limit=60
  while :; do
    sleep 0.1
    tenths=$((tenths + 1))
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$pidfile"
      echo "$name: exited at start; last lines of $outfile:" >&2
      tail -n 20 "$outfile" >&2
      return 1
    fi
    if [ -z "$listen" ]; then
      [ "$tenths" -lt 10 ] || break
    elif port_in_use "$listen"; then
      break
    elif [ "$tenths" -ge $((limit * 10)) ]; then
      echo "$name: started (pid $pid), but $listen accepts no connections after ${limit}s; it keeps running (stop.sh stops it; its output: $outfile)" >&2
      return 1
    fi
  done
  echo "$name: started (pid $pid)${listen:+, listening on $listen}"
}

daemon_stop() { # <name> <pidfile> [timeout seconds]
  daemon_lock "$1" "$2" || return 1
  local status=0
  daemon_kill "$@" || status=$?
  daemon_unlock
  return "$status"
}

daemon_kill() { # <name> <pidfile> [timeout seconds]
  local name=$1 pidfile=$2 timeout=${3:-15} pid
  if ! pid=$(daemon_pid "$pidfile"); then
    if [ -f "$pidfile" ]; then
      rm -f "$pidfile"
      echo "$name: not running (removed the stale pid file $pidfile)"
    else
      echo "$name: not running"
    fi
    return 0
  fi
  if ! kill -TERM "$pid" 2>/dev/null; then
    if [ -d "/proc/$pid" ]; then
      echo "$name: cannot signal pid $pid (it runs as another user: run stop.sh as that user, or as root)" >&2
      return 1
    fi
    # Ended between the check and the signal.
    rm -f "$pidfile"
    echo "$name: stopped (pid $pid)"
    return 0
  fi
  local waited=0
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$waited" -ge $((timeout * 10)) ]; then
      echo "$name: did not stop in ${timeout}s; killing" >&2
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  rm -f "$pidfile"
  echo "$name: stopped (pid $pid)"
}

# The cachemon executable: $CACHEMON_HOME/bin/<name>, else the installed tree's cachemon/bin,
# else the source checkout's bin/.
cachemon_bin() { # <component dir> <executable>
  local dir=$1 exe=$2 candidate
  for candidate in ${CACHEMON_HOME:+"$CACHEMON_HOME/bin/$exe"} "$dir/../cachemon/bin/$exe" "$dir/../../bin/$exe"; do
    if [ -x "$candidate" ]; then
      echo "$candidate"
      return 0
    fi
  done
  echo "cannot find the $exe executable (set CACHEMON_HOME to the cachemon directory)" >&2
  return 1
}

# The <name> argument of a component's start.sh or stop.sh; usage and exit 2 when it is not exactly one.
instance_name() { # <what the name selects, for the usage line> <args...>
  local uses=$1
  shift
  if [ "$#" -ne 1 ] || [ -z "$1" ]; then
    echo "usage: $(basename "$0") <name>${uses:+   ($uses)}" >&2
    exit 2
  fi
  echo "$1"
}

# stop.sh <name> of a component: SIGTERM to the pid in run/<name>.pid, SIGKILL after 15 s.
stop_instance() { # <component> <args...>
  local component=$1 name
  shift
  name=$(instance_name "" "$@") || exit 2
  daemon_stop "$component $name" "$DIR/run/$name.pid"
}

# Whether something accepts connections on the port of a listen address (host:port or :port).
port_in_use() { # <listen address>
  local address=$1 host port
  port=${address##*:}
  host=${address%:*}
  case "$host" in "" | 0.0.0.0 | "[::]" | "::") host=127.0.0.1 ;; esac
  host=${host#[}
  host=${host%]}
  (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null
}

# The program a component runs: the override when given, else <program> from the component's own
# bin/ (where the batch install puts it) or the installed tree's bin/ (where download.sh puts
# releases), else the first system executable found on PATH (default: <program> itself).
system_bin() { # <component dir> <program> <override> [system executables...]
  local dir=$1 program=$2 override=${3:-} candidate
  shift 3 || shift $#
  if [ -n "$override" ]; then
    echo "$override"
    return 0
  fi
  for candidate in "$dir/bin/$program" "$dir/../bin/$program"; do
    if [ -x "$candidate" ]; then
      echo "$candidate"
      return 0
    fi
  done
  for candidate in "${@:-$program}"; do
    if command -v "$candidate" >/dev/null; then
      command -v "$candidate"
      return 0
    fi
  done
  echo "cannot find $program: run install.sh, or install the system package (${*:-$program})" >&2
  return 1
}

# Refuses, with the reason, to start what runs already or whose listen address another process
# holds: before any check that would be confused by either.
can_start() { # <name> <pidfile> <listen address> <the rest of the sentence when the port is taken>
  local name=$1 pidfile=$2 address=$3 advice=$4 running
  if running=$(daemon_pid "$pidfile"); then
    echo "$name: already running (pid $running)" >&2
    return 1
  fi
  if port_in_use "$address"; then
    echo "$name: $address is already in use $advice" >&2
    return 1
  fi
}

# A script that takes no arguments: usage (with what it does, when given) and exit 2 otherwise.
no_arguments() { # <what the script does, for the usage line> <args...>
  local does=$1
  shift
  if [ "$#" -ne 0 ]; then
    echo "usage: $(basename "$0")${does:+   ($does)}" >&2
    exit 2
  fi
}

# A file a component cannot start without: its absence is said, naming the file, and exit 1.
need_file() { # <component> <what it is: config file, env file> <path> [what to do about it]
  if [ ! -f "$3" ]; then
    echo "$1: no $2 $3${4:+ ($4)}" >&2
    exit 1
  fi
}

# stop.sh of a component with one instance: no arguments; SIGTERM to run/<name>.pid, SIGKILL after 15 s.
stop_single() { # <name> <args...>
  local name=$1
  shift
  no_arguments "" "$@"
  daemon_stop "$name" "$DIR/run/$name.pid"
}

# The instances a component's start.sh or stop.sh acts on, into the array `roles`: its one optional
# argument, one of them; none: all of them. Anything else: usage and exit 2.
select_roles() { # <every role, space-separated> <args...>
  local all=$1
  shift
  if [ "$#" -gt 1 ] || { [ "$#" -eq 1 ] && [[ " $all " != *" $1 "* ]]; }; then
    echo "usage: $(basename "$0") [${all// /|}]   (no argument: all of them)" >&2
    exit 2
  fi
  if [ "$#" -eq 1 ]; then
    roles=("$1")
  else
    read -r -a roles <<<"$all"
  fi
}
