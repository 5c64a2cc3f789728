import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  eventually,
  freePort,
  seededRandom,
  startZooKeeper,
  startZooKeeperEnsemble,
  tempDir,
  type ZooKeeperEnsemble,
  type ZooKeeperServer,
} from '@cachemon/testkit';

const BIN = new URL('../../../../../bin/coordination-exporter', import.meta.url).pathname;

interface Exporter {
  readonly url: string;
  readonly pid: number;
  readonly output: () => string;
  /** The exit code, once it has exited. */
  readonly exited: Promise<number | null>;
  signal(name: NodeJS.Signals): void;
  stop(): Promise<void>;
}

async function startExporter(
  zkHosts: string,
  extra: string[] = [],
  headers: Record<string, string> = {},
): Promise<Exporter> {
  const port = await freePort();
  let output = '';
  const child: ChildProcess = spawn(
    process.execPath,
    [BIN, `--listen=127.0.0.1:${port}`, `-zk-hosts=${zkHosts}`, ...extra],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  // Bounded generously for a busy machine; an exporter that exited fails at once.
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/-/ready`, { headers })).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`exporter did not start: ${output}`);
    await sleep(100);
  }
  return {
    url,
    pid: child.pid!,
    output: () => output,
    exited,
    signal: (name) => child.kill(name),
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Sample lines of a scrape as name{labels} -> value. */
async function scrape(
  exporter: Exporter,
  headers: Record<string, string> = {},
): Promise<{ text: string; samples: Map<string, number>; ms: number }> {
  const started = performance.now();
  const response = await fetch(`${exporter.url}/metrics`, { headers });
  const text = await response.text();
  const ms = performance.now() - started;
  assert.equal(response.status, 200);
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    samples.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return { text, samples, ms };
}

/** promtool's findings on a body: its output and exit code. */
function promtool(body: string): { output: string; status: number | null } {
  const run = spawnSync('promtool', ['check', 'metrics'], { input: body, encoding: 'utf8', timeout: 60_000 });
  if (run.error) throw run.error;
  return { output: run.stdout + run.stderr, status: run.status };
}

const up = (samples: Map<string, number>, host: string): number | undefined => samples.get(`zk_up{zk_host="${host}"}`);

/** Scrapes until `series` is 1; that scrape's samples. */
function scrapeUntil(exporter: Exporter, series: string): Promise<Map<string, number>> {
  return eventually(async () => {
    const { samples } = await scrape(exporter);
    assert.equal(samples.get(series), 1, series);
    return samples;
  });
}

describe('coordination exporter against a real 3-server ensemble', () => {
  let ensemble: ZooKeeperEnsemble;
  let exporter: Exporter;

  before(async () => {
    ensemble = await startZooKeeperEnsemble({ size: 3 });
    await ensemble.waitForLeader();
    exporter = await startExporter(ensemble.connectString);
  });
  after(async () => {
    await exporter?.stop();
    await ensemble?.stop();
  });

  it('reports every server with its role, mntr keys typed, leader-only keys on the leader only', async () => {
    const leader = await ensemble.leader();
    const { text, samples } = await scrape(exporter);
    for (const server of ensemble.servers) {
      assert.equal(up(samples, server.address), 1, server.address);
      assert.equal(samples.get(`zk_mntr_status{zk_host="${server.address}",status="ok"}`), 1);
      const role = server === leader ? 'leader' : 'follower';
      assert.equal(
        samples.get(`zk_server_state{zk_host="${server.address}",state="${role}"}`),
        1,
        `${server.address} is ${role}`,
      );
      assert.equal(samples.get(`zk_server_leader{zk_host="${server.address}"}`), server === leader ? 1 : 0);
      assert.equal(
        samples.has(`zk_synced_followers{zk_host="${server.address}"}`),
        server === leader,
        `zk_synced_followers only on the leader`,
      );
      assert.ok((samples.get(`zk_znodes{zk_host="${server.address}"}`) ?? 0) >= 1);
    }
    assert.equal(samples.get(`zk_synced_followers{zk_host="${leader.address}"}`), 2);
    assert.match(text, /^# TYPE zk_packets_sent_total counter$/m);
    assert.match(text, /^# TYPE zk_commit_process_time summary$/m);
    assert.match(text, /^# TYPE zk_commit_process_time_max gauge$/m);
    assert.match(text, /^# TYPE zk_znodes gauge$/m);
    assert.match(text, /^zk_jvm_pause_time_seconds\{zk_host="[^"]+",quantile="0\.99"\} /m);
    assert.match(text, /^zk_avg_latency\{zk_host="[^"]+"\} /m);
    assert.match(text, /^zk_version\{zk_host="[^"]+",version="3\.8\.0",build="3\.8\.0-[^"]*"\} 1$/m);
    assert.match(text, /^cachemon_zk_server_reads_total\{status="ok"\} \d+$/m);
    assert.match(text, /^process_resident_memory_bytes \d+/m);
  });

  it('promtool check metrics finds nothing in the live body of the whole ensemble', async () => {
    const { text } = await scrape(exporter);
    assert.deepEqual(promtool(text), { output: '', status: 0 });
  });

  it('a killed follower is zk_up 0 (unreachable) while the others stay; the log says so once', async () => {
    const leader = await ensemble.leader();
    const follower = ensemble.servers.find((s) => s !== leader)!;
    await follower.kill();
    const { samples } = await scrape(exporter);
    assert.equal(up(samples, follower.address), 0);
    assert.equal(samples.get(`zk_mntr_status{zk_host="${follower.address}",status="unreachable"}`), 1);
    assert.equal(samples.has(`zk_znodes{zk_host="${follower.address}"}`), false);
    for (const server of ensemble.servers.filter((s) => s !== follower)) assert.equal(up(samples, server.address), 1);
    await scrape(exporter);
    const lines = exporter
      .output()
      .split('\n')
      .filter((l) => l.includes(`coordination server ${follower.address} cannot be read`));
    assert.equal(lines.length, 1, exporter.output());
  });

  it('the follower back, then the leader killed: the new leader is reported', async () => {
    const oldLeader = await ensemble.leader();
    const down = ensemble.servers.find((s) => s.pid === undefined)!;
    await down.start();
    let samples = await scrapeUntil(exporter, `zk_up{zk_host="${down.address}"}`);
    assert.equal(up(samples, down.address), 1, 'the restarted follower is read again');
    assert.match(
      exporter.output(),
      new RegExp(
        `"zkHost":"${down.address.replace(/\./g, '\\.')}","was":"(unreachable|not_serving)".*answers mntr again`,
      ),
    );

    await oldLeader.kill();
    const newLeader = await ensemble.waitForLeader({ exclude: oldLeader });
    samples = await scrapeUntil(exporter, `zk_server_leader{zk_host="${newLeader.address}"}`);
    assert.equal(samples.get(`zk_server_state{zk_host="${newLeader.address}",state="leader"}`), 1);
    assert.equal(samples.get(`zk_server_leader{zk_host="${newLeader.address}"}`), 1);
    assert.equal(up(samples, oldLeader.address), 0);
    assert.equal(samples.get(`zk_mntr_status{zk_host="${oldLeader.address}",status="unreachable"}`), 1);
  });

  it('without quorum the remaining server is not serving, told apart from unreachable', async () => {
    const leader = await ensemble.leader();
    const last = ensemble.servers.find((s) => s !== leader && s.pid !== undefined)!;
    await leader.kill();
    const samples = await scrapeUntil(exporter, `zk_mntr_status{zk_host="${last.address}",status="not_serving"}`);
    assert.equal(samples.get(`zk_mntr_status{zk_host="${last.address}",status="not_serving"}`), 1);
    assert.equal(up(samples, last.address), 0);
    assert.equal(samples.get(`zk_mntr_status{zk_host="${leader.address}",status="unreachable"}`), 1);
    assert.match(
      exporter.output(),
      new RegExp(`coordination server ${last.address.replace(/\./g, '\\.')} is not serving requests`),
    );
    // Every server has zk_server_leader, so `max(zk_server_leader) == 0` (no leader) holds.
    for (const server of ensemble.servers)
      assert.equal(samples.get(`zk_server_leader{zk_host="${server.address}"}`), 0, server.address);
  });
});

describe('coordination exporter: an ensemble whose leader serves no clients (leaderServes=no)', () => {
  let ensemble: ZooKeeperEnsemble;
  let exporter: Exporter;

  before(async () => {
    ensemble = await startZooKeeperEnsemble({ size: 3, leaderServes: false });
    exporter = await startExporter(ensemble.connectString);
  });
  after(async () => {
    await exporter?.stop();
    await ensemble?.stop();
  });

  /** The server that answers no srvr while the others follow: the leader. */
  const leaderOf = async (): Promise<ZooKeeperServer> => {
    const modes = await Promise.all(ensemble.servers.map((s) => s.mode()));
    assert.equal(modes.filter((m) => m === 'follower').length, 2, `modes: ${modes.map(String).join(', ')}`);
    return ensemble.servers[modes.indexOf(undefined)]!;
  };

  it('the leader, which answers mntr as a server without quorum does, is reported up and leading', async () => {
    const leader = await leaderOf();
    const { samples } = await scrape(exporter);
    assert.equal(up(samples, leader.address), 1);
    assert.equal(samples.get(`zk_mntr_status{zk_host="${leader.address}",status="leader_only"}`), 1);
    assert.equal(samples.get(`zk_mntr_status{zk_host="${leader.address}",status="not_serving"}`), 0);
    assert.equal(samples.get(`zk_server_leader{zk_host="${leader.address}"}`), 1);
    for (const server of ensemble.servers.filter((s) => s !== leader)) {
      assert.equal(samples.get(`zk_server_state{zk_host="${server.address}",state="follower"}`), 1);
      assert.equal(samples.get(`zk_server_leader{zk_host="${server.address}"}`), 0);
    }
    const log = exporter.output();
    assert.match(
      log,
      new RegExp(
        `coordination server ${leader.address.replace(/\./g, '\\.')} serves no clients while the other servers follow a leader: taken to be the leader of an ensemble with leaderServes=no`,
      ),
    );
    assert.doesNotMatch(log, /is not serving requests/);
  });

  it('with a follower left alone (no quorum) it is not serving, not taken for a leader', async () => {
    const leader = await leaderOf();
    const [killed, last] = ensemble.servers.filter((s) => s !== leader);
    await Promise.all([leader.kill(), killed!.kill()]);
    const samples = await scrapeUntil(exporter, `zk_mntr_status{zk_host="${last!.address}",status="not_serving"}`);
    assert.equal(samples.get(`zk_mntr_status{zk_host="${last!.address}",status="not_serving"}`), 1);
    assert.equal(up(samples, last!.address), 0);
    for (const server of ensemble.servers)
      assert.equal(samples.get(`zk_server_leader{zk_host="${server.address}"}`), 0, server.address);
  });
});

describe('coordination exporter: mntr not whitelisted, a server that never answers', () => {
  let zk: ZooKeeperServer;
  let hung: Server;
  const held: Socket[] = [];
  let hungAddress: string;
  let exporter: Exporter;

  before(async () => {
    zk = await startZooKeeper({ fourLetterWords: ['ruok', 'srvr'] });
    hung = createServer((socket) => void held.push(socket)); // accepts, reads, never answers
    const port = await freePort();
    await new Promise<void>((resolve) => hung.listen(port, '127.0.0.1', resolve));
    hungAddress = `127.0.0.1:${port}`;
    exporter = await startExporter(`${zk.address},${hungAddress}`, ['--timeout=1s']);
  });
  after(async () => {
    await exporter?.stop();
    for (const socket of held) socket.destroy();
    hung?.close();
    await zk?.stop();
  });

  it('names the server and what to add to its config; the hung server times out within the deadline', async () => {
    const { samples, ms } = await scrape(exporter);
    assert.equal(samples.get(`zk_mntr_status{zk_host="${zk.address}",status="not_whitelisted"}`), 1);
    assert.equal(up(samples, zk.address), 0);
    assert.equal(samples.get(`zk_mntr_status{zk_host="${hungAddress}",status="timeout"}`), 1);
    // Not waited for past its deadline: that would be the longest wait of all, 8 s.
    assert.ok(ms < 5000, `scrape took ${ms} ms with a 1 s deadline`);
    assert.match(
      exporter.output(),
      new RegExp(
        `coordination server ${zk.address.replace(/\./g, '\\.')} refuses mntr: it is not on its four-letter-word whitelist\\. Add mntr to 4lw\\.commands\\.whitelist`,
      ),
    );
  });

  it('SIGTERM during a scrape with a long timeout: the scrape is answered (no server waited for past 8 s), then a clean exit', async () => {
    const own = await startExporter(hungAddress);
    const asked = held.length;
    const answer = scrape(own, { 'X-Prometheus-Scrape-Timeout-Seconds': '30' });
    // The scrape is under way once the hung server has its connection.
    await eventually(() => assert.ok(held.length > asked), { intervalMs: 20 });
    await own.stop();
    const { samples, ms } = await answer;
    assert.equal(samples.get(`zk_mntr_status{zk_host="${hungAddress}",status="timeout"}`), 1);
    // The longest wait of a scrape, 8 s, not its 30 s timeout.
    assert.ok(ms >= 7500 && ms < 20_000, `answered after ${ms} ms`);
    assert.equal(await own.exited, 0, own.output());
  });

  it('SIGHUP reads --web.config.file again: a new basic auth password applies without a restart', async () => {
    // bcrypt (cost 4) of "first" and of "second".
    const first = '$2b$04$yHzeEbKFKEr65cHaSQ7vQuJt8E/g7aS9y8oWhSKwKYmxS8bMULekS';
    const second = '$2b$04$2aCWs6wT2UDiQS/mpWzw7.Tt7UjYXRc/ObcVgPyBFn5M4S8LNhsPu';
    const file = join(await tempDir('coordination-web-'), 'web.yml');
    writeFileSync(file, `basic_auth_users:\n  prometheus: ${first}\n`);
    const as = (password: string) => ({
      Authorization: `Basic ${Buffer.from(`prometheus:${password}`).toString('base64')}`,
    });
    const own = await startExporter(zk.address, [`--web.config.file=${file}`], as('first'));
    try {
      assert.equal((await fetch(`${own.url}/metrics`)).status, 401);
      writeFileSync(file, `basic_auth_users:\n  prometheus: ${second}\n`);
      own.signal('SIGHUP');
      await eventually(async () =>
        assert.equal(
          (await fetch(`${own.url}/metrics`, { headers: as('second') })).status,
          200,
          `the new password was not taken: ${own.output()}`,
        ),
      );
      assert.equal((await fetch(`${own.url}/metrics`, { headers: as('first') })).status, 401);
      assert.match(own.output(), /web config reloaded/);
    } finally {
      await own.stop();
    }
  });

  it('--timeout must be more than 0', async () => {
    const child = spawn(process.execPath, [BIN, '--zk-hosts=127.0.0.1:2181', '--timeout=0s'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise((resolve) => child.once('exit', resolve));
    assert.notEqual(code, 0);
    assert.match(stderr, /--timeout: must be more than 0/);
  });

  it("the scraper's timeout header bounds the scrape", async () => {
    // A --timeout far from the header's: a scrape that went by it would take 6 s.
    const own = await startExporter(hungAddress, ['--timeout=6s']);
    try {
      const { samples, ms } = await scrape(own, { 'X-Prometheus-Scrape-Timeout-Seconds': '0.5' });
      assert.equal(samples.get(`zk_mntr_status{zk_host="${hungAddress}",status="timeout"}`), 1);
      assert.ok(ms < 3000, `scrape took ${ms} ms with a 0.5 s scrape timeout`);
    } finally {
      await own.stop();
    }
  });
});

/** A server on loopback that answers every connection with `reply` once it has the four letters. */
async function fakeServer(
  reply: Buffer | string,
): Promise<{ address: string; connections: () => number; close: () => void }> {
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    socket.on('error', () => undefined);
    socket.once('data', () => socket.end(reply));
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { address: `127.0.0.1:${port}`, connections: () => connections, close: () => server.close() };
}

/** The resident memory of a process, in bytes. */
function rssOf(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  assert.ok(kb !== undefined, `no VmRSS for ${pid}`);
  return Number(kb) * 1024;
}

describe('coordination exporter: a real server beside servers that answer no mntr reply', () => {
  let zk: ZooKeeperServer;
  const fakes: Record<'random' | 'nul' | 'huge', Awaited<ReturnType<typeof fakeServer>>> = {} as never;
  let exporter: Exporter;
  const KEYS = 200_000;

  before(async () => {
    zk = await startZooKeeper();
    const random = seededRandom(42);
    fakes.random = await fakeServer(Buffer.from(Array.from({ length: 8192 }, () => Math.floor(random() * 256))));
    // A reply that looks right but for a NUL byte in a value.
    fakes.nul = await fakeServer(
      'zk_version\t3.8.0-x, built on 2024-01-01 00:00 UTC\nzk_znode_count\t5\u0000\nzk_watch_count\t1\n',
    );
    // 200,000 keys: under the 4 MiB answer cap, far over the key limit.
    fakes.huge = await fakeServer(Array.from({ length: KEYS }, (_, i) => `zk_key_${i}\t${i}\n`).join(''));
    exporter = await startExporter([zk.address, fakes.random.address, fakes.nul.address, fakes.huge.address].join(','));
  });
  after(async () => {
    await exporter?.stop();
    for (const fake of Object.values(fakes)) fake.close();
    await zk?.stop();
  });

  it('random bytes and a reply with a NUL byte: zk_up 0, status protocol, one log line each naming the server and the line', async () => {
    const { samples } = await scrape(exporter);
    for (const fake of [fakes.random, fakes.nul]) {
      assert.equal(up(samples, fake.address), 0, fake.address);
      assert.equal(samples.get(`zk_mntr_status{zk_host="${fake.address}",status="protocol"}`), 1, fake.address);
      assert.equal(samples.get(`zk_mntr_status{zk_host="${fake.address}",status="ok"}`), 0, fake.address);
      assert.equal(samples.has(`zk_znodes{zk_host="${fake.address}"}`), false);
    }
    await scrape(exporter);
    const lines = (address: string) =>
      exporter
        .output()
        .split('\n')
        .filter((l) => l.includes(`coordination server ${address} answered mntr with something that is no mntr reply`));
    assert.equal(lines(fakes.random.address).length, 1, exporter.output());
    assert.match(
      lines(fakes.nul.address)[0]!,
      /line 2 has control character \\"\\\\u0000\\": \\"zk_znode_count\\\\t5\\\\u0000\\"/,
    );
    // Bounded, and nothing of the random bytes unescaped in the log.
    for (const line of [...lines(fakes.random.address), ...lines(fakes.nul.address)]) {
      assert.ok(line.length < 1000, line);
      // eslint-disable-next-line no-control-regex -- control characters are what must not be there
      assert.doesNotMatch(line, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\ufffd]/);
    }
  });

  it('200,000 keys: the first 2000 read, the rest counted as dropped; body and memory stay bounded', async () => {
    const dropped = (samples: Map<string, number>) =>
      samples.get(`cachemon_zk_mntr_keys_dropped_total{zk_host="${fakes.huge.address}",reason="limit"}`) ?? 0;
    let { text: body, samples } = await scrape(exporter);
    const first = dropped(samples);
    let largest = rssOf(exporter.pid);
    for (let i = 0; i < 2; i++) {
      ({ text: body, samples } = await scrape(exporter));
      largest = Math.max(largest, rssOf(exporter.pid));
    }
    assert.equal(up(samples, fakes.huge.address), 1);
    assert.equal(samples.get(`zk_key_1999{zk_host="${fakes.huge.address}"}`), 1999);
    assert.equal(samples.has(`zk_key_2000{zk_host="${fakes.huge.address}"}`), false);
    assert.equal(dropped(samples) - first, 2 * (KEYS - 2000));
    assert.ok(body.length < 1024 * 1024, `body of ${body.length} bytes`);
    assert.ok(largest < 150 * 1024 * 1024, `RSS ${largest} bytes`);
    assert.match(exporter.output(), /answered mntr with more than 2000 keys: the first 2000 are read, 198000 dropped/);
  });

  it('the real server is read all along, and promtool finds nothing in the body', async () => {
    const { text, samples } = await scrape(exporter);
    assert.equal(up(samples, zk.address), 1);
    assert.equal(samples.get(`zk_mntr_status{zk_host="${zk.address}",status="ok"}`), 1);
    assert.equal(samples.get(`zk_server_state{zk_host="${zk.address}",state="standalone"}`), 1);
    assert.ok((samples.get(`zk_znodes{zk_host="${zk.address}"}`) ?? 0) >= 1);
    assert.equal(samples.get(`cachemon_zk_mntr_keys_dropped_total{zk_host="${zk.address}",reason="limit"}`), 0);
    assert.deepEqual(promtool(text), { output: '', status: 0 });
  });

  it('promtool finds nothing in the body of the real server alone', async () => {
    const own = await startExporter(zk.address);
    try {
      const { text } = await scrape(own);
      assert.deepEqual(promtool(text), { output: '', status: 0 });
    } finally {
      await own.stop();
    }
  });

  it('--mntr.max-keys sets the limit', async () => {
    const own = await startExporter(fakes.huge.address, ['--mntr.max-keys=10']);
    try {
      const { samples } = await scrape(own);
      assert.equal(samples.get(`zk_key_9{zk_host="${fakes.huge.address}"}`), 9);
      assert.equal(samples.has(`zk_key_10{zk_host="${fakes.huge.address}"}`), false);
      assert.equal(
        samples.get(`cachemon_zk_mntr_keys_dropped_total{zk_host="${fakes.huge.address}",reason="limit"}`),
        KEYS - 10,
      );
    } finally {
      await own.stop();
    }
  });
});

describe('coordination exporter --check-config', () => {
  const run = (args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 30_000 });

  it('valid flags: one line naming the servers and the listen address, exit 0; nothing listened on or read', async () => {
    const fake = await fakeServer('zk_znode_count\t1\n');
    const port = await freePort();
    try {
      const result = run([
        `--zk-hosts=${fake.address}`,
        `--listen=127.0.0.1:${port}`,
        '--timeout=2s',
        '--check-config',
      ]);
      assert.equal(result.status, 0, result.stderr);
      assert.equal(
        result.stdout,
        `coordination-exporter flags: valid (servers ${fake.address}, listen 127.0.0.1:${port})\n`,
      );
      assert.equal(result.stderr, '');
      assert.equal(fake.connections(), 0);
      // -check-config with one dash too, and the last --listen counts, as when the exporter starts.
      const again = run([`-zk-hosts=${fake.address}`, '--listen=:9141', '--listen=127.0.0.2:9', '-check-config']);
      assert.equal(again.status, 0, again.stderr);
      assert.match(again.stdout, /, listen 127\.0\.0\.2:9\)\n$/);
    } finally {
      fake.close();
    }
  });

  it('each bad flag: non-zero, the error naming it', async () => {
    const webConfig = join(await tempDir('coordination-check-'), 'web.yml');
    writeFileSync(webConfig, 'tls_server_config: [\n');
    for (const [args, message] of [
      [['--zk-hosts=127.0.0.1'], /--zk-hosts: "127\.0\.0\.1" is not host:port/],
      [['--zk-hosts=127.0.0.1:1', '--listen=nowhere'], /--listen: invalid listen address "nowhere"/],
      [['--zk-hosts=127.0.0.1:1', '--timeout=0s'], /--timeout: must be more than 0/],
      [['--zk-hosts=127.0.0.1:1', '--timeout=soon'], /timeout/],
      [['--zk-hosts=127.0.0.1:1', '--mntr.max-keys=0'], /--mntr\.max-keys: "0" is not a whole number from 1 to 100000/],
      [['--zk-hosts=127.0.0.1:1', '--log.level=loud'], /--log\.level: "loud"/],
      [['--zk-hosts=127.0.0.1:1', `--web.config.file=${webConfig}`], /web\.yml/],
      [[], /--zk-hosts=<host:port,...> is required/],
    ] as const) {
      const result = run([...args, '--check-config']);
      assert.notEqual(result.status, 0, args.join(' '));
      assert.equal(result.stdout, '', args.join(' '));
      assert.match(result.stderr, message, args.join(' '));
    }
  });
});
