import zookeeper from 'node-zookeeper-client';
import type { Client } from 'node-zookeeper-client';
import { TestkitError, TestkitErrors } from './errors.js';
import { splitAddress } from './net-utils.js';
import { closeClient, connectClient, dropConnection, isNodeExists, runInBackground, zk } from './zk-client.js';

/** Roots of a real ARCUS deployment: plain clusters and replication clusters. */
export const ARCUS_ROOT = '/arcus';
export const ARCUS_REPL_ROOT = '/arcus_repl';
const FOLDERS = ['cache_list', 'cache_server_log', 'cache_server_mapping', 'client_list'] as const;

/** ARCUS's own default session timeout (`zk_timeout 30000`); ZooKeeper caps it at 20 ticks. */
const DEFAULT_SESSION_TIMEOUT_MS = 30_000;

/** Data strings byte-identical to a real deployment (see samples/znode-tree.txt). */
export function serviceCodeData(serviceCode: string): string {
  return JSON.stringify({ serviceCode, config: { threads: '2', memlimit: '64', connections: '1000' } });
}

export function mappingData(port: number): string {
  return JSON.stringify({ port: String(port), threads: '2', memlimit: '64', connections: '1000' });
}

export const NODE_DATA = '64MB';
export const JOIN_LOG_DATA = 'join';

export interface ReplicationMapping {
  /** Replication group name. */
  readonly group: string;
  /** The peer's replication address, replIP:port. */
  readonly peer: string;
}

/** A live node's own ZooKeeper session. It never keeps the process alive by itself. */
export interface NodeRegistration {
  /** The ephemeral znode. */
  readonly path: string;
  /** Closes the node's session: the ephemeral node goes away at once, like a clean server stop. */
  unregister(): Promise<void>;
  /** Drops the session's socket without closing it: the node goes only after the session timeout, like a killed server. */
  expire(): Promise<void>;
}

export interface RegisterNodeOptions {
  /** Hostname part of the node name; default 'localhost' (what a test machine's reverse DNS gives). */
  readonly hostname?: string;
  readonly repl?: { readonly group: string; readonly role: 'M' | 'S' };
  /** Session timeout requested for the node's own session (default 30000, ARCUS's default). */
  readonly sessionTimeoutMs?: number;
}

/** `YYYY-MM-DD` in local time, as the server names its cache_server_log folder. */
function logDate(now = new Date()): string {
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
}

/** `<ip:port>-<hostname>`, or `<group>^<role>^<ip:port>-<hostname>` for a replication node. */
export function cacheListNodeName(
  address: string,
  hostname: string,
  repl?: { group: string; role: 'M' | 'S' },
): string {
  const base = `${address}-${hostname}`;
  return repl === undefined ? base : `${repl.group}^${repl.role}^${base}`;
}

class Registration implements NodeRegistration {
  private done = false;

  constructor(
    readonly path: string,
    private readonly client: Client,
  ) {}

  async unregister(): Promise<void> {
    if (this.done) return;
    this.done = true;
    await closeClient(this.client);
  }

  async expire(): Promise<void> {
    if (this.done) return;
    this.done = true;
    dropConnection(this.client);
  }
}

/** The ZooKeeper layout of an ARCUS deployment, written as the real admin tools and servers write it. */
export class ArcusZk {
  private constructor(
    readonly connectString: string,
    /** The kit's own session (used for layout, never for ephemeral nodes). */
    readonly client: Client,
    /** Session timeout requested for this client and, by default, for registered nodes. */
    readonly sessionTimeoutMs: number,
  ) {}

  static async connect(connectString: string, options: { sessionTimeoutMs?: number } = {}): Promise<ArcusZk> {
    const timeout = options.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS;
    return new ArcusZk(connectString, await connectClient(connectString, timeout), timeout);
  }

