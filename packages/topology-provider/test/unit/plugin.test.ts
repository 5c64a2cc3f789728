/**
 * The JSON datasource protocol, request by request as the plugin (simpod-json-datasource 0.6.5)
 * builds them: `VariableSupport.query` + `MetricFindQuery.process` for /variable,
 * `DataSource.query` for /query (the dashboard server's request with the processed targets and
 * `adhocFilters`), `listMetrics`, `listMetricPayloadOptions`, `getTagKeys`, `getTagValues`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CacheNode, Topology } from '@cachemon/arcus';
import { CachemonError } from '@cachemon/core';
import {
  QUERY_ARGUMENTS,
  answerMetrics,
  answerPayloadOptions,
  answerQuery,
  answerTagKeys,
  answerTagValues,
  answerVariable,
} from '../../src/index.js';
import type { ProtocolContext } from '../../src/index.js';
import { ensembleView, fleetView } from '../../src/view.js';

const NOW = Date.UTC(2026, 10, 23, 12, 0, 0);
const context: ProtocolContext = { now: NOW, rawRetentionMs: 14 * 24 * 3600 * 1000, hostExporterPort: 9100 };

function node(serviceCode: string, address: string, hostname: string, live = true): CacheNode {
  return { serviceCode, node: address, hostname, live, mapped: true };
}
function topology(nodes: CacheNode[]): Topology {
  return { serviceCodes: [...new Set(nodes.map((n) => n.serviceCode))].sort(), nodes, problems: [] };
}

const prod = ensembleView(
  'prod',
  topology([
    node('svc-a', '10.0.0.1:11211', 'cache01'),
    node('svc-a', '10.0.0.2:11211', 'cache02'),
    node('svc-a', '10.0.0.3:11211', 'cache03', false),
    node('svc-b', '10.0.0.4:11211', 'cache04'),
  ]),
  { connected: true, synced: true, updatedAt: NOW - 60_000 },
  [{ address: '10.1.0.1:2181' }],
  NOW,
);
// Unchanged for 20 minutes; its session lost 4 s ago.
const dev = ensembleView(
  'dev',
  topology([node('svc-d', '127.0.0.1:11211', 'localhost')]),
  { connected: false, synced: true, updatedAt: NOW - 1_200_000 },
  [{ address: '127.0.0.1:2181' }],
  NOW - 4000,
);
const fleet = fleetView([prod, dev], []);

/** The range the dashboard server passes: moment objects, serialized as ISO strings. */
const range = {
  from: new Date(NOW - 6 * 3600e3).toISOString(),
  to: new Date(NOW).toISOString(),
  raw: { from: 'now-6h', to: 'now' },
};

/** DataSource.query's body: the dashboard server's request, targets processed, ad-hoc filters added. */
function queryRequest(
  targets: Array<Record<string, unknown>>,
  adhocFilters: Array<Record<string, unknown>> = [],
): Record<string, unknown> {
  return {
    app: 'dashboard',
    requestId: 'Q100',
    timezone: 'browser',
    panelId: 2,
    dashboardUID: 'topology',
    range,
    rangeRaw: range.raw,
    interval: '30s',
    intervalMs: 30_000,
    maxDataPoints: 1200,
    scopedVars: { __interval: { text: '30s', value: '30s' }, __interval_ms: { text: '30000', value: 30_000 } },
    startTime: NOW,
    targets: targets.map((t) => ({
      datasource: { type: 'simpod-json-datasource', uid: 'topology' },
      editorMode: 'code',
      // processPayload: an empty string payload becomes {}.
      payload: {},
      ...t,
    })),
    adhocFilters,
  };
}

type Frame = {
  refId: string;
  type?: string;
  columns?: Array<{ text: string }>;
  rows?: Array<Array<string | number>>;
  target?: string;
  meta?: { notices: Array<{ severity: string; text: string }> };
};
const query = (body: unknown) => answerQuery(body, fleet, context) as unknown as Frame[];
const noticesOf = (frame: Frame) => frame.meta?.notices.map((n) => `${n.severity}: ${n.text}`) ?? [];

function badRequest(fn: () => unknown, message: string | RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof CachemonError, String(err));
    assert.equal(err.status, 400);
    if (typeof message === 'string') assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  });
}

