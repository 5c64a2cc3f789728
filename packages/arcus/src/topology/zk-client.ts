/**
 * node-zookeeper-client 1.1.3, made stoppable and watchful: its reconnecting can be stopped, and a
 * server that stops answering (a ping or connect request unanswered for a third of the session
 * timeout) is dropped. Reaches into the client's private fields, hence the exact version pinned.
 */
import zookeeper from 'node-zookeeper-client';

type ZkClient = zookeeper.Client;

/** The parts of node-zookeeper-client 1.1.3's connection manager that are patched or stopped here. */
interface ConnectionManagerInternals {
  state: number;
  socket?: { destroy(): void };
  connectTimeoutHandler?: NodeJS.Timeout;
  /** The start of a frame whose rest has not arrived yet. */
  pendingBuffer: Buffer | null;
  /** A third of the session timeout: the client pings after this long without traffic. */
  pingTimeout: number;
  findNextServer(callback: (server: unknown) => void): void;
  onSocketClosed(hadError: boolean): void;
  /** The socket is up: the connect request is written. */
  onSocketConnected(): void;
  /** Bytes from the server. */
  onSocketData(buffer: Buffer): void;
  /** No traffic for pingTimeout: a ping is queued (when connected). */
  onSocketTimeout(): void;
}
const PATCHED_METHODS = [
  'findNextServer',
  'onSocketClosed',
  'onSocketConnected',
  'onSocketData',
  'onSocketTimeout',
] as const;
const STATE_CLOSING = -1;
const STATE_CONNECTED = 2;
const STATE_CONNECTED_READ_ONLY = 3;
const internals = (client: ZkClient) =>
  (client as unknown as { connectionManager: ConnectionManagerInternals }).connectionManager;
/** Clients whose reconnecting has been stopped. */
const stoppedClients = new WeakSet<ZkClient>();

/** What a client's server answered, as the watcher needs it. */
export interface Replies {
  /** When the server last sent anything (performance.now(): silences are durations, whatever the clock does). */
  lastAt: number;
  /** Since when a ping or the connect request waits for its answer (performance.now()); undefined when none does. */
  awaitedSince: number | undefined;
  /** Set as the socket closes: when that connection was last known to stand (WatcherState.aliveUntil, the watcher's clock). */
  aliveUntil: number;
}

export interface ClientHooks {
  readonly now: () => number;
  /** A server left a ping or the connect request unanswered for a third of the session timeout; its socket is dropped next. */
  readonly onSilent: (client: ZkClient, fields: { silentMs: number; connected: boolean }) => void;
}

/**
 * A client whose reconnect loop can be stopped (close() cannot reach the timer that picks the next
 * server), that drops a half-received frame when its socket closes (otherwise the next session's
 * answer is read as the rest of the old frame and the client hangs), and that drops a connection
 * whose server stops answering. The client pings after a third of the session timeout without
 * traffic but never times the answer out: a server that hangs with its TCP connection open (a
 * stopped process, a stuck JVM) would keep it "connected" forever, and leave it waiting forever
 * for the answer to a connect request. An answer not there a third of the session timeout later
 * closes the socket, as the ZooKeeper Java client's read timeout (two thirds of the session
 * timeout without a reply) does; the client then reconnects (to the next server) as after any
 * connection loss.
 */
export function createStoppableClient(
  connectString: string,
  options: Partial<zookeeper.Option>,
  hooks: ClientHooks,
): { client: ZkClient; replies: Replies } {
  const client = zookeeper.createClient(connectString, options);
  const manager = internals(client);
  const missing: string[] = PATCHED_METHODS.filter((name) => typeof manager?.[name] !== 'function');
  if (typeof manager?.pingTimeout !== 'number') missing.push('pingTimeout');
  if (missing.length > 0)
    throw new Error(
      `node-zookeeper-client's connection manager lacks ${missing.join(', ')}: the topology watcher is written against 1.1.3`,
    );
  const replies: Replies = { lastAt: 0, awaitedSince: undefined, aliveUntil: 0 };
  // Each socket binds these handlers when it is made (and the ping timer re-binds onSocketTimeout
  // each time), so the patched ones are what every socket of the client calls.
  const findNextServer = manager.findNextServer.bind(manager);
  manager.findNextServer = (callback) =>
    findNextServer((server) => {
      if (!stoppedClients.has(client)) callback(server);
    });
  const onSocketClosed = manager.onSocketClosed.bind(manager);
  manager.onSocketClosed = (hadError) => {
    manager.pendingBuffer = null;
    replies.aliveUntil =
      replies.awaitedSince === undefined ? hooks.now() : hooks.now() - (performance.now() - replies.lastAt);
    replies.awaitedSince = undefined;
    onSocketClosed(hadError);
  };
  const onSocketData = manager.onSocketData.bind(manager);
  manager.onSocketData = (buffer) => {
    replies.lastAt = performance.now();
    replies.awaitedSince = undefined;
    onSocketData(buffer);
  };
  const awaitAnswer = () => {
    if (replies.awaitedSince !== undefined) return;
    const since = (replies.awaitedSince = performance.now());
    const socket = manager.socket;
    const timeoutMs = manager.pingTimeout;
    const timer = setTimeout(() => {
      // Decided after the next poll phase: an answer that came while this process was too busy to
      // read it has been read by then, and is not taken for silence.
      setImmediate(() => {
        if (replies.awaitedSince !== since || manager.socket !== socket || socket === undefined) return;
        const connected = manager.state === STATE_CONNECTED || manager.state === STATE_CONNECTED_READ_ONLY;
        // Connected, the server has said nothing since its last reply; connecting, since the request.
        const silentMs = Math.round(performance.now() - (connected ? replies.lastAt : since));
        hooks.onSilent(client, { silentMs, connected });
        socket.destroy();
      });
    }, timeoutMs);
    timer.unref();
  };
  const onSocketConnected = manager.onSocketConnected.bind(manager);
  manager.onSocketConnected = () => {
    onSocketConnected();
    awaitAnswer();
  };
  const onSocketTimeout = manager.onSocketTimeout.bind(manager);
  manager.onSocketTimeout = () => {
    onSocketTimeout();
    if (manager.state === STATE_CONNECTED || manager.state === STATE_CONNECTED_READ_ONLY) awaitAnswer();
  };
  return { client, replies };
}

/**
 * Ends a client for good. close() waits for a connection to send closeSession on, so a client of
 * a down ensemble would reconnect forever; without a session the socket is dropped instead.
 */
export function shutdownClient(client: ZkClient): void {
  const state = client.getState();
  if (state === zookeeper.State.SYNC_CONNECTED || state === zookeeper.State.CONNECTED_READ_ONLY) {
    client.close();
    return;
  }
  stoppedClients.add(client);
  const manager = internals(client);
  manager.state = STATE_CLOSING; // onSocketClosed() does not reconnect from CLOSING
  if (manager.connectTimeoutHandler) clearTimeout(manager.connectTimeoutHandler);
  manager.socket?.destroy();
}
