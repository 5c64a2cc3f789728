import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { join } from 'node:path';
import { ArcusDouble, ArcusZk, eventually, freePort, startZooKeeper, tempDir } from '@cachemon/testkit';
import type { ZooKeeperServer } from '@cachemon/testkit';
import { cachemon, configureTree, freeStackPorts, installStack, STACK_DIR, withoutEnsemble } from '@cachemon/stack';
import type { StackPorts } from '@cachemon/stack';

/** Every file of the folders the procedures change, with its bytes. */
function snapshot(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const folder of [
    'cache_exporter/conf',
    'coordination_exporter/conf',
    'short_term_store/conf/exporter',
    'topology_provider/conf',
  ])
    for (const f of readdirSync(join(dir, folder)).sort())
      files.set(`${folder}/${f}`, readFileSync(join(dir, folder, f)).toString('base64'));
  return files;
}

/** Exporters running in the tree (they run in their component's folder). */
function exportersRunning(dir: string): string[] {
  const folders = [join(dir, 'cache_exporter'), join(dir, 'coordination_exporter')];
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return folders.includes(readlinkSync(`/proc/${p}/cwd`));
      } catch {
        return false;
      }
    });
}

const listen = (port: number): Promise<Server> =>
  new Promise((resolve) => {
    const server = createServer();
    server.listen(port, '0.0.0.0', () => resolve(server));
  });

/**
 * The procedures' failure paths with real faults, on an installed tree with the real short-term
 * store and topology provider: each failing command names its step and leaves every file byte for
 * byte as before and no process behind; and two commands at once take turns.
 */
