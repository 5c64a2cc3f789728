import { createLoggerOn, type Logger, type LogLevel } from '../../src/index.js';

export interface CapturedLogger {
  readonly logger: Logger;
  readonly records: Array<Record<string, unknown>>;
}

/** A real logger whose lines land in memory, for asserting on what a component logged. */
export function captureLogger(level: LogLevel = 'debug'): CapturedLogger {
  const records: Array<Record<string, unknown>> = [];
  const logger = createLoggerOn(
    { write: (line: string) => void records.push(JSON.parse(line) as Record<string, unknown>) },
    level,
  );
  return { logger, records };
}
