import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, existsSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ArcusDouble, ArcusZk, freePort, runBash, startZooKeeper, tempDir } from '@cachemon/testkit';
import type { ZooKeeperServer } from '@cachemon/testkit';
import bcrypt from 'bcryptjs';
import { eventually, parseExposition, startExporter, valueOf } from './support/exporter.js';

const root = new URL('../../../../', import.meta.url).pathname;

/** stack/cache_exporter/start.sh and stop.sh as an operator runs them in an installed tree. */
describe('cache_exporter start.sh / stop.sh', () => {
  let zk: ZooKeeperServer;
  let arcus: ArcusZk;
  let node: ArcusDouble;
  let installDir: string;
  let componentDir: string;
  // Asynchronous (runBash): the ARCUS node and its ZooKeeper session live in this process.
  const shWith = (env: Record<string, string>, script: string, ...args: string[]) =>
    runBash(join(componentDir, script), args, { CACHEMON_HOME: root, ...env }, 30_000);
  const sh = (script: string, ...args: string[]) => shWith({}, script, ...args);
  const commandLine = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');

  before(async () => {
    zk = await startZooKeeper();
    arcus = await ArcusZk.connect(zk.address);
    await arcus.createServiceCode('svc');
    node = await ArcusDouble.start();
    await arcus.mapServer(node.address, 'svc');
    await node.register(arcus);
    installDir = await tempDir('cachemon-install-');
    componentDir = join(installDir, 'cache_exporter');
    cpSync(join(root, 'stack', 'cache_exporter'), componentDir, { recursive: true });
    mkdirSync(join(installDir, 'lib'));
    cpSync(join(root, 'stack', 'lib'), join(installDir, 'lib'), { recursive: true });
  });

  after(async () => {
    await sh('stop.sh', 'ens1');
    await node?.stop();
    await arcus?.close();
    await zk?.stop();
  });

  test('start.sh <name> runs conf/<name>.json in the background with a pid file and its log; stop.sh stops it', async () => {
    const port = await freePort();
    writeFileSync(
      join(componentDir, 'conf', 'ens1.json'),
      `// test config\n${JSON.stringify({ listen: `127.0.0.1:${port}`, ensembleByName: { ens1: [zk.address] }, log: { level: 'info', filename: 'log/ens1.log' } })}`,
    );
    const started = await sh('start.sh', 'ens1');
    assert.equal(started.status, 0, started.stderr);
    const pidFile = join(componentDir, 'run', 'ens1.pid');
    const pid = Number(readFileSync(pidFile, 'utf8'));
    assert.ok(pid > 0);
    process.kill(pid, 0);
    // bin/cache-exporter's own node flags (its first line) bound the heap.
    const args = commandLine(pid);
    const shebang = readFileSync(join(root, 'bin', 'cache-exporter'), 'utf8').split('\n')[0]!;
    const shipped = shebang.split(' ').filter((word) => word.startsWith('--'));
    assert.ok(shipped.length >= 3, shebang);
    for (const flag of shipped) {
      assert.ok(args.includes(flag), `${flag} missing: ${args.join(' ')}`);
    }

    const again = await sh('start.sh', 'ens1');
    assert.notEqual(again.status, 0);
    assert.match(again.stderr, /already running/);

    await eventually(async () => {
      const samples = parseExposition(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
      assert.equal(valueOf(samples, 'arcus_up', { node: node.address, ensemble: 'ens1' }), 1);
    });
    await eventually(() => {
      const log = readFileSync(join(componentDir, 'log', 'ens1.log'), 'utf8');
      assert.match(log, /cache exporter listening/);
    });

    const stopped = await sh('stop.sh', 'ens1');
    assert.equal(stopped.status, 0, stopped.stderr);
    assert.ok(!existsSync(pidFile));
    assert.throws(() => process.kill(pid, 0), /ESRCH/);
    assert.match((await sh('stop.sh', 'ens1')).stdout, /not running/);
  });

  test('a stale pid file naming a process started after it was written (a reused pid) is neither stopped nor taken for the exporter', async () => {
    const other = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      const pidFile = join(componentDir, 'run', 'stale.pid');
      mkdirSync(join(componentDir, 'run'), { recursive: true });
      writeFileSync(pidFile, `${other.pid}\n`);
      // Written an hour before the process started: before a crash and a reboot, say.
      const before = new Date(Date.now() - 3600_000);
      utimesSync(pidFile, before, before);
      const stopped = await sh('stop.sh', 'stale');
      assert.equal(stopped.status, 0, stopped.stderr);
      assert.match(stopped.stdout, /not running \(removed the stale pid file .*stale\.pid\)/);
      assert.ok(!existsSync(pidFile));
      process.kill(other.pid!, 0); // still alive: not signalled

      const port = await freePort();
      writeFileSync(
        join(componentDir, 'conf', 'stale.json'),
        JSON.stringify({ listen: `127.0.0.1:${port}`, ensembleByName: { stale: [zk.address] } }),
      );
      writeFileSync(pidFile, `${other.pid}\n`);
      utimesSync(pidFile, before, before);
      const started = await sh('start.sh', 'stale');
      assert.equal(started.status, 0, started.stderr);
      const pid = Number(readFileSync(pidFile, 'utf8'));
      assert.notEqual(pid, other.pid);
      // A session of its own: a Ctrl-C in the terminal that ran start.sh does not reach it.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const [, , , sessionId] = stat
        .slice(stat.lastIndexOf(')') + 2)
        .split(' ')
        .map(Number);
      assert.equal(sessionId, pid);
      assert.equal((await sh('stop.sh', 'stale')).status, 0);
      process.kill(other.pid!, 0);
    } finally {
      // Also when an assertion failed with the exporter running (a no-op otherwise).
      await sh('stop.sh', 'stale');
      other.kill();
      if (other.exitCode === null && other.signalCode === null) await once(other, 'exit');
    }
  });

  test('CACHE_EXPORTER_NODE_FLAGS runs the exporter with those node flags instead of its own', async () => {
    const port = await freePort();
    writeFileSync(
      join(componentDir, 'conf', 'ens2.json'),
      JSON.stringify({ listen: `127.0.0.1:${port}`, ensembleByName: { ens2: [zk.address] } }),
    );
    const started = await shWith(
      { CACHE_EXPORTER_NODE_FLAGS: '--max-old-space-size=300 --stack-size=900' },
      'start.sh',
      'ens2',
    );
    try {
      assert.equal(started.status, 0, started.stderr);
      const pid = Number(readFileSync(join(componentDir, 'run', 'ens2.pid'), 'utf8'));
      const args = commandLine(pid);
      assert.ok(args.includes('--max-old-space-size=300') && args.includes('--stack-size=900'), args.join(' '));
      assert.ok(!args.includes('--max-old-space-size=512'), args.join(' '));
      await eventually(async () => {
        const samples = parseExposition(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
        assert.equal(valueOf(samples, 'arcus_up', { node: node.address, ensemble: 'ens2' }), 1);
      });
    } finally {
      const stopped = await sh('stop.sh', 'ens2');
      assert.equal(stopped.status, 0, stopped.stderr);
    }
  });

  test('start.sh checks CACHE_EXPORTER_FLAGS before starting: a bad value or a web config that does not load starts nothing', async () => {
    const port = await freePort();
    writeFileSync(
      join(componentDir, 'conf', 'flags.json'),
      JSON.stringify({ listen: `127.0.0.1:${port}`, ensembleByName: { flags: [zk.address] } }),
    );
    const pidFile = join(componentDir, 'run', 'flags.pid');
    const badValue = await shWith({ CACHE_EXPORTER_FLAGS: '-qos-interval=30d' }, 'start.sh', 'flags');
    assert.notEqual(badValue.status, 0);
    assert.match(badValue.stderr, /-qos-interval: 30d is out of range \(100ms to 1d, or 0 to turn it off\)/);
    assert.doesNotMatch(badValue.stderr, /exited at start/, 'refused before it started');
    assert.ok(!existsSync(pidFile));
    const missingDash = await shWith({ CACHE_EXPORTER_FLAGS: 'qos-interval=10s' }, 'start.sh', 'flags');
    assert.notEqual(missingDash.status, 0);
    assert.match(missingDash.stderr, /unexpected argument "qos-interval=10s"/);
    assert.doesNotMatch(missingDash.stderr, /exited at start/, 'refused before it started');
    writeFileSync(join(componentDir, 'conf', 'web.yml'), 'basic_auth_users:\n  alice: not-a-hash\n');
    const badWeb = await shWith(
      { CACHE_EXPORTER_FLAGS: `-web.config.file=${join(componentDir, 'conf', 'web.yml')}` },
      'start.sh',
      'flags',
    );
    assert.notEqual(badWeb.status, 0);
    assert.match(badWeb.stderr, /web\.yml.*basic_auth_users.*not a bcrypt hash/);
    assert.doesNotMatch(badWeb.stderr, /exited at start/, 'refused before it started');
    assert.ok(!existsSync(pidFile));
  });

  test('start.sh refuses a listen port already in use, naming it and the config, and starts nothing', async () => {
    const { createServer } = await import('node:net');
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      writeFileSync(
        join(componentDir, 'conf', 'busy.json'),
        JSON.stringify({ listen: `127.0.0.1:${port}`, ensembleByName: { busy: [zk.address] } }),
      );
      const result = await sh('start.sh', 'busy');
      assert.equal(result.status, 1, result.stderr);
      assert.match(
        result.stderr,
        new RegExp(
          `cache_exporter busy: 127\\.0\\.0\\.1:${port} is already in use by another process; change listen in .*conf/busy\\.json`,
        ),
      );
      assert.ok(!existsSync(join(componentDir, 'run', 'busy.pid')));
    } finally {
      taken.close();
    }
  });

  test('start.sh refuses a missing or invalid config and starts nothing', async () => {
    const missing = await sh('start.sh', 'absent');
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /no config file .*conf\/absent\.json/);

    writeFileSync(join(componentDir, 'conf', 'broken.json'), JSON.stringify({ listen: ':1', ensembleByName: {} }));
    const broken = await sh('start.sh', 'broken');
    assert.notEqual(broken.status, 0);
    assert.match(broken.stderr, /broken\.json:\d+:\d+: ensembleByName: exactly one ensemble/);
    assert.ok(!existsSync(join(componentDir, 'run', 'broken.pid')));

    const usage = await sh('start.sh');
    assert.equal(usage.status, 2);
    assert.match(usage.stderr, /usage/);
  });

  test('-web.config.file turns on basic auth for every path, is read again at reload; SIGTERM exits 0', async () => {
    const webConfig = join(installDir, 'web.yml');
    writeFileSync(webConfig, `basic_auth_users:\n  prometheus: ${bcrypt.hashSync('s3cret', 4)}\n`);
    const exporter = await startExporter(
      { ensembleByName: { ens1: [zk.address] } },
      { flags: [`-web.config.file=${webConfig}`], waitReady: false },
    );
    const auth = { Authorization: `Basic ${Buffer.from('prometheus:s3cret').toString('base64')}` };
    await eventually(async () => {
      const response = await fetch(`${exporter.url}/-/ready`, { headers: auth });
      assert.equal(response.status, 200);
    });
    const anonymous = await fetch(`${exporter.url}/metrics`);
    assert.equal(anonymous.status, 401);
    assert.match(anonymous.headers.get('www-authenticate') ?? '', /^Basic/);
    const wrong = await fetch(`${exporter.url}/metrics`, {
      headers: { Authorization: `Basic ${Buffer.from('prometheus:nope').toString('base64')}` },
    });
    assert.equal(wrong.status, 401);
    const { status, samples } = await exporter.scrape('/metrics', auth);
    assert.equal(status, 200);
    assert.equal(valueOf(samples, 'arcus_up', { node: node.address }), 1);

    // A new password by SIGHUP: the old one stops working, no restart.
    writeFileSync(webConfig, `basic_auth_users:\n  prometheus: ${bcrypt.hashSync('n3w', 4)}\n`);
    exporter.process.kill('SIGHUP');
    const renewed = { Authorization: `Basic ${Buffer.from('prometheus:n3w').toString('base64')}` };
    await eventually(async () =>
      assert.equal((await fetch(`${exporter.url}/metrics`, { headers: renewed })).status, 200),
    );
    assert.equal((await fetch(`${exporter.url}/metrics`, { headers: auth })).status, 401);
    // A web config that does not parse is refused by POST /-/reload, naming the file; the running one stays.
    writeFileSync(webConfig, 'basic_auth_users: [\n');
    const refused = await fetch(`${exporter.url}/-/reload`, { method: 'POST', headers: renewed });
    assert.equal(refused.status, 400);
    const body = (await refused.json()) as { code: string; error: string };
    assert.equal(body.code, 'CACHEMON_WEB_CONFIG_INVALID');
    assert.match(body.error, /web\.yml:/);
    assert.equal((await fetch(`${exporter.url}/metrics`, { headers: renewed })).status, 200);
    assert.equal(
      valueOf((await exporter.scrape('/metrics', renewed)).samples, 'cachemon_config_last_reload_successful'),
      0,
    );
    assert.equal(await exporter.stop(), 0);
  });

  test('SIGTERM while a scrape with a long timeout waits for a hung node: the scrape is answered at once, then a clean exit', async () => {
    const exporter = await startExporter({ ensembleByName: { ens1: [zk.address] } });
    await eventually(async () =>
      assert.equal(valueOf((await exporter.scrape()).samples, 'arcus_up', { node: node.address }), 1),
    );
    node.setBehavior('hang');
    try {
      const asked = node.statsRequests;
      const scrape = exporter.scrape('/metrics', { 'X-Prometheus-Scrape-Timeout-Seconds': '30' });
      // The scrape waits for the hung node once the node has its request.
      await eventually(() => assert.ok(node.statsRequests > asked), { intervalMs: 20 });
      const stopped = exporter.stop();
      const { status, samples, ms } = await scrape;
      assert.equal(status, 200);
      assert.equal(valueOf(samples, 'arcus_up', { node: node.address }), 0);
      assert.ok(ms < 5000, `answered after ${ms} ms (the node's deadline was ~29.5 s away)`);
      assert.equal(await stopped, 0);
    } finally {
      node.setBehavior('normal');
    }
  });
});
