import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CacheNode, Topology } from '@cachemon/arcus';
import { CachemonError } from '@cachemon/core';
import {
  NodeCountHistory,
  parseQuery,
  resolutionFor,
  scrapeFor,
  seriesAnswer,
  tableAnswer,
  variableValues,
} from '../../src/index.js';
import type { QueryContext } from '../../src/index.js';
import { ensembleView, fleetView } from '../../src/view.js';
import type { HostnameProblem } from '../../src/view.js';

const DAY = 24 * 3600 * 1000;
const NOW = Date.UTC(2026, 10, 23, 12, 0, 0);
const context: QueryContext = { now: NOW, rawRetentionMs: 14 * DAY, hostExporterPort: 9100 };

function node(serviceCode: string, address: string, hostname: string, extra: Partial<CacheNode> = {}): CacheNode {
  return { serviceCode, node: address, hostname, live: true, mapped: true, ...extra };
}

function topology(nodes: CacheNode[]): Topology {
  return { serviceCodes: [...new Set(nodes.map((n) => n.serviceCode))].sort(), nodes, problems: [] };
}

const connected = { connected: true, synced: true, updatedAt: NOW - 1000 };
const prod = ensembleView(
  'prod',
  topology([
    node('svc-a', '10.0.0.10:11211', 'cache10'),
    node('svc-a', '10.0.0.2:11211', 'cache02'),
    node('svc-a', '10.0.0.3:11211', '', { live: false }),
    node('svc-b', '10.0.0.2:11212', 'cache02'),
    node('repl', '10.0.1.1:11211', 'r1', { group: 'g1', role: 'master' }),
    node('repl', '10.0.1.2:11211', 'r2', { group: 'g1', role: 'slave' }),
    node('repl', '10.0.1.3:11211', 'r3', { group: 'g2', role: 'master' }),
  ]),
  connected,
  [
    { address: '10.1.0.1:2181', name: 'zk.prod' },
    { address: '10.1.0.2:2181', name: 'zk.prod' },
  ],
  NOW,
);
const dev = ensembleView(
  'dev',
  topology([node('svc-a', '127.0.0.1:11211', 'localhost')]),
  // Unchanged for 20 minutes, its session lost 5 s ago: a stale answer counts from the loss.
  { ...connected, connected: false, updatedAt: NOW - 1_200_000 },
  [{ address: '127.0.0.1:2181' }],
  NOW - 5000,
);
const problem: HostnameProblem = {
  ensemble: 'prod',
  kind: 'cache',
  hostname: 'cache02',
  address: '10.0.0.2:11211',
  problem: 'mismatch',
  resolved: ['10.9.9.9'],
};
const fleet = fleetView([prod, dev], [problem]);

const values = (q: unknown, ctx: QueryContext = context) => variableValues(fleet, parseQuery(q), ctx);
const valuesOf = (q: unknown) => values(q).map((v) => v.value);

