/** The installed tree's own shell pieces, run as an operator runs them: start.sh, stop.sh, env files, pid files. */
import { execFile } from 'node:child_process';
import { join } from 'node:path';

export interface ScriptResult {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a bash script or command line; never rejects (a failure is a non-zero status). */
export function bash(
  args: readonly string[],
  options: { cwd?: string; timeoutMs?: number; env?: Record<string, string> } = {},
): Promise<ScriptResult> {
  return new Promise((resolve) => {
    execFile(
      'bash',
      args,
      {
        encoding: 'utf8',
        cwd: options.cwd,
        env: { ...process.env, ...options.env },
        timeout: options.timeoutMs ?? 300_000,
        maxBuffer: 16 << 20,
      },
      (error, stdout, stderr) => {
        const status = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ status, stdout, stderr: error && status === 1 && !stderr ? String(error.message) : stderr });
      },
    );
  });
}

/** `<component>/<script> args` of the tree. */
export function runScript(
  dir: string,
  component: string,
  script: string,
  args: readonly string[],
): Promise<ScriptResult> {
  return bash([join(dir, component, script), ...args]);
}

/**
 * Variables of an env file as start.sh sees them: the file sourced by bash. An array is its
 * elements; an unset variable is absent.
 */
export async function readEnv(
  file: string,
  names: readonly string[],
  env: Record<string, string> = {},
): Promise<Map<string, string | string[]>> {
  const script = `set -e; . "$1"; shift; for n in "$@"; do
    d=$(declare -p "$n" 2>/dev/null) || continue
    case "$d" in "declare -a"*) eval "v=(\\"\\\${$n[@]}\\")"; printf 'A\\0%s\\0%s\\0' "$n" "\${#v[@]}"; printf '%s\\0' "\${v[@]}" ;;
    *) printf 'S\\0%s\\0%s\\0' "$n" "\${!n}" ;; esac; done`;
  const result = await bash(['-c', script, 'env', file, ...names], { timeoutMs: 10_000, env });
  if (result.status !== 0)
    throw new Error(`${file}: cannot be read by bash: ${result.stderr.trim() || `status ${result.status}`}`);
  const fields = result.stdout.split('\0');
  const values = new Map<string, string | string[]>();
  for (let i = 0; i + 2 < fields.length;) {
    const kind = fields[i++];
    const name = fields[i++]!;
    if (kind === 'S') values.set(name, fields[i++]!);
    else {
      const count = Number(fields[i++]);
      values.set(name, fields.slice(i, i + count));
      i += count;
    }
  }
  return values;
}

/** The pid of a running component by its pid file, as lib/daemon.sh decides (a stale file is no pid). */
export async function daemonPid(dir: string, pidfile: string): Promise<number | undefined> {
  const result = await bash(['-c', '. "$1"; daemon_pid "$2"', 'pid', join(dir, 'lib/daemon.sh'), pidfile], {
    timeoutMs: 10_000,
  });
  const pid = Number(result.stdout.trim());
  return result.status === 0 && Number.isInteger(pid) && pid > 0 ? pid : undefined;
}
