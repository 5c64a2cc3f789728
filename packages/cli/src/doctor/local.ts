/** Listen addresses and scrape targets compared: whether a target is a listener of this machine. */
import { hostname, networkInterfaces } from 'node:os';
import { portOf } from '../tree.js';

export const hostOf = (address: string) => address.slice(0, address.lastIndexOf(':')).replace(/^\[|\]$/g, '');
export const wildcard = (host: string) => host === '' || host === '0.0.0.0' || host === '::';
const loopback = (host: string) => host === 'localhost' || host.startsWith('127.') || host === '::1';

/** Whether a scrape target is the listener configured as `listen` on this machine. */
export function ownAddress(target: string, listen: string): boolean {
  if (portOf(target) === undefined || portOf(target) !== portOf(listen)) return false;
  const host = hostOf(target);
  const at = hostOf(listen);
  if (host === at) return true;
  if (wildcard(at)) {
    const local = Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((a) => a.address));
    return loopback(host) || host === hostname() || local.includes(host);
  }
  return loopback(at) && loopback(host);
}
