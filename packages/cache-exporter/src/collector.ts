import { CachemonError, Errors, errorMessage, isCachemonError } from '@cachemon/core';
import type { CacheNode } from '@cachemon/arcus';
import { ArcusNodeClient, isTooManyPrefixes } from '@cachemon/arcus';
import type { PrefixSelection } from './config.js';
import type { NodeSnapshot, RenderedSlabs, RenderedStats, StatsEntries } from './metrics/render.js';
import type { PrefixSums } from './metrics/prefixes.js';

export interface CollectorLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface CollectorOptions {
  readonly logger: CollectorLogger;
  /** How often `stats settings` and `stats zookeeper` are read again (they rarely change). */
  readonly auxRefreshMs?: number;
}

interface NodeState {
  /** stats, stats settings, stats zookeeper (/metrics). */
  readonly client: ArcusNodeClient;
  /** Prefix statistics, on a connection of their own: a slow or failed one neither delays `stats` nor reports the node down. */
  prefixClient: ArcusNodeClient | undefined;
  settings?: StatsEntries;
  zookeeper?: StatsEntries;
  /** When `stats settings` and `stats zookeeper` are read again (Date.now() ms; 0: next scrape). */
  auxDueAt: number;
  /** Reason of the last failure, to log state changes once instead of every scrape. */
  lastReason: string | undefined;
  /** The node answered `stats prefixes` with "too many prefixes" last time. */
  prefixLimited: boolean;
}

/** Nodes asked for prefix statistics at the same time (see collectPrefixes). */
export const PREFIX_NODES_AT_ONCE = 32;

/** Why a node is down, as the `reason` label says it. */
export function reasonOf(err: unknown): string {
  if (isCachemonError(err)) {
    switch (err.code) {
      case Errors.NODE_TIMEOUT.code:
        return 'timeout';
      case Errors.NODE_UNREACHABLE.code:
        return 'unreachable';
      case Errors.NODE_PROTOCOL.code:
        return 'protocol';
      case Errors.NODE_ERROR_REPLY.code:
        return 'error_reply';
      case Errors.NODE_CLOSED.code:
        return 'closed';
      default:
        break;
    }
  }
  return 'error';
}

/**
 * Talks to the cache nodes: one reused connection per node for stats, one for prefix statistics
 * (QoS probes have their own too, so nothing queues behind a reply of another kind). Every call takes an
 * absolute deadline; a node that misses it costs only its own `arcus_up 0`.
 */
export class CacheCollector {
  private readonly nodes = new Map<string, NodeState>();
  private readonly auxRefreshMs: number;
  /** Prefix names seen per service code: the fallback list when a node has too many prefixes. */
  private readonly knownPrefixes = new Map<string, Set<string>>();

  /** The live nodes of the last topology (retain); undefined before the first. */
  private retained: ReadonlySet<string> | undefined;

  constructor(private readonly options: CollectorOptions) {
    this.auxRefreshMs = options.auxRefreshMs ?? 30_000;
  }

  /** Closes the connections of nodes that left the topology. */
  retain(nodes: readonly CacheNode[]): void {
    const keep = new Set(nodes.filter((n) => n.live).map((n) => n.node));
    this.retained = keep;
    for (const [address, state] of this.nodes) {
      if (!keep.has(address)) {
        state.client.close();
        state.prefixClient?.close();
        this.nodes.delete(address);
      }
    }
  }

  close(): void {
    for (const state of this.nodes.values()) {
      state.client.close();
      state.prefixClient?.close();
    }
    this.nodes.clear();
  }

  private state(address: string): NodeState {
    let state = this.nodes.get(address);
    if (!state) {
      state = {
        client: new ArcusNodeClient(address, NODE_CLIENT_OPTIONS),
        prefixClient: undefined,
        auxDueAt: 0,
        lastReason: undefined,
        prefixLimited: false,
      };
      this.nodes.set(address, state);
    }
    return state;
  }

