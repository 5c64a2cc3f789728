/** ArcusDouble: a TCP server that answers like an ARCUS 1.15.0 cache server and registers like one. */
import { createServer, type Server, type Socket } from 'node:net';
import { ArcusZk, ARCUS_REPL_ROOT, ARCUS_ROOT, type NodeRegistration } from '../arcus-zk.js';
import { TestkitError, TestkitErrors } from '../errors.js';
import { zk } from '../zk-client.js';
import { resolve } from './commands.js';
import { Connection, execute } from './connection.js';
import type { Clock } from './engine.js';
import { ServerState, type ArcusDoubleBehavior } from './state.js';

export type { ArcusDoubleBehavior } from './state.js';

export interface ArcusDoubleOptions {
  /** Listen address; default 127.0.0.1. */
  readonly host?: string;
  /** Listen port; default 0 (the OS picks a free one). */
  readonly port?: number;
  /** `max_stats_prefixes` (default 50): more prefixes make `stats prefixes` refuse. */
  readonly maxStatsPrefixes?: number;
  /** Per-prefix operation counting on at start (the server's -D flag); default false. */
  readonly detailEnabled?: boolean;
  /** Default '1.15.0'. */
  readonly version?: string;
  /** Milliseconds since the epoch; lets a test move time (expiry, uptime) without waiting. */
  readonly clock?: Clock;
  /** Heartbeat period while registered (default 3000, like the server); 0: only explicit heartbeat() calls. */
  readonly heartbeatIntervalMs?: number;
}

export interface ArcusRegisterOptions {
  /** Hostname part of the node name; default 'localhost'. */
  readonly hostname?: string;
  /** Session timeout requested (default 30000, ARCUS's zk_timeout); ZooKeeper may cap it. */
  readonly sessionTimeoutMs?: number;
  /** Replication role; default: M for the first node of its group, else S. */
  readonly role?: 'M' | 'S';
}

export interface PopulateKey {
  readonly key: string;
  readonly type?: 'kv' | 'list' | 'set' | 'btree';
  /** Value size (element size for collections); default 10. */
  readonly bytes?: number;
}

const HEARTBEAT_COMMAND = ['set', 'arcus:zk-ping', '1', '0', '1'] as const;
const HEARTBEAT_VALUE = '1';
const HEARTBEAT_REQUEST_BYTES = `${HEARTBEAT_COMMAND.join(' ')}\r\n${HEARTBEAT_VALUE}\r\n`.length;

interface Mapping {
  readonly root: string;
  readonly serviceCode: string;
  readonly group?: string;
}

export class ArcusDouble {
  readonly host: string;
  readonly port: number;
  readonly address: string;
  private readonly sockets = new Set<Socket>();
  private registration: NodeRegistration | undefined;
  private heartbeatTimer: ReturnType<typeof setInterval> | undefined;
  private stopped = false;

  private constructor(
    private readonly server: Server,
    private readonly state: ServerState,
    private readonly heartbeatIntervalMs: number,
  ) {
    this.host = state.settings.host;
    this.port = state.settings.port;
    this.address = `${this.host}:${this.port}`;
  }

  static async start(options: ArcusDoubleOptions = {}): Promise<ArcusDouble> {
    const host = options.host ?? '127.0.0.1';
    const settings = {
      host,
      port: options.port ?? 0,
      maxStatsPrefixes: options.maxStatsPrefixes ?? 50,
      version: options.version ?? '1.15.0',
    };
    const state = new ServerState(settings, options.clock ?? Date.now, options.detailEnabled ?? false);
    const server = createServer();
    await new Promise<void>((resolveListen, reject) => {
      server.once('error', reject);
      server.listen(settings.port, host, () => {
        server.off('error', reject);
        resolveListen();
      });
    });
    const address = server.address();
    settings.port = typeof address === 'object' && address !== null ? address.port : settings.port;
    // A forgotten double must not keep a test process alive; its clients' sockets do while in use.
    server.unref();
    const double = new ArcusDouble(server, state, options.heartbeatIntervalMs ?? 3000);
    server.on('connection', (socket) => double.accept(socket));
    return double;
  }

