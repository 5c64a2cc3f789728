/**
 * NODE_ERROR_REPLY (the server said no) and NODE_PROTOCOL (the stream cannot be trusted), shared by
 * the parsers and the framer so both quote offending input the same way.
 */
import { CachemonError, Errors } from '@cachemon/core';

/** Offending input is quoted at most this many characters long: enough to recognise it in a log. */
export const QUOTE_LIMIT = 80;

/** `text` cut to QUOTE_LIMIT characters, for messages and `details`. */
export function truncate(text: string): string {
  return text.length > QUOTE_LIMIT ? `${text.slice(0, QUOTE_LIMIT)}...` : text;
}

/** NODE_PROTOCOL naming the offending line (truncated, JSON-quoted so control bytes stay visible). */
export function protocolError(reason: string, line?: string): CachemonError {
  if (line === undefined) return new CachemonError(Errors.NODE_PROTOCOL, `malformed reply: ${reason}`);
  const quoted = truncate(line);
  return new CachemonError(Errors.NODE_PROTOCOL, `malformed reply: ${reason}: ${JSON.stringify(quoted)}`, {
    details: { line: quoted },
  });
}

/** NODE_ERROR_REPLY carrying the server's own words in the message and in `details.reply`. */
export function errorReply(line: string): CachemonError {
  const reply = truncate(line);
  return new CachemonError(Errors.NODE_ERROR_REPLY, `server answered ${JSON.stringify(reply)}`, {
    details: { reply },
  });
}

/** Keyword of the error line in `text` [start, end), CRLF excluded, or undefined. */
export function errorKeywordAt(
  text: string,
  start: number,
  end: number,
): 'ERROR' | 'CLIENT_ERROR' | 'SERVER_ERROR' | undefined {
  for (const keyword of ERROR_KEYWORDS) {
    if (!text.startsWith(keyword, start)) continue;
    const after = start + keyword.length;
    if (after === end || (after < end && text.charCodeAt(after) === SPACE)) return keyword;
  }
  return undefined;
}

const ERROR_KEYWORDS = ['ERROR', 'CLIENT_ERROR', 'SERVER_ERROR'] as const;
const SPACE = 0x20;