  /**
   * `stats` of every live node, concurrently, bounded by the deadline. Each reply is handed to
   * `accept` (as bytes, valid only during the call) when it arrives; a reply `accept` rejects (it
   * throws: garbage, an error line) makes that node down. With `acceptSlabs`, `stats slabs` is
   * asked too and handed to it the same way; a node whose slabs reply fails or comes late is
   * still up, without slab series in this scrape.
   */
  async collectStats(
    nodes: readonly CacheNode[],
    deadline: CollectionDeadline,
    accept: (node: CacheNode, reply: Buffer) => RenderedStats,
    acceptSlabs?: (node: CacheNode, reply: Buffer) => RenderedSlabs,
  ): Promise<NodeSnapshot[]> {
    try {
      return await Promise.all(nodes.map((node) => this.collectNode(node, deadline, accept, acceptSlabs)));
    } finally {
      deadline.cancel();
    }
  }

  /**
   * One node's `stats`, `stats slabs` and, when due, `stats settings` and `stats zookeeper`. A
   * node that answered `stats` is up whatever becomes of the others: when the collection ends
   * before they come (a scrape with an earlier deadline joined it), it is reported with the
   * settings it had.
   */
  private async collectNode(
    node: CacheNode,
    deadline: CollectionDeadline,
    accept: (node: CacheNode, reply: Buffer) => RenderedStats,
    acceptSlabs: ((node: CacheNode, reply: Buffer) => RenderedSlabs) | undefined,
  ): Promise<NodeSnapshot> {
    if (!node.live) return { node, up: false, reason: 'not_registered' };
    const state = this.state(node.node);
    if (Date.now() < state.client.retryAt && state.client.lastError) {
      // Failed moments ago: report that failure again without contacting the node.
      return { node, up: false, reason: reasonOf(state.client.lastError) };
    }
    const started = performance.now();
    const reply = new Promise<RenderedStats>((resolve, reject) => {
      state.client.statsBytes(deadline.at, (err, bytes) => {
        if (err !== undefined) {
          reject(err);
        } else if (!deadline.over) {
          // (Once the collection has ended, what comes is no scrape's: not rendered.)
          try {
            resolve(accept(node, bytes!));
          } catch (thrown) {
            reject(thrown);
          }
        }
      });
    });
    // Pipelined on the one connection: slabs and the aux replies follow the stats reply in the same flight.
    const slabs = acceptSlabs === undefined ? undefined : readSlabs(state, node, deadline, acceptSlabs);
    const aux =
      Date.now() >= state.auxDueAt
        ? Promise.allSettled([state.client.statsSettings(deadline.at), state.client.statsZookeeper(deadline.at)])
        : undefined;
    let stats: RenderedStats;
    try {
      const first = await Promise.race([reply, deadline.expired]);
      // The deadline was brought forward, or, as a safety net, a connection's own timer did not fire at it.
      if (first === 'expired')
        throw new CachemonError(Errors.NODE_TIMEOUT, `${node.node}: no stats reply by the deadline`);
      stats = first;
    } catch (err) {
      return this.failed(node, err, started);
    }
    const durationSeconds = (performance.now() - started) / 1000;
    const slabLines = slabs === undefined ? undefined : await Promise.race([slabs, deadline.expired]);
    // The settings are kept whenever they come, also after the collection has ended.
    if (aux !== undefined) await Promise.race([aux.then((results) => this.keepAux(state, results)), deadline.expired]);
    return this.answered(node, state, durationSeconds, stats, slabLines === 'expired' ? undefined : slabLines);
  }

  /** What `stats settings` and `stats zookeeper` gave, into the state of a node that answered `stats`. */
  private keepAux(
    state: NodeState,
    [settings, zookeeper]: [PromiseSettledResult<StatsEntries>, PromiseSettledResult<StatsEntries>],
  ): void {
    // Later reads are spread over the interval, so no scrape re-reads every node; one cut short is retried next scrape.
    const cutShort = [settings, zookeeper].some((r) => r.status === 'rejected' && isTransient(r.reason));
    state.auxDueAt = cutShort ? 0 : Date.now() + this.auxRefreshMs * (state.settings === undefined ? Math.random() : 1);
    state.settings = auxEntries(settings, state.settings);
    state.zookeeper = auxEntries(zookeeper, state.zookeeper);
  }

