import { EventEmitter } from 'node:events';
import zookeeper from 'node-zookeeper-client';
import type { ArcusRoot, Registration } from './znodes.js';
import { ARCUS_ROOTS, addLastJoins, parseRegistration } from './znodes.js';
import type { RootSnapshot, Topology } from './model.js';
import { EMPTY_TOPOLOGY, buildTopology } from './model.js';
import type { Resolver } from './resolve.js';
import { expandServers, systemResolver } from './resolve.js';
import { createStoppableClient, shutdownClient } from './zk-client.js';

export interface WatcherLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface TopologyWatcherOptions {
  /** `host:port` of the ensemble's servers; names are resolved to all their addresses. */
  readonly servers: readonly string[];
  /** Service codes to watch; undefined = all. */
  readonly serviceCodes?: readonly string[] | undefined;
  readonly sessionTimeoutMs?: number;
  /** Coalesces bursts of znode events (a cluster restarting) into one topology update. */
  readonly debounceMs?: number;
  readonly logger?: WatcherLogger;
  readonly resolver?: Resolver;
  /** The clock of updatedAt and aliveUntil (default Date.now). */
  readonly now?: () => number;
}

export interface WatcherState {
  /**
   * Has a ZooKeeper session right now. A server that stops answering (hung, its TCP connection
   * open) is dropped when a ping goes unanswered for a third of the session timeout: this turns
   * false at most two thirds of the negotiated session timeout after the server last said anything.
   */
  readonly connected: boolean;
  /** The first full read of the ensemble finished. */
  readonly synced: boolean;
  /** When the topology was last read (options.now); 0 before the first. */
  readonly updatedAt: number;
  /**
   * While not connected: when the lost connection was last known to stand (options.now). That is
   * the moment it closed, or, when a request was waiting for an answer then (a server that stopped
   * answering, or was dropped for it), the server's last reply. 0 until a connection is lost.
   */
  readonly aliveUntil: number;
  /** Sessions that expired or were given up, and were re-created. */
  readonly sessionExpirations: number;
  /** The addresses the client connects to. */
  readonly addresses: readonly string[];
}

interface MutableRoot {
  cacheList: Map<string, readonly string[]>;
  mapping: Map<string, { children: readonly string[]; data?: string }>;
}

type ZkClient = zookeeper.Client;

const NO_NODE = zookeeper.Exception.NO_NODE;

/** The newest `cache_server_log/<date>` folders read to find a never-seen down node's hostname. */
const JOIN_LOG_DAYS = 31;
/**
 * Watches the ARCUS znodes of one ensemble and keeps the cache topology in memory. Each
 * (re)connection starts a new scan generation whose callbacks alone re-arm watches, so a reconnect
 * never leaves two loops on one path. A lost session keeps the last topology; one expired or not
 * back within the session timeout is replaced by a new client (names resolved again).
 *
 * Events: 'topology' (Topology), 'state' (WatcherState).
 */
export class TopologyWatcher extends EventEmitter {
  private readonly options: TopologyWatcherOptions;
  private client: ZkClient | undefined;
  private generation = 0;
  private closed = false;
  private roots = new Map<ArcusRoot, MutableRoot>();
  private pendingReads = 0;
  /** The current generation's first full read finished; until then nothing is published. */
  private scanSettled = false;
  /** A read of the first full read failed: what it read is incomplete and never published. */
  private scanFailed = false;
  private debounceTimer: NodeJS.Timeout | undefined;
  /** Replaces the client when it has not (re)connected within the session timeout. */
  private reconnectTimer: NodeJS.Timeout | undefined;
  /** The names that did not resolve at the last connect, as logged ('' when all did). */
  private unresolvedLogged = '';
  private topologyValue: Topology = EMPTY_TOPOLOGY;
  private serviceCodeFilter: ReadonlySet<string> | undefined;
  /** The registration each node last had (buildTopology: a down node keeps its hostname and role). */
  private readonly lastRegistrations = new Map<string, Registration>();
  /** Down nodes never seen registered whose last join was looked up in cache_server_log (once each). */
  private readonly joinLogSearched = new Set<string>();
  /** A join log lookup is running. */
  private joinLogReading = false;
  private stateValue: WatcherState = {
    connected: false,
    synced: false,
    updatedAt: 0,
    aliveUntil: 0,
    sessionExpirations: 0,
    addresses: [],
  };
  private syncedWaiters: Array<{ done: () => void; fail: (err: Error) => void }> = [];
  /** The current read of each watched path (`children <path>`, `exists <path>`), for watchOf. */
  private readonly rereads = new Map<string, () => void>();
  /** One watch function per watched path (watchOf). */
  private readonly watches = new Map<string, () => void>();
  private requests = 0;
  private readonly now: () => number;

