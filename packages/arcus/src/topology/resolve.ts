import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

export type Resolver = (hostname: string) => Promise<string[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true })).map((entry) => entry.address);

/** Splits `host:port` / `[v6]:port`. */
export function splitHostPort(address: string): { host: string; port: number } | undefined {
  const match = /^\[([^\]]+)\]:(\d{1,5})$/.exec(address) ?? /^([^:\s]+):(\d{1,5})$/.exec(address);
  if (!match) return undefined;
  const port = Number(match[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host: match[1]!, port };
}

export function joinHostPort(host: string, port: number): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * Expands an ensemble's server names to all their addresses, so the client fails over between
 * every server; a name that does not resolve is kept (the client retries it) and reported.
 */
export async function expandServers(
  servers: readonly string[],
  resolver: Resolver = systemResolver,
): Promise<{ addresses: string[]; unresolved: string[] }> {
  const addresses: string[] = [];
  const unresolved: string[] = [];
  for (const server of servers) {
    const parts = splitHostPort(server);
    if (!parts) {
      unresolved.push(server);
      continue;
    }
    if (isIP(parts.host)) {
      addresses.push(joinHostPort(parts.host, parts.port));
      continue;
    }
    try {
      const ips = await resolver(parts.host);
      if (ips.length === 0) unresolved.push(server);
      for (const ip of ips) addresses.push(joinHostPort(ip, parts.port));
    } catch {
      unresolved.push(server);
      addresses.push(server);
    }
  }
  return { addresses: [...new Set(addresses)], unresolved };
}