  /** A node's snapshot once it has answered. */
  private answered(
    node: CacheNode,
    state: NodeState,
    durationSeconds: number,
    stats: RenderedStats,
    slabs: RenderedSlabs | undefined,
  ): NodeSnapshot {
    if (state.lastReason !== undefined) {
      this.options.logger.info(
        { node: node.node, serviceCode: node.serviceCode, was: state.lastReason },
        'cache node answers again',
      );
      state.lastReason = undefined;
    }
    return {
      node,
      up: true,
      durationSeconds,
      stats,
      settings: state.settings,
      zookeeper: state.zookeeper,
      ...(slabs === undefined ? {} : { slabs }),
    };
  }

  /** A node's snapshot when it failed (`started`: when it was asked, for its scrape duration). */
  private failed(node: CacheNode, err: unknown, started: number): NodeSnapshot {
    const state = this.nodes.get(node.node);
    const reason = reasonOf(err);
    if (state !== undefined) {
      if (state.lastReason !== reason) {
        this.options.logger.warn(
          { node: node.node, serviceCode: node.serviceCode, reason, error: errorMessage(err) },
          'cache node is down',
        );
        state.lastReason = reason;
      }
      // Settings are re-read once the node answers again: it may have been restarted differently.
      state.auxDueAt = 0;
    }
    return { node, up: false, reason, durationSeconds: (performance.now() - started) / 1000 };
  }

  /**
   * Prefix statistics of every live node whose service code collects them, each added into `sums`
   * as it answers. At most PREFIX_NODES_AT_ONCE at a time, so their large replies are not all held at once.
   */
  async collectPrefixes(
    nodes: readonly CacheNode[],
    selectionFor: (serviceCode: string) => PrefixSelection,
    collection: CollectionDeadline,
    sums: PrefixSums,
  ): Promise<void> {
    const deadline = collection.at;
    const selections = new Map<string, PrefixSelection>();
    const work: Array<{ node: CacheNode; selection: PrefixSelection }> = [];
    for (const node of nodes) {
      let selection = selections.get(node.serviceCode);
      if (!selection) {
        selection = selectionFor(node.serviceCode);
        selections.set(node.serviceCode, selection);
        sums.serviceCode(node.serviceCode, selection.kind !== 'none');
      }
      if (node.live && selection.kind !== 'none') work.push({ node, selection });
    }
    let next = 0;
    const done = new Uint8Array(work.length);
    const worker = async (): Promise<void> => {
      while (!sums.closed && next < work.length) {
        const index = next++;
        const { node, selection } = work[index]!;
        await this.collectNodePrefixes(node, selection, deadline, sums);
        done[index] = 1;
      }
    };
    const all = Promise.all(Array.from({ length: Math.min(PREFIX_NODES_AT_ONCE, work.length) }, worker));
    const ended = await Promise.race([all, collection.expired]).finally(() => collection.cancel());
    if (ended === 'expired') {
      // The deadline was brought forward: nodes not in by now are failed, and what they send later
      // is dropped (the sums are rendered at once).
      work.forEach(({ node }, index) => done[index] === 0 && sums.failed(node.serviceCode));
      sums.close();
      all.catch(() => undefined);
    }
    for (const [serviceCode, selection] of selections) {
      if (selection.kind === 'all') this.remember(serviceCode, sums.prefixesOf(serviceCode));
    }
  }

