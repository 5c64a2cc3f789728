import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ArcusDouble, ArcusZk, eventually, freePort, startZooKeeper, tempDir } from '@cachemon/testkit';
import type { ZooKeeperServer } from '@cachemon/testkit';
import { runScript, STACK_DIR } from '../../src/index.js';
import { addEnsembleToTopologyProvider, configureTree, startOrder } from '../../src/configure.js';
import type { StackPorts } from '../../src/configure.js';

type Series = Array<{ metric: Record<string, string>; value: [number, string] }>;

/**
 * The whole stack installed by stack/install.sh and started only by its own scripts, on a
 * ZooKeeper with two ARCUS nodes registered as ARCUS does: data followed from a cache node to the
 * short-term store, downsampled into the long-term store, queried through the query proxy, an
 * alert raised and resolved through the rule evaluator and the alert router, the spec's three
 * procedures performed as docs/operations.md describes them, and a store restart.
 */
describe('the installed stack end to end', () => {
  let dir: string;
  let zk: ZooKeeperServer;
  let arcus: ArcusZk;
  let zk2: ZooKeeperServer | undefined;
  let arcus2: ArcusZk | undefined;
  let nodes: ArcusDouble[];
  let hook: Server;
  const alerts: Array<{ status: string; labels: Record<string, string> }> = [];
  const port: Record<string, number> = {};
  // Asynchronous: the ARCUS nodes and their ZooKeeper sessions live in this process and must keep answering.
  const sh = (component: string, script: string, ...args: string[]) => runScript(join(dir, component, script), args);
  const viaProxy = async (query: string): Promise<Series> => {
    await fetch(`http://127.0.0.1:${port['short']}/internal/force_flush`);
    await fetch(`http://127.0.0.1:${port['long']}/internal/force_flush`);
    const response = await fetch(`http://127.0.0.1:${port['proxy']}/api/v1/query`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ query }),
    });
    const body = (await response.json()) as { status: string; data: { result: Series } };
    assert.equal(body.status, 'success', JSON.stringify(body));
    return body.data.result;
  };

  /** The topology provider's values of a variable query (sorted), for the range when given. */
  const variable = async (target: string, range?: { from: string; to: string }): Promise<string[]> => {
    const response = await fetch(`http://127.0.0.1:${port['topology']}/variable`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ payload: { target }, ...(range ? { range } : {}) }),
    });
    return ((await response.json()) as Array<{ __value: string }>).map((v) => v.__value).sort();
  };

  before(async () => {
    dir = await tempDir('cachemon-e2e-');
    // Installed before any node starts: this one may block.
    const installed = spawnSync('bash', [join(STACK_DIR, 'install.sh')], {
      encoding: 'utf8',
      env: { ...process.env, INSTALL_DIR: dir, DASHBOARD_SERVER_DOWNLOAD: '0' },
      timeout: 120_000,
    });
    assert.equal(installed.status, 0, installed.stderr);
    for (const name of [
      'short',
      'long',
      'ruler',
      'router',
      'hook',
      'cache',
      'coordination',
      'host',
      'topology',
      'proxy',
    ])
      port[name] = await freePort();

    zk = await startZooKeeper();
    arcus = await ArcusZk.connect(zk.address);
    await arcus.createServiceCode('svc-a');
    await arcus.createServiceCode('svc-b');
    nodes = [await ArcusDouble.start(), await ArcusDouble.start(), await ArcusDouble.start()];
    for (const [i, node] of nodes.entries()) {
      await arcus.mapServer(node.address, i < 2 ? 'svc-a' : 'svc-b');
      await node.register(arcus, { hostname: 'localhost' });
      node.populate([{ key: 'user:1' }, { key: 'session:1' }]);
    }

    hook = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        alerts.push(...(JSON.parse(body) as { alerts: typeof alerts }).alerts);
        res.end();
      });
    });
    await new Promise<void>((resolve) => hook.listen(port['hook'], '127.0.0.1', resolve));

    // The operator's edits, as docs/operations.md describes them (ports made free for the test,
    // intervals shortened so the test sees minutes of behaviour in seconds).
    configureTree(dir, {
      ports: port as unknown as StackPorts,
      host: '127.0.0.1',
      ensemble: 'zk1',
      zkServers: [zk.address],
      cacheHostname: 'localhost',
      webhookUrl: `http://127.0.0.1:${port['hook']}/`,
      fast: true,
    });

    for (const [component, ...args] of startOrder('zk1')) {
      const started = await sh(component, 'start.sh', ...args);
      assert.equal(started.status, 0, `${component}: ${started.stderr}${started.stdout}`);
    }
  });

  after(async () => {
    if (dir) {
      for (const component of ['cache_exporter', 'coordination_exporter']) await sh(component, 'stop.sh', 'zk2');
      for (const [component, ...args] of [...startOrder('zk1')].reverse()) await sh(component, 'stop.sh', ...args);
    }
    hook?.close();
    for (const node of nodes ?? []) await node.stop();
    await arcus?.close();
    await arcus2?.close();
    await zk?.stop();
    await zk2?.stop();
  });

  test('cache, prefix, coordination and host metrics reach the short-term store with their jobs and labels, queried through the proxy', async () => {
    await eventually(
      async () => {
        const up = await viaProxy('arcus_up{scrape="short"}');
        assert.deepEqual(
          up
            .map(
              (s) =>
                `${s.metric['job']}/${s.metric['ensemble']}/${s.metric['service_code']}/${s.metric['hostname']}=${s.value[1]}`,
            )
            .sort(),
          ['arcus/zk1/svc-a/localhost=1', 'arcus/zk1/svc-a/localhost=1', 'arcus/zk1/svc-b/localhost=1'],
        );
        assert.ok(
          (await viaProxy('arcus_prefix_items{scrape="short"}')).every((s) => s.metric['job'] === 'arcus_prefixes'),
        );
        assert.ok((await viaProxy('arcus_prefix_items{scrape="short"}')).length > 0, 'prefix metrics');
        assert.deepEqual(
          (await viaProxy('zk_up{scrape="short"}')).map(
            (s) => `${s.metric['job']}/${s.metric['ensemble']}=${s.value[1]}`,
          ),
          ['zookeeper/zk1=1'],
        );
        assert.deepEqual(
          (await viaProxy('node_load1{scrape="short"}')).map(
            (s) => `${s.metric['job']}/${s.metric['group']}/${s.metric['instance']}`,
          ),
          [`system_resource/host/localhost:${port['host']}`],
        );
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
  });

  test('downsampled series reach the long-term store with scrape="long", and the proxy routes to it', async () => {
    await eventually(
      async () => {
        const counts = await viaProxy('service_code:arcus_nodes:count{scrape="long", resolution="5m"}');
        assert.deepEqual(
          counts.map((s) => `${s.metric['ensemble']}/${s.metric['service_code']}=${s.value[1]}`).sort(),
          ['zk1/svc-a=2', 'zk1/svc-b=1'],
        );
        assert.ok((await viaProxy('zk_host:zk_up:avg{scrape="long"}')).length > 0);
        assert.ok((await viaProxy('instance:node_load1:avg{scrape="long"}')).length > 0);
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    const response = await fetch(
      `http://127.0.0.1:${port['proxy']}/api/v1/query?query=${encodeURIComponent('service_code:arcus_nodes:count{scrape="long"}')}`,
    );
    assert.equal(response.headers.get('x-cachemon-route'), 'single');
    assert.match(response.headers.get('server-timing') ?? '', /^g1;desc="group 1 \(scrape=long\)"/);
  });

  test("the topology provider answers the dashboards' variables once the ensemble is added to its config and reloaded", async () => {
    addEnsembleToTopologyProvider(dir, 'zk1', [zk.address]);
    const reloaded = await fetch(`http://127.0.0.1:${port['topology']}/reload/config`, { method: 'POST' });
    assert.equal(reloaded.status, 200);
    assert.deepEqual(((await reloaded.json()) as { added: string[] }).added, ['zk1']);
    await eventually(async () => assert.ok((await variable('ensembles')).includes('zk1')));
    await eventually(async () => assert.deepEqual(await variable('nodes'), nodes.map((n) => n.address).sort()));
    assert.deepEqual(
      await variable('scrape', { from: new Date(Date.now() - 3600_000).toISOString(), to: new Date().toISOString() }),
      ['short'],
    );
  });

  test('a cache node that stops raises CacheNodeDown through the rule evaluator and alert router, resolved when it returns', async () => {
    const [victim] = nodes;
    await victim!.stop();
    await eventually(
      () =>
        assert.ok(
          alerts.some(
            (a) =>
              a.labels['alertname'] === 'CacheNodeDown' &&
              a.status === 'firing' &&
              a.labels['node'] === victim!.address,
          ),
        ),
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const revived = await ArcusDouble.start({ port: Number(victim!.address.split(':')[1]) });
    nodes[0] = revived;
    await revived.register(arcus, { hostname: 'localhost' });
    await eventually(
      () =>
        assert.ok(
          alerts.some(
            (a) =>
              a.labels['alertname'] === 'CacheNodeDown' &&
              a.status === 'resolved' &&
              a.labels['node'] === victim!.address,
          ),
        ),
      { timeoutMs: 60_000, intervalMs: 500 },
    );
  });

  test('procedure "collect only some service codes": serviceCodes in the cache exporter config, then its reload', async () => {
    const file = join(dir, 'cache_exporter/conf/zk1.json');
    writeFileSync(
      file,
      JSON.stringify({ ...(JSON.parse(readFileSync(file, 'utf8')) as object), serviceCodes: ['svc-a'] }),
    );
    const reloaded = await fetch(`http://127.0.0.1:${port['cache']}/-/reload`, { method: 'POST' });
    assert.equal(reloaded.status, 200, await reloaded.text());
    await eventually(async () => {
      const text = await (await fetch(`http://127.0.0.1:${port['cache']}/metrics`)).text();
      const services = new Set([...text.matchAll(/^arcus_up\{[^}]*service_code="([^"]+)"/gm)].map((m) => m[1]));
      assert.deepEqual([...services], ['svc-a']);
    });
  });

  test('procedure "add an ensemble": a second ZooKeeper\'s exporters, target files and topology provider, each taking effect', async () => {
    // The new ensemble: its own ZooKeeper with one ARCUS node of a service code of its own.
    const server = await startZooKeeper();
    zk2 = server;
    const registry = await ArcusZk.connect(server.address);
    arcus2 = registry;
    await registry.createServiceCode('svc-c');
    const node = await ArcusDouble.start();
    nodes.push(node);
    await registry.mapServer(node.address, 'svc-c');
    await node.register(registry, { hostname: 'localhost' });
    port['cache2'] = await freePort();
    port['coordination2'] = await freePort();

    // 1. Cache exporter: the example copied, listen, ensembleByName and the log file edited.
    const example = readFileSync(join(dir, 'cache_exporter/conf/example.json'), 'utf8');
    writeFileSync(
      join(dir, 'cache_exporter/conf/zk2.json'),
      example
        .replace(/"listen": "[^"]*"/, `"listen": "127.0.0.1:${port['cache2']}"`)
        .replace(/"example": \[[^\]]*\]/, `"zk2": ["${server.address}"]`)
        .replace('log/example.log', 'log/zk2.log'),
    );
    const cache = await sh('cache_exporter', 'start.sh', 'zk2');
    assert.equal(cache.status, 0, cache.stderr);
    // 2. Coordination exporter: the example env with its port and servers.
    const env = readFileSync(join(dir, 'coordination_exporter/conf/example.env'), 'utf8');
    writeFileSync(
      join(dir, 'coordination_exporter/conf/zk2.env'),
      env
        .replace(/^LISTEN_PORT=.*/m, `LISTEN_PORT=${port['coordination2']}`)
        .replace(/^ZK_SERVERS=.*/m, `ZK_SERVERS=(${server.address})`),
    );
    const coordination = await sh('coordination_exporter', 'start.sh', 'zk2');
    assert.equal(coordination.status, 0, coordination.stderr);
    // (3. The host exporter of the machine already runs.)
    // 4. The store's target files gain the two exporters; then its reload.
    const targets = (file: string) => join(dir, `short_term_store/conf/exporter/${file}.yml`);
    writeFileSync(
      targets('cache_exporter'),
      `${readFileSync(targets('cache_exporter'), 'utf8')}- targets: ["127.0.0.1:${port['cache2']}"]\n`,
    );
    writeFileSync(
      targets('coordination_exporter'),
      `${readFileSync(targets('coordination_exporter'), 'utf8')}- targets: ["127.0.0.1:${port['coordination2']}"]\n  labels:\n    ensemble: zk2\n`,
    );
    assert.equal((await fetch(`http://127.0.0.1:${port['short']}/-/reload`, { method: 'POST' })).ok, true);
    await eventually(
      async () => {
        assert.deepEqual(
          (await viaProxy('arcus_up{scrape="short", ensemble="zk2"}')).map(
            (s) => `${s.metric['service_code']}/${s.metric['node']}=${s.value[1]}`,
          ),
          [`svc-c/${node.address}=1`],
        );
        assert.deepEqual(
          (await viaProxy('zk_up{scrape="short", ensemble="zk2"}')).map((s) => `${s.metric['zk_host']}=${s.value[1]}`),
          [`${server.address}=1`],
        );
      },
      { timeoutMs: 30_000, intervalMs: 1000 },
    );
    // 5. Topology provider: the ensemble added beside the first; then its reload.
    const config = join(dir, 'topology_provider/conf/config.json');
    writeFileSync(
      config,
      readFileSync(config, 'utf8').replace(/("zk1": \[[^\]]*\])/, `$1,\n    "zk2": ["${server.address}"]`),
    );
    const reloaded = await fetch(`http://127.0.0.1:${port['topology']}/reload/config`, { method: 'POST' });
    assert.deepEqual(((await reloaded.json()) as { added: string[] }).added, ['zk2']);
    await eventually(async () => {
      assert.deepEqual(await variable('ensembles'), ['zk1', 'zk2']);
      assert.ok((await variable('nodes')).includes(node.address));
    });
  });

  test('procedure "remove an ensemble": topology provider, target files and exporters, each taking effect', async () => {
    const config = join(dir, 'topology_provider/conf/config.json');
    writeFileSync(config, readFileSync(config, 'utf8').replace(/"zk1": \[[^\]]*\],\s*/, ''));
    const reloaded = await fetch(`http://127.0.0.1:${port['topology']}/reload/config`, { method: 'POST' });
    assert.deepEqual(((await reloaded.json()) as { removed: string[] }).removed, ['zk1']);
    assert.deepEqual(await variable('ensembles'), ['zk2']);

    // zk1's entries leave the cache and coordination exporter files; the machine's host exporter
    // stays, for zk2's node runs there too.
    const targets = (file: string) => join(dir, `short_term_store/conf/exporter/${file}.yml`);
    writeFileSync(
      targets('cache_exporter'),
      readFileSync(targets('cache_exporter'), 'utf8').replace(`- targets: ["127.0.0.1:${port['cache']}"]\n`, ''),
    );
    writeFileSync(
      targets('coordination_exporter'),
      readFileSync(targets('coordination_exporter'), 'utf8').replace(
        `- targets: ["127.0.0.1:${port['coordination']}"]\n  labels:\n    ensemble: zk1\n`,
        '',
      ),
    );
    assert.equal((await fetch(`http://127.0.0.1:${port['short']}/-/reload`, { method: 'POST' })).ok, true);
    await eventually(
      async () => {
        const targets = (await (await fetch(`http://127.0.0.1:${port['short']}/api/v1/targets`)).json()) as {
          data: { activeTargets: Array<{ labels: { job: string; instance: string } }> };
        };
        assert.deepEqual(targets.data.activeTargets.map((t) => `${t.labels.job} ${t.labels.instance}`).sort(), [
          `arcus 127.0.0.1:${port['cache2']}`,
          `arcus_prefixes 127.0.0.1:${port['cache2']}`,
          `meta-long 127.0.0.1:${port['long']}`,
          `meta-short 127.0.0.1:${port['short']}`,
          `system_resource localhost:${port['host']}`,
          `zookeeper 127.0.0.1:${port['coordination2']}`,
        ]);
      },
      { timeoutMs: 20_000 },
    );
    for (const component of ['cache_exporter', 'coordination_exporter']) {
      const stopped = await sh(component, 'stop.sh', 'zk1');
      assert.equal(stopped.status, 0, stopped.stderr);
      assert.match(stopped.stdout, new RegExp(`${component} zk1: stopped`));
    }
    await assert.rejects(fetch(`http://127.0.0.1:${port['cache']}/-/healthy`));
    // The other ensemble is still collected.
    assert.equal((await fetch(`http://127.0.0.1:${port['cache2']}/-/healthy`)).status, 200);
  });

  test('a restart of the short-term store by its own scripts loses no stored data', async () => {
    const stored = async () =>
      (await viaProxy('sum(count_over_time(arcus_up{scrape="short", ensemble="zk1"}[1h]))'))[0]?.value[1];
    const before = Number(await stored());
    assert.ok(before > 0, 'samples before the restart');
    const stopped = await sh('short_term_store', 'stop.sh', 'short');
    assert.equal(stopped.status, 0, stopped.stderr);
    await assert.rejects(fetch(`http://127.0.0.1:${port['short']}/health`));
    const started = await sh('short_term_store', 'start.sh', 'short');
    assert.equal(started.status, 0, started.stderr);
    // zk1 is no longer scraped: every sample it has was written before the restart.
    await eventually(async () => assert.equal(Number(await stored()), before), { timeoutMs: 30_000, intervalMs: 500 });
  });
});
