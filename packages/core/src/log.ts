/** The spec's log block on pino: JSON lines, ISO time, the level by name (grep `"level":"error"`). */
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { pino, type DestinationStream } from 'pino';
import { z } from 'zod';
import { createRotatingFileStream, type RotatingFileStream } from './rotating-file.js';

export const logLevels = ['debug', 'info', 'warn', 'error', 'fatal', 'panic'] as const;
export type LogLevel = (typeof logLevels)[number];

/** Above pino's fatal (60): Go daemons log at panic just before they abort. */
const PANIC_LEVEL_VALUE = 70;

export const logBlockSchema = z.strictObject({
  level: z.enum(logLevels).default('warn'),
  filename: z.string().min(1).default('stdout'),
  maxSize: z.number().int().positive().default(20),
  maxBackups: z.number().int().nonnegative().default(10),
  maxAge: z.number().int().nonnegative().default(30),
  compress: z.boolean().default(false),
});

export type LogBlock = z.output<typeof logBlockSchema>;

/** The block a config without a `log` key gets. */
export const defaultLogBlock: LogBlock = Object.freeze(logBlockSchema.parse({}));

export type Logger = pino.Logger<'panic'>;

export interface LoggerOptions {
  readonly name?: string;
  readonly base?: Record<string, unknown>;
  /**
   * Fields every line gets, read when the line is written (a value that changes at run time, such
   * as a renamed ensemble). A field the line itself gives wins; give none of these in `base` too.
   */
  readonly mixin?: () => Record<string, unknown>;
}

const BYTES_PER_MB = 1024 * 1024;

const closers = new WeakMap<Logger, () => Promise<void>>();

function openDestination(block: LogBlock): { stream: DestinationStream; file?: RotatingFileStream } {
  if (block.filename === 'stdout') return { stream: pino.destination({ dest: 1, sync: true }) };
  if (block.filename === 'stderr') return { stream: pino.destination({ dest: 2, sync: true }) };
  const file = createRotatingFileStream({
    filename: resolve(process.cwd(), block.filename),
    maxSizeBytes: block.maxSize * BYTES_PER_MB,
    maxBackups: block.maxBackups,
    maxAgeDays: block.maxAge,
    compress: block.compress,
  });
  return { stream: file, file };
}

/** Builds a logger on an explicit destination; createLogger picks the destination from the block. */
export function createLoggerOn(stream: DestinationStream, level: LogLevel, options: LoggerOptions = {}): Logger {
  return pino<'panic'>(
    {
      level,
      customLevels: { panic: PANIC_LEVEL_VALUE },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      ...(options.name === undefined ? {} : { name: options.name }),
      ...(options.base === undefined ? {} : { base: { pid: process.pid, hostname: hostname(), ...options.base } }),
      ...(options.mixin === undefined ? {} : { mixin: options.mixin }),
    },
    stream,
  );
}

export function createLogger(block: LogBlock, options: LoggerOptions = {}): Logger {
  const { stream, file } = openDestination(block);
  const logger = createLoggerOn(stream, block.level, options);
  if (file !== undefined) closers.set(logger, () => file.close());
  return logger;
}

/** Flushes pending lines and closes the log file (stdout and stderr stay open). */
export async function closeLogger(logger: Logger): Promise<void> {
  const close = closers.get(logger);
  if (close !== undefined) {
    closers.delete(logger);
    await close();
    return;
  }
  await new Promise<void>((done) => logger.flush(() => done()));
}

/** For config reloads: the new level applies to this logger and the children made from it later. */
export function setLogLevel(logger: Logger, level: LogLevel): void {
  logger.level = level;
}
