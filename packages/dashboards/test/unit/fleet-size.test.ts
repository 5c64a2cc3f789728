import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { STACK_DIR } from '@cachemon/stack';
import { builtDashboards, MAX_QUERY_LENGTH, QUERY_PROXY } from '../../src/index.js';
import { fleetVariables } from '../support/fleet.js';
import type { Selection } from '../support/fleet.js';
import { interpolatePromQL, interpolateTopology, panelQueries, variablesOf } from '../support/queries.js';
import type { VariableValue } from '../support/queries.js';

const dashboards = builtDashboards();
const macros = { rateInterval: '1m', interval: '15s' };
const STORES = [
  { scrape: 'short', resolution: '5m' },
  { scrape: 'long', resolution: '1h' },
];

/** Every panel query of every dashboard with the fleet's variables put in: PromQL and topology text. */
function fleetQueries(selection: Selection) {
  return STORES.flatMap((store) =>
    dashboards.flatMap((d) => {
      const values = fleetVariables(d, selection, store);
      return panelQueries(d).map((q) => ({
        where: `${d.title} / ${q.panel} / ${q.refId} (${store.scrape}, ${selection})`,
        promql: q.datasourceUid === QUERY_PROXY.uid,
        text:
          q.datasourceUid === QUERY_PROXY.uid
            ? interpolatePromQL(q.text, values, macros)
            : interpolateTopology(q.text, values),
      }));
    }),
  );
}

describe('the dashboards at fleet size (2,000 nodes, 500 service codes, 1,000 hosts)', () => {
  for (const selection of ['all', 'every value'] as const) {
    it(`keep every panel query under the stores' query length limit with ${selection === 'all' ? '"All"' : 'every value selected one by one'}`, (t) => {
      const queries = fleetQueries(selection);
      const longest = queries.reduce((a, b) => (b.text.length > a.text.length ? b : a));
      t.diagnostic(`longest: ${longest.text.length} characters, ${longest.where}`);
      for (const q of queries) assert.ok(q.text.length < MAX_QUERY_LENGTH, `${q.where}: ${q.text.length} characters`);
    });
  }

  it('with "All", write each query as long as for a fleet of one: nothing grows with the fleet', () => {
    for (const d of dashboards) {
      const store = STORES[0]!;
      const fleet = fleetVariables(d, 'all', store);
      // The same variables, each offering one value.
      const one = new Map<string, VariableValue>(
        [...fleet].map(([name, v]) => [name, { ...v, values: v.values.slice(0, 1) }]),
      );
      assert.ok(variablesOf(d).length > 0);
      for (const q of panelQueries(d)) {
        const put = (values: Map<string, VariableValue>) =>
          q.datasourceUid === QUERY_PROXY.uid
            ? interpolatePromQL(q.text, values, macros)
            : interpolateTopology(q.text, values);
        assert.equal(put(fleet), put(one), `${d.title} / ${q.panel}`);
      }
    }
  });

  it("is what the shipped stores and the query proxy's store groups are set to accept", () => {
    for (const role of ['short', 'long']) {
      const env = readFileSync(`${STACK_DIR}/short_term_store/${role}.env`, 'utf8');
      assert.match(env, new RegExp(`^TS_SEARCH_MAX_QUERY_LEN=${MAX_QUERY_LENGTH}$`, 'm'), `${role}.env`);
    }
    const groups = (
      parse(readFileSync(`${STACK_DIR}/query_proxy/conf/promxy.yml`, 'utf8')) as {
        promxy: { server_groups: Array<{ max_query_length?: number }> };
      }
    ).promxy.server_groups;
    assert.deepEqual(
      groups.map((g) => g.max_query_length),
      groups.map(() => MAX_QUERY_LENGTH),
      'promxy.yml max_query_length of each group',
    );
  });
});
