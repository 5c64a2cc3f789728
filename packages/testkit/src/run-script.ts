import { execFile } from 'node:child_process';

export interface ScriptRun {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `bash <script> args` without blocking this process: ARCUS doubles and ZooKeeper sessions a
 * test holds in-process keep answering and heartbeating while the script runs (a blocked event loop
 * on a busy machine can expire a session, and its ephemeral nodes with it).
 */
export function runBash(
  script: string,
  args: readonly string[] = [],
  env: Record<string, string> = {},
  timeoutMs = 60_000,
): Promise<ScriptRun> {
  return new Promise((resolve) => {
    execFile(
      'bash',
      [script, ...args],
      { encoding: 'utf8', env: { ...process.env, ...env }, timeout: timeoutMs },
      (error, stdout, stderr) =>
        resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
    );
  });
}
