/**
 * Log rotation as Go's lumberjack does it: backups `<base>-<UTC timestamp>.<ext>`, maybe gzipped,
 * maxBackups kept, none older than maxAge days. rotating-file-stream writes; retention is here.
 */
import { accessSync, constants, mkdirSync, openSync, closeSync } from 'node:fs';
import { readdir, stat, unlink } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { createStream } from 'rotating-file-stream';
import { CachemonError, Errors, errorMessage } from './errors.js';

export interface RotatingFileOptions {
  readonly filename: string;
  readonly maxSizeBytes: number;
  /** Backups to keep; 0 keeps all. */
  readonly maxBackups: number;
  /** Delete backups older than this many days; 0 disables the age limit. */
  readonly maxAgeDays: number;
  readonly compress: boolean;
  /** Where rotation and retention failures go; a logger cannot log its own failures. */
  readonly onError?: (err: Error) => void;
}

export type RotatingFileStream = NodeJS.WritableStream & { close(): Promise<void> };

export interface BackupFile {
  readonly name: string;
  /** Rotation time from the name, `YYYY-MM-DDTHH-mm-ss.SSS` (sorts lexically). */
  readonly stamp: string;
  /** Tie-breaker when two rotations share a millisecond. */
  readonly index: number;
  readonly mtimeMs: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;

function splitName(filename: string): { prefix: string; ext: string } {
  const name = basename(filename);
  const ext = extname(name);
  return { prefix: name.slice(0, name.length - ext.length), ext };
}

function pad(value: number, width = 2): string {
  return String(value).padStart(width, '0');
}

/** lumberjack's backup time format, in UTC, with `-` for `:` so the name is portable. */
export function backupStamp(time: Date): string {
  return (
    `${time.getUTCFullYear()}-${pad(time.getUTCMonth() + 1)}-${pad(time.getUTCDate())}` +
    `T${pad(time.getUTCHours())}-${pad(time.getUTCMinutes())}-${pad(time.getUTCSeconds())}` +
    `.${pad(time.getUTCMilliseconds(), 3)}`
  );
}

export function backupName(filename: string, time: Date, index: number, compress: boolean): string {
  const { prefix, ext } = splitName(filename);
  const suffix = index > 1 ? `-${index}` : '';
  return `${prefix}-${backupStamp(time)}${suffix}${ext}${compress ? '.gz' : ''}`;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function backupPattern(filename: string): RegExp {
  const { prefix, ext } = splitName(filename);
  const stamp = '(\\d{4}-\\d{2}-\\d{2}T\\d{2}-\\d{2}-\\d{2}\\.\\d{3})';
  return new RegExp(`^${escapeRegExp(prefix)}-${stamp}(?:-(\\d+))?${escapeRegExp(ext)}(?:\\.gz)?$`);
}

/** Which backups retention removes: those past maxAge, then the oldest beyond maxBackups. */
export function selectExpiredBackups(
  backups: ReadonlyArray<BackupFile>,
  limits: { maxBackups: number; maxAgeDays: number; nowMs: number },
): BackupFile[] {
  const newestFirst = [...backups].sort((a, b) =>
    a.stamp === b.stamp ? b.index - a.index : a.stamp < b.stamp ? 1 : -1,
  );
  const cutoff = limits.maxAgeDays > 0 ? limits.nowMs - limits.maxAgeDays * DAY_MS : -Infinity;
  const kept: BackupFile[] = [];
  const expired: BackupFile[] = [];
  for (const backup of newestFirst) {
    const tooOld = backup.mtimeMs < cutoff;
    const tooMany = limits.maxBackups > 0 && kept.length >= limits.maxBackups;
    if (tooOld || tooMany) expired.push(backup);
    else kept.push(backup);
  }
  return expired;
}

async function listBackups(filename: string): Promise<BackupFile[]> {
  const dir = dirname(filename);
  const pattern = backupPattern(filename);
  const out: BackupFile[] = [];
  for (const name of await readdir(dir)) {
    const match = pattern.exec(name);
    if (match === null) continue;
    try {
      const info = await stat(join(dir, name));
      if (info.isFile()) out.push({ name, stamp: match[1] ?? '', index: Number(match[2] ?? 1), mtimeMs: info.mtimeMs });
    } catch {
      // Vanished between readdir and stat (another process pruning): nothing to remove.
    }
  }
  return out;
}

async function pruneBackups(filename: string, maxBackups: number, maxAgeDays: number): Promise<void> {
  if (maxBackups === 0 && maxAgeDays === 0) return;
  const backups = await listBackups(filename);
  const expired = selectExpiredBackups(backups, { maxBackups, maxAgeDays, nowMs: Date.now() });
  for (const backup of expired) {
    await unlink(join(dirname(filename), backup.name)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }
}

/** Checked synchronously, so a bad log path fails the start instead of the running daemon. */
function ensureWritable(filename: string): void {
  try {
    mkdirSync(dirname(filename), { recursive: true });
    closeSync(openSync(filename, 'a'));
    accessSync(filename, constants.W_OK);
  } catch (err) {
    throw new CachemonError(Errors.LOG_FILE_UNWRITABLE, `cannot open log file ${filename}: ${errorMessage(err)}`, {
      cause: err,
    });
  }
}

function reportToStderr(err: Error): void {
  process.stderr.write(`cachemon: ${err.message}\n`);
}

/** How soon a log file that failed is opened again; the lines written meanwhile are counted, not kept. */
const REOPEN_DELAY_MS = 1000;

type InnerStream = ReturnType<typeof createStream>;

/**
 * The log file as pino writes it: a rotating-file-stream, replaced by a new one when it fails (it
 * would drop every later line). The failure is reported and the file opened again, at most once a
 * second, as lumberjack does: a line may be lost, never the log.
 */
class ResilientLogFile extends Writable {
  private inner: InnerStream | undefined;
  private reopenAt = 0;
  /** Lines written while no file was open: reported when one is again. */
  private dropped = 0;
  /** When the file last failed. */
  private failedAt = -Infinity;

  /** `first`: the file opened at start (where a failure is the caller's to throw). */
  constructor(
    private readonly openInner: () => InnerStream,
    first: InnerStream,
    private readonly describe: string,
    private readonly onError: (err: Error) => void,
  ) {
    super({ decodeStrings: false });
    this.inner = this.watch(first);
  }

  private open(): InnerStream | undefined {
    try {
      return this.watch(this.openInner());
    } catch (err) {
      this.onError(err instanceof Error ? err : new Error(String(err)));
      this.reopenAt = Date.now() + REOPEN_DELAY_MS;
      return undefined;
    }
  }

  private watch(inner: InnerStream): InnerStream {
    inner.on('error', (err: Error) => {
      this.onError(new Error(`${this.describe}: ${err.message}; opening it again`, { cause: err }));
      if (this.inner === inner) {
        this.inner = undefined;
        // At once after a first failure; a second within REOPEN_DELAY_MS (a full disk) waits.
        const now = Date.now();
        this.reopenAt = now - this.failedAt < REOPEN_DELAY_MS ? now + REOPEN_DELAY_MS : now;
        this.failedAt = now;
      }
    });
    inner.on('warning', (err: Error) => this.onError(new Error(`${this.describe}: ${err.message}`, { cause: err })));
    return inner;
  }

  private current(): InnerStream | undefined {
    if (this.inner === undefined && Date.now() >= this.reopenAt) {
      this.inner = this.open();
      if (this.inner !== undefined && this.dropped > 0) {
        this.onError(
          new Error(`${this.describe}: ${this.dropped} log write(s) may be lost while the file could not be written`),
        );
        this.dropped = 0;
      }
    }
    return this.inner;
  }

  // Node's Writable hands single writes to _writev too.
  override _writev(
    chunks: Array<{ chunk: Buffer | string; encoding: BufferEncoding }>,
    callback: (error?: Error | null) => void,
  ): void {
    const inner = this.current();
    if (inner === undefined || inner.destroyed) {
      this.dropped += chunks.length;
      callback();
      return;
    }
    for (let i = 0; i < chunks.length - 1; i++) inner.write(chunks[i]!.chunk);
    inner.write(chunks[chunks.length - 1]!.chunk, (err) => this.written(err, chunks.length, callback));
  }

  /** A write the file failed counts as lost (its failure itself goes to the 'error' listener). */
  private written(err: Error | null | undefined, writes: number, callback: () => void): void {
    if (err) this.dropped += writes;
    callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    const inner = this.inner;
    this.inner = undefined;
    if (inner === undefined || inner.destroyed) {
      callback();
      return;
    }
    inner.end();
    finished(inner).then(
      () => callback(),
      () => callback(),
    );
  }
}

export function createRotatingFileStream(options: RotatingFileOptions): RotatingFileStream {
  const { filename, maxSizeBytes, maxBackups, maxAgeDays, compress } = options;
  if (!Number.isInteger(maxSizeBytes) || maxSizeBytes <= 0) {
    throw new CachemonError(Errors.INTERNAL, `maxSizeBytes must be a positive integer, got ${maxSizeBytes}`);
  }
  const onError = options.onError ?? reportToStderr;
  const dir = dirname(filename);

  let pruning: Promise<void> = Promise.resolve();
  const schedulePrune = (): void => {
    pruning = pruning
      .then(() => pruneBackups(filename, maxBackups, maxAgeDays))
      .catch((err: unknown) => {
        onError(new Error(`pruning backups of ${filename}: ${errorMessage(err)}`));
      });
  };
  const openInner = (): InnerStream => {
    ensureWritable(filename);
    const inner = createStream(
      // Called without a time for the live file's name, with the rotation time for a backup's.
      (time, index) => (time instanceof Date ? join(dir, backupName(filename, time, index ?? 1, compress)) : filename),
      // 'gzip' (not true): true makes rotating-file-stream shell out to `gzip`; 'gzip' uses zlib.
      { size: `${maxSizeBytes}B`, ...(compress ? { compress: 'gzip' as const } : {}) },
    );
    inner.on('rotated', schedulePrune);
    return inner;
  };
  // A failing file must not crash the daemon, nor end its logging: see ResilientLogFile.
  // Opened once here, so that a bad log path fails the start with a clear message.
  const stream = new ResilientLogFile(openInner, openInner(), `log file ${filename}`, onError);
  schedulePrune();

  const close = async (): Promise<void> => {
    if (!stream.writableEnded) stream.end();
    await finished(stream).catch((err: unknown) => onError(err instanceof Error ? err : new Error(String(err))));
    await pruning;
  };
  return Object.assign(stream, { close });
}
