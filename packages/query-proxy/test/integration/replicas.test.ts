import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createLoggerOn } from '@cachemon/core';
import { parseExposition, startVictoriaMetrics, tempDir, valueOf } from '@cachemon/testkit';
import type { VictoriaMetrics } from '@cachemon/testkit';
import { loadQueryProxyConfig } from '../../src/config.js';
import { startQueryProxy } from '../../src/server.js';
import type { QueryProxy } from '../../src/server.js';

interface Body {
  status: string;
  data?: unknown;
  warnings?: string[];
  errorType?: string;
  error?: string;
}
interface Answer {
  status: number;
  headers: Headers;
  body: Body;
}
interface Series {
  metric: Record<string, string>;
  value?: [number, string];
  values?: Array<[number, string]>;
}

const labelText = (metric: Record<string, string>) =>
  JSON.stringify(Object.entries(metric).sort(([a], [b]) => (a < b ? -1 : 1)));
/** A query answer's data with its series in label order: two answers compare whatever order they came in. */
const normalized = (body: Body) => {
  const data = body.data as { resultType: string; result: Series[] };
  return {
    resultType: data.resultType,
    result: [...data.result].sort((a, b) => (labelText(a.metric) < labelText(b.metric) ? -1 : 1)),
  };
};
const sortedLabelSets = (data: unknown) => (data as Array<Record<string, string>>).map(labelText).sort();

/**
 * Two short-term stores scraping the same targets, as one server group. Each lost samples the
 * other has (a restart of `a`, a lost stretch of scrapes of `b`); `complete` has every sample, as
 * the two would had neither missed anything. Every 5 s over 20 minutes, as the cache metrics are.
 */