describe('variable queries', () => {
  it('ensembles, in config order, a stale one marked in its text', () => {
    assert.deepEqual(values('ensembles'), [
      { text: 'prod', value: 'prod' },
      { text: 'dev (stale)', value: 'dev' },
    ]);
  });

  it('service codes of one or several ensembles', () => {
    assert.deepEqual(valuesOf('service_codes ensemble=prod'), ['repl', 'svc-a', 'svc-b']);
    assert.deepEqual(valuesOf('service_codes ensemble=(prod|dev)'), ['repl', 'svc-a', 'svc-b']);
    assert.deepEqual(valuesOf('service_codes ensemble=dev'), ['svc-a']);
    assert.deepEqual(valuesOf({ target: 'service_codes', ensemble: ['dev'], service_code: ['svc-a', 'nope'] }), [
      'svc-a',
    ]);
  });

  it('nodes in address order, down nodes marked, filtered by state', () => {
    assert.deepEqual(values('nodes ensemble=prod service_code=svc-a'), [
      { text: '10.0.0.2:11211', value: '10.0.0.2:11211' },
      { text: '10.0.0.3:11211 (down)', value: '10.0.0.3:11211' },
      { text: '10.0.0.10:11211', value: '10.0.0.10:11211' },
    ]);
    assert.deepEqual(valuesOf('nodes ensemble=prod service_code=svc-a state=live'), [
      '10.0.0.2:11211',
      '10.0.0.10:11211',
    ]);
    assert.deepEqual(valuesOf('nodes ensemble=prod state=down'), ['10.0.0.3:11211']);
  });

  it('hostnames and host exporter instances, deduplicated, without empty names', () => {
    assert.deepEqual(valuesOf('hostnames ensemble=prod service_code=(svc-a|svc-b)'), ['cache02', 'cache10']);
    assert.deepEqual(valuesOf('host_instances ensemble=prod service_code=(svc-a|svc-b)'), [
      'cache02:9100',
      'cache10:9100',
    ]);
    assert.deepEqual(valuesOf('host_instances ensemble=prod service_code=svc-b port=9200'), ['cache02:9200']);
    assert.deepEqual(valuesOf('host_instances node=10\\.0\\.0\\.10:11211'), ['cache10:9100']);
  });

  it('coordination servers as the coordination exporter labels them', () => {
    assert.deepEqual(values('zk_servers ensemble=prod'), [
      { text: '10.1.0.1:2181 (zk.prod)', value: '10.1.0.1:2181' },
      { text: '10.1.0.2:2181 (zk.prod)', value: '10.1.0.2:2181' },
    ]);
    assert.deepEqual(valuesOf('zk_servers'), ['10.1.0.1:2181', '10.1.0.2:2181', '127.0.0.1:2181']);
  });

  it('replication groups and roles', () => {
    assert.deepEqual(valuesOf('groups ensemble=prod'), ['g1', 'g2']);
    assert.deepEqual(valuesOf('groups ensemble=prod group=g2'), ['g2']);
    assert.deepEqual(valuesOf('roles ensemble=prod service_code=repl'), ['master', 'slave']);
    assert.deepEqual(valuesOf('nodes ensemble=prod role=master'), ['10.0.1.1:11211', '10.0.1.3:11211']);
    assert.deepEqual(valuesOf('nodes group=g1 role=slave'), ['10.0.1.2:11211']);
  });

  it('an unknown ensemble is a bad request naming it and the known ones', () => {
    assert.throws(
      () => values('service_codes ensemble=staging'),
      (err: unknown) => {
        assert.ok(err instanceof CachemonError);
        assert.equal(err.status, 400);
        assert.equal(err.message, 'unknown ensemble "staging" (known: prod, dev)');
        return true;
      },
    );
    assert.throws(() => values({ target: 'nodes', ensemble: ['prod', 'qa'] }), /unknown ensemble "qa"/);
    assert.throws(() => values('nodes ensemble=stag.*'), /unknown ensemble "stag\.\*"/);
  });
});

describe('scrape', () => {
  const at = (fromMsBeforeNow: number) => scrapeFor({ ...context, range: { from: NOW - fromMsBeforeNow, to: NOW } });

  it('short while the range starts inside rawRetention, long from exactly past it', () => {
    assert.equal(at(3600 * 1000), 'short');
    assert.equal(at(14 * DAY - 1), 'short');
    assert.equal(at(14 * DAY), 'short', 'the boundary itself is still inside the retention');
    assert.equal(at(14 * DAY + 1), 'long');
    assert.equal(at(365 * DAY), 'long');
    assert.equal(scrapeFor(context), 'short', 'no range: now');
  });

  it('as a variable query, following rawRetention', () => {
    const range = { from: NOW - 3 * DAY, to: NOW };
    assert.deepEqual(values('scrape', { ...context, range }), [{ text: 'short', value: 'short' }]);
    assert.deepEqual(values('scrape', { ...context, range, rawRetentionMs: 2 * DAY }), [
      { text: 'long', value: 'long' },
    ]);
  });
});

describe('resolution', () => {
  const over = (spanMs: number) => resolutionFor({ ...context, range: { from: NOW - spanMs, to: NOW } });

  it('5m up to 30 days of range, 1h beyond, whatever the range ends', () => {
    assert.equal(over(3600 * 1000), '5m');
    assert.equal(over(30 * DAY), '5m');
    assert.equal(over(30 * DAY + 1), '1h');
    assert.equal(over(2 * 365 * DAY), '1h');
    assert.equal(resolutionFor({ ...context, range: { from: NOW - 400 * DAY, to: NOW - 380 * DAY } }), '5m');
    assert.equal(resolutionFor(context), '5m', 'no range');
  });

  it('as a variable query', () => {
    assert.deepEqual(values('resolution', { ...context, range: { from: NOW - 90 * DAY, to: NOW } }), [
      { text: '1h', value: '1h' },
    ]);
  });
});

