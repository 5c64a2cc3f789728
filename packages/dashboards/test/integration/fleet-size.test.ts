import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startVictoriaMetrics } from '@cachemon/testkit';
import type { VictoriaMetrics } from '@cachemon/testkit';
import { builtDashboards, MAX_QUERY_LENGTH, QUERY_PROXY } from '../../src/index.js';
import { fleetValues, fleetVariables } from '../support/fleet.js';
import type { Selection } from '../support/fleet.js';
import { interpolatePromQL, panelQueries } from '../support/queries.js';

/**
 * Every panel query of every dashboard at fleet size, asked of a real store started with the
 * query length limit the dashboards need (`-search.maxQueryLen`): with "All" and with every value
 * of every multi-value variable selected one by one. The store holds a sample of the fleet's
 * series, so the selectors and the regex-escaped alternations are parsed and matched, not only
 * accepted.
 */
describe('the dashboards at fleet size, against a store', () => {
  let store: VictoriaMetrics;
  const dashboards = builtDashboards();
  const now = Math.floor(Date.now() / 1000);

  before(async () => {
    store = await startVictoriaMetrics({ extraArgs: [`-search.maxQueryLen=${MAX_QUERY_LENGTH}`] });
    // The first node and host of the fleet, as the exporters label them.
    const fleet = fleetValues();
    const node = `scrape="short", ensemble="${fleet.ensemble[0]}", service_code="${fleet.service_code[0]}", node="${fleet.node[0]}"`;
    const host = `scrape="short", instance="${fleet.host[0]}"`;
    const at = (now - 30) * 1000;
    await store.importPrometheus(
      [
        `arcus_up{${node}} 1 ${at}`,
        `arcus_command_hits_total{${node}, command="get"} 10 ${at}`,
        `arcus_command_misses_total{${node}, command="get"} 2 ${at}`,
        `node_load1{${host}} 0.5 ${at}`,
        '',
      ].join('\n'),
    );
  });

  after(async () => {
    await store?.stop();
  });

  async function ask(query: string, instant: boolean): Promise<{ status: number; body: string }> {
    const params: Record<string, string> = instant
      ? { query, time: String(now) }
      : { query, start: String(now - 600), end: String(now), step: '15' };
    const response = await fetch(`${store.url}/api/v1/${instant ? 'query' : 'query_range'}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(params),
    });
    return { status: response.status, body: await response.text() };
  }

  async function askAll(selection: Selection, stores: { scrape: string; resolution: string }): Promise<number> {
    let longest = 0;
    for (const d of dashboards) {
      const values = fleetVariables(d, selection, stores);
      for (const q of panelQueries(d).filter((q) => q.datasourceUid === QUERY_PROXY.uid)) {
        const query = interpolatePromQL(q.text, values, { rateInterval: '1m', interval: '15s' });
        const where = `${d.title} / ${q.panel} / ${q.refId} (${stores.scrape}, ${selection}, ${query.length} characters)`;
        longest = Math.max(longest, query.length);
        assert.ok(query.length < MAX_QUERY_LENGTH, where);
        const answer = await ask(query, q.instant);
        assert.equal(answer.status, 200, `${where}: ${answer.body.slice(0, 300)}`);
        assert.equal((JSON.parse(answer.body) as { status: string }).status, 'success', where);
      }
    }
    return longest;
  }

  for (const selection of ['all', 'every value'] as const) {
    for (const stores of [
      { scrape: 'short', resolution: '5m' },
      { scrape: 'long', resolution: '1h' },
    ]) {
      test(`every panel query is answered, ${selection === 'all' ? '"All"' : 'every value selected'}, ${stores.scrape}-term series`, async (t) => {
        t.diagnostic(`longest query: ${await askAll(selection, stores)} characters`);
      });
    }
  }

  test('the stored fleet sample is found by the selections', async () => {
    const d = dashboards.find((d) => d.uid === 'cachemon-fleet')!;
    const up = panelQueries(d).find((q) => q.panel === 'Cache nodes up')!;
    for (const selection of ['all', 'every value'] as const) {
      const query = interpolatePromQL(up.text, fleetVariables(d, selection, { scrape: 'short', resolution: '5m' }), {
        rateInterval: '1m',
        interval: '15s',
      });
      const answer = JSON.parse((await ask(query, true)).body) as {
        data: { result: Array<{ value: [number, string] }> };
      };
      assert.equal(answer.data.result[0]?.value[1], '1', `${selection}: ${query.slice(0, 200)}`);
    }
  });
});
