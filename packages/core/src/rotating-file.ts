/**
 * Size-based log file rotation with the semantics of Go's lumberjack (which the spec's log block
 * fields come from): backups are named `<base>-<UTC timestamp>.<ext>`, optionally gzipped, at most
 * maxBackups kept and none older than maxAge days.
 *
 * rotating-file-stream does the writing, renaming and gzip; it only knows count- and total-size
 * limits kept in a history file of its own, so retention (count and age) is done here by scanning
 * the directory, as lumberjack does, which also covers backups left by earlier runs.
 * One difference from lumberjack: rotation happens right after the write that reaches maxSize, so a
 * file can exceed it by one log line.
 */
import { accessSync, constants, mkdirSync, openSync, closeSync } from 'node:fs';
import { readdir, stat, unlink } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
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

/**
 * Checked synchronously so a bad log path fails at start with a clear message instead of as a
 * stream error after the daemon is already running.
 */
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
  process.stderr.write(`cachemon: log file: ${err.message}\n`);
}

export function createRotatingFileStream(options: RotatingFileOptions): RotatingFileStream {
  const { filename, maxSizeBytes, maxBackups, maxAgeDays, compress } = options;
  if (!Number.isInteger(maxSizeBytes) || maxSizeBytes <= 0) {
    throw new CachemonError(Errors.INTERNAL, `maxSizeBytes must be a positive integer, got ${maxSizeBytes}`);
  }
  ensureWritable(filename);
  const onError = options.onError ?? reportToStderr;
  const dir = dirname(filename);
  const stream = createStream(
    // Called without a time for the live file's name, with the rotation time for a backup's.
    (time, index) => (time instanceof Date ? join(dir, backupName(filename, time, index ?? 1, compress)) : filename),
    // 'gzip' (not true): true makes rotating-file-stream shell out to `gzip`; 'gzip' uses zlib.
    { size: `${maxSizeBytes}B`, ...(compress ? { compress: 'gzip' as const } : {}) },
  );

  let pruning: Promise<void> = Promise.resolve();
  const schedulePrune = (): void => {
    pruning = pruning.then(() => pruneBackups(filename, maxBackups, maxAgeDays)).catch((err: unknown) => {
      onError(new Error(`pruning backups of ${filename}: ${errorMessage(err)}`));
    });
  };
  // A stream error must not crash the daemon: losing log lines beats losing the service.
  stream.on('error', (err) => onError(err));
  stream.on('warning', (err) => onError(err));
  stream.on('rotated', schedulePrune);
  schedulePrune();

  const close = async (): Promise<void> => {
    if (!stream.writableEnded) stream.end();
    await finished(stream).catch((err: unknown) => onError(err instanceof Error ? err : new Error(String(err))));
    await pruning;
  };
  return Object.assign(stream, { close });
}