describe('tables', () => {
  it('overview: one row per node with state, group, role and topology status', () => {
    const table = tableAnswer(fleet, parseQuery('overview service_code=repl'), context);
    assert.deepEqual(
      table.columns.map((c) => c.text),
      ['ensemble', 'service_code', 'node', 'hostname', 'state', 'group', 'role', 'topology'],
    );
    assert.deepEqual(table.rows, [
      ['prod', 'repl', '10.0.1.1:11211', 'r1', 'live', 'g1', 'master', 'current'],
      ['prod', 'repl', '10.0.1.2:11211', 'r2', 'live', 'g1', 'slave', 'current'],
      ['prod', 'repl', '10.0.1.3:11211', 'r3', 'live', 'g2', 'master', 'current'],
    ]);
    assert.deepEqual(tableAnswer(fleet, parseQuery('overview ensemble=dev'), context).rows, [
      ['dev', 'svc-a', '127.0.0.1:11211', 'localhost', 'live', '', '', 'stale'],
    ]);
  });

  it('service code summary: node counts per service code', () => {
    const table = tableAnswer(fleet, parseQuery('service_code_summary'), context);
    assert.deepEqual(table.rows, [
      ['prod', 'repl', 3, 3, 0, 2, 'current'],
      ['prod', 'svc-a', 3, 2, 1, 0, 'current'],
      ['prod', 'svc-b', 1, 1, 0, 0, 'current'],
      ['dev', 'svc-a', 1, 1, 0, 0, 'stale'],
    ]);
    assert.equal(table.columns[2]!.type, 'number');
  });

  it('ensemble status and hostname problems', () => {
    assert.deepEqual(tableAnswer(fleet, parseQuery('ensemble_status'), context).rows, [
      ['prod', 'current', '10.1.0.1:2181,10.1.0.2:2181', 3, 7, 6, 1, NOW - 1000, NOW],
      ['dev', 'stale', '127.0.0.1:2181', 1, 1, 1, 0, NOW - 1_200_000, NOW - 5000],
    ]);
    assert.deepEqual(tableAnswer(fleet, parseQuery('hostname_problems'), context).rows, [
      ['prod', 'cache', 'cache02', '10.0.0.2:11211', 'mismatch', '10.9.9.9', ''],
    ]);
    assert.deepEqual(tableAnswer(fleet, parseQuery('hostname_problems ensemble=dev'), context).rows, []);
  });

  it('a variable query asked as a table has one column named after it', () => {
    const table = tableAnswer(fleet, parseQuery('hostnames ensemble=prod service_code=svc-a'), context);
    assert.deepEqual(table, { columns: [{ text: 'hostnames', type: 'string' }], rows: [['cache02'], ['cache10']] });
  });
});

describe('node_counts series', () => {
  it('draws the counts recorded at each change over the range', () => {
    const history = new NodeCountHistory();
    const at = (minutes: number) => NOW - 60_000 * (60 - minutes);
    history.record(
      ensembleView('prod', topology([node('s', '1.1.1.1:1', 'a'), node('s', '1.1.1.2:1', 'b')]), connected, [], NOW),
      at(0),
    );
    history.record(
      ensembleView(
        'prod',
        topology([node('s', '1.1.1.1:1', 'a'), node('s', '1.1.1.2:1', 'b', { live: false })]),
        connected,
        [],
        NOW,
      ),
      at(30),
    );
    history.record(
      ensembleView(
        'prod',
        topology([node('s', '1.1.1.1:1', 'a'), node('s', '1.1.1.2:1', 'b', { live: false })]),
        connected,
        [],
        NOW,
      ),
      at(40),
    );
    const view = ensembleView(
      'prod',
      topology([node('s', '1.1.1.1:1', 'a'), node('s', '1.1.1.2:1', 'b', { live: false })]),
      connected,
      [],
      NOW,
    );
    const series = seriesAnswer(
      fleetView([view], []),
      parseQuery('node_counts ensemble=prod'),
      { ...context, range: { from: at(10), to: NOW } },
      history,
    );
    assert.deepEqual(series, [
      {
        target: 'prod/s live',
        datapoints: [
          [2, at(10)],
          [1, at(30)],
          [1, NOW],
        ],
      },
      {
        target: 'prod/s down',
        datapoints: [
          [0, at(10)],
          [1, at(30)],
          [1, NOW],
        ],
      },
    ]);
    const live = seriesAnswer(
      fleetView([view], []),
      parseQuery('node_counts state=live'),
      { ...context, range: { from: at(35), to: at(50) } },
      history,
    );
    assert.deepEqual(live, [
      {
        target: 'prod/s live',
        datapoints: [
          [1, at(35)],
          [1, at(50)],
        ],
      },
    ]);
  });

  it('refuses a series answer for table-only queries', () => {
    assert.throws(() => seriesAnswer(fleet, parseQuery('nodes'), context), /answers as a table, not a time series/);
  });
});
