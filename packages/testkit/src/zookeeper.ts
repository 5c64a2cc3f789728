import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { TestkitError, TestkitErrors } from './errors.js';
import { ManagedProcess, ProcessServer, startedOrKilled, type ManagedServer } from './managed-process.js';
import { fourLetterWord, freePort } from './net-utils.js';
import { tempDir } from './temp.js';

/** Debian's zookeeper package: no wrapper script, the JVM is started directly. */
const JAVA = process.env['CACHEMON_JAVA'] ?? 'java';
const CLASSPATH_JARS = [
  '/usr/share/java/zookeeper.jar',
  '/usr/share/java/slf4j-log4j12.jar',
  '/usr/share/java/log4j-1.2.jar',
];
const JVM_FLAGS = ['-Xms16m', '-Xmx128m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1'];
const MAIN_CLASS = 'org.apache.zookeeper.server.quorum.QuorumPeerMain';
const DEFAULT_FOUR_LETTER_WORDS = ['mntr', 'ruok', 'srvr', 'conf'];
const READY_TIMEOUT_MS = 30_000;

const LOG4J_PROPERTIES = `log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} [myid:%X{myid}] - %-5p [%t:%C{1}@%L] - %m%n
`;

export interface ZooKeeperOptions {
  /**
   * `4lw.commands.whitelist`; default mntr, ruok, srvr, conf. `[]` omits the line (ZooKeeper then
   * allows only `srvr`). `srvr` is always added to a non-empty list: readiness and mode() use it.
   */
  readonly fourLetterWords?: readonly string[];
  /**
   * Where the client port comes from (default: freePort). For the kit's own tests: a port taken
   * by someone else makes the JVM exit, and the server is started again on the next port.
   */
  readonly choosePort?: () => Promise<number>;
}

/** start() resolves when it serves (standalone) or listens (ensemble member). */
export interface ZooKeeperServer extends ManagedServer {
  /** 127.0.0.1:port */
  readonly address: string;
  readonly port: number;
  readonly dataDir: string;
  /** standalone | leader | follower from `srvr`; undefined when not serving or unreachable. */
  mode(): Promise<string | undefined>;
}

export interface ZooKeeperEnsemble {
  readonly servers: ZooKeeperServer[];
  /** host:port,host:port,... */
  readonly connectString: string;
  /** The server that reports Mode: leader now; rejects when none does. */
  leader(): Promise<ZooKeeperServer>;
  /** Waits until a server other than `exclude` is leader (default timeout 30 s). */
  waitForLeader(options?: { exclude?: ZooKeeperServer; timeoutMs?: number }): Promise<ZooKeeperServer>;
  stop(): Promise<void>;
}

interface Peer {
  readonly id: number;
  readonly clientPort: number;
  readonly quorumPort: number;
  readonly electionPort: number;
}

function zooCfg(
  dataDir: string,
  clientPort: number,
  words: readonly string[],
  peers: readonly Peer[],
  extra: readonly string[] = [],
): string {
  const lines = [
    'tickTime=500',
    'initLimit=20',
    'syncLimit=10',
    `dataDir=${dataDir}`,
    `clientPort=${clientPort}`,
    'clientPortAddress=127.0.0.1',
    'admin.enableServer=false',
  ];
  if (words.length > 0) {
    const list = words.includes('srvr') ? words : [...words, 'srvr'];
    lines.push(`4lw.commands.whitelist=${list.join(',')}`);
  }
  for (const peer of peers) lines.push(`server.${peer.id}=127.0.0.1:${peer.quorumPort}:${peer.electionPort}`);
  lines.push(...extra);
  return `${lines.join('\n')}\n`;
}

/** Parses the Mode line of a `srvr` answer. */
function parseSrvrMode(answer: string): string | undefined {
  return /^Mode: (\S+)/m.exec(answer)?.[1];
}

class ZooKeeperProcess extends ProcessServer implements ZooKeeperServer {
  readonly address: string;
  readonly dataDir: string;

