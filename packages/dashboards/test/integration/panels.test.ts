import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually, freePort, tempDir } from '@cachemon/testkit';
import { startDemo, stopDemo } from '@cachemon/stack';
import type { StackPorts } from '@cachemon/stack';
import { builtDashboards, QUERY_PROXY, TOPOLOGY } from '../../src/index.js';
import {
  allOf,
  interpolatePromQL,
  interpolateTopology,
  panelQueries,
  variableQueryText,
  variablesOf,
} from '../support/queries.js';
import type { TimeMacros, VariableValue } from '../support/queries.js';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/**
 * Every panel query of every shipped dashboard, run against the demo: the demo cluster and the
 * whole stack started by `startDemo` (free ports, minutes shortened to seconds). Variables are
 * answered by the running topology provider for the dashboard's range; the queries go through
 * the running query proxy. A short range (last hour) reads the raw series of the short-term
 * store; a 30-day and a 400-day range read the long-term store's 5m and 1h series. The demo
 * holds only minutes of data, so every query is run over its last ten minutes (time series) or
 * at now (tables, stats): what is checked is the variables, the routing and the series names.
 */
describe('every panel query of the shipped dashboards, against the demo', () => {
  let dir: string;
  let ports: StackPorts;
  const dashboards = builtDashboards();

  before(async () => {
    dir = await tempDir('cachemon-dashboards-');
    const [short, long, ruler, router, cache, coordination, host, topology, proxy, webhook] = await Promise.all(
      Array.from({ length: 10 }, () => freePort()),
    );
    ports = {
      short: short!,
      long: long!,
      ruler: ruler!,
      router: router!,
      cache: cache!,
      coordination: coordination!,
      host: host!,
      topology: topology!,
      proxy: proxy!,
    };
    const started = await startDemo({
      dir,
      ports,
      webhookPort: webhook!,
      fast: true,
      quiet: true,
      dashboardServer: false,
    });
    assert.ok(started.ok, started.message);
  });

  after(async () => {
    if (dir) await stopDemo(dir, { quiet: true });
  });

  /** The topology provider's answer to a variable query, for the range. */
  async function variable(target: string, range: { from: number; to: number }): Promise<string[]> {
    const response = await fetch(`http://127.0.0.1:${ports.topology}/variable`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        payload: { target },
        range: { from: new Date(range.from).toISOString(), to: new Date(range.to).toISOString() },
      }),
    });
    const body = await response.text();
    assert.equal(response.status, 200, `variable "${target}": ${body}`);
    return (JSON.parse(body) as Array<{ __value: string }>).map((v) => v.__value);
  }

  async function promql(query: string, instant: boolean): Promise<{ series: number; warnings?: string[] }> {
    const now = Math.floor(Date.now() / 1000);
    const params: Record<string, string> = instant
      ? { query, time: String(now) }
      : { query, start: String(now - 600), end: String(now), step: '15' };
    const response = await fetch(`http://127.0.0.1:${ports.proxy}/api/v1/${instant ? 'query' : 'query_range'}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(params),
    });
    const body = (await response.json()) as {
      status: string;
      error?: string;
      warnings?: string[];
      data?: { result: unknown[] };
    };
    assert.equal(body.status, 'success', `${query}: ${body.error ?? ''}`);
    return { series: body.data!.result.length, ...(body.warnings ? { warnings: body.warnings } : {}) };
  }

  /** Grafana's $__interval and $__rate_interval for a range drawn with 1,000 points and 5 s scrapes. */
  const macros = (spanMs: number): TimeMacros => {
    const interval = Math.max(5, Math.round(spanMs / 1000 / 1000));
    return { interval: `${interval}s`, rateInterval: `${Math.max(interval + 5, 20)}s` };
  };

  async function checkAll(
    label: string,
    spanMs: number,
    expected: { scrape: string; resolution: string },
  ): Promise<void> {
    // Recent samples made searchable once per pass, not per query.
    for (const store of [ports.short, ports.long]) await fetch(`http://127.0.0.1:${store}/internal/force_flush`);
    const to = Date.now();
    const range = { from: to - spanMs, to };
    const empty: string[] = [];
    for (const dashboard of dashboards) {
      const values = new Map<string, VariableValue>();
      for (const v of variablesOf(dashboard)) {
        const answer = await variable(interpolateTopology(variableQueryText(v), values), range);
        assert.ok(answer.length > 0, `${dashboard.title}: $${v.name} has no values`);
        // "All" of a multi-value variable, the first value of a single-value one: what the dashboard opens with.
        values.set(v.name, v.multi ? allOf(v, answer) : { values: answer.slice(0, 1), multi: false });
      }
      assert.deepEqual(
        [values.get('scrape')?.values, values.get('resolution')?.values],
        [[expected.scrape], [expected.resolution]],
        `${dashboard.title} (${label})`,
      );
      for (const q of panelQueries(dashboard)) {
        const where = `${dashboard.title} / ${q.panel} / ${q.refId} (${label})`;
        if (q.datasourceUid === TOPOLOGY.uid) {
          const response = await fetch(`http://127.0.0.1:${ports.topology}/query`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({
              range: { from: new Date(range.from).toISOString(), to: new Date(range.to).toISOString() },
              targets: [{ refId: q.refId, target: interpolateTopology(q.text, values), payload: '' }],
            }),
          });
          const text = await response.text();
          assert.equal(response.status, 200, `${where}: ${text}`);
          const [table] = JSON.parse(text) as Array<{ rows?: unknown[] }>;
          if ((table?.rows ?? []).length === 0) empty.push(where);
          continue;
        }
        assert.equal(q.datasourceUid, QUERY_PROXY.uid, where);
        const answer = await promql(interpolatePromQL(q.text, values, macros(spanMs)), q.instant);
        assert.equal(answer.warnings, undefined, `${where}: ${answer.warnings?.join('; ')}`);
        if (answer.series === 0) empty.push(`${where}: ${interpolatePromQL(q.text, values, macros(spanMs))}`);
      }
    }
    assert.deepEqual(empty, [], 'panels with an empty result');
  }

  /** Retried while the demo's first scrapes and rule evaluations land. */
  function eventuallyAll(
    label: string,
    spanMs: number,
    expected: { scrape: string; resolution: string },
  ): Promise<void> {
    return eventually(() => checkAll(label, spanMs, expected), { timeoutMs: 120_000, intervalMs: 3000 });
  }

  test('the last hour: raw series of the short-term store', async () => {
    await eventuallyAll('last hour', 60 * MINUTE, { scrape: 'short', resolution: '5m' });
  });

  test('the last 30 days: the long-term store at 5m resolution', async () => {
    await eventuallyAll('last 30 days', 30 * DAY, { scrape: 'long', resolution: '5m' });
  });

  test('the last 400 days: the long-term store at 1h resolution', async () => {
    await eventuallyAll('last 400 days', 400 * DAY, { scrape: 'long', resolution: '1h' });
  });

  test("the firing alerts panel shows the demo's down node", async () => {
    const fleet = dashboards.find((d) => d.uid === 'cachemon-fleet')!;
    const alerts = panelQueries(fleet).find((q) => q.panel === 'Firing alerts')!;
    const now = Math.floor(Date.now() / 1000);
    const response = await fetch(
      `http://127.0.0.1:${ports.proxy}/api/v1/query?${new URLSearchParams({ query: alerts.text, time: String(now) }).toString()}`,
    );
    const body = (await response.json()) as { data: { result: Array<{ metric: Record<string, string> }> } };
    assert.ok(
      body.data.result.some((s) => s.metric['alertname'] === 'CacheNodeDown' && s.metric['service_code'] === 'demo-b'),
      JSON.stringify(body.data.result.map((s) => s.metric)),
    );
    // ... and the alert router told the demo's webhook about it.
    await eventually(() => assert.match(readFileSync(join(dir, 'alerts.log'), 'utf8'), /"alertname":"CacheNodeDown"/), {
      timeoutMs: 30_000,
      intervalMs: 500,
    });
  });
});