describe('/variable', () => {
  it('a string query: {payload: {target}, range}', () => {
    const answer = answerVariable(
      { payload: { target: 'nodes ensemble=prod service_code=svc\\-a' }, range },
      fleet,
      context,
    );
    assert.deepEqual(answer, [
      { __text: '10.0.0.1:11211', __value: '10.0.0.1:11211' },
      { __text: '10.0.0.2:11211', __value: '10.0.0.2:11211' },
      { __text: '10.0.0.3:11211 (down)', __value: '10.0.0.3:11211' },
    ]);
  });

  it('payload.variables, part of the plugin description of /variable, is accepted and not read', () => {
    const variables = { ensemble: { selected: false, text: 'prod', value: 'prod' } };
    for (const payload of [
      { target: 'service_codes ensemble=prod', variables },
      { target: 'service_codes', ensemble: 'prod', variables },
    ]) {
      assert.deepEqual(
        answerVariable({ payload, range }, fleet, context).map((v) => v.__value),
        ['svc-a', 'svc-b'],
        JSON.stringify(payload),
      );
    }
  });

  it('a variable saved in the legacy string form arrives as {target: ""}: the query names, as an empty search', () => {
    const names = Object.keys(QUERY_ARGUMENTS);
    for (const payload of [{ target: '' }, { target: '  ' }, { target: '', variables: {} }]) {
      const answer = answerVariable({ payload, range }, fleet, context);
      assert.deepEqual(
        answer.map((v) => v.__value),
        names,
      );
      assert.ok(answer.every((v) => v.__text === v.__value));
    }
  });

  it('a raw JSON query with an empty target is still refused', () => {
    badRequest(() => answerVariable({ payload: { target: '', ensemble: 'prod' } }, fleet, context), /empty query/);
  });
});

describe('/query', () => {
  it('tables and series, each error with one "target <refId>:" prefix', () => {
    const frames = query(
      queryRequest([
        { refId: 'A', target: 'service_code_summary ensemble=prod' },
        { refId: 'B', target: 'node_counts ensemble=prod' },
        { refId: 'C', target: 'nodes', hide: true },
      ]),
    );
    assert.deepEqual(
      frames.map((f) => [f.refId, f.type ?? 'series']),
      [
        ['A', 'table'],
        ['B', 'series'],
        ['B', 'series'],
        ['B', 'series'],
        ['B', 'series'],
      ],
    );
    badRequest(
      () => query(queryRequest([{ refId: 'A', target: 'nodes bogus=1' }])),
      /^target A: query nodes: unknown argument "bogus"/,
    );
    badRequest(() => query(queryRequest([{ refId: 'A', target: 5 }])), 'target A: "target" must be a query string');
    badRequest(
      () => query(queryRequest([{ refId: 'B', target: 'nodes', payload: 'x' }])),
      'target B: "payload" must be a JSON object of arguments',
    );
  });

  it('ad-hoc = and != on a query argument narrow it', () => {
    const [frame] = query(
      queryRequest(
        [{ refId: 'A', target: 'overview' }],
        [
          { key: 'state', operator: '=', value: 'live' },
          { key: 'service_code', operator: '!=', value: 'svc-b' },
        ],
      ),
    );
    assert.deepEqual(
      frame!.rows!.map((r) => r[2]),
      ['10.0.0.1:11211', '10.0.0.2:11211', '127.0.0.1:11211'],
    );
  });

  it('ad-hoc =~ and !~ are anchored regular expressions; an invalid one is left out with a notice', () => {
    const [frame] = query(
      queryRequest(
        [{ refId: 'A', target: 'overview ensemble=prod' }],
        [
          { key: 'hostname', operator: '=~', value: 'cache0[1-3]' },
          { key: 'node', operator: '!~', value: '10\\.0\\.0\\.1:.*' },
          { key: 'group', operator: '=~', value: '(' },
        ],
      ),
    );
    assert.deepEqual(
      frame!.rows!.map((r) => r[2]),
      ['10.0.0.2:11211', '10.0.0.3:11211'],
    );
    assert.equal(noticesOf(frame!).length, 1);
    assert.match(
      noticesOf(frame!)[0]!,
      /^warning: ad-hoc filter "group =~ \(" ignored: argument group: "\(" is not a valid/,
    );
  });

  it('ad-hoc < and > narrow number columns; on text they are left out with a notice, never a failed panel', () => {
    const frames = query(
      queryRequest(
        [
          { refId: 'A', target: 'service_code_summary' },
          { refId: 'B', target: 'overview ensemble=prod' },
          { refId: 'C', target: 'node_counts ensemble=prod' },
        ],
        [
          { key: 'live', operator: '>', value: '0' },
          { key: 'nodes', operator: '<', value: '3' },
          { key: 'state', operator: '<', value: 'live' },
        ],
      ),
    );
    const summary = frames.find((f) => f.refId === 'A')!;
    assert.deepEqual(
      summary.rows!.map((r) => [r[0], r[1], r[2], r[3]]),
      [
        ['prod', 'svc-b', 1, 1],
        ['dev', 'svc-d', 1, 1],
      ],
    );
    // service_code_summary takes no `state`, has no such column: the filter means nothing to it.
    assert.ok(!noticesOf(summary).some((n) => n.includes('state')));
    const overview = frames.find((f) => f.refId === 'B')!;
    assert.equal(overview.rows!.length, 4, 'state < live narrows nothing');
    assert.deepEqual(noticesOf(overview), [
      'warning: ad-hoc filter "state < live" ignored: state is text; < compares numbers',
    ]);
    for (const series of frames.filter((f) => f.refId === 'C')) {
      assert.deepEqual(noticesOf(series), [
        'warning: ad-hoc filter "state < live" ignored: state is text; < compares numbers',
      ]);
    }
  });

  it('a number filter whose value is not a number, and an unknown operator, are left out with a notice', () => {
    const [frame] = query(
      queryRequest(
        [{ refId: 'A', target: 'ensemble_status' }],
        [
          { key: 'nodes', operator: '>', value: 'many' },
          { key: 'ensemble', operator: '~', value: 'prod' },
          { key: 'down', operator: '=', value: '1' },
        ],
      ),
    );
    assert.deepEqual(
      frame!.rows!.map((r) => r[0]),
      ['prod'],
    );
    assert.deepEqual(noticesOf(frame!), [
      'warning: ensemble dev: ZooKeeper unreachable; showing its last topology, confirmed 4 s ago',
      'warning: ad-hoc filter "ensemble ~ prod" ignored: operator "~" is not one of =, !=, <, >, =~, !~, =|, !=|',
      'warning: ad-hoc filter "nodes > many" ignored: "many" is not a number',
    ]);
  });

  it('a stale ensemble says how long ago ZooKeeper last confirmed its topology, not when it last changed', () => {
    const [frame] = query(queryRequest([{ refId: 'A', target: 'overview ensemble=dev' }]));
    assert.deepEqual(noticesOf(frame!), [
      'warning: ensemble dev: ZooKeeper unreachable; showing its last topology, confirmed 4 s ago',
    ]);
    const [status] = query(queryRequest([{ refId: 'A', target: 'ensemble_status' }]));
    assert.deepEqual(
      status!.rows!.map((r) => [r[0], r[7], r[8]]),
      [
        ['prod', NOW - 60_000, NOW],
        ['dev', NOW - 1_200_000, NOW - 4000],
      ],
    );
  });
});