  get behavior(): ArcusDoubleBehavior {
    return this.state.behavior;
  }

  /** `stats` request lines received (any stats command), also while hanging or stuck. */
  get statsRequests(): number {
    return this.state.statsRequests;
  }

  /** See ArcusDoubleBehavior. */
  setBehavior(behavior: ArcusDoubleBehavior): void {
    this.state.behavior = behavior;
  }

  /** Adds to `stats` counters (named as `stats` shows them) as if requests had been served. */
  addTraffic(counts: Readonly<Record<string, number>>): void {
    for (const [name, by] of Object.entries(counts)) {
      if (name === 'bytes_read') this.state.bytesRead += by;
      else if (name === 'bytes_written') this.state.bytesWritten += by;
      else this.state.count(name, by);
    }
  }

  /** True while its ephemeral node's session is open. */
  get registered(): boolean {
    return this.registration !== undefined;
  }

  /** The ephemeral znode while registered. */
  get nodePath(): string | undefined {
    return this.registration?.path;
  }

  /**
   * Registers like the real server: its service code from its mapping, an ephemeral node on a
   * session of its own, then a heartbeat every period (the first one period later).
   */
  async register(target: ArcusZk | string, options: ArcusRegisterOptions = {}): Promise<NodeRegistration> {
    if (this.registration !== undefined)
      throw new TestkitError(
        TestkitErrors.ARCUS_ALREADY_REGISTERED,
        `${this.address} is registered already as ${this.registration.path}`,
      );
    const arcusZk = typeof target === 'string' ? await ArcusZk.connect(target) : target;
    let registration: NodeRegistration;
    const sessionTimeoutMs = options.sessionTimeoutMs ?? arcusZk.sessionTimeoutMs;
    try {
      const mapping = await this.findMapping(arcusZk);
      const listPath = `${mapping.root}/cache_list/${mapping.serviceCode}`;
      if (!(await zk.exists(arcusZk.client, listPath))) {
        throw new TestkitError(
          TestkitErrors.ARCUS_SERVICE_CODE_MISSING,
          `${listPath} does not exist: create the service code before registering ${this.address}`,
        );
      }
      let repl: { group: string; role: 'M' | 'S' } | undefined;
      if (mapping.group !== undefined) {
        const group = mapping.group;
        const hasMaster = (await zk.children(arcusZk.client, listPath)).some((child) =>
          child.startsWith(`${group}^M^`),
        );
        repl = { group, role: options.role ?? (hasMaster ? 'S' : 'M') };
      }
      registration = await arcusZk.registerNode(this.address, mapping.serviceCode, {
        hostname: options.hostname,
        sessionTimeoutMs,
        repl,
      });
    } finally {
      if (typeof target === 'string') await arcusZk.close();
    }
    this.state.zookeeper = { connected: true, timeoutMs: sessionTimeoutMs };
    this.registration = registration;
    if (this.heartbeatIntervalMs > 0) {
      this.heartbeatTimer = setInterval(() => this.heartbeat(), this.heartbeatIntervalMs);
      this.heartbeatTimer.unref(); // a registered double alone must not keep a test process alive
    }
    const end = (how: 'unregister' | 'expire') => async (): Promise<void> => {
      if (this.registration === registration) this.endRegistration();
      await registration[how]();
    };
    return { path: registration.path, unregister: end('unregister'), expire: end('expire') };
  }

  /** One heartbeat as the server does it: `set arcus:zk-ping 1 0 1` over a short connection to itself. */
  heartbeat(): void {
    const started = performance.now();
    const found = resolve(HEARTBEAT_COMMAND);
    if (found === undefined) return;
    this.state.connections.total += 1;
    this.state.bytesRead += HEARTBEAT_REQUEST_BYTES;
    const reply = execute(this.state, found.spec, found.args, HEARTBEAT_VALUE);
    if (typeof reply === 'string') this.state.bytesWritten += reply.length;
    this.state.heartbeats += 1;
    this.state.heartbeatLatencyMs += performance.now() - started;
  }