describe('a server group of two replicas: their answers merged as promxy merges them', () => {
  let a: VictoriaMetrics;
  let b: VictoriaMetrics;
  let complete: VictoriaMetrics;
  let long: VictoriaMetrics;
  let proxy: QueryProxy;
  let configFile: string;
  const t0 = Math.floor(Date.now() / 60_000) * 60 - 1260;
  const end = t0 + 1200;
  // Samples missing strictly inside: a's restart, b's lost scrapes (each three minutes).
  const holeA = [t0 + 480, t0 + 660] as const;
  const holeB = [t0 + 840, t0 + 1020] as const;
  const inside = (t: number, hole: readonly [number, number]) => t > hole[0] && t < hole[1];
  const host = (vm: VictoriaMetrics) => `127.0.0.1:${vm.port}`;

  /** Each series: its labels, its value at t, and whether a and b hold its sample at t. */
  const series: Array<{
    line: string;
    value: (t: number) => number;
    inA: (t: number) => boolean;
    inB: (t: number) => boolean;
  }> = [
    { line: 'replica_gauge{scrape="short",node="n1"}', value: () => 1, inA: (t) => !inside(t, holeA), inB: () => true },
    { line: 'replica_gauge{scrape="short",node="n2"}', value: () => 2, inA: () => true, inB: () => true },
    {
      line: 'replica_gauge{scrape="short",node="n3"}',
      value: () => 3,
      inA: (t) => !inside(t, holeA),
      inB: (t) => !inside(t, holeB),
    },
    // A target `a` has never scraped (added to b's scrape config first).
    { line: 'replica_gauge{scrape="short",node="n4",zone="z9"}', value: () => 4, inA: () => false, inB: () => true },
    {
      line: 'replica_counter{scrape="short",node="n1"}',
      value: (t) => (t - t0) / 5,
      inA: (t) => !inside(t, holeA),
      inB: (t) => !inside(t, holeB),
    },
  ];

  const group = (targets: string[], extra: Record<string, unknown> = {}) => ({
    static_configs: [{ targets }],
    label_filter: { static_labels_include: { scrape: ['short'] } },
    query_params: { nocache: 1 },
    timeout: '5s',
    ...extra,
  });
  const longGroup = () => ({
    static_configs: [{ targets: [host(long)] }],
    label_filter: { static_labels_include: { scrape: ['long'] } },
    timeout: '5s',
  });
  const writeConfig = (groups: unknown[]) =>
    writeFileSync(configFile, JSON.stringify({ promxy: { server_groups: groups } }));
  const useGroups = async (groups: unknown[]) => {
    writeConfig(groups);
    const response = await fetch(`${proxy.url}/-/reload`, { method: 'POST' });
    assert.equal(response.status, 200, await response.text());
  };
  const merged = () => [group([host(a), host(b)]), longGroup()];

  const post = async (base: string, path: string, params: Record<string, string | string[]>): Promise<Answer> => {
    const form = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) for (const one of Array.isArray(v) ? v : [v]) form.append(k, one);
    const response = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
    });
    return { status: response.status, headers: response.headers, body: JSON.parse(await response.text()) as Body };
  };
  const rangeParams = (query: string, step: number) => ({
    query,
    start: String(t0),
    end: String(end),
    step: String(step),
  });
  const range = (query: string, step: number, base = proxy.url) =>
    post(base, '/api/v1/query_range', rangeParams(query, step));
  const metrics = async () => parseExposition(await (await fetch(`${proxy.url}/metrics`)).text());

  before(async () => {
    [a, b, complete, long] = await Promise.all([
      startVictoriaMetrics(),
      startVictoriaMetrics(),
      startVictoriaMetrics(),
      startVictoriaMetrics(),
    ]);
    const samples = (held: (s: (typeof series)[number], t: number) => boolean) => {
      const lines: string[] = [];
      for (let t = t0; t <= end; t += 5)
        for (const s of series) if (held(s, t)) lines.push(`${s.line} ${s.value(t)} ${t * 1000}`);
      return lines.join('\n');
    };
    await Promise.all([
      a.importPrometheus(samples((s, t) => s.inA(t))),
      b.importPrometheus(samples((s, t) => s.inB(t))),
      complete.importPrometheus(samples(() => true)),
      long.importPrometheus(`replica_gauge{scrape="long",node="n1"} 9 ${end * 1000}`),
    ]);
    configFile = join(await tempDir('query-proxy-replicas-'), 'promxy.yml');
    writeConfig(merged());
    proxy = await startQueryProxy(loadQueryProxyConfig(configFile), {
      logger: createLoggerOn(new Writable({ write: (_chunk, _encoding, done) => done() }), 'error', {
        name: 'query-proxy',
      }),
      version: 'test',
      listen: '127.0.0.1:0',
      loadConfig: () => loadQueryProxyConfig(configFile),
    });
  });

  after(async () => {
    await proxy?.close();
    await Promise.all([a?.stop(), b?.stop(), complete?.stop(), long?.stop()]);
  });

  test("a range query over both replicas' holes has no gap and no duplicate series: it is the complete data", async () => {
    const gauges = 'replica_gauge{scrape="short"}';
    const all = '{__name__=~"replica_.*",scrape="short"}';
    // The holes are there: each replica alone answers with gaps.
    const holed = normalized((await range(all, 60, a.url)).body).result;
    assert.ok(holed.find((s) => s.metric['node'] === 'n3')!.values!.length < 21, 'a has a hole');
    for (const [query, step] of [
      [gauges, 5],
      [all, 60],
      [all, 15],
    ] as const) {
      const answer = await range(query, step);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      assert.equal(answer.body.warnings, undefined);
      assert.equal(answer.headers.get('x-cachemon-route'), 'single');
      assert.match(answer.headers.get('server-timing') ?? '', /^g0;desc="group 0 \(scrape=short\)";dur=\d+\.\d\d$/);
      const whole = normalized((await range(query, step, complete.url)).body);
      // Every series once, every step of the 20 minutes in each.
      assert.equal(whole.result.length, query === gauges ? 4 : 5);
      assert.ok(whole.result.every((s) => s.values!.length === 1200 / step + 1));
      assert.deepEqual(normalized(answer.body), whole, `${query} step ${step}`);
    }
    // Filled samples are counted: at least each replica's missing steps of the 60 s query.
    const filled = valueOf(await metrics(), 'cachemon_query_proxy_replica_samples_filled_total', {
      group: 'group 0 (scrape=short)',
    });
    assert.ok(filled !== undefined && filled >= 4, `filled ${filled}`);
  });

  test('the replicas in the other order answer the same', async () => {
    try {
      await useGroups([group([host(b), host(a)]), longGroup()]);
      for (const [query, step] of [
        ['replica_gauge{scrape="short"}', 5],
        ['{__name__=~"replica_.*",scrape="short"}', 60],
      ] as const) {
        assert.deepEqual(
          normalized((await range(query, step)).body),
          normalized((await range(query, step, complete.url)).body),
        );
      }
    } finally {
      await useGroups(merged());
    }
  });

  test("an instant query, series, labels and label values: the union of the replicas', each entry once", async () => {
    const instant = { query: '{__name__=~"replica_.*",scrape="short"}', time: String(end) };
    const answer = await post(proxy.url, '/api/v1/query', instant);
    assert.equal(answer.status, 200);
    assert.equal(normalized(answer.body).result.length, 5);
    assert.deepEqual(normalized(answer.body), normalized((await post(complete.url, '/api/v1/query', instant)).body));

    const listing = { 'match[]': '{__name__=~"replica_.*",scrape="short"}', start: String(t0), end: String(end) };
    const series = await post(proxy.url, '/api/v1/series', listing);
    assert.equal(series.status, 200);
    assert.equal((series.body.data as unknown[]).length, 5);
    assert.deepEqual(
      sortedLabelSets(series.body.data),
      sortedLabelSets((await post(complete.url, '/api/v1/series', listing)).body.data),
    );
    const labels = await post(proxy.url, '/api/v1/labels', listing);
    assert.deepEqual(labels.body.data, ['__name__', 'node', 'scrape', 'zone']);
    const nodes = await post(proxy.url, '/api/v1/label/node/values', listing);
    assert.deepEqual(nodes.body.data, ['n1', 'n2', 'n3', 'n4']);
    const names = await post(proxy.url, '/api/v1/label/__name__/values', listing);
    assert.deepEqual(names.body.data, ['replica_counter', 'replica_gauge']);
  });

  test('a merged group beside another group: each group merged, then the groups', async () => {
    const query = 'replica_gauge';
    const answer = await range(query, 60);
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('x-cachemon-route'), 'several');
    assert.equal(answer.body.warnings, undefined);
    const expected = normalized((await range(query, 60, complete.url)).body);
    const fromLong = normalized((await range(query, 60, long.url)).body).result;
    assert.deepEqual(normalized(answer.body), {
      resultType: 'matrix',
      result: normalized({
        status: 'success',
        data: { resultType: 'matrix', result: [...expected.result, ...fromLong] },
      }).result,
    });
  });

  test('replicas: any keeps the old behaviour: one replica answers, relayed as it is, in turn, failing over', async () => {
    try {
      await useGroups([group([host(a), host(b)], { replicas: 'any' }), longGroup()]);
      const query = 'replica_counter{scrape="short"}';
      const fromA = normalized((await range(query, 60, a.url)).body);
      const fromB = normalized((await range(query, 60, b.url)).body);
      assert.notDeepEqual(fromA, fromB, 'the replicas differ (their holes)');
      const seen = new Set<string>();
      for (let i = 0; i < 4; i++) {
        const answer = normalized((await range(query, 60)).body);
        if (JSON.stringify(answer) === JSON.stringify(fromA)) seen.add('a');
        else {
          assert.deepEqual(answer, fromB);
          seen.add('b');
        }
      }
      assert.deepEqual([...seen].sort(), ['a', 'b'], 'the replicas answer in turn');
      // Relayed as the store sent it: its gzip passes through.
      const encoding = await new Promise<string | undefined>((resolve, reject) => {
        const search = new URLSearchParams(rangeParams(query, 60)).toString();
        get(`${proxy.url}/api/v1/query_range?${search}`, { headers: { 'Accept-Encoding': 'gzip' } }, (response) => {
          response.resume();
          response.on('end', () => resolve(response.headers['content-encoding']));
        }).on('error', reject);
      });
      assert.equal(encoding, 'gzip');
    } finally {
      await useGroups(merged());
    }
  });

  test('a replica down: the other answers, with a warning naming it; the same answer whichever is down', async () => {
    const query = '{__name__=~"replica_.*",scrape="short"}';
    const both = normalized((await range(query, 60)).body);
    const n2 = (data: ReturnType<typeof normalized>) => data.result.find((s) => s.metric['node'] === 'n2');
    await a.stop();
    try {
      const answer = await range(query, 60);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      assert.deepEqual(normalized(answer.body), normalized((await range(query, 60, b.url)).body));
      assert.deepEqual(n2(normalized(answer.body)), n2(both), 'a series neither lost is the same');
      assert.equal(answer.body.warnings?.length, 1);
      assert.match(
        answer.body.warnings?.[0] ?? '',
        new RegExp(
          `^group 0 \\(scrape=short\\): replica http://127\\.0\\.0\\.1:${a.port}: .*ECONNREFUSED.*; answered without it by the other replicas$`,
        ),
      );
      // Passed over for a while: not asked again at once, and said so.
      const again = await range(query, 60);
      assert.match(
        again.body.warnings?.[0] ?? '',
        /replica http:\/\/127\.0\.0\.1:\d+ not asked, as it failed within the last 5 s/,
      );
      assert.ok(
        valueOf(await metrics(), 'cachemon_query_proxy_replica_errors_total', {
          group: 'group 0 (scrape=short)',
          replica: `http://${host(a)}`,
          kind: 'unavailable',
        })! >= 1,
      );
      // `any` fails over without a warning, as before.
      await useGroups([group([host(a), host(b)], { replicas: 'any' }), longGroup()]);
      for (let i = 0; i < 2; i++) {
        const failover = await range(query, 60);
        assert.equal(failover.status, 200);
        assert.equal(failover.body.warnings, undefined);
      }
      await useGroups(merged());
    } finally {
      await a.start();
    }
    await b.stop();
    try {
      // a answers, whether or not it is still passed over after its failure: b failing, it is asked.
      const answer = await range(query, 60);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      assert.deepEqual(normalized(answer.body), normalized((await range(query, 60, a.url)).body));
      assert.deepEqual(n2(normalized(answer.body)), n2(both));
      await a.stop();
      const none = await range(query, 60);
      assert.equal(none.status, 503);
      assert.equal(none.body.errorType, 'unavailable');
      assert.match(
        none.body.error ?? '',
        /^group 0 \(scrape=short\): no replica answered \(http:\/\/127.*ECONNREFUSED.*; http:\/\/127.*ECONNREFUSED/,
      );
    } finally {
      await Promise.all([a.start(), b.start()]);
    }
  });

  test('/metrics passes promtool check metrics', async () => {
    const result = spawnSync('promtool', ['check', 'metrics'], {
      input: await (await fetch(`${proxy.url}/metrics`)).text(),
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.equal(result.error, undefined, 'promtool runs (Debian package prometheus)');
    assert.equal(result.status, 0, `promtool check metrics: ${result.stdout}${result.stderr}`);
  });
});