  constructor(
    readonly port: number,
    dir: string,
    private readonly standalone: boolean,
  ) {
    const confDir = join(dir, 'conf');
    const classpath = [confDir, ...CLASSPATH_JARS].join(':');
    super(
      new ManagedProcess(
        `ZooKeeper 127.0.0.1:${port}`,
        JAVA,
        [...JVM_FLAGS, '-cp', classpath, MAIN_CLASS, join(confDir, 'zoo.cfg')],
        join(dir, 'zookeeper.log'),
        dir,
      ),
    );
    this.address = `127.0.0.1:${port}`;
    this.dataDir = join(dir, 'data');
  }

  /** Starts the JVM without waiting (ensemble members wait together for quorum). */
  launch(): void {
    this.process.start();
  }

  /**
   * Standalone: until it serves. Ensemble member: until it answers `srvr` at all (serving needs a
   * quorum, which may be down on purpose); use mode() or waitForLeader() to wait for more.
   */
  async start(): Promise<void> {
    this.launch();
    if (this.standalone) await this.waitServing();
    else
      await this.process.waitUntil(
        'listening (srvr answers)',
        async () => (await fourLetterWord(this.address, 'srvr', 1000)).length > 0,
        READY_TIMEOUT_MS,
      );
  }

  /** Until `srvr` answers with a Mode line. */
  waitServing(timeoutMs = READY_TIMEOUT_MS): Promise<void> {
    return this.process.waitUntil(
      'ready (srvr with a Mode line)',
      async () => (await this.mode()) !== undefined,
      timeoutMs,
    );
  }

  /** Throws the process failure (with its log) when the JVM is gone. */
  assertRunning(what: string): void {
    if (!this.process.running) throw this.process.failure(what);
  }

  async mode(): Promise<string | undefined> {
    if (!this.process.running) return undefined;
    try {
      return parseSrvrMode(await fourLetterWord(this.address, 'srvr', 1000));
    } catch {
      return undefined;
    }
  }
}

async function prepareDir(dir: string, cfg: string, myid?: number): Promise<void> {
  await mkdir(join(dir, 'conf'), { recursive: true });
  await mkdir(join(dir, 'data'), { recursive: true });
  await writeFile(join(dir, 'conf', 'zoo.cfg'), cfg);
  await writeFile(join(dir, 'conf', 'log4j.properties'), LOG4J_PROPERTIES);
  if (myid !== undefined) await writeFile(join(dir, 'data', 'myid'), `${myid}\n`);
}

/** A standalone ZooKeeper 3.8 on a free loopback port, ready when `srvr` reports its Mode. */
export async function startZooKeeper(options: ZooKeeperOptions = {}): Promise<ZooKeeperServer> {
  // freePort's port was free a moment ago; a test file running beside this one can take it before
  // the JVM binds it. Then the server exits saying so, and is started again on another port.
  for (let attempt = 1; ; attempt++) {
    const dir = await tempDir('cachemon-zk-');
    const port = await (options.choosePort ?? freePort)();
    const server = new ZooKeeperProcess(port, dir, true);
    await prepareDir(dir, zooCfg(server.dataDir, port, options.fourLetterWords ?? DEFAULT_FOUR_LETTER_WORDS, []));
    try {
      return await startedOrKilled(server);
    } catch (err) {
      if (attempt >= 3 || !/BindException: Address already in use/.test(String((err as Error).message))) throw err;
    }
  }
}

class Ensemble implements ZooKeeperEnsemble {
  readonly connectString: string;

  constructor(
    readonly servers: ZooKeeperProcess[],
    /** false: the leader serves no clients (`leaderServes=no`), so it answers no `srvr` either. */
    private readonly leaderServes = true,
  ) {
    this.connectString = servers.map((s) => s.address).join(',');
  }

  async modes(): Promise<Array<string | undefined>> {
    return Promise.all(this.servers.map((s) => s.mode()));
  }

