import zookeeper from 'node-zookeeper-client';
import type { Client } from 'node-zookeeper-client';
import { TestkitError, TestkitErrors } from './errors.js';

const CONNECT_TIMEOUT_MS = 15_000;
const CLOSE_TIMEOUT_MS = 3_000;

/** Internals of node-zookeeper-client's ConnectionManager that the functions below rely on (1.1.3). */
interface ConnectionManagerInternals {
  state: number;
  socket?: { destroy(): void; unref(): void };
  connectTimeoutHandler?: ReturnType<typeof setTimeout> | null;
  servers: unknown[];
  nextServerIndex: number;
  serverAttempts: number;
  spinDelay: number;
  findNextServer(callback: (server: unknown) => void): void;
}

function internals(client: Client): ConnectionManagerInternals {
  return (client as unknown as { connectionManager: ConnectionManagerInternals }).connectionManager;
}
const STATE_CLOSING = -1;

/** A connected client with its own session, or a rejection after `CONNECT_TIMEOUT_MS`. */
export function connectClient(connectString: string, sessionTimeoutMs: number): Promise<Client> {
  const client = zookeeper.createClient(connectString, {
    sessionTimeout: sessionTimeoutMs,
    spinDelay: 100,
    retries: 2,
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      dropConnection(client);
      reject(
        new TestkitError(
          TestkitErrors.ZK_CONNECT_TIMEOUT,
          `no ZooKeeper session with ${connectString} within ${CONNECT_TIMEOUT_MS} ms`,
        ),
      );
    }, CONNECT_TIMEOUT_MS);
    client.once('connected', () => {
      clearTimeout(timer);
      resolve(client);
    });
    client.connect();
  });
}

/** Closes the session cleanly (its ephemeral nodes go at once) and waits for the socket to close. */
export function closeClient(client: Client): Promise<void> {
  const state = client.getState();
  if (state === zookeeper.State.DISCONNECTED || state === zookeeper.State.EXPIRED) {
    dropConnection(client);
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      dropConnection(client);
      resolve();
    }, CLOSE_TIMEOUT_MS);
    client.once('disconnected', () => {
      clearTimeout(timer);
      resolve();
    });
    client.close();
  });
}

/**
 * Drops the client's socket without closing the session and without reconnecting: to the
 * ensemble this looks like a crashed process, so the session (and its ephemeral nodes) lives on
 * until the session timeout.
 */
export function dropConnection(client: Client): void {
  const manager = internals(client);
  manager.state = STATE_CLOSING; // onSocketClosed() does not reconnect from CLOSING
  if (manager.connectTimeoutHandler) clearTimeout(manager.connectTimeoutHandler);
  manager.socket?.destroy();
}

/**
 * Lets the session live on without keeping the process alive: its socket, its connect timer and
 * the pause between reconnect attempts are unref'd. For sessions nobody talks to after creating
 * their ephemeral node, so a test that forgets to unregister one still ends, even when its
 * ZooKeeper is gone and the client keeps trying to reconnect.
 */
export function runInBackground(client: Client): void {
  const manager = internals(client);
  const unref = (): void => {
    manager.socket?.unref();
    manager.connectTimeoutHandler?.unref();
  };
  // ConnectionManager.findNextServer of 1.1.3, with an unref'd pause after a full round of servers.
  manager.findNextServer = (callback) => {
    manager.nextServerIndex %= manager.servers.length;
    const next = (): void => {
      callback(manager.servers[manager.nextServerIndex]); // creates the socket and its connect timer
      manager.nextServerIndex += 1;
      unref();
    };
    if (manager.serverAttempts === manager.servers.length) {
      setTimeout(() => {
        next();
        manager.serverAttempts = 0;
      }, Math.random() * manager.spinDelay).unref();
    } else {
      manager.serverAttempts += 1;
      process.nextTick(next);
    }
  };
  unref();
}

function failed(op: string, path: string, err: unknown): TestkitError {
  return new TestkitError(TestkitErrors.ZK_OPERATION_FAILED, `ZooKeeper ${op} ${path} failed: ${String(err)}`, {
    cause: err,
  });
}

function isCode(err: unknown, code: number): boolean {
  return (
    typeof err === 'object' && err !== null && 'getCode' in err && (err as { getCode(): number }).getCode() === code
  );
}

export function isNodeExists(err: unknown): boolean {
  return (
    isCode(err, zookeeper.Exception.NODE_EXISTS) ||
    (err instanceof TestkitError && isCode(err.cause, zookeeper.Exception.NODE_EXISTS))
  );
}

/** Promise wrappers over the callback API; errors become TestkitError with the ZooKeeper error as cause. */
export const zk = {
  create(
    client: Client,
    path: string,
    data: string | undefined,
    mode: number = zookeeper.CreateMode.PERSISTENT,
  ): Promise<string> {
    return new Promise((resolve, reject) => {
      const payload = data === undefined ? null : Buffer.from(data, 'utf8');
      // The typings do not allow a null payload, the client does (a znode without data).
      (
        client.create as unknown as (
          p: string,
          d: Buffer | null,
          m: number,
          cb: (err: unknown, path: string) => void,
        ) => void
      )(path, payload, mode, (err, created) => (err ? reject(failed('create', path, err)) : resolve(created)));
    });
  },

  /** Creates the node unless it exists; never fails because it exists. */
  async ensure(client: Client, path: string, data?: string): Promise<void> {
    try {
      await zk.create(client, path, data);
    } catch (err) {
      if (!isNodeExists(err)) throw err;
    }
  },

  /** Creates every missing ancestor of `path` (without data) and `path` itself. */
  async ensurePath(client: Client, path: string): Promise<void> {
    const parts = path.split('/').filter((p) => p !== '');
    let current = '';
    for (const part of parts) {
      current += `/${part}`;
      await zk.ensure(client, current);
    }
  },

  exists(client: Client, path: string): Promise<boolean> {
    return new Promise((resolve, reject) => {
      client.exists(path, (err, stat) =>
        err ? reject(failed('exists', path, err)) : resolve(stat !== null && stat !== undefined),
      );
    });
  },

  children(client: Client, path: string): Promise<string[]> {
    return new Promise((resolve, reject) => {
      client.getChildren(path, (err, children) => (err ? reject(failed('getChildren', path, err)) : resolve(children)));
    });
  },

  data(client: Client, path: string): Promise<string> {
    return new Promise((resolve, reject) => {
      client.getData(path, (err, data) =>
        err ? reject(failed('getData', path, err)) : resolve(data ? data.toString('utf8') : ''),
      );
    });
  },

  remove(client: Client, path: string): Promise<void> {
    return new Promise((resolve, reject) => {
      client.remove(path, -1, (err) =>
        err && !isCode(err, zookeeper.Exception.NO_NODE) ? reject(failed('remove', path, err)) : resolve(),
      );
    });
  },

  /** Removes `path` and everything under it. */
  async removeTree(client: Client, path: string): Promise<void> {
    if (!(await zk.exists(client, path))) return;
    for (const child of await zk.children(client, path)) await zk.removeTree(client, `${path}/${child}`);
    await zk.remove(client, path);
  },
};