  constructor(options: TopologyWatcherOptions) {
    super();
    this.options = options;
    this.now = options.now ?? Date.now;
    this.serviceCodeFilter = options.serviceCodes ? new Set(options.serviceCodes) : undefined;
  }

  get topology(): Topology {
    return this.topologyValue;
  }

  get state(): WatcherState {
    return this.stateValue;
  }

  /** Reads sent to ZooKeeper so far (children, data, exists): what watching costs the ensemble. */
  get zookeeperRequests(): number {
    return this.requests;
  }

  /** Starts connecting; returns at once. Use synced() to wait for the first full read. */
  start(): void {
    void this.connect();
  }

  /** Resolves after the first full read of the ensemble, or rejects after timeoutMs. */
  synced(timeoutMs = 30_000): Promise<void> {
    if (this.stateValue.synced) return Promise.resolve();
    if (this.closed) return Promise.reject(new Error('topology watcher closed'));
    return new Promise((resolve, reject) => {
      const waiter = {
        done: () => {
          clearTimeout(timer);
          resolve();
        },
        fail: (err: Error) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      const timer = setTimeout(() => {
        this.syncedWaiters = this.syncedWaiters.filter((w) => w !== waiter);
        reject(new Error(`no topology from ZooKeeper ${this.options.servers.join(',')} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.syncedWaiters.push(waiter);
    });
  }

  /** Changes the service code filter (config reload) and rescans without a new session. */
  setServiceCodes(serviceCodes: readonly string[] | undefined): void {
    this.serviceCodeFilter = serviceCodes ? new Set(serviceCodes) : undefined;
    if (this.client && this.stateValue.connected) this.scan(this.client);
  }

  close(): void {
    this.closed = true;
    this.generation++;
    if (this.debounceTimer) clearTimeout(this.debounceTimer);
    clearTimeout(this.reconnectTimer);
    if (this.client) shutdownClient(this.client);
    this.client = undefined;
    for (const waiter of this.syncedWaiters.splice(0)) waiter.fail(new Error('topology watcher closed'));
  }

  private setState(patch: Partial<WatcherState>): void {
    this.stateValue = { ...this.stateValue, ...patch };
    this.emit('state', this.stateValue);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const { addresses, unresolved } = await expandServers(
      this.options.servers,
      this.options.resolver ?? systemResolver,
    );
    // Names are resolved again for every new client: the same failure is warned about once.
    const unresolvedKey = unresolved.join(',');
    if (unresolved.length > 0) {
      const level = unresolvedKey === this.unresolvedLogged ? 'debug' : 'warn';
      this.options.logger?.[level]({ servers: unresolved }, 'ZooKeeper server names did not resolve');
    }
    this.unresolvedLogged = unresolvedKey;
    if (this.closed) return;
    this.setState({ addresses });
    const { client, replies } = createStoppableClient(
      addresses.join(','),
      { sessionTimeout: this.options.sessionTimeoutMs ?? 15_000, spinDelay: 1000, retries: 0 },
      { now: this.now, onSilent: (silent, fields) => this.serverSilent(silent, fields) },
    );
    this.client = client;
    // Giving up on a client that had a session ends that session.
    let hadSession = false;
    client.on('state', (state: zookeeper.State) => {
      if (this.client !== client || this.closed) return;
      if (state === zookeeper.State.SYNC_CONNECTED || state === zookeeper.State.CONNECTED_READ_ONLY) {
        clearTimeout(this.reconnectTimer);
        hadSession = true;
        this.options.logger?.info({ addresses }, 'ZooKeeper session connected');
        this.setState({ connected: true });
        this.scan(client);
      } else if (state === zookeeper.State.DISCONNECTED) {
        this.options.logger?.warn({ addresses }, 'ZooKeeper connection lost; keeping the last topology');
        this.setState({ connected: false, aliveUntil: replies.aliveUntil });
        this.replaceUnlessReconnected(client, hadSession);
      } else if (state === zookeeper.State.EXPIRED) {
        this.options.logger?.warn({ addresses }, 'ZooKeeper session expired; reconnecting with a new session');
        this.setState({ connected: false, sessionExpirations: this.stateValue.sessionExpirations + 1 });
        this.replaceClient(client);
      }
    });
    this.replaceUnlessReconnected(client, false);
    client.connect();
  }

  private serverSilent(client: ZkClient, fields: { silentMs: number; connected: boolean }): void {
    if (this.client !== client || this.closed) return;
    const details = { addresses: this.stateValue.addresses, ...fields };
    if (fields.connected)
      this.options.logger?.warn(details, 'ZooKeeper server stopped answering; dropping the connection');
    else this.options.logger?.debug(details, 'ZooKeeper server did not answer the connect request; trying again');
  }

  /**
   * Gives `client` one session timeout to connect, then replaces it. Giving up on a session is
   * warned about and counted as an expiration; a client that never had one is replaced quietly.
   */
  private replaceUnlessReconnected(client: ZkClient, hadSession: boolean): void {
    clearTimeout(this.reconnectTimer);
    const timeoutMs = client.getSessionTimeout();
    this.reconnectTimer = setTimeout(() => {
      if (this.client !== client || this.closed || this.stateValue.connected) return;
      const fields = { addresses: this.stateValue.addresses, servers: this.options.servers, timeoutMs };
      if (hadSession) {
        this.options.logger?.warn(
          fields,
          'ZooKeeper session not back within its timeout; giving it up for a new session (names resolved again)',
        );
        this.setState({ sessionExpirations: this.stateValue.sessionExpirations + 1 });
      } else {
        this.options.logger?.debug(fields, 'ZooKeeper still unreachable; a new client (names resolved again)');
      }
      this.replaceClient(client);
    }, timeoutMs);
    this.reconnectTimer.unref();
  }

  /** Shuts `client` down and connects a new one (new session, names resolved again). */
  private replaceClient(client: ZkClient): void {
    clearTimeout(this.reconnectTimer);
    shutdownClient(client);
    this.client = undefined;
    void this.connect();
  }

  /** Starts a fresh generation of watch loops over every root. */
  private scan(client: ZkClient): void {
    const generation = ++this.generation;
    // A publish the last scan's changes scheduled would publish this scan's maps half read.
    clearTimeout(this.debounceTimer);
    this.debounceTimer = undefined;
    this.roots = new Map(ARCUS_ROOTS.map((root) => [root, { cacheList: new Map(), mapping: new Map() }]));
    this.pendingReads = 0;
    this.scanSettled = false;
    this.scanFailed = false;
    for (const root of ARCUS_ROOTS) {
      const state = this.roots.get(root)!;
      this.watchChildren(client, generation, `${root}/cache_list`, (serviceCodes) => {
        const wanted = (serviceCodes ?? []).filter((svc) => this.serviceCodeFilter?.has(svc) ?? true);
        for (const svc of state.cacheList.keys()) if (!wanted.includes(svc)) state.cacheList.delete(svc);
        for (const svc of wanted) {
          if (state.cacheList.has(svc)) continue;
          state.cacheList.set(svc, []);
          this.watchChildren(client, generation, `${root}/cache_list/${svc}`, (children) => {
            // A watch loop of a service code dropped from the list ends here.
            if (!state.cacheList.has(svc)) return false;
            state.cacheList.set(svc, children ?? []);
            return true;
          });
        }
        return true;
      });
      this.watchChildren(client, generation, `${root}/cache_server_mapping`, (keys) => {
        const present = new Set(keys ?? []);
        for (const key of state.mapping.keys()) if (!present.has(key)) state.mapping.delete(key);
        for (const key of present) {
          if (state.mapping.has(key)) continue;
          state.mapping.set(key, { children: [] });
          if (!/:\d{1,5}$/.test(key))
            this.readData(client, generation, `${root}/cache_server_mapping/${key}`, state, key);
          this.watchChildren(client, generation, `${root}/cache_server_mapping/${key}`, (children) => {
            const entry = state.mapping.get(key);
            if (!entry) return false;
            entry.children = children ?? [];
            return true;
          });
        }
        return true;
      });
    }
  }

  /**
   * Reads a path's children with a watcher and calls onChildren (undefined when the path does
   * not exist; then waits for it with an exists-watcher). onChildren returning false ends the loop.
   */
  private watchChildren(
    client: ZkClient,
    generation: number,
    path: string,
    onChildren: (children: string[] | undefined) => boolean,
  ): void {
    const live = () => generation === this.generation && !this.closed && this.client === client;
    const key = `children ${path}`;
    const read = () => {
      if (!live()) return;
      this.pendingReads++;
      this.requests++;
      this.rereads.set(key, read);
      client.getChildren(path, this.watchOf(key), (error, children) => {
        // A read of an earlier scan: not one the current scan waits for.
        if (!live()) return;
        this.pendingReads--;
        if (error) {
          if ((error as zookeeper.Exception).getCode?.() === NO_NODE) {
            if (onChildren(undefined)) this.waitForCreation(client, path, live, read);
          } else {
            // Connection loss: the next 'connected' state starts a new generation.
            this.scanFailed = true;
            this.options.logger?.debug({ path, error: String(error) }, 'ZooKeeper read failed');
          }
        } else if (!onChildren(children)) {
          return;
        }
        this.changed();
      });
    };
    read();
  }

  private waitForCreation(client: ZkClient, path: string, live: () => boolean, read: () => void): void {
    this.pendingReads++;
    this.requests++;
    const key = `exists ${path}`;
    this.rereads.set(key, read);
    client.exists(path, this.watchOf(key), (error, stat) => {
      if (!live()) return;
      this.pendingReads--;
      if (error) this.scanFailed = true;
      if (!error && stat) read();
      else this.changed();
    });
  }

  private readData(client: ZkClient, generation: number, path: string, state: MutableRoot, key: string): void {
    this.pendingReads++;
    this.requests++;
    client.getData(path, (error, data) => {
      if (generation !== this.generation || this.closed) return;
      this.pendingReads--;
      const entry = state.mapping.get(key);
      if (error && (error as zookeeper.Exception).getCode?.() !== NO_NODE) this.scanFailed = true;
      if (!error && entry && data) entry.data = data.toString('utf8');
      this.changed();
    });
  }

  /**
   * The one watch function of a path: the client keeps a listener per path and function until the
   * path changes, so one made per read would pile up at every rescan. It runs the current read.
   */
  private watchOf(key: string): () => void {
    let watch = this.watches.get(key);
    if (watch === undefined) {
      watch = () => this.rereads.get(key)?.();
      this.watches.set(key, watch);
    }
    return watch;
  }

  private changed(): void {
    // A rescan starts from empty maps: publishing it before it read everything, or after part of
    // it failed, would drop live nodes.
    let delay = this.options.debounceMs ?? 100;
    if (!this.scanSettled) {
      if (this.pendingReads > 0 || this.scanFailed) return;
      this.scanSettled = true;
      delay = 0;
    }
    if (this.debounceTimer) return;
    this.debounceTimer = setTimeout(() => {
      this.debounceTimer = undefined;
      this.publish();
    }, delay);
  }

  private publish(): void {
    if (this.closed) return;
    for (const root of this.roots.values()) {
      for (const children of root.cacheList.values()) {
        for (const child of children) {
          const registration = parseRegistration(child);
          if (registration) this.lastRegistrations.set(registration.node, registration);
        }
      }
    }
    const snapshots: ReadonlyMap<ArcusRoot, RootSnapshot> = this.roots;
    const topology = buildTopology(snapshots, {
      ...(this.serviceCodeFilter ? { serviceCodes: this.serviceCodeFilter } : {}),
      lastRegistrations: this.lastRegistrations,
    });
    const firstSync = !this.stateValue.synced;
    const unknown = topology.nodes
      .filter((n) => !n.live && n.hostname === '' && !this.joinLogSearched.has(n.node))
      .map((n) => n.node);
    if (unknown.length > 0 && this.client !== undefined && !this.joinLogReading)
      void this.readJoinLog(this.client, this.generation, unknown);
    // The first topology waits for the lookup, or those nodes' series would start under hostname="".
    if (firstSync && this.joinLogReading) return;
    this.topologyValue = topology;
    this.setState({ synced: true, updatedAt: this.now() });
    this.emit('topology', this.topologyValue);
    if (firstSync) {
      for (const waiter of this.syncedWaiters.splice(0)) waiter.done();
    }
  }

  /**
   * The hostnames of down nodes never seen registered, from their last join in `cache_server_log`
   * (`<ip>:<port>-<hostname>-<sequence>` per server start), newest day first. Each node is looked
   * up once; one not found keeps hostname="" until it registers.
   */
  private async readJoinLog(client: ZkClient, generation: number, nodes: readonly string[]): Promise<void> {
    this.joinLogReading = true;
    const wanted = new Set(nodes);
    const found = new Map<string, Registration>();
    try {
      for (const root of ARCUS_ROOTS) {
        if (found.size === wanted.size) break;
        const days = ((await this.childrenOf(client, `${root}/cache_server_log`)) ?? [])
          .sort()
          .reverse()
          .slice(0, JOIN_LOG_DAYS);
        for (const day of days) {
          if (found.size === wanted.size) break;
          addLastJoins(found, (await this.childrenOf(client, `${root}/cache_server_log/${day}`)) ?? [], wanted);
        }
      }
    } catch (err) {
      this.options.logger?.debug(
        { nodes: nodes.length, error: String(err) },
        'reading cache_server_log failed; down nodes never seen registered keep hostname=""',
      );
    } finally {
      this.joinLogReading = false;
    }
    for (const node of nodes) this.joinLogSearched.add(node);
    for (const [node, registration] of found)
      if (!this.lastRegistrations.has(node)) this.lastRegistrations.set(node, registration);
    if (found.size > 0)
      this.options.logger?.debug(
        { nodes: [...found.keys()] },
        'hostnames of down nodes never seen registered taken from their last join (cache_server_log)',
      );
    if (this.closed || generation !== this.generation || this.client !== client) return;
    if (this.debounceTimer === undefined) this.publish();
  }

  /** A path's children (undefined when it does not exist); rejects on any other error. */
  private childrenOf(client: ZkClient, path: string): Promise<string[] | undefined> {
    this.requests++;
    return new Promise((resolve, reject) => {
      client.getChildren(path, (error, children) => {
        if (!error) resolve(children);
        else if ((error as zookeeper.Exception).getCode?.() === NO_NODE) resolve(undefined);
        else reject(error);
      });
    });
  }
}
