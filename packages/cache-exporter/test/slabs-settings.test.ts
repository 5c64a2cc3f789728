import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { ArcusNodeClient } from '@cachemon/arcus';
import type { StatsReply } from '@cachemon/arcus';
import { ArcusDouble, ArcusZk, startMemcached, startZooKeeper } from '@cachemon/testkit';
import type { Memcached, NodeRegistration, Sample, ZooKeeperServer } from '@cachemon/testkit';
import { BOOLEAN_WORDS, SETTINGS, SLAB_CLASS_FIELDS, SLAB_TOTALS, TEXT_SETTINGS } from '../src/metrics/catalog.js';
import { eventually, select, startExporter, valueOf } from './support/exporter.js';
import type { RunningExporter } from './support/exporter.js';

/**
 * `stats slabs` and `stats settings` of ARCUS doubles and a real memcached, read by the exporter
 * as operators run it: every figure of the replies in a gauge of the same value, the per-class
 * switch, and promtool's verdict on the live output.
 */
describe('slab and settings metrics', () => {
  let zk: ZooKeeperServer;
  let arcus: ArcusZk;
  let double: ArcusDouble;
  let memcached: Memcached;
  let memcachedRegistration: NodeRegistration;
  let exporter: RunningExporter;
  const clients: ArcusNodeClient[] = [];
  const config = (slabClasses: boolean) => ({ ensembleByName: { zk1: [zk.address] }, slabClasses });

  before(async () => {
    zk = await startZooKeeper();
    arcus = await ArcusZk.connect(zk.address);
    await arcus.createServiceCode('test');
    // No heartbeat timer: its `set arcus:zk-ping` would move the small-memory figures between two reads.
    double = await ArcusDouble.start({ heartbeatIntervalMs: 0 });
    memcached = await startMemcached();
    await arcus.mapServer(double.address, 'test');
    await arcus.mapServer(memcached.address, 'test');
    await double.register(arcus);
    memcachedRegistration = await arcus.registerNode(memcached.address, 'test');
    // Items of several sizes: small-memory slots and more than one slab class.
    double.populate([
      { key: 'app:small' },
      { key: 'app:mid', bytes: 3000 },
      { key: 'app:big', bytes: 400_000 },
      { key: 'app:list', type: 'list' },
    ]);
    const client = new ArcusNodeClient(memcached.address);
    clients.push(client);
    for (const bytes of [10, 3000, 40_000]) {
      const reply = await client.connection.request(`set k${bytes} 0 0 ${bytes}\r\n${'x'.repeat(bytes)}`, {
        deadline: Date.now() + 2000,
        reply: 'line',
      });
      assert.equal(reply.trim(), 'STORED');
    }
    // QoS probes off: their items would move the figures between the exporter's read and ours.
    exporter = await startExporter(config(false), { flags: ['-qos-interval=0'] });
  });

  after(async () => {
    for (const client of clients) client.close();
    await exporter?.stop();
    await memcachedRegistration?.unregister();
    await double?.stop();
    await memcached?.stop();
    await arcus?.close();
    await zk?.stop();
  });

  async function ask(address: string, command: 'stats' | 'slabs' | 'settings' | 'zookeeper'): Promise<StatsReply> {
    const client = new ArcusNodeClient(address);
    clients.push(client);
    try {
      const deadline = Date.now() + 2000;
      if (command === 'stats') return await client.stats(deadline);
      if (command === 'slabs') return await client.statsSlabs(deadline);
      if (command === 'settings') return await client.statsSettings(deadline);
      return await client.statsZookeeper(deadline);
    } finally {
      client.close();
    }
  }

  /** Scrapes until every node's settings are in (they are read on the first scrape, then every 30 s). */
  async function scrapeSettled(): Promise<Sample[]> {
    return eventually(async () => {
      const { samples } = await exporter.scrape();
      for (const node of [double.address, memcached.address])
        assert.equal(valueOf(samples, 'arcus_max_connections', { node }) !== undefined, true, `${node} settings`);
      return samples;
    });
  }

  const nodeSeries = (samples: Sample[], node: string) => samples.filter((s) => s.labels['node'] === node);

  test('every node total of stats slabs is a gauge with the reply’s value, on ARCUS and memcached', async () => {
    for (const node of [double.address, memcached.address]) {
      await eventually(async () => {
        const samples = await scrapeSettled();
        const reply = await ask(node, 'slabs');
        const totals = reply.filter(([name]) => !/^\d/.test(name));
        assert.ok(totals.length > 0, 'the reply has totals');
        for (const [name, value] of totals) {
          const family = SLAB_TOTALS.get(name);
          const metric = family
            ? valueOf(samples, family.name, { node })
            : valueOf(samples, 'arcus_slab_stat', { node, field: name });
          assert.equal(metric, Number(value), `${node} ${name}`);
        }
        // Per-class series are off by default.
        assert.equal(
          nodeSeries(samples, node).filter((s) => s.labels['slab_class'] !== undefined).length,
          0,
          'no per-class series',
        );
      });
    }
    const samples = await scrapeSettled();
    const reply = new Map(await ask(double.address, 'slabs'));
    assert.equal(
      valueOf(samples, 'arcus_sm_space_shortage_level', { node: double.address }),
      Number(reply.get('SM:space_shortage_level')),
    );
    assert.equal(valueOf(samples, 'arcus_slab_memory_limit_bytes', { node: double.address }), 64 * 1024 * 1024);
  });

  test('slabClasses adds one series per numeric per-class line: 9 per active class on ARCUS', async () => {
    const before = await scrapeSettled();
    exporter.writeConfig(config(true));
    assert.equal((await fetch(`${exporter.url}/-/reload`, { method: 'POST' })).status, 200);
    try {
      for (const node of [double.address, memcached.address]) {
        await eventually(async () => {
          const samples = await scrapeSettled();
          const reply = await ask(node, 'slabs');
          const perClass = reply.filter(([name, value]) => /^\d+:/.test(name) && /^-?\d+(\.\d+)?$/.test(value));
          assert.equal(
            nodeSeries(samples, node).length - nodeSeries(before, node).length,
            perClass.length,
            `${node}: series added`,
          );
          for (const [name, value] of perClass) {
            const [slabClass, field] = name.split(':') as [string, string];
            const family = SLAB_CLASS_FIELDS.get(field);
            const metric = family
              ? valueOf(samples, family.name, { node, slab_class: slabClass })
              : valueOf(samples, 'arcus_slab_class_stat', { node, slab_class: slabClass, field });
            assert.equal(metric, Number(value), `${node} ${name}`);
          }
          if (node === double.address) {
            const active = Number(new Map(reply).get('active_slabs'));
            assert.ok(active >= 2, 'several slab classes are active');
            assert.equal(perClass.length, SLAB_CLASS_FIELDS.size * active);
          }
        });
      }
    } finally {
      exporter.writeConfig(config(false));
      assert.equal((await fetch(`${exporter.url}/-/reload`, { method: 'POST' })).status, 200);
    }
  });

  test('every numeric or yes/no stats settings field is a gauge, the text fields labels of arcus_settings_info', async () => {
    const samples = await scrapeSettled();
    for (const node of [double.address, memcached.address]) {
      const reply = await ask(node, 'settings');
      const info = select(samples, 'arcus_settings_info').filter((s) => s.labels['node'] === node);
      assert.equal(info.length, 1, `${node}: one info series`);
      let texts = 0;
      for (const [name, raw] of reply) {
        const rule = SETTINGS.get(name);
        if (rule) {
          const labels = rule.label ? { node, [rule.label[0]]: rule.label[1] } : { node };
          assert.equal(valueOf(samples, rule.family.name, labels), rule.parse(raw), `${node} ${name}`);
          continue;
        }
        const numeric = !TEXT_SETTINGS.has(name) && (BOOLEAN_WORDS.has(raw) || /^-?\d+(\.\d+)?$/.test(raw));
        if (numeric) {
          assert.equal(
            valueOf(samples, 'arcus_setting', { node, field: name }),
            BOOLEAN_WORDS.get(raw) ?? Number(raw),
            `${node} ${name}`,
          );
        } else if (/^[a-z_][a-z0-9_]*$/.test(name)) {
          assert.equal(info[0]!.labels[name], raw, `${node} ${name}`);
          texts++;
        }
      }
      assert.ok(texts > 0, `${node}: text fields`);
    }
    // Every ARCUS field has a metric of its own.
    assert.deepEqual(
      select(samples, 'arcus_setting').filter((s) => s.labels['node'] === double.address),
      [],
    );
  });

  test('the ZooKeeper client library version of an ARCUS node is in arcus_zookeeper_client_info', async () => {
    const samples = await scrapeSettled();
    const version = new Map(await ask(double.address, 'zookeeper')).get('zk_libversion');
    assert.ok(version);
    assert.equal(valueOf(samples, 'arcus_zookeeper_client_info', { node: double.address, version }), 1);
    assert.equal(
      select(samples, 'arcus_zookeeper_client_info').filter((s) => s.labels['node'] === memcached.address).length,
      0,
      'memcached has no stats zookeeper',
    );
  });

  test('the pointer size is in bytes', async () => {
    const samples = await scrapeSettled();
    const stats = new Map(await ask(double.address, 'stats'));
    assert.equal(
      valueOf(samples, 'arcus_pointer_size_bytes', { node: double.address }),
      Number(stats.get('pointer_size')) / 8,
    );
    assert.equal(select(samples, 'arcus_pointer_size_bits').length, 0);
  });

  for (const slabClasses of [false, true]) {
    test(`promtool check metrics finds nothing on /metrics and /metrics/prefixes (slabClasses ${slabClasses})`, async () => {
      exporter.writeConfig(config(slabClasses));
      assert.equal((await fetch(`${exporter.url}/-/reload`, { method: 'POST' })).status, 200);
      try {
        const samples = await eventually(async () => {
          const all = await scrapeSettled();
          assert.equal(select(all, 'arcus_slab_chunk_size_bytes').length > 0, slabClasses);
          return all;
        });
        assert.ok(select(samples, 'arcus_sm_space_shortage_level').length > 0);
        for (const path of ['/metrics', '/metrics/prefixes']) {
          const { status, text } = await exporter.scrape(path);
          assert.equal(status, 200);
          assert.deepEqual(await promtool(text), { code: 0, output: '' }, path);
        }
      } finally {
        exporter.writeConfig(config(false));
        assert.equal((await fetch(`${exporter.url}/-/reload`, { method: 'POST' })).status, 200);
      }
    });
  }
});

/** `promtool check metrics` on an exposition: its exit code and what it printed. */
function promtool(text: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile('promtool', ['check', 'metrics'], { timeout: 30_000 }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') return reject(err);
      resolve({ code: typeof err?.code === 'number' ? err.code : 0, output: `${stdout}${stderr}` });
    });
    child.stdin!.end(text);
  });
}