  private async collectNodePrefixes(
    node: CacheNode,
    selection: PrefixSelection,
    deadline: number,
    sums: PrefixSums,
  ): Promise<void> {
    // A node that left the topology while the scrape's earlier nodes were read: not reconnected to.
    if (this.retained !== undefined && !this.retained.has(node.node)) return;
    const state = this.state(node.node);
    try {
      await this.readNodePrefixes(node, state, selection, deadline, sums);
    } catch (err) {
      // Nothing one node does (or a name it taught us that cannot be sent back) fails the others.
      this.options.logger.warn(
        { node: node.node, serviceCode: node.serviceCode, error: errorMessage(err) },
        'prefix statistics not collected',
      );
      sums.failed(node.serviceCode);
    } finally {
      // The replies are summed: their buffer (tens of KB) serves the next node's at once.
      state.prefixClient?.release();
    }
  }

  private async readNodePrefixes(
    node: CacheNode,
    state: NodeState,
    selection: PrefixSelection,
    deadline: number,
    sums: PrefixSums,
  ): Promise<void> {
    const [items, operations] = await readPrefixes(
      state,
      node,
      deadline,
      selection.kind === 'named' ? selection.names : undefined,
    );
    const tooMany = [items, operations].some((r) => r.status === 'rejected' && isTooManyPrefixes(r.reason));
    if (tooMany && selection.kind === 'all') return this.limitedFallback(node, state, deadline, sums);
    if (state.prefixLimited) state.prefixLimited = false;

    const failed = [items, operations].find(
      (r): r is PromiseRejectedResult => r.status === 'rejected' && !isUnsupported(r.reason),
    );
    if (failed) {
      this.options.logger.debug({ node: node.node, error: errorMessage(failed.reason) }, 'prefix statistics failed');
      sums.failed(node.serviceCode);
      return;
    }
    this.addPrefixReplies(sums, node, 'ok', items, operations);
  }

  /**
   * A node holding more prefixes than its max_stats_prefixes refuses `stats prefixes` and
   * `stats detail dump`. Ask for the prefixes the service code is known to have by name instead,
   * and say so (state `limited`, one warning per node).
   */
  private async limitedFallback(node: CacheNode, state: NodeState, deadline: number, sums: PrefixSums): Promise<void> {
    if (!state.prefixLimited) {
      this.options.logger.warn(
        { node: node.node, serviceCode: node.serviceCode },
        'node has more prefixes than its max_stats_prefixes; reading known prefixes by name. ' +
          'Raise max_stats_prefixes on the server or list the prefixes in serviceCodesToCollectPrefixes',
      );
      state.prefixLimited = true;
    }
    const known = [...(this.knownPrefixes.get(node.serviceCode) ?? [])];
    if (known.length === 0) {
      sums.addNode(node.serviceCode, node.node, 'limited', [], []);
      return;
    }
    const [items, operations] = await readPrefixes(state, node, deadline, known);
    this.addPrefixReplies(sums, node, 'limited', items, operations);
  }

  /** A reply that is not prefix statistics makes the node failed; nothing of it is summed. */
  private addPrefixReplies(
    sums: PrefixSums,
    node: CacheNode,
    state: 'ok' | 'limited',
    items: PromiseSettledResult<Buffer[]>,
    operations: PromiseSettledResult<Buffer[]>,
  ): void {
    try {
      sums.addNode(
        node.serviceCode,
        node.node,
        state,
        items.status === 'fulfilled' ? items.value : [],
        operations.status === 'fulfilled' ? operations.value : [],
      );
    } catch (err) {
      this.options.logger.debug({ node: node.node, error: errorMessage(err) }, 'prefix statistics not readable');
      sums.failed(node.serviceCode);
    }
  }

  private remember(serviceCode: string, prefixes: readonly string[]): void {
    let known = this.knownPrefixes.get(serviceCode);
    if (!known) this.knownPrefixes.set(serviceCode, (known = new Set()));
    for (const prefix of prefixes) known.add(prefix);
  }
}

/**
 * Backoff capped at about one scrape interval: a dead node is not hammered every scrape, and a
 * recovered one is seen again within seconds.
 */
const NODE_CLIENT_OPTIONS = { backoff: { minMs: 500, maxMs: 5000 } };
const PREFIX_CLIENT_OPTIONS = { ...NODE_CLIENT_OPTIONS, keepBuffer: false };

