#!/usr/bin/env bash
# Starts the rule evaluator (vmalert) in the background.
#   start.sh            reads rule_evaluator.env (RULER_RULE, RULER_DATASOURCE_URL,
#                       RULER_REMOTEWRITE_URL, RULER_NOTIFIER_URL, RULER_LISTEN_ADDRESS), checks
#                       every rule file, writes run/rule_evaluator.pid, logs to log/rule_evaluator.log
# The binary is bin/vmalert of the installed tree, else vmalert on PATH (RULER_BINARY overrides);
# RULER_EXTERNAL_URL (optional) is the address alert links point at; extra flags go in RULER_EXTRA_FLAGS.
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
LIB="$DIR/lib/daemon.sh"; [ -f "$LIB" ] || LIB="$DIR/../lib/daemon.sh"
# shellcheck source=../lib/daemon.sh
. "$LIB"

no_arguments "starts the rule evaluator with rule_evaluator.env" "$@"
env_file="$DIR/rule_evaluator.env"
need_file rule_evaluator "env file" "$env_file"
# Only the file sets these; RULER_EXTERNAL_URL may also come from the environment, which wins.
unset RULER_RULE RULER_DATASOURCE_URL RULER_REMOTEWRITE_URL RULER_NOTIFIER_URL RULER_LISTEN_ADDRESS
load_env "$env_file" RULER_EXTERNAL_URL
missing=()
for name in RULER_RULE RULER_DATASOURCE_URL RULER_REMOTEWRITE_URL RULER_NOTIFIER_URL RULER_LISTEN_ADDRESS; do
  [ -n "${!name:-}" ] || missing+=("$name")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "rule_evaluator: $env_file: ${missing[*]} not set" >&2
  exit 1
fi
# The store URLs are bases: vmalert puts /api/v1/query and /api/v1/write after them itself. A
# single store: http://<host>:8428; a VictoriaMetrics cluster: vmselect's
# http://<host>:8481/select/<tenant>/prometheus and vminsert's http://<host>:8480/insert/<tenant>/prometheus.
for name in RULER_DATASOURCE_URL RULER_REMOTEWRITE_URL RULER_NOTIFIER_URL; do
  value=${!name}
  if ! [[ "$value" =~ ^https?://[^/?#[:space:]]+(/[^[:space:]]*)?$ ]]; then
    echo "rule_evaluator: $env_file: $name=$value: not an http:// or https:// URL" >&2
    exit 1
  fi
  if [ "$name" != RULER_NOTIFIER_URL ] && [[ "$value" =~ ^(.*)(/api/v1/(write|query|query_range|import[^[:space:]]*))/?$ ]]; then
    echo "rule_evaluator: $env_file: $name=$value: give the store's base, without ${BASH_REMATCH[2]} (vmalert adds the API path itself): $name=${BASH_REMATCH[1]}" >&2
    exit 1
  fi
done
case "$RULER_RULE" in /*) rules=$RULER_RULE ;; *) rules="$DIR/$RULER_RULE" ;; esac
bin=$(system_bin "$DIR" vmalert "${RULER_BINARY:-}")
can_start rule_evaluator "$DIR/run/rule_evaluator.pid" "$RULER_LISTEN_ADDRESS" "by another process; change RULER_LISTEN_ADDRESS in $env_file" || exit 1
mkdir -p "$DIR/log"
# Every rule file must pass the evaluator's own validation (expressions, templates) before it starts.
if ! "$bin" -rule="$rules" -dryRun -loggerLevel=ERROR >"$DIR/log/rule_evaluator.check" 2>&1; then
  echo "rule_evaluator: the rule files ($rules) do not pass validation:" >&2
  grep -v '^$' "$DIR/log/rule_evaluator.check" | tail -n 5 >&2
  exit 1
fi
port=${RULER_LISTEN_ADDRESS##*:}
# shellcheck disable=SC2086 # the extra flags are words
daemon_start --listen "$RULER_LISTEN_ADDRESS" rule_evaluator "$DIR/run/rule_evaluator.pid" "$DIR/log/rule_evaluator.log" \
  "$bin" -rule="$rules" \
  -datasource.url="$RULER_DATASOURCE_URL" \
  -remoteWrite.url="$RULER_REMOTEWRITE_URL" \
  -notifier.url="$RULER_NOTIFIER_URL" \
  -httpListenAddr="$RULER_LISTEN_ADDRESS" \
  -external.url="${RULER_EXTERNAL_URL:-http://127.0.0.1:$port}" \
  ${RULER_EXTRA_FLAGS:-}
