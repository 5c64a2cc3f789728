/**
 * Listen addresses as Go daemons take them: `host:port`, `:port` for every interface, `[::1]:port`.
 */
import { isIP } from 'node:net';
import { z } from 'zod';
import { CachemonError, Errors } from './errors.js';

export interface ListenAddress {
  /** Empty string: every interface. */
  readonly host: string;
  readonly port: number;
}

const HOSTNAME = /^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/;

function invalid(text: string, reason: string): CachemonError {
  return new CachemonError(Errors.CONFIG_INVALID, `invalid listen address "${text}": ${reason}`);
}

function parsePort(text: string, portText: string): number {
  if (!/^\d{1,5}$/.test(portText)) throw invalid(text, `port "${portText}" is not a number`);
  const port = Number(portText);
  if (port > 65535) throw invalid(text, `port ${port} is out of range 0-65535`);
  return port;
}

export function parseListenAddress(text: string): ListenAddress {
  const colon = text.lastIndexOf(':');
  if (colon === -1) throw invalid(text, 'expected <host>:<port> or :<port>');
  const hostPart = text.slice(0, colon);
  const port = parsePort(text, text.slice(colon + 1));
  if (hostPart.startsWith('[')) {
    const host = hostPart.endsWith(']') ? hostPart.slice(1, -1) : '';
    if (isIP(host) !== 6) throw invalid(text, `"${hostPart}" is not a bracketed IPv6 address`);
    return { host, port };
  }
  if (hostPart.includes(':')) throw invalid(text, 'IPv6 addresses must be in brackets, e.g. [::1]:8080');
  if (hostPart !== '' && isIP(hostPart) === 0 && !HOSTNAME.test(hostPart)) {
    throw invalid(text, `"${hostPart}" is not a valid host`);
  }
  return { host: hostPart, port };
}

/** `host:port` form for messages and URLs. */
export function formatHostPort(host: string, port: number): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Config field holding a listen address; keeps the text, checked with parseListenAddress. */
export const listenAddressSchema = z.string().superRefine((text, ctx) => {
  try {
    parseListenAddress(text);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: err instanceof Error ? err.message : String(err) });
  }
});

const SERVER_ADDRESS = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/;

/** A server to connect to: `<host>:<port>` (name, IPv4, or bracketed IPv6), port 1-65535. */
export const serverAddressSchema = z
  .string()
  .regex(SERVER_ADDRESS, { message: 'expected <host>:<port>', abort: true })
  .refine((s) => {
    const port = Number(s.slice(s.lastIndexOf(':') + 1));
    return port >= 1 && port <= 65535;
  }, 'port must be 1-65535');

/**
 * An ensemble's servers as the spec's configs give them: a domain (`zk.example.com:2181`, one
 * string) or a list of server addresses. Always a list once parsed (a single string is checked,
 * and named in errors, as the list's item [0]).
 */
export const serverListSchema = z.preprocess(
  (value) => (typeof value === 'string' ? [value] : value),
  z.array(serverAddressSchema).min(1, 'empty server list'),
);
