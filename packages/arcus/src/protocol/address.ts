import { isIPv6 } from 'node:net';
import { CachemonError, Errors } from '@cachemon/core';

export interface NodeAddress {
  host: string;
  port: number;
}

/**
 * Splits `host:port` or `[v6]:port` (the forms ZooKeeper and the config use). An IPv6 address must
 * be bracketed: `::1:11211` is ambiguous. Throws CachemonError CONFIG_INVALID.
 */
export function parseAddress(address: string): NodeAddress {
  let host: string;
  let portText: string;
  if (address.startsWith('[')) {
    const close = address.indexOf(']');
    host = close === -1 ? '' : address.slice(1, close);
    if (close === -1 || address[close + 1] !== ':' || !isIPv6(host)) throw invalid(address, 'expected [ipv6]:port');
    portText = address.slice(close + 2);
  } else {
    const colon = address.indexOf(':');
    if (colon === -1 || colon !== address.lastIndexOf(':')) throw invalid(address, 'expected host:port or [ipv6]:port');
    host = address.slice(0, colon);
    portText = address.slice(colon + 1);
    if (host.length === 0 || !/^[A-Za-z0-9._-]+$/.test(host)) throw invalid(address, 'bad host');
  }
  if (!/^[0-9]{1,5}$/.test(portText)) throw invalid(address, 'bad port');
  const port = Number(portText);
  if (port < 1 || port > 65535) throw invalid(address, 'port out of range');
  return { host, port };
}

function invalid(address: string, reason: string): CachemonError {
  return new CachemonError(Errors.CONFIG_INVALID, `invalid node address ${JSON.stringify(address)}: ${reason}`, {
    details: { address },
  });
}