  /** Test data, stored without counting as requests. */
  populate(keys: readonly PopulateKey[]): void {
    const engine = this.state.engine;
    const attrs = { flags: 0, exptime: 0, maxcount: 0 };
    for (const { key, type = 'kv', bytes = 10 } of keys) {
      const value = 'x'.repeat(bytes);
      if (type === 'kv') engine.storeKv('set', key, 0, 0, value);
      else if (type === 'list') engine.listInsert(key, -1, value, attrs);
      else if (type === 'set') engine.setInsert(key, value, attrs);
      else engine.btreeInsert(key, { kind: 'int', value: BigInt(engine.items.size) }, undefined, value, attrs);
    }
  }

  /** Like a clean server stop: the ZooKeeper session is closed (node gone at once), listener and sockets closed. */
  async stop(): Promise<void> {
    const registration = this.registration;
    this.endRegistration();
    await registration?.unregister();
    await this.close();
  }

  /** Like a killed server: listener and sockets closed, the session dropped without closing (node goes after the timeout). */
  async kill(): Promise<void> {
    const registration = this.registration;
    this.endRegistration();
    await registration?.expire();
    await this.close();
  }

  private accept(socket: Socket): void {
    if (this.stopped) {
      socket.destroy();
      return;
    }
    const connections = this.state.connections;
    connections.current += 1;
    connections.total += 1;
    connections.peak = Math.max(connections.peak, connections.current);
    this.sockets.add(socket);
    socket.setNoDelay(true);
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      connections.current -= 1;
      this.sockets.delete(socket);
    });
    new Connection(socket, this.state);
  }

  private endRegistration(): void {
    if (this.heartbeatTimer !== undefined) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = undefined;
    this.registration = undefined;
    this.state.zookeeper = { ...this.state.zookeeper, connected: false };
  }

  private async close(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    const closed = new Promise<void>((done) => this.server.close(() => done()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  /** cache_server_mapping lookup in the server's order: ip:port, then ip; /arcus before /arcus_repl. */
  private async findMapping(arcusZk: ArcusZk): Promise<Mapping> {
    const tried: string[] = [];
    for (const root of [ARCUS_ROOT, ARCUS_REPL_ROOT]) {
      for (const name of [this.address, this.host]) {
        const path = `${root}/cache_server_mapping/${name}`;
        tried.push(path);
        if (!(await zk.exists(arcusZk.client, path))) continue;
        const children = await zk.children(arcusZk.client, path);
        const [child] = children;
        if (children.length !== 1 || child === undefined) {
          throw new TestkitError(
            TestkitErrors.ARCUS_MAPPING_INVALID,
            `${path} must have exactly one child (the service code), has ${children.length}: ${children.join(', ')}`,
          );
        }
        const [serviceCode = '', group] = child.split('^');
        if (root === ARCUS_REPL_ROOT && group === undefined) {
          throw new TestkitError(
            TestkitErrors.ARCUS_MAPPING_INVALID,
            `${path}/${child} lacks the replication group (<svc>^<group>^<peer>)`,
          );
        }
        return { root, serviceCode, group: root === ARCUS_REPL_ROOT ? group : undefined };
      }
    }
    throw new TestkitError(
      TestkitErrors.ARCUS_MAPPING_MISSING,
      `${this.address} is not mapped to a service code: none of ${tried.join(', ')} exists`,
    );
  }
}

/** `count` doubles started together, each on its own OS-assigned port. */
export async function startArcusDoubles(
  count: number,
  options: Omit<ArcusDoubleOptions, 'port'> = {},
): Promise<ArcusDouble[]> {
  const started = await Promise.allSettled(Array.from({ length: count }, () => ArcusDouble.start(options)));
  const doubles = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failure = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure !== undefined) {
    await Promise.all(doubles.map((d) => d.stop()));
    throw failure.reason;
  }
  return doubles;
}
