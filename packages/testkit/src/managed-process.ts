import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { TestkitError, TestkitErrors } from './errors.js';
import { onProcessExit } from './process-exit.js';

/**
 * Children started by the kit and still running, each the leader of a process group of its own;
 * the group (the child and whatever it started) is SIGKILLed if the test process exits first.
 */
const running = new Set<ChildProcess>();
onProcessExit(() => {
  for (const child of running) if (child.pid !== undefined) signal(child.pid, 'SIGKILL');
  running.clear();
});

export interface ExitStatus {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/**
 * One external program the kit runs. Output goes to a log file, so a forgotten child cannot keep a
 * pipe (and a CI step) alive; the exit hook above kills it if the test process ends first.
 */
export class ManagedProcess {
  private child: ChildProcess | undefined;
  private exitPromise: Promise<ExitStatus> = Promise.resolve({ code: null, signal: null });
  private lastExit: ExitStatus | undefined;
  private spawnError: Error | undefined;

  constructor(
    readonly name: string,
    private readonly command: string,
    private readonly args: readonly string[],
    readonly logFile: string,
    private readonly cwd?: string,
  ) {}

  /** PID while the process runs, else undefined. */
  get pid(): number | undefined {
    return this.lastExit === undefined ? this.child?.pid : undefined;
  }

  get running(): boolean {
    return this.pid !== undefined;
  }

  /** How the last run ended; undefined while running or before the first start. */
  get exitStatus(): ExitStatus | undefined {
    return this.lastExit;
  }

  start(): void {
    if (this.running) return;
    this.lastExit = undefined;
    this.spawnError = undefined;
    const fd = openSync(this.logFile, 'a');
    let child: ChildProcess;
    try {
      child = spawn(this.command, [...this.args], { cwd: this.cwd, stdio: ['ignore', fd, fd], detached: true });
    } finally {
      // The child has its own copy of the descriptor.
      closeSync(fd);
    }
    this.child = child;
    child.unref();
    running.add(child);
    this.exitPromise = new Promise<ExitStatus>((resolve) => {
      child.once('error', (err) => {
        // spawn failures (ENOENT, EACCES) arrive here and no 'exit' follows.
        this.spawnError = err;
        running.delete(child);
        this.lastExit = { code: null, signal: null };
        resolve(this.lastExit);
      });
      child.once('exit', (code, signal) => {
        running.delete(child);
        this.lastExit = { code, signal };
        resolve(this.lastExit);
      });
    });
  }

  /** Resolves when the current run has ended. */
  async waitForExit(): Promise<ExitStatus> {
    // The child is unref'd; while someone waits for it, it must keep the event loop alive.
    this.child?.ref();
    try {
      return await this.exitPromise;
    } finally {
      this.child?.unref();
    }
  }

  /** SIGTERM to its process group, wait for the exit, SIGKILL after `graceMs`. */
  async stop(graceMs = 5000): Promise<void> {
    const pid = this.pid;
    if (pid === undefined) return;
    signal(pid, 'SIGTERM');
    const timer = setTimeout(() => signal(pid, 'SIGKILL'), graceMs);
    try {
      await this.waitForExit();
    } finally {
      clearTimeout(timer);
      // What the child started and left running dies with it.
      signal(pid, 'SIGKILL');
    }
  }

  /** SIGKILL to its process group and wait for the exit. */
  async kill(): Promise<void> {
    const pid = this.pid;
    if (pid === undefined) return;
    signal(pid, 'SIGKILL');
    await this.waitForExit();
  }

  /** The last `lines` lines of the log file (for error messages). */
  tail(lines = 30): string {
    try {
      const text = readFileSync(this.logFile, 'utf8');
      return text
        .split('\n')
        .slice(-lines - 1)
        .join('\n')
        .trimEnd();
    } catch {
      return '(no log)';
    }
  }

  /** An error that says why the process is not usable, with the tail of its log. */
  failure(what: string): TestkitError {
    const exit = this.lastExit;
    const how =
      this.spawnError !== undefined
        ? `could not be started (${this.spawnError.message})`
        : exit !== undefined
          ? `exited (code ${exit.code ?? '-'}, signal ${exit.signal ?? '-'})`
          : 'is running';
    const code =
      this.spawnError !== undefined
        ? TestkitErrors.PROCESS_START_FAILED
        : exit !== undefined
          ? TestkitErrors.PROCESS_EXITED
          : TestkitErrors.PROCESS_NOT_READY;
    return new TestkitError(
      code,
      `${this.name} ${what}: it ${how}. ${this.command} ${this.args.join(' ')}\n--- tail of ${this.logFile} ---\n${this.tail()}`,
    );
  }

  /** Polls `probe` until true; fails when the process exits, or after `timeoutMs` with its log. */
  async waitUntil(what: string, probe: () => Promise<boolean>, timeoutMs: number, intervalMs = 50): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (!this.running) throw this.failure(`did not become ${what}`);
      if (await probe().catch(() => false)) return;
      if (Date.now() >= deadline) throw this.failure(`did not become ${what} within ${timeoutMs} ms`);
      await sleep(intervalMs);
    }
  }
}

/** `sig` to the process group `pid` leads (every kit child leads one). */
function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    // already gone
  }
}

/** A server the kit started and stops by PID. */
export interface ManagedServer {
  readonly pid: number | undefined;
  /** Start again on the same port and data; resolves when it serves. */
  start(): Promise<void>;
  /** SIGTERM by PID, wait for the exit, SIGKILL after 5 s. */
  stop(): Promise<void>;
  /** SIGKILL by PID. */
  kill(): Promise<void>;
}
type Startable = Pick<ManagedServer, 'start' | 'kill'>;

/** Starts `server`; when it does not become ready, kills it (no stray process) and rethrows. */
export async function startedOrKilled<T extends Startable>(server: T): Promise<T> {
  try {
    await server.start();
  } catch (err) {
    await server.kill();
    throw err;
  }
  return server;
}

/** The PID, stop and kill of a server that is one managed process. */
export abstract class ProcessServer implements ManagedServer {
  constructor(protected readonly process: ManagedProcess) {}

  get pid(): number | undefined {
    return this.process.pid;
  }

  abstract start(): Promise<void>;

  stop(): Promise<void> {
    return this.process.stop();
  }

  kill(): Promise<void> {
    return this.process.kill();
  }
}
