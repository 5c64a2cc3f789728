/** SIGHUP reloads, SIGTERM/SIGINT shut down; a second signal or a stuck shutdown forces the exit. */
import { errorMessage } from './errors.js';
import { closeLogger, type Logger } from './log.js';

export interface SignalHandlerOptions {
  readonly logger: Logger;
  readonly onReload?: () => Promise<void>;
  readonly onShutdown: () => Promise<void>;
  /** Default 10 s. */
  readonly shutdownTimeoutMs?: number;
  /** Default process.exit; tests pass their own. */
  readonly exit?: (code: number) => void;
}

const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;
/** The longest an exit waits for the log's last lines to be written. */
const LOG_FLUSH_TIMEOUT_MS = 2_000;
const SHUTDOWN_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/** Errors logged where they happened (a refused config): the SIGHUP reloader does not log them again. */
const reported = new WeakSet<object>();

/** Marks `err` as logged already, for the SIGHUP reloader. */
export function markReported(err: unknown): void {
  if (typeof err === 'object' && err !== null) reported.add(err);
}

/** `run` one call at a time, in call order: two reloads at once could apply the older read last. */
export function oneAtATime<T>(run: () => Promise<T>): () => Promise<T> {
  let last: Promise<unknown> = Promise.resolve();
  return () => {
    const next = last.then(run, run);
    last = next.catch(() => undefined);
    return next;
  };
}

/** One reload at a time; SIGHUPs meanwhile collapse into one more, so the last sees the file as it is. */
function createReloader(logger: Logger, onReload: () => Promise<void>): () => void {
  let running = false;
  let again = false;
  const run = async (): Promise<void> => {
    running = true;
    do {
      again = false;
      try {
        logger.info('reloading configuration (SIGHUP)');
        await onReload();
      } catch (err) {
        if (!(typeof err === 'object' && err !== null && reported.has(err)))
          logger.error({ err }, `reload failed: ${errorMessage(err)}`);
      }
    } while (again);
    running = false;
  };
  return () => {
    if (running) again = true;
    else void run();
  };
}

/** Installs the handlers; the returned function removes them. */
export function installSignalHandlers(options: SignalHandlerOptions): () => void {
  const { logger, onReload, onShutdown } = options;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const timeoutMs = options.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;
  let shuttingDown = false;
  let exited = false;
  /** Exits once the log's last lines (the shutdown's own) are written, or after LOG_FLUSH_TIMEOUT_MS. */
  const exitAfterLog = (code: number): void => {
    const done = (): void => {
      if (exited) return;
      exited = true;
      clearTimeout(cap);
      exit(code);
    };
    const cap = setTimeout(done, LOG_FLUSH_TIMEOUT_MS);
    closeLogger(logger).then(done, done);
  };

  const onShutdownSignal = (signal: NodeJS.Signals): void => {
    if (shuttingDown) {
      logger.warn(`${signal} received again during shutdown; exiting now`);
      exit(1);
      return;
    }
    shuttingDown = true;
    logger.info(`${signal} received; shutting down`);
    const timer = setTimeout(() => {
      logger.error(`shutdown did not finish within ${timeoutMs} ms; exiting`);
      exitAfterLog(1);
    }, timeoutMs);
    onShutdown().then(
      () => {
        clearTimeout(timer);
        exitAfterLog(0);
      },
      (err: unknown) => {
        clearTimeout(timer);
        logger.error({ err }, `shutdown failed: ${errorMessage(err)}`);
        exitAfterLog(1);
      },
    );
  };

  const onHangup = onReload === undefined ? undefined : createReloader(logger, onReload);
  // Without a reload action SIGHUP is still caught: its default action would kill the daemon.
  const hangup = (): void => (onHangup === undefined ? logger.info('SIGHUP received; nothing to reload') : onHangup());

  process.on('SIGHUP', hangup);
  for (const signal of SHUTDOWN_SIGNALS) process.on(signal, onShutdownSignal);
  return () => {
    process.off('SIGHUP', hangup);
    for (const signal of SHUTDOWN_SIGNALS) process.off(signal, onShutdownSignal);
  };
}
