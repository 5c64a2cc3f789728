import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ArcusDouble,
  ArcusZk,
  eventually,
  freePort,
  startZooKeeper,
  startZooKeeperEnsemble,
  tempDir,
} from '@cachemon/testkit';
import type { ZooKeeperEnsemble, ZooKeeperServer } from '@cachemon/testkit';
import { cachemon, installStack, runScript } from '../../src/index.js';
import { addEnsembleToTopologyProvider, configureTree, startOrder } from '../../src/configure.js';
import type { StackPorts } from '../../src/configure.js';

type Series = Array<{ metric: Record<string, string>; value: [number, string] }>;

/**
 * The whole stack installed by stack/install.sh and started only by its own scripts, on a
 * ZooKeeper with two ARCUS nodes registered as ARCUS does: data followed from a cache node to the
 * short-term store, downsampled into the long-term store, queried through the query proxy, an
 * alert raised and resolved through the rule evaluator and the alert router, the spec's three
 * procedures performed by `cachemon`, and a store restart. Started and stopped by `cachemon`, which
 * runs the components' own scripts.
 */
describe('the installed stack end to end', () => {
  let dir: string;
  let zk: ZooKeeperServer;
  let arcus: ArcusZk;
  let zk2: ZooKeeperEnsemble | undefined;
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
    installStack(dir);
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

    const started = await cachemon(dir, ['start']);
    assert.equal(started.status, 0, `${started.stdout}${started.stderr}`);
  });

  after(async () => {
    if (dir) {
      await cachemon(dir, ['stop']);
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

  test('cachemon status: every component running and healthy, with its version, its loaded config and the store targets up', async () => {
    const status = await eventually(
      async () => {
        const result = await cachemon(dir, ['status', '--json']);
        assert.equal(result.status, 0, result.stdout + result.stderr);
        return (
          JSON.parse(result.stdout) as {
            instances: Array<{
              id: string;
              pid: number | null;
              healthy: boolean;
              version: string;
              config: string;
              targets?: Array<{ job: string; up: number; down: number }>;
            }>;
          }
        ).instances;
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    assert.deepEqual(
      status.map((s) => s.id),
      [
        'short_term_store:short',
        'short_term_store:long',
        'host_exporter',
        'cache_exporter:zk1',
        'coordination_exporter:zk1',
        'topology_provider',
        'query_proxy',
        'rule_evaluator',
        'alert_router',
      ],
    );
    for (const s of status) {
      assert.ok(s.pid !== null && s.healthy, `${s.id} healthy`);
      assert.match(s.version, /^v?\d+\.\d+/, `${s.id} version`);
      assert.equal(s.config, 'loaded', s.id);
    }
    const short = status.find((s) => s.id === 'short_term_store:short')!;
    assert.deepEqual(
      short.targets!.map((t) => `${t.job} ${t.up}/${t.down}`),
      ['arcus 1/0', 'arcus_prefixes 1/0', 'meta-long 1/0', 'meta-short 1/0', 'system_resource 1/0', 'zookeeper 1/0'],
    );
    const table = await cachemon(dir, ['status']);
    assert.match(table.stdout, /^COMPONENT +INSTANCE +PID +ADDRESS +HEALTH +VERSION +CONFIG$/m);
    assert.match(table.stdout, /^cache_exporter +zk1 +\d+ +127\.0\.0\.1:\d+ +healthy /m);
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
    const configOf = async () => {
      const result = await cachemon(dir, ['status', '--json', 'topology_provider']);
      return {
        status: result.status,
        config: (JSON.parse(result.stdout) as { instances: Array<{ config: string }> }).instances[0]!.config,
      };
    };
    assert.deepEqual(await configOf(), {
      status: 1,
      config: `edited, not reloaded: ${join(dir, 'topology_provider/conf/config.json')}`,
    });
    const reloaded = await fetch(`http://127.0.0.1:${port['topology']}/reload/config`, { method: 'POST' });
    assert.equal(reloaded.status, 200);
    assert.deepEqual(((await reloaded.json()) as { added: string[] }).added, ['zk1']);
    assert.deepEqual(await configOf(), { status: 0, config: 'loaded' });
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

  test('cachemon service-codes: the cache exporter collects only the service codes set, verified by its metrics', async () => {
    const collected = async () => {
      const text = await (await fetch(`http://127.0.0.1:${port['cache']}/metrics`)).text();
      return [...new Set([...text.matchAll(/^arcus_up\{[^}]*service_code="([^"]+)"/gm)].map((m) => m[1]))].sort();
    };
    assert.deepEqual(await collected(), ['svc-a', 'svc-b']);
    const narrowed = await cachemon(dir, ['service-codes', 'zk1', 'set', 'svc-a']);
    assert.equal(narrowed.status, 0, narrowed.stdout + narrowed.stderr);
    assert.match(narrowed.stderr, /ok: verify: cache_exporter:zk1 collects svc-a/);
    assert.deepEqual(await collected(), ['svc-a']);
    const conf = JSON.parse(readFileSync(join(dir, 'cache_exporter/conf/zk1.json'), 'utf8')) as {
      serviceCodes: string[];
    };
    assert.deepEqual(conf.serviceCodes, ['svc-a']);
    const unknown = await cachemon(dir, ['service-codes', 'zk1', 'remove', 'svc-x']);
    assert.equal(unknown.status, 1);
    assert.match(unknown.stderr, /not collected now: svc-x \(collected: svc-a\)/);
  });

  test("cachemon ensemble add: a second ZooKeeper's cache, prefix and coordination series arrive through the proxy, and the provider lists it", async () => {
    // The new ensemble: three ZooKeeper servers of its own, one ARCUS node of a service code of its own.
    const ensemble = await startZooKeeperEnsemble({ size: 3 });
    zk2 = ensemble;
    const registry = await ArcusZk.connect(ensemble.connectString);
    arcus2 = registry;
    await registry.createServiceCode('svc-c');
    const node = await ArcusDouble.start();
    nodes.push(node);
    await registry.mapServer(node.address, 'svc-c');
    await node.register(registry, { hostname: 'localhost' });
    node.populate([{ key: 'order:1' }]);
    port['cache2'] = await freePort();
    port['coordination2'] = await freePort();
    const args = ['ensemble', 'add', 'zk2', '--servers', ensemble.connectString, '--listen-host', '127.0.0.1'];
    const ports = ['--cache-port', String(port['cache2']), '--coordination-port', String(port['coordination2'])];

    const dry = await cachemon(dir, [...args, ...ports, '--dry-run']);
    assert.equal(dry.status, 0, dry.stderr);
    assert.match(dry.stdout, /\+\+\+ .*cache_exporter\/conf\/zk2\.json/);
    assert.match(dry.stdout, /^\+ {4}ensemble: zk2$/m);
    assert.match(dry.stdout, /--dry-run: nothing was changed/);
    assert.equal(existsSync(join(dir, 'cache_exporter/conf/zk2.json')), false);

    const added = await cachemon(dir, [...args, ...ports, '--wait', '90']);
    assert.equal(added.status, 0, added.stdout + added.stderr);
    await eventually(
      async () => {
        assert.deepEqual(
          (await viaProxy('arcus_up{scrape="short", ensemble="zk2"}')).map(
            (s) => `${s.metric['job']}/${s.metric['service_code']}/${s.metric['node']}=${s.value[1]}`,
          ),
          [`arcus/svc-c/${node.address}=1`],
        );
        assert.ok(
          (await viaProxy('arcus_prefix_items{scrape="short", ensemble="zk2"}')).some(
            (s) => s.metric['job'] === 'arcus_prefixes',
          ),
          'prefix metrics of zk2',
        );
        assert.deepEqual(
          (await viaProxy('zk_up{scrape="short", ensemble="zk2"}'))
            .map((s) => `${s.metric['zk_host']}=${s.value[1]}`)
            .sort(),
          ensemble.servers.map((s) => `${s.address}=1`).sort(),
        );
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    assert.deepEqual(await variable('ensembles'), ['zk1', 'zk2']);
    assert.ok((await variable('nodes')).includes(node.address));
    const listed = await cachemon(dir, ['ensemble', 'list', '--json']);
    const zk2Row = (JSON.parse(listed.stdout) as Array<{ name: string; cacheExporter: { running: boolean } }>).find(
      (r) => r.name === 'zk2',
    );
    assert.equal(zk2Row?.cacheExporter.running, true);
  });

  test('cachemon ensemble remove: only the second ensemble is collected after it, its exporters stopped', async () => {
    const removed = await cachemon(dir, ['ensemble', 'remove', 'zk1', '--wait', '60']);
    assert.equal(removed.status, 0, removed.stdout + removed.stderr);
    assert.deepEqual(await variable('ensembles'), ['zk2']);
    const targets = (await (await fetch(`http://127.0.0.1:${port['short']}/api/v1/targets`)).json()) as {
      data: { activeTargets: Array<{ labels: { job: string; instance: string } }> };
    };
    // The machine's host exporter stays: zk2's node runs there too.
    assert.deepEqual(targets.data.activeTargets.map((t) => `${t.labels.job} ${t.labels.instance}`).sort(), [
      `arcus 127.0.0.1:${port['cache2']}`,
      `arcus_prefixes 127.0.0.1:${port['cache2']}`,
      `meta-long 127.0.0.1:${port['long']}`,
      `meta-short 127.0.0.1:${port['short']}`,
      `system_resource localhost:${port['host']}`,
      `zookeeper 127.0.0.1:${port['coordination2']}`,
    ]);
    await assert.rejects(fetch(`http://127.0.0.1:${port['cache']}/-/healthy`));
    await assert.rejects(fetch(`http://127.0.0.1:${port['coordination']}/-/healthy`));
    assert.equal(existsSync(join(dir, 'cache_exporter/conf/zk1.json')), false);
    assert.equal((await fetch(`http://127.0.0.1:${port['cache2']}/-/healthy`)).status, 200);
    await eventually(async () => assert.deepEqual(await viaProxy('arcus_up{scrape="short", ensemble="zk1"}'), []), {
      timeoutMs: 30_000,
      intervalMs: 1000,
    });
  });

  test('a restart of the short-term store by cachemon loses no stored data', async () => {
    const stored = async () =>
      (await viaProxy('sum(count_over_time(arcus_up{scrape="short", ensemble="zk1"}[1h]))'))[0]?.value[1];
    const before = Number(await stored());
    assert.ok(before > 0, 'samples before the restart');
    const restarted = await cachemon(dir, ['restart', 'short_term_store:short']);
    assert.equal(restarted.status, 0, restarted.stdout + restarted.stderr);
    assert.match(
      restarted.stdout,
      /short_term_store:short: store short: stopped[\s\S]*short_term_store:short: .*started \(pid \d+\)/,
    );
    // zk1 is no longer scraped: every sample it has was written before the restart.
    await eventually(async () => assert.equal(Number(await stored()), before), { timeoutMs: 30_000, intervalMs: 500 });
  });

  test('cachemon stop: every component stopped, in the reverse order, nothing of the tree left running', async () => {
    const stopped = await cachemon(dir, ['stop']);
    assert.equal(stopped.status, 0, stopped.stdout + stopped.stderr);
    const order = [...stopped.stdout.matchAll(/^([a-z_]+)[:\s]/gm)].map((m) => m[1]);
    assert.deepEqual(
      [...new Set(order)],
      [
        'alert_router',
        'rule_evaluator',
        'query_proxy',
        'topology_provider',
        'coordination_exporter',
        'cache_exporter',
        'host_exporter',
        'short_term_store',
      ],
    );
    const status = await cachemon(dir, ['status', '--json']);
    assert.equal(status.status, 1);
    assert.ok(
      (JSON.parse(status.stdout) as { instances: Array<{ pid: number | null }> }).instances.every(
        (s) => s.pid === null,
      ),
    );
    const mine = readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(dir);
        } catch {
          return false;
        }
      });
    assert.deepEqual(mine, []);
  });
});