describe('cachemon procedures: rollback on real faults, and commands taking turns', () => {
  let dir: string;
  let zk: ZooKeeperServer;
  let arcus: ArcusZk;
  let node: ArcusDouble;
  const port: Record<string, number> = {};

  const add = (name: string, ...extra: string[]) =>
    cachemon(dir, [
      'ensemble',
      'add',
      name,
      '--servers',
      zk.address,
      '--listen-host',
      '127.0.0.1',
      '--wait',
      '60',
      ...extra,
    ]);

  /** Runs a command that must fail, and checks it changed nothing. */
  async function failsCleanly(
    run: () => Promise<{ status: number | null; stderr: string }>,
    step: RegExp,
    reason: RegExp,
  ) {
    const before = snapshot(dir);
    const result = await run();
    assert.equal(result.status, 1, result.stderr);
    assert.match(result.stderr, step);
    assert.match(result.stderr, reason);
    assert.match(result.stderr, /every file is as it was before, and nothing this command started is running/);
    assert.deepEqual(snapshot(dir), before);
    assert.deepEqual(exportersRunning(dir), []);
    assert.equal(existsSync(join(dir, 'cache_exporter/run/zk9.pid')), false);
    assert.equal(existsSync(join(dir, 'coordination_exporter/run/zk9.pid')), false);
  }

  before(async () => {
    dir = await tempDir('cachemon-procedures-');
    installStack(dir);
    Object.assign(port, await freeStackPorts());
    zk = await startZooKeeper();
    arcus = await ArcusZk.connect(zk.address);
    await arcus.createServiceCode('svc-x');
    node = await ArcusDouble.start();
    await arcus.mapServer(node.address, 'svc-x');
    await node.register(arcus, { hostname: 'localhost' });
    configureTree(dir, {
      ports: port as unknown as StackPorts,
      host: '127.0.0.1',
      ensemble: 'zk1',
      zkServers: [zk.address],
      cacheHostname: 'localhost',
      webhookUrl: 'http://127.0.0.1:9/',
      fast: true,
    });
    // No ensemble yet: the shipped target files and no exporter configs.
    withoutEnsemble(dir, 'zk1', STACK_DIR);
    const started = await cachemon(dir, ['start', 'short_term_store:short', 'topology_provider']);
    assert.equal(started.status, 0, started.stdout + started.stderr);
  });

  after(async () => {
    if (dir) await cachemon(dir, ['stop']);
    await node?.stop();
    await arcus?.close();
    await zk?.stop();
  });

  test('status: a scrape config edited and not reloaded is named, and loaded again after the reload', async () => {
    const file = join(dir, 'short_term_store/conf/scrape.yml');
    const configOf = async () => {
      const result = await cachemon(dir, ['status', '--json', 'short_term_store:short']);
      return (JSON.parse(result.stdout) as { instances: Array<{ config: string }> }).instances[0]!.config;
    };
    assert.equal(await configOf(), 'loaded');
    const text = readFileSync(file, 'utf8');
    writeFileSync(file, text.replace('job_name: zookeeper\n', 'job_name: zookeeper\n    honor_labels: true\n'));
    try {
      assert.equal(await configOf(), `edited, not reloaded: ${file}`);
      assert.ok((await fetch(`http://127.0.0.1:${port['short']}/-/reload`, { method: 'POST' })).ok);
      await eventually(async () => assert.equal(await configOf(), 'loaded'));
    } finally {
      writeFileSync(file, text);
      await fetch(`http://127.0.0.1:${port['short']}/-/reload`, { method: 'POST' });
    }
  });

  test('the coordination servers unreachable: refused before anything changes', async () => {
    const closed = await freePort();
    await failsCleanly(
      () => cachemon(dir, ['ensemble', 'add', 'zk9', '--servers', `127.0.0.1:${closed}`, '--listen-host', '127.0.0.1']),
      /failed at step "plan"/,
      new RegExp(`no coordination server accepts connections: 127\\.0\\.0\\.1:${closed}`),
    );
  });

  test('a target file edited by hand into invalid YAML beforehand: refused, naming the file', async () => {
    const file = join(dir, 'short_term_store/conf/exporter/cache_exporter.yml');
    const shipped = readFileSync(file, 'utf8');
    writeFileSync(file, `${shipped}- targets: ["127.0.0.1:1"\n`);
    try {
      await failsCleanly(() => add('zk9'), /failed at step "plan"/, /cache_exporter\.yml: not valid YAML/);
    } finally {
      writeFileSync(file, shipped);
    }
  });

  test('the chosen port taken between planning and start: the started cache exporter is stopped and its config removed', async () => {
    const coordinationPort = await freePort();
    let blocker: Server | undefined;
    // Taken once the cache exporter's config is written, i.e. after planning chose the port.
    const taking = eventually(
      async () => {
        assert.ok(existsSync(join(dir, 'cache_exporter/conf/zk9.json')));
        blocker = await listen(coordinationPort);
      },
      { timeoutMs: 60_000, intervalMs: 5 },
    );
    try {
      await failsCleanly(
        () => add('zk9', '--coordination-port', String(coordinationPort)),
        /failed at step "start coordination_exporter:zk9"/,
        new RegExp(`0\\.0\\.0\\.0:${coordinationPort} is already in use`),
      );
      await taking;
    } finally {
      blocker?.close();
    }
    const result = await add('zk9', '--coordination-port', String(coordinationPort), '--dry-run');
    assert.equal(result.status, 0, 'the same command plans again once the port is free');
  });

  test('the short-term store down at its reload: exporters stopped, configs and target files restored', async () => {
    const stopped = await cachemon(dir, ['stop', 'short_term_store:short']);
    assert.equal(stopped.status, 0, stopped.stderr);
    try {
      await failsCleanly(
        () => add('zk9'),
        /failed at step "add the targets to the short-term store and reload it"/,
        /POST http:\/\/127\.0\.0\.1:\d+\/-\/reload: connection refused/,
      );
    } finally {
      const started = await cachemon(dir, ['start', 'short_term_store:short']);
      assert.equal(started.status, 0, started.stderr);
    }
  });

  test('two ensemble add commands at once both succeed, one after the other; the target files hold both', async () => {
    const [a, b] = await Promise.all([add('zk2'), add('zk3')]);
    assert.equal(a.status, 0, a.stderr);
    assert.equal(b.status, 0, b.stderr);
    assert.match(a.stderr + b.stderr, /waiting for another cachemon command to finish/);
    const coordination = readFileSync(join(dir, 'short_term_store/conf/exporter/coordination_exporter.yml'), 'utf8');
    assert.match(coordination, /^ {4}ensemble: zk2$/m);
    assert.match(coordination, /^ {4}ensemble: zk3$/m);
    assert.match(coordination, /^# Coordination exporters \(one per ensemble\)/, 'the comments stay');
    const cache = readFileSync(join(dir, 'short_term_store/conf/exporter/cache_exporter.yml'), 'utf8');
    assert.equal([...cache.matchAll(/^- targets: \["127\.0\.0\.1:\d+"\]$/gm)].length, 2);
    const listed = JSON.parse((await cachemon(dir, ['ensemble', 'list', '--json'])).stdout) as Array<{
      name: string;
      cacheExporter: { address: string; running: boolean; scraped: string };
    }>;
    const rows = listed.filter((r) => r.name === 'zk2' || r.name === 'zk3');
    assert.equal(rows.length, 2);
    assert.notEqual(rows[0]!.cacheExporter.address, rows[1]!.cacheExporter.address, 'each its own port');
    for (const r of rows)
      assert.ok(r.cacheExporter.running && /arcus up/.test(r.cacheExporter.scraped), JSON.stringify(r));

    for (const name of ['zk2', 'zk3']) {
      const removed = await cachemon(dir, ['ensemble', 'remove', name]);
      assert.equal(removed.status, 0, removed.stderr);
    }
    assert.equal(
      readFileSync(join(dir, 'short_term_store/conf/exporter/coordination_exporter.yml'), 'utf8'),
      readFileSync(join(STACK_DIR, 'short_term_store/conf/exporter/coordination_exporter.yml'), 'utf8'),
      'removing both gives back the shipped file',
    );
    assert.deepEqual(exportersRunning(dir), []);
  });
});
