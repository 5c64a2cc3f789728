import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import {
  ArcusDouble,
  ArcusZk,
  assertConfigReloadExposed,
  freePort,
  startMemcached,
  startZooKeeper,
  tempDir,
} from '@cachemon/testkit';
import type { Memcached, NodeRegistration, ZooKeeperServer } from '@cachemon/testkit';
import { CACHE_EXPORTER_BIN, eventually, select, startExporter, valueOf } from './support/exporter.js';
import type { RunningExporter } from './support/exporter.js';

/** Sends raw commands to a node and waits for `replies` reply lines ending the exchange. */
async function traffic(address: string, commands: string): Promise<void> {
  const [host, port] = address.split(':') as [string, string];
  await new Promise<void>((resolve, reject) => {
    const socket = connect(Number(port), host, () => socket.end(commands));
    socket.on('data', () => undefined);
    socket.on('close', () => resolve());
    socket.on('error', reject);
  });
}

describe('cache exporter config reload, prefixes and QoS', () => {
  let zk: ZooKeeperServer;
  let arcus: ArcusZk;
  let app: ArcusDouble; // service code "test", detail on, prefixes app/user/<null>
  let demo: ArcusDouble; // service code "demo"
  let crowded: ArcusDouble; // service code "crowded", more prefixes than max_stats_prefixes
  let master: ArcusDouble; // replication service code "repl"
  let memcached: Memcached;
  let memcachedRegistration: NodeRegistration;
  let exporter: RunningExporter;
  const zkConfig = () => ({ ensembleByName: { zk1: [zk.address] } });

  before(async () => {
    zk = await startZooKeeper();
    arcus = await ArcusZk.connect(zk.address);
    for (const svc of ['test', 'demo', 'crowded']) await arcus.createServiceCode(svc);
    await arcus.createServiceCode('repl', { repl: true });
    app = await ArcusDouble.start({ detailEnabled: true });
    demo = await ArcusDouble.start();
    crowded = await ArcusDouble.start({ maxStatsPrefixes: 3 });
    master = await ArcusDouble.start();
    memcached = await startMemcached();
    await arcus.mapServer(app.address, 'test');
    await arcus.mapServer(memcached.address, 'test');
    await arcus.mapServer(demo.address, 'demo');
    await arcus.mapServer(crowded.address, 'crowded');
    await arcus.mapServer(master.address, 'repl', { repl: { group: 'g1', peer: '127.0.0.1:1' } });
    await app.register(arcus);
    await demo.register(arcus);
    await crowded.register(arcus);
    await master.register(arcus, { role: 'M' });
    memcachedRegistration = await arcus.registerNode(memcached.address, 'test');
    app.populate([
      { key: 'app:k1' },
      { key: 'app:l1', type: 'list' },
      { key: 'user:s1', type: 'set' },
      { key: 'plain' },
    ]);
    crowded.populate(['a', 'b', 'c', 'd', 'e'].map((p) => ({ key: `${p}:k` })));
    await traffic(app.address, 'get app:k1\r\nget app:k1\r\nget app:missing\r\nset user:x 0 0 1\r\nx\r\nquit\r\n');
    exporter = await startExporter({ ...zkConfig(), serviceCodes: ['test', 'repl', 'crowded'] });
  });

  after(async () => {
    await exporter?.stop();
    await memcachedRegistration?.unregister();
    for (const d of [app, demo, crowded, master]) await d?.stop();
    await memcached?.stop();
    await arcus?.close();
    await zk?.stop();
  });

  test('serviceCodes limits collection; replication nodes carry group and role', async () => {
    const { samples } = await exporter.scrape();
    assert.deepEqual([...new Set(select(samples, 'arcus_up').map((s) => s.labels['service_code']))].sort(), [
      'crowded',
      'repl',
      'test',
    ]);
    const repl = select(samples, 'arcus_up', { service_code: 'repl' });
    assert.equal(repl.length, 1);
    assert.equal(repl[0]!.labels['group'], 'g1');
    assert.equal(repl[0]!.labels['role'], 'master');
    assert.equal(repl[0]!.value, 1);
  });

  test('prefix statistics: all prefixes by default, summed per service code', async () => {
    const { samples, status } = await exporter.scrape('/metrics/prefixes');
    assert.equal(status, 200);
    const svc = { service_code: 'test', ensemble: 'zk1' };
    assert.equal(valueOf(samples, 'arcus_prefix_items', { ...svc, prefix: 'app', type: 'kv' }), 1);
    assert.equal(valueOf(samples, 'arcus_prefix_items', { ...svc, prefix: 'app', type: 'list' }), 1);
    assert.equal(valueOf(samples, 'arcus_prefix_items', { ...svc, prefix: 'user', type: 'set' }), 1);
    assert.equal(valueOf(samples, 'arcus_prefix_items', { ...svc, prefix: '<null>', type: 'kv' }), 1);
    assert.equal(valueOf(samples, 'arcus_prefix_commands_total', { ...svc, prefix: 'app', command: 'get' }), 3);
    assert.equal(valueOf(samples, 'arcus_prefix_command_hits_total', { ...svc, prefix: 'app', command: 'get' }), 2);
    // The memcached node answers stats detail dump but has no stats prefixes: ok, not failed.
    assert.equal(valueOf(samples, 'arcus_prefix_nodes', { ...svc, state: 'ok' }), 2);
    assert.equal(valueOf(samples, 'arcus_prefix_nodes', { ...svc, state: 'failed' }), 0);
    assert.equal(select(samples, 'arcus_prefix_items', { node: app.address }).length, 0);
  });

  test('a node with more prefixes than max_stats_prefixes is reported limited; named prefixes still work', async () => {
    const before = await exporter.scrape('/metrics/prefixes');
    assert.equal(valueOf(before.samples, 'arcus_prefix_nodes', { service_code: 'crowded', state: 'limited' }), 1);
    assert.equal(select(before.samples, 'arcus_prefix_items', { service_code: 'crowded' }).length, 0);
    assert.match(exporter.output(), /more prefixes than its max_stats_prefixes/);

    exporter.writeConfig({
      ...zkConfig(),
      serviceCodes: ['test', 'repl', 'crowded'],
      serviceCodesToCollectPrefixes: { crowded: ['a', 'c'] },
    });
    const response = await fetch(`${exporter.url}/-/reload`, { method: 'POST' });
    assert.equal(response.status, 200);
    const { samples } = await exporter.scrape('/metrics/prefixes');
    assert.deepEqual(
      select(samples, 'arcus_prefix_items', { service_code: 'crowded', type: 'kv' })
        .map((s) => s.labels['prefix'])
        .sort(),
      ['a', 'c'],
    );
    assert.equal(valueOf(samples, 'arcus_prefix_nodes', { service_code: 'crowded', state: 'ok' }), 1);
  });

  test('serviceCodesToCollectPrefixes: a list selects, [] turns off, and it overrides collectPrefixes', async () => {
    exporter.writeConfig({
      ...zkConfig(),
      serviceCodes: ['test', 'repl', 'crowded'],
      collectPrefixes: false,
      serviceCodesToCollectPrefixes: { test: ['user'], crowded: [] },
    });
    assert.equal((await fetch(`${exporter.url}/-/reload`, { method: 'POST' })).status, 200);
    const { samples } = await exporter.scrape('/metrics/prefixes');
    assert.deepEqual(
      [...new Set(select(samples, 'arcus_prefix_items', { service_code: 'test' }).map((s) => s.labels['prefix']))],
      ['user'],
    );
    assert.equal(valueOf(samples, 'arcus_prefix_collection_enabled', { service_code: 'crowded' }), 0);
    assert.equal(
      valueOf(samples, 'arcus_prefix_collection_enabled', { service_code: 'repl' }),
      0,
      'collectPrefixes false applies to unlisted codes',
    );
    assert.equal(select(samples, 'arcus_prefix_items', { service_code: 'repl' }).length, 0);

    // ["*"]: every prefix of that code, though collectPrefixes is false for the others.
    exporter.writeConfig({
      ...zkConfig(),
      serviceCodes: ['test', 'repl'],
      collectPrefixes: false,
      serviceCodesToCollectPrefixes: { test: ['*'] },
    });
    assert.equal((await fetch(`${exporter.url}/-/reload`, { method: 'POST' })).status, 200);
    const all = (await exporter.scrape('/metrics/prefixes')).samples;
    const prefixes = new Set(
      select(all, 'arcus_prefix_items', { service_code: 'test' }).map((s) => s.labels['prefix']),
    );
    for (const prefix of ['app', 'user', '<null>'])
      assert.ok(prefixes.has(prefix), `${prefix} in ${[...prefixes].join(', ')}`);
    assert.equal(valueOf(all, 'arcus_prefix_collection_enabled', { service_code: 'test' }), 1);
    assert.equal(valueOf(all, 'arcus_prefix_collection_enabled', { service_code: 'repl' }), 0);

    // collectPrefixes true, with [] for one code: that one off, the others on.
    exporter.writeConfig({
      ...zkConfig(),
      serviceCodes: ['test', 'repl'],
      collectPrefixes: true,
      serviceCodesToCollectPrefixes: { test: [] },
    });
    assert.equal((await fetch(`${exporter.url}/-/reload`, { method: 'POST' })).status, 200);
    const some = (await exporter.scrape('/metrics/prefixes')).samples;
    assert.equal(valueOf(some, 'arcus_prefix_collection_enabled', { service_code: 'test' }), 0);
    assert.equal(select(some, 'arcus_prefix_items', { service_code: 'test' }).length, 0);
    assert.equal(valueOf(some, 'arcus_prefix_collection_enabled', { service_code: 'repl' }), 1);
  });

  test('a reload says which changes wait for a restart, against what runs, until they are undone', async () => {
    const reload = async (config: object): Promise<string[]> => {
      exporter.writeConfig(config);
      const response = await fetch(`${exporter.url}/-/reload`, { method: 'POST' });
      assert.equal(response.status, 200);
      return ((await response.json()) as { restartNeeded: string[] }).restartNeeded;
    };
    const base = { ...zkConfig(), serviceCodes: ['test', 'repl', 'crowded'] };
    const moved = { ...base, log: { filename: 'elsewhere.log' } };
    assert.deepEqual(await reload(moved), ['log (except level)']);
    assert.deepEqual(await reload(moved), ['log (except level)'], 'still not applied');
    assert.deepEqual(await reload({ ...moved, log: { ...moved.log, level: 'error' } }), ['log (except level)']);
    assert.deepEqual(await reload(base), [], 'back to what runs');
  });

  test('an invalid config on reload is refused with a JSON error and the running one keeps collecting', async () => {
    exporter.writeConfig({ listen: '127.0.0.1:1', ensembleByName: { a: ['h:1'], b: ['h:2'] } });
    const response = await fetch(`${exporter.url}/-/reload`, { method: 'POST' });
    assert.equal(response.status, 400);
    const body = (await response.json()) as { status: string; code: string; error: string };
    assert.equal(body.status, 'error');
    assert.equal(body.code, 'CACHEMON_CONFIG_INVALID');
    assert.match(body.error, /exporter\.json:\d+:\d+: ensembleByName: exactly one ensemble/);
    const { samples } = await exporter.scrape();
    assert.equal(valueOf(samples, 'cachemon_config_last_reload_successful'), 0);
    assert.equal(valueOf(samples, 'arcus_up', { node: app.address }), 1);

    // By SIGHUP: refused and logged once (the signal handler does not log it a second time).
    const refusals = () => exporter.output().match(/configuration reload refused/g)?.length ?? 0;
    const before = refusals();
    exporter.process.kill('SIGHUP');
    await eventually(async () => assert.equal(refusals(), before + 1));
    // A second SIGHUP's reload starts only once the first one's handling has ended: by its
    // refusal, whatever the first logs has been logged.
    exporter.process.kill('SIGHUP');
    await eventually(async () => assert.equal(refusals(), before + 2));
    assert.doesNotMatch(exporter.output(), /reload failed/);
  });

  test('/metrics names the config file and the hash of the content running, replaced on reload, kept when refused', async () => {
    const own = await startExporter({ ...zkConfig(), serviceCodes: ['test'] });
    try {
      await assertConfigReloadExposed({
        configFile: own.configFile,
        scrape: async () => (await own.scrape()).text,
        reload: async () => (await fetch(`${own.url}/-/reload`, { method: 'POST' })).status,
        changed: JSON.stringify({ listen: new URL(own.url).host, ...zkConfig(), serviceCodes: ['test', 'demo'] }),
        invalid: JSON.stringify({ listen: new URL(own.url).host, ...zkConfig(), serviceCodes: 'test' }),
      });
    } finally {
      await own.stop();
    }
  });

  test('SIGHUP reloads: a new service code filter applies without restart; a code not in the ensemble is warned about', async () => {
    exporter.writeConfig({ ...zkConfig(), serviceCodes: ['demo', 'dmeo'] });
    exporter.process.kill('SIGHUP');
    await eventually(async () => {
      const { samples } = await exporter.scrape();
      assert.deepEqual(
        select(samples, 'arcus_up').map((s) => s.labels['node']),
        [demo.address],
      );
      assert.equal(valueOf(samples, 'cachemon_config_last_reload_successful'), 1);
      assert.match(exporter.output(), /"missing":\["dmeo"\].*service codes in serviceCodes are not in the ensemble/);
    });
  });

  test('an empty serviceCodes list is refused (it would collect nothing), naming what to do', async () => {
    exporter.writeConfig({ ...zkConfig(), serviceCodes: [] });
    const response = await fetch(`${exporter.url}/-/reload`, { method: 'POST' });
    assert.equal(response.status, 400);
    assert.match(
      ((await response.json()) as { error: string }).error,
      /serviceCodes: an empty list would collect nothing: leave serviceCodes out to collect every service code/,
    );
  });

  test('simpleQos false adds the list, set and b+tree probes', async () => {
    exporter.writeConfig({ ...zkConfig(), serviceCodes: ['test'], simpleQos: false });
    assert.equal((await fetch(`${exporter.url}/-/reload`, { method: 'POST' })).status, 200);
    await eventually(async () => {
      const { samples } = await exporter.scrape();
      for (const probe of [
        'kv_set',
        'kv_get',
        'lop_insert',
        'lop_get',
        'lop_delete',
        'sop_insert',
        'sop_exist',
        'sop_delete',
        'bop_insert',
        'bop_get',
        'bop_delete',
      ]) {
        assert.equal(valueOf(samples, 'arcus_qos_success', { node: app.address, probe }), 1, probe);
      }
      // Plain memcached has no collections: those probes fail, the kv ones do not.
      assert.equal(valueOf(samples, 'arcus_qos_success', { node: memcached.address, probe: 'lop_insert' }), 0);
      assert.equal(valueOf(samples, 'arcus_qos_success', { node: memcached.address, probe: 'kv_get' }), 1);
      assert.equal(valueOf(samples, 'arcus_up', { node: memcached.address }), 1);
    });
  });

  test("a reload that renames the ensemble relabels the node series, the exporter's own and its log lines", async () => {
    const logStart = exporter.output().length;
    exporter.writeConfig({ ensembleByName: { renamed: [zk.address] }, serviceCodes: ['test'], log: { level: 'info' } });
    assert.equal((await fetch(`${exporter.url}/-/reload`, { method: 'POST' })).status, 200);
    // The lines the reload logged name the new ensemble, once each.
    const lines = exporter
      .output()
      .slice(logStart)
      .split('\n')
      .filter((line) => line.startsWith('{'));
    const reloaded = lines.find((line) => line.includes('"configuration reloaded"'));
    assert.ok(reloaded, lines.join('\n'));
    assert.equal((JSON.parse(reloaded) as { ensemble?: string }).ensemble, 'renamed');
    for (const line of lines) assert.equal(line.split('"ensemble":').length - 1, 1, line);
    await eventually(async () => {
      const { samples } = await exporter.scrape();
      assert.equal(valueOf(samples, 'arcus_up', { node: app.address, ensemble: 'renamed' }), 1);
      const own = samples.filter((s) => s.name.startsWith('cachemon_'));
      assert.ok(own.some((s) => s.name === 'cachemon_zookeeper_connected'));
      for (const s of own) assert.equal(s.labels['ensemble'], 'renamed', `${s.name} ${JSON.stringify(s.labels)}`);
      assert.deepEqual(
        samples.filter((s) => s.labels['ensemble'] === 'zk1'),
        [],
      );
    });
  });

  test('a reload to other ensemble servers serves the current topology until theirs is read; servers that never answer leave it in place', async () => {
    const reload = async (config: object): Promise<void> => {
      exporter.writeConfig(config);
      assert.equal((await fetch(`${exporter.url}/-/reload`, { method: 'POST' })).status, 200);
    };
    await reload({ ensembleByName: { zk1: [zk.address] }, serviceCodes: ['test'] });
    await eventually(async () =>
      assert.equal(valueOf((await exporter.scrape()).samples, 'arcus_up', { node: app.address, ensemble: 'zk1' }), 1),
    );

    // A server list nothing answers at: a valid config, so the reload succeeds, but the nodes stay.
    const nowhere = `127.0.0.1:${await freePort()}`;
    await reload({ ensembleByName: { zk1: [nowhere] }, serviceCodes: ['test'] });
    for (let i = 0; i < 3; i++) {
      const { samples } = await exporter.scrape();
      assert.equal(valueOf(samples, 'arcus_up', { node: app.address, ensemble: 'zk1' }), 1);
      assert.equal(valueOf(samples, 'cachemon_ensemble_switch_pending'), 1);
      assert.equal(valueOf(samples, 'cachemon_zookeeper_connected'), 1, 'the session of the servers still read');
      assert.equal(valueOf(samples, 'cachemon_config_last_reload_successful'), 1);
    }

    // Renamed too, the same servers still unread: both endpoints keep the name of the topology served.
    await reload({ ensembleByName: { zk9: [nowhere] }, serviceCodes: ['test'] });
    const pendingMetrics = (await exporter.scrape()).samples;
    assert.equal(valueOf(pendingMetrics, 'arcus_up', { node: app.address, ensemble: 'zk1' }), 1);
    assert.equal(valueOf(pendingMetrics, 'cachemon_ensemble_switch_pending', { ensemble: 'zk1' }), 1);
    const pendingPrefixes = (await exporter.scrape('/metrics/prefixes')).samples;
    assert.ok(pendingPrefixes.length > 0);
    assert.deepEqual([...new Set(pendingPrefixes.map((s) => s.labels['ensemble']))], ['zk1']);

    // A list with a live server and a new name: every scrape has the node, under the old name until
    // the new servers have been read, then under the new one.
    await reload({ ensembleByName: { zk2: [nowhere, zk.address] }, serviceCodes: ['test'] });
    const until = Date.now() + 60_000;
    for (;;) {
      const { samples } = await exporter.scrape();
      const up = select(samples, 'arcus_up', { node: app.address });
      assert.equal(up.length, 1);
      assert.equal(up[0]!.value, 1);
      if (valueOf(samples, 'cachemon_ensemble_switch_pending') === 0) {
        assert.equal(up[0]!.labels['ensemble'], 'zk2');
        assert.equal(valueOf(samples, 'cachemon_zookeeper_connected'), 1);
        break;
      }
      assert.equal(up[0]!.labels['ensemble'], 'zk1');
      assert.ok(Date.now() < until, 'the new servers were never read');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });

  test('started with servers nothing answers at, not ready; a reload with the right servers makes it ready', async () => {
    const nowhere = `127.0.0.1:${await freePort()}`;
    const wrong = await startExporter(
      { ensembleByName: { zk1: [nowhere] }, serviceCodes: ['test'] },
      { waitReady: false },
    );
    try {
      await eventually(async () => assert.equal((await fetch(`${wrong.url}/-/healthy`)).status, 200));
      assert.equal((await fetch(`${wrong.url}/-/ready`)).status, 503);
      wrong.writeConfig({ ensembleByName: { zk1: [zk.address] }, serviceCodes: ['test'] });
      assert.equal((await fetch(`${wrong.url}/-/reload`, { method: 'POST' })).status, 200);
      await eventually(async () => {
        assert.equal((await fetch(`${wrong.url}/-/ready`)).status, 200);
        assert.equal(valueOf((await wrong.scrape()).samples, 'arcus_up', { node: app.address }), 1);
      });
    } finally {
      await wrong.stop();
    }
  });

  test('a replication node that stops is reported down with its group and the role it last registered with', async () => {
    exporter.writeConfig({ ...zkConfig(), serviceCodes: ['repl'] });
    assert.equal((await fetch(`${exporter.url}/-/reload`, { method: 'POST' })).status, 200);
    await eventually(async () =>
      assert.equal(
        valueOf((await exporter.scrape('/metrics')).samples, 'arcus_up', { service_code: 'repl', role: 'master' }),
        1,
      ),
    );
    await master.stop();
    const down = await eventually(async () => {
      const { samples } = await exporter.scrape('/metrics');
      // Down because its registration is gone (not merely refusing connections before the watch fires).
      assert.equal(valueOf(samples, 'arcus_node_registered', { service_code: 'repl' }), 0);
      const repl = select(samples, 'arcus_up', { service_code: 'repl' });
      assert.equal(repl.length, 1);
      assert.equal(repl[0]!.value, 0);
      return repl[0]!;
    });
    // The same series as while it was up: dashboards and alerts follow it across the outage.
    assert.equal(down.labels['group'], 'g1');
    assert.equal(down.labels['role'], 'master');
    assert.equal(down.labels['hostname'], 'localhost');
  });
});

describe('cache exporter start-up errors', () => {
  const run = (args: string[]) =>
    spawnSync(process.execPath, [CACHE_EXPORTER_BIN, ...args], { encoding: 'utf8', timeout: 20_000 });

  test('an invalid config at start exits non-zero naming the file, key and reason', async () => {
    const dir = await tempDir('cache-exporter-bad-');
    const file = join(dir, 'bad.json');
    writeFileSync(
      file,
      JSON.stringify({ listen: ':9151', ensembleByName: { a: ['h:1'], b: ['h:2'] }, serviceCodes: 'x' }),
    );
    const result = run([`-config-file=${file}`]);
    assert.equal(result.status, 1);
    assert.match(result.stderr, /bad\.json:\d+:\d+: ensembleByName: exactly one ensemble/);
    assert.match(result.stderr, /bad\.json:\d+:\d+: serviceCodes: /);
    assert.match(result.stderr, /CACHEMON_CONFIG_INVALID/);
  });

  test('flags: --config-file and -config-file both work with -check-config; a missing flag or unknown flag is refused', async () => {
    const dir = await tempDir('cache-exporter-flags-');
    const file = join(dir, 'ok.json');
    writeFileSync(file, JSON.stringify({ listen: ':9151', ensembleByName: { zk: ['127.0.0.1:2181'] } }));
    for (const flag of [`-config-file=${file}`, `--config-file=${file}`]) {
      const ok = run([flag, '-check-config']);
      assert.equal(ok.status, 0, ok.stderr);
      assert.match(ok.stdout, /valid \(ensemble zk, listen :9151\)/);
    }
    const missing = run([]);
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /-config-file=<path> is required/);
    const unknown = run(['-no-such-flag']);
    assert.notEqual(unknown.status, 0);
    assert.match(unknown.stderr, /no-such-flag/);
  });
});