describe('builder and ad-hoc endpoints', () => {
  it('/metrics: {metric, payload} as listMetrics sends them, both absent at first', () => {
    const names = answerMetrics().map((m) => m.value);
    assert.deepEqual(names, Object.keys(QUERY_ARGUMENTS));
  });

  it('/metric-payload-options: the payload formatted by the builder (regex strings, arrays)', () => {
    const options = answerPayloadOptions(
      { metric: 'nodes', payload: { ensemble: ['prod'], service_code: 'svc\\-a', state: 'live' }, name: 'hostname' },
      fleet,
      context,
    );
    assert.deepEqual(options, [
      { label: 'cache01', value: 'cache01' },
      { label: 'cache02', value: 'cache02' },
    ]);
  });

  it('/tag-keys: string keys and number columns; /tag-values: the values of each', () => {
    // getTagKeys/getTagValues pass the dashboard server's options through.
    const options = { filters: [], timeRange: range };
    const keys = answerTagKeys();
    assert.deepEqual(
      keys.filter((k) => k.type === 'number').map((k) => k.text),
      ['nodes', 'live', 'down', 'groups', 'service_codes'],
    );
    assert.ok(keys.some((k) => k.type === 'string' && k.text === 'hostname'));
    assert.deepEqual(answerTagValues({ ...options, key: 'ensemble' }, fleet, context), [
      { text: 'prod' },
      { text: 'dev' },
    ]);
    assert.deepEqual(answerTagValues({ ...options, key: 'nodes' }, fleet, context), [
      { text: '1' },
      { text: '3' },
      { text: '4' },
    ]);
    badRequest(() => answerTagValues({ ...options, key: 'color' }, fleet, context), /unknown tag key "color"/);
  });
});