/** A node's `stats prefixes` and `stats detail dump` (or their prefixlist forms for `names`). */
function readPrefixes(state: NodeState, node: CacheNode, deadline: number, names: readonly string[] | undefined) {
  // Asked once a minute, 32 nodes at a time: its replies' buffer goes back to the shared pool after each.
  const client = (state.prefixClient ??= new ArcusNodeClient(node.node, PREFIX_CLIENT_OPTIONS));
  return Promise.allSettled([client.prefixItemsBytes(deadline, names), client.prefixOperationsBytes(deadline, names)]);
}

/**
 * A node's `stats slabs`, rendered by `accept` from the reply's bytes as it arrives; undefined when
 * it fails (an ERROR from a server without it, a timeout) or comes after the collection ended.
 */
function readSlabs(
  state: NodeState,
  node: CacheNode,
  deadline: CollectionDeadline,
  accept: (node: CacheNode, reply: Buffer) => RenderedSlabs,
): Promise<RenderedSlabs | undefined> {
  return new Promise((resolve) => {
    state.client.connection.send('stats slabs', { deadline: deadline.at, reply: 'multi' }, (err, bytes) => {
      if (err !== undefined || deadline.over) return resolve(undefined);
      try {
        resolve(accept(node, bytes!));
      } catch {
        resolve(undefined);
      }
    });
  });
}

/**
 * What a node's settings (or ZooKeeper status) are after a read: the reply; none when the server
 * lacks the command (an ERROR reply: plain memcached has no `stats zookeeper`); the ones it had when
 * the read failed otherwise.
 */
function auxEntries(result: PromiseSettledResult<StatsEntries>, previous: StatsEntries | undefined): StatsEntries {
  if (result.status === 'fulfilled') return result.value;
  return isUnsupported(result.reason) ? [] : (previous ?? []);
}

/** Reasons (reasonOf) of a request cut short rather than answered: it may well succeed when asked again. */
const TRANSIENT_REASONS = new Set(['timeout', 'unreachable', 'closed']);

function isTransient(err: unknown): boolean {
  return TRANSIENT_REASONS.has(reasonOf(err));
}

/** An `ERROR` reply: the server lacks the command (plain memcached has no `stats prefixes` or `stats zookeeper`), not a failure. */
function isUnsupported(err: unknown): boolean {
  if (!isCachemonError(err, Errors.NODE_ERROR_REPLY)) return false;
  const reply = err.details?.['reply'];
  return typeof reply === 'string' && /^ERROR\b/.test(reply.trim());
}

/**
 * The deadline of one collection: requests are sent with `at`; `expired` resolves a little after it
 * as a safety net. A joining scrape with an earlier deadline brings it forward (bringForward), and
 * the collection ends with what has arrived by then.
 */
export class CollectionDeadline {
  /** The deadline the requests were sent with. */
  readonly at: number;
  readonly expired: Promise<'expired'>;
  #end: number;
  #timer: NodeJS.Timeout | undefined;
  #resolve!: (value: 'expired') => void;
  #ended = false;

  constructor(at: number) {
    this.at = at;
    this.#end = at;
    this.expired = new Promise<'expired'>((resolve) => (this.#resolve = resolve));
    this.#arm(Math.max(0, at - Date.now()) + SAFETY_NET_MS);
  }

  /** Ends the collection at `at` if that is earlier than its end. */
  bringForward(at: number): void {
    if (this.#ended || at >= this.#end) return;
    this.#end = at;
    this.#arm(Math.max(0, at - Date.now()));
  }

  /** The collection is over: no timer is left behind. */
  cancel(): void {
    this.#ended = true;
    clearTimeout(this.#timer);
  }

  /** True once the deadline has expired or the collection is over (cancel). */
  get over(): boolean {
    return this.#ended;
  }

  #arm(ms: number): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#ended = true;
      this.#resolve('expired');
    }, ms);
    this.#timer.unref();
  }
}

/** How long after a collection's deadline its safety net fires (the connections' timers fire at it). */
const SAFETY_NET_MS = 50;
