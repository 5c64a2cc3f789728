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
 * short-term store, downsampled into the long-term store, queried through the query proxy, and an
 * alert raised and resolved through the rule evaluator and the alert router.
 */
describe('the installed stack end to end', () => {
  let dir: string;
  let zk: ZooKeeperServer;
  let arcus: ArcusZk;
  let nodes: ArcusDouble[];
  let hook: Server;
  const alerts: Array<{ status: string; labels: Record<string, string> }> = [];
  const port: Record<string, number> = {};
  // Asynchronous: the ARCUS nodes and their ZooKeeper sessions live in this process and must keep answering.
  const sh = (component: string, script: string, ...args: string[]) => runScript(join(dir, component, script), args);
  const viaProxy = async (query: string): Promise<Series> => {
    await fetch(`http://127.0.0.1:${port['short']}/internal/force_flush`);
    await fetch(`http://127.0.0.1:${port['long']}/internal/force_flush`);
    const response = await fetch(`http://127.0.0.1:${port['proxy']}/api/v1/query`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ query }) });
    const body = (await response.json()) as { status: string; data: { result: Series } };
    assert.equal(body.status, 'success', JSON.stringify(body));
    return body.data.result;
  };

  before(async () => {
    dir = await tempDir('cachemon-e2e-');
    // Installed before any node starts: this one may block.
    const installed = spawnSync('bash', [join(STACK_DIR, 'install.sh')], { encoding: 'utf8', env: { ...process.env, INSTALL_DIR: dir }, timeout: 120_000 });
    assert.equal(installed.status, 0, installed.stderr);
    for (const name of ['short', 'long', 'ruler', 'router', 'hook', 'cache', 'coordination', 'host', 'topology', 'proxy']) port[name] = await freePort();

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
    if (dir) for (const [component, ...args] of [...startOrder('zk1')].reverse()) await sh(component, 'stop.sh', ...args);
    hook?.close();
    for (const node of nodes ?? []) await node.stop();
    await arcus?.close();
    await zk?.stop();
  });

  test('cache, prefix, coordination and host metrics reach the short-term store with their jobs and labels, queried through the proxy', async () => {
    await eventually(
      async () => {
        const up = await viaProxy('arcus_up{scrape="short"}');
        assert.deepEqual(up.map((s) => `${s.metric['job']}/${s.metric['ensemble']}/${s.metric['service_code']}/${s.metric['hostname']}=${s.value[1]}`).sort(), ['arcus/zk1/svc-a/localhost=1', 'arcus/zk1/svc-a/localhost=1', 'arcus/zk1/svc-b/localhost=1']);
        assert.ok((await viaProxy('arcus_prefix_items{scrape="short"}')).every((s) => s.metric['job'] === 'arcus_prefixes'));
        assert.ok((await viaProxy('arcus_prefix_items{scrape="short"}')).length > 0, 'prefix metrics');
        assert.deepEqual((await viaProxy('zk_up{scrape="short"}')).map((s) => `${s.metric['job']}/${s.metric['ensemble']}=${s.value[1]}`), ['zookeeper/zk1=1']);
        assert.deepEqual((await viaProxy('node_load1{scrape="short"}')).map((s) => `${s.metric['job']}/${s.metric['group']}/${s.metric['instance']}`), [`system_resource/host/localhost:${port['host']}`]);
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
  });

  test('downsampled series reach the long-term store with scrape="long", and the proxy routes to it', async () => {
    await eventually(
      async () => {
        const counts = await viaProxy('service_code:arcus_nodes:count{scrape="long", resolution="5m"}');
        assert.deepEqual(counts.map((s) => `${s.metric['ensemble']}/${s.metric['service_code']}=${s.value[1]}`).sort(), ['zk1/svc-a=2', 'zk1/svc-b=1']);
        assert.ok((await viaProxy('zk_host:zk_up:avg{scrape="long"}')).length > 0);
        assert.ok((await viaProxy('instance:node_load1:avg{scrape="long"}')).length > 0);
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    const response = await fetch(`http://127.0.0.1:${port['proxy']}/api/v1/query?query=${encodeURIComponent('service_code:arcus_nodes:count{scrape="long"}')}`);
    assert.equal(response.headers.get('x-cachemon-route'), 'single');
    assert.match(response.headers.get('server-timing') ?? '', /^g1;desc="group 1 \(scrape=long\)"/);
  });

  test('the topology provider answers the dashboards\' variables once the ensemble is added to its config and reloaded', async () => {
    addEnsembleToTopologyProvider(dir, 'zk1', [zk.address]);
    const reloaded = await fetch(`http://127.0.0.1:${port['topology']}/reload/config`, { method: 'POST' });
    assert.equal(reloaded.status, 200);
    assert.deepEqual(((await reloaded.json()) as { added: string[] }).added, ['zk1']);
    await eventually(async () => {
      const answer = await fetch(`http://127.0.0.1:${port['topology']}/variable`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ payload: { target: 'ensembles' } }) });
      assert.ok(((await answer.json()) as Array<{ __value: string }>).some((v) => v.__value === 'zk1'));
    });
    await eventually(async () => {
      const response = await fetch(`http://127.0.0.1:${port['topology']}/variable`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ payload: { target: 'nodes' } }) });
      const values = ((await response.json()) as Array<{ __value: string }>).map((v) => v.__value).sort();
      assert.deepEqual(values, nodes.map((n) => n.address).sort());
    });
    const hosts = await fetch(`http://127.0.0.1:${port['topology']}/variable`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ payload: { target: 'scrape' }, range: { from: new Date(Date.now() - 3600_000).toISOString(), to: new Date().toISOString() } }) });
    assert.deepEqual(((await hosts.json()) as Array<{ __value: string }>).map((v) => v.__value), ['short']);
  });

  test('a cache node that stops raises CacheNodeDown through the rule evaluator and alert router, resolved when it returns', async () => {
    const [victim] = nodes;
    await victim!.stop();
    await eventually(() => assert.ok(alerts.some((a) => a.labels['alertname'] === 'CacheNodeDown' && a.status === 'firing' && a.labels['node'] === victim!.address)), { timeoutMs: 60_000, intervalMs: 500 });
    const revived = await ArcusDouble.start({ port: Number(victim!.address.split(':')[1]) });
    nodes[0] = revived;
    await revived.register(arcus, { hostname: 'localhost' });
    await eventually(() => assert.ok(alerts.some((a) => a.labels['alertname'] === 'CacheNodeDown' && a.status === 'resolved' && a.labels['node'] === victim!.address)), { timeoutMs: 60_000, intervalMs: 500 });
  });

  test('procedure "collect only some service codes": serviceCodes in the cache exporter config, then its reload', async () => {
    const file = join(dir, 'cache_exporter/conf/zk1.json');
    writeFileSync(file, JSON.stringify({ ...(JSON.parse(readFileSync(file, 'utf8')) as object), serviceCodes: ['svc-a'] }));
    const reloaded = await fetch(`http://127.0.0.1:${port['cache']}/-/reload`, { method: 'POST' });
    assert.equal(reloaded.status, 200, await reloaded.text());
    await eventually(async () => {
      const text = await (await fetch(`http://127.0.0.1:${port['cache']}/metrics`)).text();
      const services = new Set([...text.matchAll(/^arcus_up\{[^}]*service_code="([^"]+)"/gm)].map((m) => m[1]));
      assert.deepEqual([...services], ['svc-a']);
    });
  });

  test('procedure "remove an ensemble": topology provider, target files and exporters, each taking effect', async () => {
    const config = join(dir, 'topology_provider/conf/config.json');
    writeFileSync(config, readFileSync(config, 'utf8').replace(/"zk1": \[[^\]]*\]/, ''));
    const reloaded = await fetch(`http://127.0.0.1:${port['topology']}/reload/config`, { method: 'POST' });
    assert.deepEqual(((await reloaded.json()) as { removed: string[] }).removed, ['zk1']);
    const ensembles = await fetch(`http://127.0.0.1:${port['topology']}/variable`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ payload: { target: 'ensembles' } }) });
    assert.deepEqual(await ensembles.json(), []);

    for (const file of ['cache_exporter', 'coordination_exporter', 'host_exporter']) writeFileSync(join(dir, `short_term_store/conf/exporter/${file}.yml`), '[]\n');
    assert.equal((await fetch(`http://127.0.0.1:${port['short']}/-/reload`, { method: 'POST' })).ok, true);
    await eventually(
      async () => {
        const targets = (await (await fetch(`http://127.0.0.1:${port['short']}/api/v1/targets`)).json()) as { data: { activeTargets: Array<{ labels: { job: string } }> } };
        assert.deepEqual(targets.data.activeTargets.map((t) => t.labels.job).sort(), ['meta-long', 'meta-short']);
      },
      { timeoutMs: 20_000 },
    );
    for (const component of ['cache_exporter', 'coordination_exporter']) {
      const stopped = await sh(component, 'stop.sh', 'zk1');
      assert.equal(stopped.status, 0, stopped.stderr);
      assert.match(stopped.stdout, new RegExp(`${component} zk1: stopped`));
    }
    await assert.rejects(fetch(`http://127.0.0.1:${port['cache']}/-/healthy`));
  });
});
