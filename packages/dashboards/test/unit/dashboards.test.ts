import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { combiningProblem, loadQueryProxyConfig, planQuery } from '@cachemon/query-proxy';
import {
  ALL_VALUE,
  builtDashboards,
  QUERY_PROXY,
  renderDashboards,
  SCHEMA_VERSION,
  TOPOLOGY,
} from '../../src/index.js';
import {
  datasourceUids,
  interpolatePromQL,
  interpolateTopology,
  panelQueries,
  variableQueryText,
  variablesOf,
} from '../support/queries.js';
import type { VariableValue } from '../support/queries.js';

const STACK = fileURLToPath(new URL('../../../../../stack/', import.meta.url));
const dashboards = builtDashboards();

describe('the shipped dashboards', () => {
  it('are what the code generates (npm run dashboards:generate)', () => {
    const files = renderDashboards();
    const shipped = readdirSync(`${STACK}dashboard_server/dashboards`).filter((f) => f.endsWith('.json'));
    assert.deepEqual(shipped.sort(), [...files.keys()].sort());
    for (const [name, text] of files)
      assert.equal(
        readFileSync(`${STACK}dashboard_server/dashboards/${name}`, 'utf8'),
        text,
        `${name} is stale: run npm run dashboards:generate`,
      );
  });

  it('cover the fleet, service code, cache node, prefixes, coordination ensemble, hosts and the stack, on Grafana 11.2 schema, with unique uids and panel ids', () => {
    assert.deepEqual(
      dashboards.map((d) => d.uid),
      [
        'cachemon-fleet',
        'cachemon-service-code',
        'cachemon-cache-node',
        'cachemon-prefixes',
        'cachemon-coordination',
        'cachemon-hosts',
        'cachemon-stack',
      ],
    );
    for (const d of dashboards) {
      assert.equal(d.schemaVersion, SCHEMA_VERSION);
      const ids = (d.panels ?? []).map((p) => (p as { id?: number }).id);
      assert.equal(new Set(ids).size, ids.length, `${d.title}: panel ids`);
      assert.ok(
        ids.every((id) => typeof id === 'number' && id > 0),
        `${d.title}: panel ids`,
      );
      assert.ok(panelQueries(d).length >= 5, `${d.title}: panels`);
    }
  });

  it('name only the provisioned datasources: the query proxy and the topology provider', () => {
    const provisioned = parse(
      readFileSync(`${STACK}dashboard_server/provisioning/datasources/cachemon.yml`, 'utf8'),
    ) as { datasources: Array<{ uid: string; type: string }> };
    const byUid = new Map(provisioned.datasources.map((d) => [d.uid, d.type]));
    assert.equal(byUid.get(QUERY_PROXY.uid!), QUERY_PROXY.type);
    assert.equal(byUid.get(TOPOLOGY.uid!), TOPOLOGY.type);
    for (const d of dashboards) {
      for (const uid of datasourceUids(d))
        assert.ok(byUid.has(uid), `${d.title}: datasource ${uid} is not provisioned`);
      for (const q of panelQueries(d)) assert.ok(byUid.has(q.datasourceUid), `${d.title} / ${q.panel}: no datasource`);
    }
  });

  it('take every template variable from the topology provider, and use only variables they define', () => {
    for (const d of dashboards) {
      const defined = new Set(variablesOf(d).map((v) => v.name));
      for (const v of variablesOf(d)) {
        assert.equal(v.datasource?.uid, TOPOLOGY.uid, `${d.title}: $${v.name}`);
        for (const used of variableQueryText(v).matchAll(/\$(\w+)/g))
          assert.ok(defined.has(used[1]!), `${d.title}: $${v.name} uses undefined $${used[1]}`);
      }
      for (const q of panelQueries(d)) {
        for (const used of q.text.matchAll(/\$(\w+)/g))
          assert.ok(
            used[1]!.startsWith('__') || defined.has(used[1]!),
            `${d.title} / ${q.panel}: undefined $${used[1]}`,
          );
      }
      assert.ok(defined.has('scrape') && defined.has('resolution'), `${d.title}: scrape and resolution`);
    }
  });

  it('route every query through the shipped query proxy config to one store per range, never combining series across stores', () => {
    const { groups } = loadQueryProxyConfig(`${STACK}query_proxy/conf/promxy.yml`);
    const macros = { rateInterval: '1m', interval: '15s' };
    for (const scrape of ['short', 'long']) {
      const values = (d: (typeof dashboards)[number]) =>
        new Map<string, VariableValue>(
          variablesOf(d).map((v) => [
            v.name,
            {
              values: v.name === 'scrape' ? [scrape] : v.name === 'resolution' ? ['5m'] : ['10.0.0.1:11211', 'svc.a'],
              multi: v.multi === true,
            },
          ]),
        );
      for (const d of dashboards) {
        for (const q of panelQueries(d).filter((q) => q.datasourceUid === QUERY_PROXY.uid)) {
          const expr = interpolatePromQL(q.text, values(d), macros);
          const plan = planQuery(expr, groups);
          const where = `${d.title} / ${q.panel} (${scrape}): ${expr}`;
          if (q.text.includes('$scrape')) {
            assert.equal(plan.decision, 'single', where);
            assert.deepEqual(
              plan.groups.map((g) => g.name),
              [groups.find((g) => g.name.includes(`scrape=${scrape}`))!.name],
              where,
            );
          } else {
            assert.equal(combiningProblem(plan.parsed, plan.groups), undefined, where);
          }
        }
      }
    }
  });

  it('give every "All" a custom all value matching any value of the label, so that no query grows with the fleet', () => {
    let withAll = 0;
    for (const d of dashboards) {
      for (const v of variablesOf(d)) {
        assert.equal(v.includeAll === true, v.multi === true, `${d.title}: $${v.name}: "All" exactly on multi-value`);
        if (!v.includeAll) continue;
        withAll++;
        assert.equal(v.allValue, ALL_VALUE, `${d.title}: $${v.name}`);
      }
    }
    assert.ok(withAll >= 5, 'multi-value variables');
    // Any non-empty value, as a whole-value regex of PromQL and of the topology provider; not a missing label.
    const any = new RegExp(`^(?:${ALL_VALUE})$`);
    assert.ok(['svc-0001', '10.1.2.3:11211', 'cache-host-0001:9100'].every((value) => any.test(value)));
    assert.equal(any.test(''), false);
  });

  it('put variable values in as the dashboard server does', () => {
    const one = new Map<string, VariableValue>([['node', { values: ['10.0.0.1:11211'], multi: true }]]);
    const two = new Map<string, VariableValue>([['svc', { values: ['a.b', 'c'], multi: true }]]);
    const single = new Map<string, VariableValue>([['scrape', { values: ['short'], multi: false }]]);
    const macros = { rateInterval: '20s', interval: '5s' };
    assert.equal(
      interpolatePromQL('up{node=~"$node"}[$__rate_interval]', one, macros),
      'up{node=~"10\\\\.0\\\\.0\\\\.1:11211"}[20s]',
    );
    assert.equal(interpolatePromQL('up{svc=~"$svc"}', two, macros), 'up{svc=~"(a\\\\.b|c)"}');
    assert.equal(interpolatePromQL('up{scrape="$scrape"}', single, macros), 'up{scrape="short"}');
    const all = new Map<string, VariableValue>([['svc', { values: ['a.b', 'c'], multi: true, allValue: '.+' }]]);
    assert.equal(interpolatePromQL('up{svc=~"$svc"}', all, macros), 'up{svc=~".+"}');
    assert.equal(interpolateTopology('nodes service_code=$svc', all), 'nodes service_code=.+');
    assert.equal(
      interpolateTopology('nodes service_code=$svc node=$node', new Map([...one, ...two])),
      'nodes service_code=(a\\.b|c) node=10\\.0\\.0\\.1:11211',
    );
  });
});
