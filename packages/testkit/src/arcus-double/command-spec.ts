/** What every command of the double is: the shape of a table entry and the replies they share. */
import type { ServerState } from './state.js';

export const CLOSE = Symbol('close connection');
export type Reply = string | typeof CLOSE;

export interface CommandSpec {
  /** Bytes of the data block after the command line (without its CRLF); undefined when none. */
  readonly dataLength?: (args: readonly string[]) => number | undefined;
  /** Largest data block accepted; a larger one is swallowed and answered with `tooLarge`. */
  readonly maxData?: number;
  readonly tooLarge?: string;
  /** The command takes a trailing `noreply`. */
  readonly noreply?: boolean;
  readonly run: (state: ServerState, args: readonly string[], data: string) => Reply;
}

export const ERROR = 'ERROR\r\n';
export const BAD_FORMAT = 'CLIENT_ERROR bad command line format\r\n';
export const BAD_DATA_CHUNK = 'CLIENT_ERROR bad data chunk\r\n';

/** Thrown by argument parsers; the dispatcher answers CLIENT_ERROR bad command line format. */
export class BadFormat extends Error {}

/** Replies end in CRLF; `line` adds it. */
export function line(text: string): string {
  return `${text}\r\n`;
}
