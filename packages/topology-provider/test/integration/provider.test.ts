import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadWebConfig } from '@cachemon/core';
import {
  ArcusZk,
  assertConfigReloadExposed,
  eventually,
  freePort,
  parseExposition,
  startZooKeeper,
  tempDir,
  valueOf,
} from '@cachemon/testkit';
import type { NodeRegistration, ZooKeeperServer } from '@cachemon/testkit';
import type { Harness } from './support.js';
import { pluginRange, startHarness, tableResolver } from './support.js';

const DAY = 24 * 3600 * 1000;

/**
 * The provider against two real ZooKeeper servers holding the ARCUS layout, and an ensemble that
 * never answers. Requests are shaped as the JSON datasource 0.6.5 sends them.
 */
describe('topology provider against real ZooKeeper', () => {
  let zkOne: ZooKeeperServer;
  let zkTwo: ZooKeeperServer;
  let one: ArcusZk;
  let two: ArcusZk;
  const registrations: NodeRegistration[] = [];
  let provider: Harness;
  let deadPort: number;
  let now = Date.UTC(2026, 10, 23, 12, 0, 0);
  const resolver = tableResolver({
    'cache-a1': ['127.0.1.1'],
    'cache-a2': ['127.0.9.9'], // registered as 127.0.1.2: a mismatch
    'cache-b1': ['127.0.1.3'],
    'repl-m': ['127.0.2.1'],
    'repl-s': ['127.0.2.2'],
    'cache-x1': ['127.0.3.1'],
    'cache-new': ['127.0.1.9'],
    'zk-two.test': ['127.0.0.1'],
    // 'nowhere' (a node's hostname) does not resolve
  });

  const register = async (
    zk: ArcusZk,
    address: string,
    svc: string,
    hostname: string,
    repl?: { group: string; role: 'M' | 'S' },
  ) => {
    const registration = await zk.registerNode(address, svc, {
      hostname,
      ...(repl ? { repl } : {}),
      sessionTimeoutMs: 4000,
    });
    registrations.push(registration);
    return registration;
  };

  before(async () => {
    [zkOne, zkTwo] = await Promise.all([startZooKeeper(), startZooKeeper()]);
    [one, two] = await Promise.all([ArcusZk.connect(zkOne.address), ArcusZk.connect(zkTwo.address)]);
    for (const svc of ['svc-a', 'svc-b', 'hidden']) await one.createServiceCode(svc);
    await one.createServiceCode('svc-r', { repl: true });
    await one.mapServer('127.0.1.1:11211', 'svc-a');
    await one.mapServer('127.0.1.2:11211', 'svc-a');
    await one.mapServer('127.0.1.4:11211', 'svc-a'); // configured, never started: down
    await one.mapServer('127.0.1.3:11211', 'svc-b');
    await register(one, '127.0.1.1:11211', 'svc-a', 'cache-a1');
    await register(one, '127.0.1.2:11211', 'svc-a', 'cache-a2');
    await register(one, '127.0.1.3:11211', 'svc-b', 'cache-b1');
    await register(one, '127.0.1.5:11211', 'svc-b', 'nowhere');
    await register(one, '127.0.1.6:11211', 'hidden', 'cache-a1');
    await register(one, '127.0.2.1:11211', 'svc-r', 'repl-m', { group: 'g1', role: 'M' });
    await register(one, '127.0.2.2:11211', 'svc-r', 'repl-s', { group: 'g1', role: 'S' });
    await two.createServiceCode('svc-x');
    await register(two, '127.0.3.1:11211', 'svc-x', 'cache-x1');
    deadPort = await freePort();
    provider = await startHarness(
      {
        ensembleByName: { one: [zkOne.address], two: `zk-two.test:${zkTwo.port}`, gone: [`127.0.0.1:${deadPort}`] },
        serviceCodesByEnsembleName: { one: ['svc-a', 'svc-b', 'svc-r'] },
        log: { level: 'info' },
      },
      { resolver, now: () => now },
    );
    await eventually(async () => {
      assert.deepEqual(await provider.variable({ target: 'service_codes ensemble=(one|two)' }), [
        'svc-a',
        'svc-b',
        'svc-r',
        'svc-x',
      ]);
    });
  });

  after(async () => {
    await provider?.close();
    for (const r of registrations) await r.unregister();
    await one?.close();
    await two?.close();
    await zkOne?.stop();
    await zkTwo?.stop();
  });

  test("GET / answers 200 for the datasource test, with each ensemble's state", async () => {
    const response = await fetch(provider.url + '/', { headers: { 'Content-Type': 'application/json' } });
    assert.equal(response.status, 200);
    const body = (await response.json()) as { ensembles: Array<{ name: string; topology: string }> };
    assert.deepEqual(
      body.ensembles.map((e) => [e.name, e.topology]),
      [
        ['one', 'current'],
        ['two', 'current'],
        ['gone', 'unavailable'],
      ],
    );
  });

  test('every variable query, as a plain string target', async () => {
    const { status, body } = await provider.post('/variable', {
      payload: { target: 'ensembles' },
      range: pluginRange(now - 6 * 3600e3, now),
    });
    assert.equal(status, 200);
    assert.deepEqual(body, [
      { __text: 'one', __value: 'one' },
      { __text: 'two', __value: 'two' },
      { __text: 'gone (unavailable)', __value: 'gone' },
    ]);
    assert.deepEqual(
      await provider.variable({ target: 'service_codes ensemble=one' }),
      ['svc-a', 'svc-b', 'svc-r'],
      'serviceCodesByEnsembleName hides "hidden"',
    );
    assert.deepEqual(
      await provider.variable({ target: 'service_codes ensemble=two' }),
      ['svc-x'],
      'no entry: every service code',
    );
    assert.deepEqual(await provider.variable({ target: 'nodes ensemble=one service_code=svc-a' }), [
      '127.0.1.1:11211',
      '127.0.1.2:11211',
      '127.0.1.4:11211',
    ]);
    assert.deepEqual(await provider.variable({ target: 'nodes ensemble=one service_code=svc-a state=live' }), [
      '127.0.1.1:11211',
      '127.0.1.2:11211',
    ]);
    assert.deepEqual(await provider.variable({ target: 'hostnames ensemble=one service_code=(svc-a|svc-b)' }), [
      'cache-a1',
      'cache-a2',
      'cache-b1',
      'nowhere',
    ]);
    assert.deepEqual(await provider.variable({ target: 'host_instances ensemble=one service_code=svc-a' }), [
      'cache-a1:9100',
      'cache-a2:9100',
    ]);
    assert.deepEqual(await provider.variable({ target: `zk_servers ensemble=one` }), [zkOne.address]);
    assert.deepEqual(
      await provider.variable({ target: `zk_servers ensemble=two` }),
      [`127.0.0.1:${zkTwo.port}`],
      'a domain is resolved to its addresses',
    );
    assert.deepEqual(await provider.variable({ target: 'groups ensemble=one service_code=svc-r' }), ['g1']);
    assert.deepEqual(await provider.variable({ target: 'roles ensemble=one service_code=svc-r' }), ['master', 'slave']);
    assert.deepEqual(await provider.variable({ target: 'nodes ensemble=one service_code=svc-r role=master' }), [
      '127.0.2.1:11211',
    ]);
    assert.deepEqual(await provider.variable({ target: 'scrape' }, { from: now - 3600e3, to: now }), ['short']);
  });

  test('raw JSON payloads with multi-value variables as arrays, and regex-formatted string targets', async () => {
    assert.deepEqual(
      await provider.variable({ target: 'nodes', ensemble: 'one', service_code: ['svc-b', 'svc-r'], state: 'live' }),
      ['127.0.1.3:11211', '127.0.1.5:11211', '127.0.2.1:11211', '127.0.2.2:11211'],
    );
    assert.deepEqual(
      await provider.variable({
        target: 'host_instances',
        ensemble: ['one', 'two'],
        node: ['127.0.1.1:11211', '127.0.3.1:11211'],
        port: '9200',
      }),
      ['cache-a1:9200', 'cache-x1:9200'],
    );
    // What the plugin makes of `nodes ensemble=$ensemble node=$node` with two nodes selected.
    assert.deepEqual(
      await provider.variable({ target: 'hostnames ensemble=one node=(127\\.0\\.1\\.1:11211|127\\.0\\.1\\.3:11211)' }),
      ['cache-a1', 'cache-b1'],
    );
    // "All" with a custom all value.
    assert.deepEqual(await provider.variable({ target: 'service_codes', ensemble: '.*' }), [
      'svc-a',
      'svc-b',
      'svc-r',
      'svc-x',
    ]);
  });

  test('scrape switches from short to long at exactly rawRetention (default 14d)', async () => {
    const at = (ago: number) => provider.variable({ target: 'scrape' }, { from: now - ago, to: now });
    assert.deepEqual(await at(14 * DAY - 1000), ['short']);
    assert.deepEqual(await at(14 * DAY), ['short']);
    assert.deepEqual(await at(14 * DAY + 1), ['long']);
    assert.deepEqual(await at(90 * DAY), ['long']);
    now += 1000; // the clock moves; the same range start is now past the retention
    const from = now - 1000 - 14 * DAY;
    assert.deepEqual(await provider.variable({ target: 'scrape' }, { from, to: now }), ['long']);
  });

  test('requests are answered from memory: no ZooKeeper read per request', async () => {
    const reads = async () =>
      valueOf(
        parseExposition(await (await fetch(provider.url + '/metrics')).text()),
        'cachemon_zookeeper_requests_total',
        { ensemble: 'one' },
      );
    const before = await reads();
    assert.ok(before !== undefined && before > 0, 'the watcher has read the ensemble');
    for (let i = 0; i < 50; i++) {
      await provider.variable({ target: 'nodes ensemble=one' });
      await provider.post('/query', {
        range: pluginRange(now - 3600e3, now),
        targets: [{ refId: 'A', target: 'overview ensemble=one' }],
      });
    }
    assert.equal(await reads(), before);
  });

  test('a node joining and leaving is reflected without restart', async () => {
    await one.mapServer('127.0.1.9:11211', 'svc-a');
    const joined = await register(one, '127.0.1.9:11211', 'svc-a', 'cache-new');
    await eventually(async () => {
      assert.deepEqual(await provider.variable({ target: 'nodes ensemble=one service_code=svc-a state=live' }), [
        '127.0.1.1:11211',
        '127.0.1.2:11211',
        '127.0.1.9:11211',
      ]);
    });
    assert.deepEqual(await provider.variable({ target: 'host_instances ensemble=one service_code=svc-a' }), [
      'cache-a1:9100',
      'cache-a2:9100',
      'cache-new:9100',
    ]);
    await joined.unregister();
    await eventually(async () => {
      assert.deepEqual(await provider.variable({ target: 'nodes ensemble=one service_code=svc-a state=down' }), [
        '127.0.1.4:11211',
        '127.0.1.9:11211',
      ]);
    });
    // Still configured, so still listed (down) with the hostname it had.
    const { body } = await provider.post('/query', {
      range: pluginRange(now - 3600e3, now),
      targets: [{ refId: 'T', target: 'overview ensemble=one node=127\\.0\\.1\\.9:11211' }],
    });
    assert.deepEqual((body as Array<{ rows: unknown[] }>)[0]!.rows, [
      ['one', 'svc-a', '127.0.1.9:11211', 'cache-new', 'down', '', '', 'current'],
    ]);
  });

  test('/query: tables with refIds, hidden targets skipped, node counts as time series, ad-hoc filters', async () => {
    const { status, body } = await provider.post('/query', {
      app: 'dashboard',
      range: pluginRange(now - 3600e3, now),
      rangeRaw: { from: 'now-1h', to: 'now' },
      interval: '30s',
      intervalMs: 30000,
      maxDataPoints: 1000,
      targets: [
        {
          refId: 'A',
          target: 'service_code_summary ensemble=one',
          datasource: { type: 'simpod-json-datasource', uid: 'x' },
          editorMode: 'code',
          payload: {},
        },
        { refId: 'B', target: 'overview', payload: { ensemble: ['one'], service_code: 'svc-r' }, editorMode: 'code' },
        { refId: 'C', target: 'nodes', hide: true },
        { refId: 'D', target: 'node_counts ensemble=two' },
        { refId: 'E', target: 'overview', payload: { ensemble: '(one|two)' }, editorMode: 'builder' },
      ],
      scopedVars: { __interval: { text: '30s', value: '30s' } },
      filters: [{ key: 'state', operator: '=', value: 'live', condition: '' }],
    });
    assert.equal(status, 200, JSON.stringify(body));
    const frames = body as Array<{
      refId: string;
      type?: string;
      columns?: Array<{ text: string }>;
      rows?: unknown[][];
      target?: string;
      datapoints?: number[][];
    }>;
    assert.deepEqual(
      frames.map((f) => [f.refId, f.type ?? 'series', f.target ?? '']),
      [
        ['A', 'table', ''],
        ['B', 'table', ''],
        ['D', 'series', 'two/svc-x live'],
        ['E', 'table', ''],
      ],
    );
    assert.deepEqual(
      frames[0]!.rows!.map((r) => r.slice(0, 5)),
      [
        ['one', 'svc-a', 4, 2, 2],
        ['one', 'svc-b', 2, 2, 0],
        ['one', 'svc-r', 2, 2, 0],
      ],
    );
    assert.deepEqual(frames[1]!.rows, [
      ['one', 'svc-r', '127.0.2.1:11211', 'repl-m', 'live', 'g1', 'master', 'current'],
      ['one', 'svc-r', '127.0.2.2:11211', 'repl-s', 'live', 'g1', 'slave', 'current'],
    ]);
    assert.deepEqual(frames[2]!.datapoints!.at(-1), [1, now]);
    assert.ok(
      frames[3]!.rows!.every((r) => r[4] === 'live'),
      'the ad-hoc filter state=live applies',
    );
    assert.deepEqual([...new Set(frames[3]!.rows!.map((r) => r[0]))], ['one', 'two']);
  });

  test('the forms the plugin sends that were once refused: ad-hoc < and >, payload.variables, the legacy {target: ""}', async () => {
    const { status, body } = await provider.post('/query', {
      app: 'dashboard',
      range: pluginRange(now - 3600e3, now),
      targets: [
        { refId: 'A', target: 'service_code_summary ensemble=one', payload: {}, editorMode: 'code' },
        { refId: 'B', target: 'overview ensemble=one service_code=svc-b', payload: {}, editorMode: 'code' },
      ],
      adhocFilters: [
        { key: 'live', operator: '>', value: '1' },
        { key: 'state', operator: '<', value: 'live' },
        { key: 'hostname', operator: '!~', value: 'nowhere' },
      ],
    });
    assert.equal(status, 200, JSON.stringify(body));
    const [summary, overview] = body as Array<{
      rows: unknown[][];
      meta?: { notices: Array<{ severity: string; text: string }> };
    }>;
    assert.deepEqual(
      summary!.rows.map((r) => [r[1], r[3]]),
      [
        ['svc-a', 2],
        ['svc-b', 2],
        ['svc-r', 2],
      ],
    );
    assert.deepEqual(
      overview!.rows.map((r) => r[2]),
      ['127.0.1.3:11211'],
    );
    assert.deepEqual(overview!.meta?.notices, [
      { severity: 'warning', text: 'ad-hoc filter "state < live" ignored: state is text; < compares numbers' },
    ]);
    assert.deepEqual(
      await provider.variable({ target: 'service_codes ensemble=two', variables: { ensemble: 'two' } }),
      ['svc-x'],
    );
    const legacy = await provider.variable({ target: '' });
    assert.ok(legacy.includes('ensembles') && legacy.includes('overview'), JSON.stringify(legacy));
    const twice = await provider.post('/query', { targets: [{ refId: 'Q', target: 7 }] });
    assert.equal(twice.status, 400);
    assert.equal((twice.body as { error: string }).error, 'target Q: "target" must be a query string');
  });

  test('builder endpoints: /metrics lists the queries, /metric-payload-options and tag values narrow by what is chosen', async () => {
    const metrics = await provider.post('/metrics', {});
    assert.equal(metrics.status, 200);
    const nodes = (metrics.body as Array<{ value: string; payloads: Array<{ name: string; type: string }> }>).find(
      (m) => m.value === 'nodes',
    );
    assert.deepEqual(
      nodes?.payloads.map((p) => p.name),
      ['ensemble', 'service_code', 'node', 'hostname', 'group', 'role', 'state'],
    );
    const options = await provider.post('/metric-payload-options', {
      metric: 'nodes',
      payload: { ensemble: ['one'], service_code: 'svc-r' },
      name: 'hostname',
    });
    assert.deepEqual(options.body, [
      { label: 'repl-m', value: 'repl-m' },
      { label: 'repl-s', value: 'repl-s' },
    ]);
    const keys = await provider.post('/tag-keys', {});
    assert.ok((keys.body as Array<{ text: string }>).some((k) => k.text === 'service_code'));
    const values = await provider.post('/tag-values', { key: 'ensemble' });
    assert.deepEqual(values.body, [{ text: 'one' }, { text: 'two' }, { text: 'gone' }]);
    // GET /metrics is still the provider's own exposition.
    const own = await fetch(provider.url + '/metrics');
    assert.match(await own.text(), /# TYPE cachemon_topology_requests_total counter/);
  });

  test('hostnames that do not resolve, or resolve elsewhere, are reported in a table, /metrics and the log', async () => {
    await eventually(async () => {
      const { body } = await provider.post('/query', { targets: [{ refId: 'A', target: 'hostname_problems' }] });
      const rows = (body as Array<{ rows: unknown[][] }>)[0]!.rows;
      assert.deepEqual(
        rows.map((r) => r.slice(0, 6)),
        [
          ['one', 'cache', 'cache-a2', '127.0.1.2:11211', 'mismatch', '127.0.9.9'],
          ['one', 'cache', 'nowhere', '127.0.1.5:11211', 'unresolved', ''],
        ],
      );
    });
    const samples = parseExposition(await (await fetch(provider.url + '/metrics')).text());
    assert.equal(valueOf(samples, 'cachemon_hostname_problems', { ensemble: 'one', problem: 'mismatch' }), 1);
    assert.equal(valueOf(samples, 'cachemon_hostname_problems', { ensemble: 'one', problem: 'unresolved' }), 1);
    assert.equal(
      valueOf(samples, 'cachemon_hostname_problem', {
        hostname: 'cache-a2',
        address: '127.0.1.2:11211',
        problem: 'mismatch',
        resolved: '127.0.9.9',
      }),
      1,
    );
    const logged = provider.logs().filter((l) => typeof l['msg'] === 'string' && l['msg'].startsWith('hostname'));
    assert.ok(
      logged.some((l) => l['hostname'] === 'cache-a2' && /resolves to 127\.0\.9\.9/.test(l['msg'] as string)),
      JSON.stringify(logged),
    );
    assert.ok(logged.some((l) => l['hostname'] === 'nowhere' && /does not resolve/.test(l['msg'] as string)));
    // A hidden service code's node is not checked: hidden means not served.
    assert.ok(!logged.some((l) => l['address'] === '127.0.1.6:11211'));
  });

  test('bad requests get 400 with a JSON message and never break the server', async () => {
    const cases: Array<[string, unknown, RegExp]> = [
      ['/variable', '{"payload": {"target": "nodes"', /JSON/i],
      ['/variable', { payload: { target: 'nodez' } }, /unknown query "nodez"/],
      [
        '/variable',
        { payload: { target: 'nodes ensemble=staging' } },
        /unknown ensemble "staging" \(known: one, two, gone\)/,
      ],
      ['/variable', { range: {} }, /without "payload"/],
      ['/variable', [1, 2], /must be a JSON object/],
      [
        '/variable',
        { payload: { target: 'scrape' }, range: { from: 'yesterday', to: 'now' } },
        /range\.from: "yesterday" is not a time/,
      ],
      ['/query', { targets: 'nodes' }, /"targets" array/],
      [
        '/query',
        { targets: [{ refId: 'Q', target: 'nodes bogus=1' }] },
        /target Q: query nodes: unknown argument "bogus"/,
      ],
      ['/tag-values', { key: 'color' }, /unknown tag key "color"/],
    ];
    for (const [path, body, message] of cases) {
      const response = await provider.post(path, body);
      assert.equal(response.status, 400, `${path} ${JSON.stringify(body)}`);
      const error = response.body as { error: string; code: string };
      assert.match(error.error, message);
      assert.equal(error.code, 'CACHEMON_BAD_REQUEST');
    }
    const huge = await provider.post('/variable', { payload: { target: 'nodes' }, pad: 'x'.repeat(2 * 1024 * 1024) });
    assert.equal(huge.status, 413);
    assert.equal((huge.body as { code: string }).code, 'CACHEMON_BODY_TOO_LARGE');
    assert.deepEqual(await provider.variable({ target: 'ensembles' }), ['one', 'two', 'gone']);
  });

  test('an ensemble that goes down keeps its last topology, marked stale in answers and in a metric', async () => {
    await zkTwo.stop();
    await eventually(async () => {
      const { body, headers } = await provider.post('/variable', { payload: { target: 'ensembles' } });
      assert.deepEqual(
        (body as Array<{ __text: string }>).map((v) => v.__text),
        ['one', 'two (stale)', 'gone (unavailable)'],
      );
      assert.equal(headers.get('x-cachemon-stale-ensembles'), 'two,gone');
    });
    assert.deepEqual(
      await provider.variable({ target: 'nodes ensemble=two' }),
      ['127.0.3.1:11211'],
      'the last topology is still served',
    );
    const { body } = await provider.post('/query', { targets: [{ refId: 'A', target: 'overview ensemble=two' }] });
    const frame = (body as Array<{ rows: unknown[][]; meta?: { notices: Array<{ text: string }> } }>)[0]!;
    assert.equal(frame.rows[0]![7], 'stale');
    assert.match(frame.meta!.notices[0]!.text, /ensemble two: ZooKeeper unreachable; showing its last topology/);
    const samples = parseExposition(await (await fetch(provider.url + '/metrics')).text());
    assert.equal(valueOf(samples, 'cachemon_topology_stale', { ensemble: 'two' }), 1);
    assert.equal(valueOf(samples, 'cachemon_topology_stale', { ensemble: 'one' }), 0);
    assert.equal(valueOf(samples, 'cachemon_zookeeper_connected', { ensemble: 'two' }), 0);
    await zkTwo.start();
    await eventually(
      async () => {
        const samples = parseExposition(await (await fetch(provider.url + '/metrics')).text());
        assert.equal(
          valueOf(samples, 'cachemon_topology_stale', { ensemble: 'two' }),
          0,
          // When it does not come back, say what the provider saw of ensemble two.
          `ensemble two still stale; the provider's last log lines about it:\n${provider
            .logs()
            .filter((line) => line['ensemble'] === 'two' || JSON.stringify(line).includes(String(zkTwo.port)))
            .slice(-12)
            .map((line) => JSON.stringify(line))
            .join('\n')}`,
        );
      },
      { timeoutMs: 30_000 },
    );
  });

  test('POST /reload/config applies a valid file and refuses an invalid one, keeping the running config', async () => {
    provider.writeConfig({
      ensembleByName: { one: [zkOne.address], gone: [`127.0.0.1:${deadPort}`] },
      rawRetention: '7d',
    });
    const ok = await provider.post('/reload/config', undefined);
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.deepEqual(ok.body, { status: 'success', added: [], removed: ['two'], changed: ['one'], restartNeeded: [] });
    await eventually(async () => {
      assert.deepEqual(
        await provider.variable({ target: 'service_codes ensemble=one' }),
        ['hidden', 'svc-a', 'svc-b', 'svc-r'],
        'no entry any more: all service codes',
      );
    });
    assert.deepEqual(
      await provider.variable({ target: 'scrape' }, { from: now - 8 * DAY, to: now }),
      ['long'],
      'rawRetention 7d applies',
    );

    const escaped = provider.configFile.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    const refusals: Array<[Record<string, unknown> | string, RegExp]> = [
      [
        { ensembleByName: { one: [zkOne.address] }, serviceCodesByEnsembleName: { onee: ['svc-a'] } },
        /serviceCodesByEnsembleName\.onee: no ensemble "onee" in ensembleByName \(known: one\)/,
      ],
      [{ ensembleByName: { one: [zkOne.address] }, rawRetention: '7x' }, /rawRetention: invalid duration "7x"/],
      [{ ensembleByName: { one: ['zk1:99999'] } }, /ensembleByName\.one/],
      ['{ "ensembleByName": ', /config\.json:1:21: expected a value/],
    ];
    for (const [config, message] of refusals) {
      provider.writeConfig(config);
      const refused = await provider.post('/reload/config', '');
      assert.equal(refused.status, 400);
      const error = refused.body as { code: string; error: string };
      assert.equal(error.code, 'CACHEMON_CONFIG_INVALID');
      assert.match(error.error, new RegExp(`^${escaped}`), 'the message names the file');
      assert.match(error.error, message);
    }
    assert.deepEqual(await provider.variable({ target: 'ensembles' }), ['one', 'gone'], 'the running config stays');
    const samples = parseExposition(await (await fetch(provider.url + '/metrics')).text());
    assert.equal(valueOf(samples, 'cachemon_config_last_reload_successful'), 0);
    assert.equal(valueOf(samples, 'cachemon_config_reloads_total', { result: 'failure' }), 4);
    assert.equal(valueOf(samples, 'cachemon_config_reloads_total', { result: 'success' }), 1);
  });

  test('the web config file is read again at reload: new basic auth users apply, an invalid file is refused', async () => {
    // bcrypt (cost 4) of "first" and of "second".
    const first = '$2b$04$yHzeEbKFKEr65cHaSQ7vQuJt8E/g7aS9y8oWhSKwKYmxS8bMULekS';
    const second = '$2b$04$2aCWs6wT2UDiQS/mpWzw7.Tt7UjYXRc/ObcVgPyBFn5M4S8LNhsPu';
    const webConfigFile = join(await tempDir('topology-provider-web-'), 'web.yml');
    writeFileSync(webConfigFile, `basic_auth_users:\n  grafana: ${first}\n`);
    const secured = await startHarness(
      { ensembleByName: { one: [zkOne.address] } },
      { webConfig: await loadWebConfig(webConfigFile), webConfigFile },
    );
    try {
      const as = (password: string) => ({
        Authorization: `Basic ${Buffer.from(`grafana:${password}`).toString('base64')}`,
      });
      assert.equal((await fetch(`${secured.url}/`)).status, 401);
      assert.equal((await fetch(`${secured.url}/`, { headers: as('first') })).status, 200);

      writeFileSync(webConfigFile, `basic_auth_users:\n  grafana: ${second}\n`);
      assert.equal((await secured.post('/reload/config', undefined, as('first'))).status, 200);
      assert.equal((await fetch(`${secured.url}/`, { headers: as('first') })).status, 401);
      assert.equal((await fetch(`${secured.url}/`, { headers: as('second') })).status, 200);

      writeFileSync(webConfigFile, 'basic_auth_users:\n  grafana: not-a-hash\n');
      const refused = await secured.post('/reload/config', undefined, as('second'));
      assert.equal(refused.status, 400);
      assert.equal((refused.body as { code: string }).code, 'CACHEMON_WEB_CONFIG_INVALID');
      assert.match((refused.body as { error: string }).error, /web\.yml: basic_auth_users\.grafana: not a bcrypt hash/);
      assert.equal(
        (await fetch(`${secured.url}/`, { headers: as('second') })).status,
        200,
        'the running web config stays',
      );
      const samples = parseExposition(await (await fetch(`${secured.url}/metrics`, { headers: as('second') })).text());
      assert.equal(valueOf(samples, 'cachemon_config_last_reload_successful'), 0);
    } finally {
      await secured.close();
    }
  });

  test('/metrics names the config file and the hash of the content running, replaced on reload, kept when refused', async () => {
    // Its own provider, on the real clock: load times must move.
    const own = await startHarness({ ensembleByName: { one: [zkOne.address] } });
    try {
      await assertConfigReloadExposed({
        configFile: own.configFile,
        scrape: async () => (await fetch(`${own.url}/metrics`)).text(),
        reload: async () => (await own.post('/reload/config', undefined)).status,
        changed: JSON.stringify({
          listen: new URL(own.url).host,
          ensembleByName: { one: [zkOne.address] },
          rawRetention: '7d',
        }),
        invalid: '{ "ensembleByName": ',
      });
    } finally {
      await own.close();
    }
  });
});
