/**
 * Names and data of the znodes an ARCUS deployment keeps in ZooKeeper (see the ARCUS protocol
 * notes): pure functions, no I/O.
 *
 *   <root>/cache_list/<svc>/<ip>:<port>-<hostname>            live registration (EPHEMERAL)
 *   /arcus_repl/cache_list/<svc>/<group>^M|S^<ip>:<port>-<hostname>
 *   <root>/cache_server_mapping/<ip>:<port>/<svc>[^<group>^<peer>...]   configured servers
 */
import { parseAddress } from '../protocol/address.js';

/** The two roots: plain clusters and replication clusters. */
export const ARCUS_ROOTS = ['/arcus', '/arcus_repl'] as const;
export type ArcusRoot = (typeof ARCUS_ROOTS)[number];

export type ReplicationRole = 'master' | 'slave';

export interface Registration {
  /** `ip:port` the server listens on. */
  readonly node: string;
  readonly hostname: string;
  readonly group?: string;
  readonly role?: ReplicationRole;
}

const ADDRESS_AND_HOST = /^([^\s^]+):(\d{1,5})-(.*)$/;

/** Parses a cache_list child name; undefined for a stray znode, which must not break the others. */
export function parseRegistration(name: string): Registration | undefined {
  let rest = name;
  let group: string | undefined;
  let role: ReplicationRole | undefined;
  const parts = name.split('^');
  if (parts.length === 3) {
    const [g, r, tail] = parts as [string, string, string];
    if (g === '' || (r !== 'M' && r !== 'S')) return undefined;
    group = g;
    role = r === 'M' ? 'master' : 'slave';
    rest = tail;
  } else if (parts.length !== 1) {
    return undefined;
  }
  const match = ADDRESS_AND_HOST.exec(rest);
  if (!match) return undefined;
  const node = `${match[1]}:${match[2]}`;
  // The address a connection can be made to (as the config's): an unbracketed IPv6 address or
  // a host with other characters is a stray name, not a node to collect.
  if (!isNodeAddress(node)) return undefined;
  const registration: Registration = { node, hostname: match[3] ?? '' };
  return group === undefined ? registration : { ...registration, group, role: role! };
}

/** A `cache_server_log/<date>` entry: `<registration name>-<sequence>` (`<ip>:<port>-<hostname>-0000000042`). */
const JOIN_LOG_ENTRY = /^(.*)-(\d+)$/;

/**
 * Adds to `found` the last join (highest sequence) in one `cache_server_log/<date>` folder of each
 * `wanted` node not found yet; folders come newest first.
 */
export function addLastJoins(
  found: Map<string, Registration>,
  entries: readonly string[],
  wanted: ReadonlySet<string>,
): void {
  const sequences = new Map<string, number>();
  for (const entry of entries) {
    const match = JOIN_LOG_ENTRY.exec(entry);
    const registration = match ? parseRegistration(match[1]!) : undefined;
    if (registration === undefined || !wanted.has(registration.node)) continue;
    const sequence = Number(match![2]);
    const best = sequences.get(registration.node);
    if (best === undefined ? found.has(registration.node) : sequence <= best) continue;
    sequences.set(registration.node, sequence);
    found.set(registration.node, registration);
  }
}

export interface MappingEntry {
  readonly serviceCode: string;
  readonly group?: string;
}

/** Parses the single child of a cache_server_mapping entry: `<svc>` or `<svc>^<group>^<peer>...`. */
export function parseMappingChild(name: string): MappingEntry | undefined {
  const fields = name.split('^');
  const serviceCode = fields[0] ?? '';
  if (serviceCode === '') return undefined;
  const group = fields[1];
  return group ? { serviceCode, group } : { serviceCode };
}

/** The node address of a mapping key: `<ip>:<port>`, `<hostname>:<port>`, or `<ip>` with the port in its data. */
export function mappingNodeAddress(key: string, data: string | undefined): string | undefined {
  const address = unplacedMappingAddress(key, data);
  return address !== undefined && isNodeAddress(address) ? address : undefined;
}

function isNodeAddress(address: string): boolean {
  try {
    parseAddress(address);
    return true;
  } catch {
    return false;
  }
}

function unplacedMappingAddress(key: string, data: string | undefined): string | undefined {
  if (/:\d{1,5}$/.test(key)) return key;
  if (data === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(data);
    const port = (parsed as { port?: unknown } | null)?.port;
    if ((typeof port === 'string' || typeof port === 'number') && /^\d{1,5}$/.test(String(port))) {
      return `${key}:${port}`;
    }
  } catch {
    // Unparseable mapping data: the entry cannot be placed; the caller reports it.
  }
  return undefined;
}
