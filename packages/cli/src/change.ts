/**
 * A change of the tree as ordered steps, each with its undo: a failing step rolls back every step
 * done before it, in reverse order, so the tree is left as it was. Files are written whole (a
 * temporary file renamed over the old one), and restored byte for byte.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { createTwoFilesPatch } from 'diff';
import lockfile from 'proper-lockfile';

export interface FileEdit {
  readonly path: string;
  /** The bytes before (null: the file did not exist). */
  readonly before: Buffer | null;
  /** The text after (null: the file is removed). */
  readonly after: string | null;
}

/** An edit of a file from its current content; `change` gets the text ("" for a new file). */
export function planEdit(path: string, change: (text: string, exists: boolean) => string | null): FileEdit {
  const before = existsSync(path) ? readFileSync(path) : null;
  return { path, before, after: change(before?.toString('utf8') ?? '', before !== null) };
}

/** Writes a file whole: a reader sees the old or the new content, never a part; the mode is kept. */
export function writeWhole(path: string, data: string | Buffer): void {
  const tmp = `${path}.cachemon-${process.pid}.tmp`;
  const mode = existsSync(path) ? statSync(path).mode & 0o7777 : 0o644;
  writeFileSync(tmp, data, { mode });
  renameSync(tmp, path);
}

export function applyEdit(edit: FileEdit): void {
  if (edit.after === null) rmSync(edit.path, { force: true });
  else writeWhole(edit.path, edit.after);
}

export function revertEdit(edit: FileEdit): void {
  if (edit.before === null) rmSync(edit.path, { force: true });
  else writeWhole(edit.path, edit.before);
}

export function renderDiff(edit: FileEdit): string {
  const before = edit.before?.toString('utf8') ?? '';
  return createTwoFilesPatch(
    edit.before === null ? '/dev/null' : edit.path,
    edit.after === null ? '/dev/null' : edit.path,
    before,
    edit.after ?? '',
    '',
    '',
    { context: 3 },
  ).replace(/^=+\n/m, '');
}

/** Edits written then a reload; the undo restores them and reloads again. */
export async function editAndReload(
  edits: readonly FileEdit[],
  reload: () => Promise<void>,
): Promise<() => Promise<void>> {
  const undo = async () => {
    for (const e of [...edits].reverse()) revertEdit(e);
    await reload();
  };
  for (const e of edits) applyEdit(e);
  try {
    await reload();
  } catch (error) {
    for (const e of [...edits].reverse()) revertEdit(e);
    await reload().catch(() => undefined);
    throw error;
  }
  return undo;
}

export class StepError extends Error {
  override readonly name = 'StepError';
  constructor(
    readonly step: string,
    readonly reason: string,
    readonly rolledBack: readonly string[],
    readonly rollbackFailures: readonly string[],
    readonly advice: string,
  ) {
    super(`${step}: ${reason}`);
  }
}

interface Done {
  readonly name: string;
  readonly undo: () => Promise<void>;
}

/** The steps of one command, run in order; `fail()` rolls back what was done. */
export class Change {
  private readonly done: Done[] = [];
  readonly log: string[] = [];

  constructor(private readonly say: (line: string) => void) {}

  /** Runs a step; its undo (when it returns one) is kept for a rollback. A throw rolls everything back. */
  async step(name: string, run: () => Promise<(() => Promise<void>) | void>, advice = ''): Promise<void> {
    let undo: (() => Promise<void>) | void;
    try {
      undo = await run();
    } catch (error) {
      throw await this.rollback(name, (error as Error).message, advice);
    }
    this.say(`ok: ${name}`);
    this.log.push(name);
    if (undo) this.done.push({ name, undo });
  }

  /** A file edit as a step: written, and restored on rollback. */
  async edit(edit: FileEdit): Promise<void> {
    await this.step(
      `${edit.after === null ? 'remove' : edit.before === null ? 'write' : 'edit'} ${edit.path}`,
      async () => {
        applyEdit(edit);
        return async () => revertEdit(edit);
      },
    );
  }

  private async rollback(step: string, reason: string, advice: string): Promise<StepError> {
    const rolledBack: string[] = [];
    const failures: string[] = [];
    for (const d of this.done.reverse()) {
      try {
        await d.undo();
        rolledBack.push(d.name);
      } catch (error) {
        failures.push(`${d.name}: ${(error as Error).message}`);
      }
    }
    this.done.length = 0;
    return new StepError(step, reason, rolledBack, failures, advice);
  }
}

/**
 * Holds the tree's lock while `run` runs: two commands that change the tree take turns. A lock left
 * by a killed command goes stale (its holder no longer refreshes it) and is taken over.
 */
export async function withTreeLock<T>(
  lockTarget: string,
  waitSeconds: number,
  onWait: () => void,
  run: () => Promise<T>,
): Promise<T> {
  const options = { stale: 15_000, update: 5_000, realpath: false, lockfilePath: `${lockTarget}.lock` };
  mkdirSync(dirname(lockTarget), { recursive: true });
  const deadline = Date.now() + waitSeconds * 1000;
  let release: (() => Promise<void>) | undefined;
  let said = false;
  for (;;) {
    try {
      release = await lockfile.lock(lockTarget, options);
      break;
    } catch (error) {
      if ((error as { code?: string }).code !== 'ELOCKED') throw error;
      if (Date.now() >= deadline)
        throw new Error(
          `another cachemon command has held ${lockTarget}.lock for ${waitSeconds}s; nothing was changed (try again, or --lock-wait)`,
        );
      if (!said) onWait();
      said = true;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  try {
    return await run();
  } finally {
    await release();
  }
}
