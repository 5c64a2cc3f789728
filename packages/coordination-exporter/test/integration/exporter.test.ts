import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  eventually,
  freePort,
  startZooKeeper,
  startZooKeeperEnsemble,
  tempDir,
  type ZooKeeperEnsemble,
  type ZooKeeperServer,
} from '@cachemon/testkit';

const BIN = new URL('../../../../../bin/coordination-exporter', import.meta.url).pathname;

interface Exporter {
  readonly url: string;
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
      assert.ok((samples.get(`zk_znode_count{zk_host="${server.address}"}`) ?? 0) >= 1);
    }
    assert.equal(samples.get(`zk_synced_followers{zk_host="${leader.address}"}`), 2);
    assert.match(text, /^# TYPE zk_packets_sent counter$/m);
    assert.match(text, /^# TYPE zk_cnt_commit_process_time counter$/m);
    assert.match(text, /^# TYPE zk_avg_commit_process_time gauge$/m);
    assert.match(text, /^# TYPE zk_znode_count gauge$/m);
    assert.match(text, /^zk_version\{zk_host="[^"]+",version="3\.8\.0",build="3\.8\.0-[^"]*"\} 1$/m);
    assert.match(text, /^cachemon_zk_server_reads_total\{status="ok"\} \d+$/m);
    assert.match(text, /^process_resident_memory_bytes \d+/m);
  });

  it('a killed follower is zk_up 0 (unreachable) while the others stay; the log says so once', async () => {
    const leader = await ensemble.leader();
    const follower = ensemble.servers.find((s) => s !== leader)!;
    await follower.kill();
    const { samples } = await scrape(exporter);
    assert.equal(up(samples, follower.address), 0);
    assert.equal(samples.get(`zk_mntr_status{zk_host="${follower.address}",status="unreachable"}`), 1);
    assert.equal(samples.has(`zk_znode_count{zk_host="${follower.address}"}`), false);
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
