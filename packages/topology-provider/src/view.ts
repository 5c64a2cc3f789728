/** The fleet served: an immutable snapshot rebuilt on change; requests never touch ZooKeeper. */
import type { CacheNode, Topology } from '@cachemon/arcus';

/**
 * current: the ensemble's session is up and the topology is what ZooKeeper holds now.
 * stale: the session is lost; the last topology read is served.
 * unavailable: no topology has been read yet (the ensemble was down from the start).
 */
export type TopologyStatus = 'current' | 'stale' | 'unavailable';

export interface CoordinationServer {
  /** `ip:port` (what the coordination exporter labels `zk_host`), or the configured `name:port` while it does not resolve. */
  readonly address: string;
  /** The configured name when the address was resolved from one. */
  readonly name?: string;
}

export interface EnsembleView {
  readonly name: string;
  readonly status: TopologyStatus;
  /** Date.now() of the last topology read (its last change); 0 before the first. */
  readonly updatedAt: number;
  /**
   * When ZooKeeper last confirmed the topology: a read, or the session up with its watches set
   * (nothing changed). While current that is now; once stale, when the lost connection was last
   * known to stand: the moment it closed, or the last reply of a server that stopped answering.
   * 0 before the first read.
   */
  readonly confirmedAt: number;
  readonly zkServers: readonly CoordinationServer[];
  /** Visible service codes, sorted. */
  readonly serviceCodes: readonly string[];
  /** Service code -> its nodes, sorted by address. */
  readonly nodesByServiceCode: ReadonlyMap<string, readonly CacheNode[]>;
  readonly nodeCount: number;
  readonly liveCount: number;
}

export type HostnameProblemKind = 'unresolved' | 'mismatch' | 'no_hostname';

export interface HostnameProblem {
  readonly ensemble: string;
  /** cache: a node's registered hostname; coordination: a server name from ensembleByName. */
  readonly kind: 'cache' | 'coordination';
  readonly hostname: string;
  /** The node (`ip:port`) or configured server (`name:port`). */
  readonly address: string;
  readonly problem: HostnameProblemKind;
  /** What the name resolved to ('' when it did not). */
  readonly resolved: readonly string[];
  /** Why it did not resolve. */
  readonly error?: string;
}

export interface FleetView {
  /** In config order. */
  readonly ensembles: readonly EnsembleView[];
  readonly byName: ReadonlyMap<string, EnsembleView>;
  readonly hostnameProblems: readonly HostnameProblem[];
}

export function emptyEnsembleView(name: string, zkServers: readonly CoordinationServer[] = []): EnsembleView {
  return {
    name,
    status: 'unavailable',
    updatedAt: 0,
    confirmedAt: 0,
    zkServers,
    serviceCodes: [],
    nodesByServiceCode: new Map(),
    nodeCount: 0,
    liveCount: 0,
  };
}

/** Orders addresses by their numbers (10.0.0.2 before 10.0.0.10), then as text. */
export function compareAddresses(a: string, b: string): number {
  return ADDRESS_COLLATOR.compare(a, b);
}
const ADDRESS_COLLATOR = new Intl.Collator('en', { numeric: true });

export function ensembleView(
  name: string,
  topology: Topology,
  state: { readonly connected: boolean; readonly synced: boolean; readonly updatedAt: number },
  zkServers: readonly CoordinationServer[],
  confirmedAt: number,
): EnsembleView {
  const nodesByServiceCode = new Map<string, CacheNode[]>();
  for (const svc of topology.serviceCodes) nodesByServiceCode.set(svc, []);
  let liveCount = 0;
  for (const node of topology.nodes) {
    let list = nodesByServiceCode.get(node.serviceCode);
    if (list === undefined) nodesByServiceCode.set(node.serviceCode, (list = []));
    list.push(node);
    if (node.live) liveCount++;
  }
  for (const list of nodesByServiceCode.values()) list.sort((a, b) => compareAddresses(a.node, b.node));
  const status: TopologyStatus = !state.synced ? 'unavailable' : state.connected ? 'current' : 'stale';
  return {
    name,
    status,
    updatedAt: state.updatedAt,
    confirmedAt,
    zkServers,
    serviceCodes: [...nodesByServiceCode.keys()].sort(),
    nodesByServiceCode,
    nodeCount: topology.nodes.length,
    liveCount,
  };
}

export function fleetView(ensembles: readonly EnsembleView[], hostnameProblems: readonly HostnameProblem[]): FleetView {
  return { ensembles, byName: new Map(ensembles.map((e) => [e.name, e])), hostnameProblems };
}