  async leader(): Promise<ZooKeeperServer> {
    const modes = await this.modes();
    const index = modes.indexOf('leader');
    const server = this.servers[index];
    if (server === undefined) {
      throw new TestkitError(
        TestkitErrors.ZK_NO_LEADER,
        `no ZooKeeper server reports Mode: leader (modes: ${modes.map(String).join(', ')})`,
      );
    }
    return server;
  }

  async waitForLeader(options: { exclude?: ZooKeeperServer; timeoutMs?: number } = {}): Promise<ZooKeeperServer> {
    const deadline = Date.now() + (options.timeoutMs ?? READY_TIMEOUT_MS);
    let modes: Array<string | undefined> = [];
    for (;;) {
      modes = await this.modes();
      const index = modes.findIndex((mode, i) => mode === 'leader' && this.servers[i] !== options.exclude);
      const server = this.servers[index];
      if (server !== undefined) return server;
      if (Date.now() >= deadline) break;
      await sleep(100);
    }
    throw new TestkitError(
      TestkitErrors.ZK_NO_LEADER,
      `no new ZooKeeper leader within ${options.timeoutMs ?? READY_TIMEOUT_MS} ms (modes: ${modes.map(String).join(', ')})`,
    );
  }

  /**
   * Until every server serves and exactly one of them leads; with leaderServes=no, until every
   * server but one follows (the leader answers no `srvr`).
   */
  async waitForQuorum(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let modes: Array<string | undefined> = [];
    for (;;) {
      for (const server of this.servers) server.assertRunning('did not join the ensemble');
      modes = await this.modes();
      const leaders = modes.filter((m) => m === 'leader').length;
      const followers = modes.filter((m) => m === 'follower').length;
      if (
        this.leaderServes
          ? leaders === 1 && leaders + followers === this.servers.length
          : followers === this.servers.length - 1
      )
        return;
      if (Date.now() >= deadline) break;
      await sleep(100);
    }
    throw new TestkitError(
      TestkitErrors.ZK_NO_LEADER,
      `ZooKeeper ensemble ${this.connectString} has no quorum after ${timeoutMs} ms (modes: ${modes.map(String).join(', ')})`,
    );
  }

  async stop(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.stop()));
  }
}

/** `size` ZooKeeper servers (default 3) on loopback, ready when all serve under one leader. */
export async function startZooKeeperEnsemble(
  options: { size?: number; fourLetterWords?: readonly string[]; leaderServes?: boolean } = {},
): Promise<ZooKeeperEnsemble> {
  const size = options.size ?? 3;
  if (!Number.isInteger(size) || size < 1)
    throw new TestkitError(TestkitErrors.INVALID_ARGUMENT, `ensemble size must be a positive integer, got ${size}`);
  const root = await tempDir('cachemon-zk-ensemble-');
  const peers: Peer[] = [];
  for (let id = 1; id <= size; id++) {
    peers.push({ id, clientPort: await freePort(), quorumPort: await freePort(), electionPort: await freePort() });
  }
  const servers: ZooKeeperProcess[] = [];
  for (const peer of peers) {
    const dir = join(root, `server${peer.id}`);
    const server = new ZooKeeperProcess(peer.clientPort, dir, false);
    const extra = options.leaderServes === false ? ['leaderServes=no'] : [];
    await prepareDir(
      dir,
      zooCfg(server.dataDir, peer.clientPort, options.fourLetterWords ?? DEFAULT_FOUR_LETTER_WORDS, peers, extra),
      peer.id,
    );
    servers.push(server);
  }
  const ensemble = new Ensemble(servers, options.leaderServes !== false);
  for (const server of servers) server.launch();
  try {
    await ensemble.waitForQuorum(READY_TIMEOUT_MS);
  } catch (err) {
    await Promise.all(servers.map((s) => s.kill()));
    throw err;
  }
  return ensemble;
}