  /** `/arcus/cache_list/<svc>` with the cluster JSON and `/arcus/client_list/<svc>`; repl: under /arcus_repl plus `group_list/<svc>`. */
  async createServiceCode(serviceCode: string, options: { repl?: boolean } = {}): Promise<void> {
    const root = options.repl === true ? ARCUS_REPL_ROOT : ARCUS_ROOT;
    await this.ensureRoot(root);
    await zk.ensure(this.client, `${root}/cache_list/${serviceCode}`, serviceCodeData(serviceCode));
    await zk.ensure(this.client, `${root}/client_list/${serviceCode}`);
    if (options.repl === true) await zk.ensure(this.client, `${root}/group_list/${serviceCode}`);
  }

  /**
   * `/arcus/cache_server_mapping/<ip:port>` with its JSON and exactly one child, the service code
   * (repl: under /arcus_repl, child `<svc>^<group>^<peer>`). Replaces an earlier mapping.
   */
  async mapServer(address: string, serviceCode: string, options: { repl?: ReplicationMapping } = {}): Promise<void> {
    const { port } = splitAddress(address);
    const root = options.repl === undefined ? ARCUS_ROOT : ARCUS_REPL_ROOT;
    await this.ensureRoot(root);
    const path = `${root}/cache_server_mapping/${address}`;
    await zk.ensure(this.client, path, mappingData(port));
    for (const child of await zk.children(this.client, path)) await zk.remove(this.client, `${path}/${child}`);
    const child =
      options.repl === undefined ? serviceCode : `${serviceCode}^${options.repl.group}^${options.repl.peer}`;
    await zk.create(this.client, `${path}/${child}`, undefined);
    if (options.repl !== undefined)
      await zk.ensure(this.client, `${root}/group_list/${serviceCode}/${options.repl.group}`);
  }

  /** Removes the server's mapping (under both roots). */
  async unmapServer(address: string): Promise<void> {
    for (const root of [ARCUS_ROOT, ARCUS_REPL_ROOT])
      await zk.removeTree(this.client, `${root}/cache_server_mapping/${address}`);
  }

  /** Registers `address` as an ARCUS server does: an ephemeral cache_list node and a cache_server_log entry. */
  async registerNode(
    address: string,
    serviceCode: string,
    options: RegisterNodeOptions = {},
  ): Promise<NodeRegistration> {
    splitAddress(address);
    const hostname = options.hostname ?? 'localhost';
    const root = options.repl === undefined ? ARCUS_ROOT : ARCUS_REPL_ROOT;
    const listPath = `${root}/cache_list/${serviceCode}`;
    if (!(await zk.exists(this.client, listPath))) {
      await this.ensureRoot(root);
      await zk.ensure(this.client, listPath, serviceCodeData(serviceCode));
    }
    const logDir = `${root}/cache_server_log/${logDate()}`;
    await zk.ensurePath(this.client, logDir);

    const path = `${listPath}/${cacheListNodeName(address, hostname, options.repl)}`;
    const session = await connectClient(this.connectString, options.sessionTimeoutMs ?? this.sessionTimeoutMs);
    try {
      await zk.create(session, path, NODE_DATA, zookeeper.CreateMode.EPHEMERAL);
      await zk.create(
        session,
        `${logDir}/${address}-${hostname}-`,
        JOIN_LOG_DATA,
        zookeeper.CreateMode.PERSISTENT_SEQUENTIAL,
      );
    } catch (err) {
      await closeClient(session);
      if (isNodeExists(err)) {
        throw new TestkitError(
          TestkitErrors.ARCUS_NODE_EXISTS,
          `${path} exists already (an earlier session of ${address} has not expired yet; a real server exits with code 76 here)`,
          { cause: err },
        );
      }
      throw err;
    }
    runInBackground(session);
    return new Registration(path, session);
  }

  async close(): Promise<void> {
    await closeClient(this.client);
  }

  private async ensureRoot(root: string): Promise<void> {
    await zk.ensure(this.client, root);
    for (const folder of FOLDERS) await zk.ensure(this.client, `${root}/${folder}`);
    if (root === ARCUS_REPL_ROOT) await zk.ensure(this.client, `${root}/group_list`);
  }
}
