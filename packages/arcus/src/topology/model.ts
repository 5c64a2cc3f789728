import { isIP } from 'node:net';
import type { ArcusRoot, Registration, ReplicationRole } from './znodes.js';
import { mappingNodeAddress, parseMappingChild, parseRegistration } from './znodes.js';
import { splitHostPort } from './resolve.js';

/** One cache server as discovery sees it. */
export interface CacheNode {
  readonly serviceCode: string;
  /** `ip:port`. */
  readonly node: string;
  /** Hostname the server registered; the last one seen while it is down; '' if never seen. */
  readonly hostname: string;
  /** Has a live (ephemeral) registration in cache_list. */
  readonly live: boolean;
  /** Listed in cache_server_mapping. */
  readonly mapped: boolean;
  /** Replication cluster (`/arcus_repl`) membership. */
  readonly group?: string;
  /** Its role as registered; while it is down, the role it last registered with (if seen). */
  readonly role?: ReplicationRole;
}

export interface Topology {
  /** Service codes in the ensemble (after filtering), sorted. */
  readonly serviceCodes: readonly string[];
  /** Nodes sorted by service code then node. */
  readonly nodes: readonly CacheNode[];
  /** Znodes that could not be understood, for a log line and a metric. */
  readonly problems: readonly string[];
}

/** What the watcher has read from one root. */
export interface RootSnapshot {
  /** cache_list/<svc> -> its children (registration names). */
  readonly cacheList: ReadonlyMap<string, readonly string[]>;
  /** cache_server_mapping/<key> -> its children and data. */
  readonly mapping: ReadonlyMap<string, { readonly children: readonly string[]; readonly data?: string }>;
}

export const EMPTY_TOPOLOGY: Topology = { serviceCodes: [], nodes: [], problems: [] };

/** Builds the topology from raw znode names (pure). */
export function buildTopology(
  snapshots: ReadonlyMap<ArcusRoot, RootSnapshot>,
  options: {
    serviceCodes?: ReadonlySet<string>;
    /** The registration each node (`ip:port`) last had: the hostname and role of those now down. */
    lastRegistrations?: ReadonlyMap<string, Registration>;
  } = {},
): Topology {
  const wanted = (svc: string) => options.serviceCodes === undefined || options.serviceCodes.has(svc);
  const nodes = new Map<string, CacheNode>();
  const serviceCodes = new Set<string>();
  const problems: string[] = [];

  for (const [root, snapshot] of snapshots) {
    for (const [svc, children] of snapshot.cacheList) {
      if (!wanted(svc)) continue;
      serviceCodes.add(svc);
      for (const child of children) {
        const registration = parseRegistration(child);
        if (!registration) {
          problems.push(`${root}/cache_list/${svc}/${child}: not <ip>:<port>-<hostname>`);
          continue;
        }
        const key = `${svc}\u0000${registration.node}`;
        const node: CacheNode = {
          serviceCode: svc,
          node: registration.node,
          hostname: registration.hostname,
          live: true,
          mapped: false,
          ...(registration.group === undefined ? {} : { group: registration.group, role: registration.role! }),
        };
        nodes.set(key, node);
      }
    }
  }

  for (const [root, snapshot] of snapshots) {
    for (const [key, entry] of snapshot.mapping) {
      const child = entry.children[0];
      if (entry.children.length !== 1 || child === undefined) {
        // A server being configured may briefly have no child; more than one is a broken mapping.
        if (entry.children.length > 1) {
          problems.push(`${root}/cache_server_mapping/${key}: ${entry.children.length} children, expected one`);
        }
        continue;
      }
      const mapping = parseMappingChild(child);
      if (!mapping) {
        problems.push(`${root}/cache_server_mapping/${key}/${child}: no service code`);
        continue;
      }
      if (!wanted(mapping.serviceCode)) continue;
      const address = mappingNodeAddress(key, entry.data);
      if (address === undefined) {
        problems.push(`${root}/cache_server_mapping/${key}: not <host>:<port>, nor a host with its port in the data`);
        continue;
      }
      serviceCodes.add(mapping.serviceCode);
      const id = `${mapping.serviceCode}\u0000${address}`;
      const live = nodes.get(id) ?? findByHostnamePort(nodes, mapping.serviceCode, address);
      if (live) {
        nodes.set(`${live.serviceCode}\u0000${live.node}`, { ...live, mapped: true });
        continue;
      }
      const last = lastRegistrationOf(options.lastRegistrations, address);
      // A down node mapped by hostname:port keeps the ip:port it was registered with, so its
      // series (node="<ip>:<port>") go on across the outage instead of starting anew.
      const node = last?.node ?? address;
      const downId = `${mapping.serviceCode}\u0000${node}`;
      const registered = nodes.get(downId);
      if (registered) {
        // That ip:port is live under another hostname now: the same server.
        nodes.set(downId, { ...registered, mapped: true });
        continue;
      }
      nodes.set(downId, {
        serviceCode: mapping.serviceCode,
        node,
        hostname: last?.hostname ?? mappedHostname(address),
        live: false,
        mapped: true,
        ...(mapping.group === undefined
          ? {}
          : last?.role === undefined
            ? { group: mapping.group }
            : { group: mapping.group, role: last.role }),
      });
    }
  }

  const sorted = [...nodes.values()].sort((a, b) => compare(a.serviceCode, b.serviceCode) || compare(a.node, b.node));
  return { serviceCodes: [...serviceCodes].sort(compare), nodes: sorted, problems };
}

/** The hostname a mapping keyed `<hostname>:<port>` names ('' for one keyed by address). */
function mappedHostname(address: string): string {
  const host = splitHostPort(address)?.host;
  return host === undefined || isIP(host) !== 0 ? '' : host;
}

/** The registration a mapped node last had, by address or by `<hostname>:<port>`. */
function lastRegistrationOf(
  last: ReadonlyMap<string, Registration> | undefined,
  address: string,
): Registration | undefined {
  if (last === undefined) return undefined;
  const found = last.get(address);
  if (found !== undefined || mappedHostname(address) === '') return found;
  for (const registration of last.values()) if (hostnamePort(registration) === address) return registration;
  return undefined;
}

/** A mapping keyed `<hostname>:<port>` matches a live node registered with that hostname. */
function findByHostnamePort(
  nodes: ReadonlyMap<string, CacheNode>,
  svc: string,
  address: string,
): CacheNode | undefined {
  for (const node of nodes.values()) {
    if (node.serviceCode === svc && node.live && hostnamePort(node) === address) return node;
  }
  return undefined;
}

/** `<hostname>:<port>` of a registered node: what a mapping keyed by hostname names it by. */
function hostnamePort(registered: { readonly node: string; readonly hostname: string }): string {
  return `${registered.hostname}:${registered.node.slice(registered.node.lastIndexOf(':') + 1)}`;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Stable identity of a node across topology versions. */
export function nodeKey(node: Pick<CacheNode, 'serviceCode' | 'node'>): string {
  return `${node.serviceCode}\u0000${node.node}`;
}
