// What alternate.mjs computes from run.mjs's reports: the order of the runs and the side-by-side table.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { alternationOrder, sideBySide } from '../../alternate.mjs';

test('alternationOrder: baseline first, then A B B A, so that a drifting machine favours neither side', () => {
  assert.deepEqual(alternationOrder(1), ['baseline', 'current']);
  assert.deepEqual(alternationOrder(3), ['baseline', 'current', 'current', 'baseline', 'baseline', 'current']);
  assert.deepEqual(alternationOrder(0), []);
});

/** A run.mjs report of one configuration, /metrics only. */
const report = (commit, exp, floor, cpu, rss, packagesModified = [], wire = 110 * 1024) => ({
  code: { commit, packagesModified },
  results: [
    {
      nodes: 100,
      prefixes: 0,
      rss: { maxMB: rss },
      metrics: {
        exporter: { n: 300, p50: exp[0], p99: exp[1], netMsPerScrape: cpu, wireBytes: wire },
        floor: { p50: floor[0], p99: floor[1] },
      },
      prefixMetrics: { exporter: { n: 0 }, floor: {} },
    },
  ],
});

test('sideBySide: a row per run (+: uncommitted changes), then per side the medians, with the median of the runs’ ratios and the body as sent', () => {
  const text = sideBySide([
    { side: 'baseline', index: 1, report: report('aaa1111', [20, 40], [10, 20], 18, 110) },
    { side: 'current', index: 1, report: report('bbb2222', [18, 30], [10, 25], 16, 108) },
    {
      side: 'current',
      index: 2,
      report: report('bbb2222', [17, 33], [11, 22], 15, 109, [' M packages/core/src/exposition.ts']),
    },
    { side: 'baseline', index: 2, report: report('aaa1111', [21, 36], [12, 24], 19, 111, [], 100 * 1024) },
  ]);
  const lines = text.split('\n');
  const row = (label) => {
    const line = lines.find((l) => l.includes(` ${label} `));
    assert.ok(line, `a row for ${label}:\n${text}`);
    return line.trim().split(/\s{2,}/);
  };
  assert.match(lines[0], /^N\s+P\s+endpoint\s+run\s+commit\s+exp p50/);
  assert.deepEqual(row('baseline 1'), [
    '100',
    '0',
    '/metrics',
    'baseline 1',
    'aaa1111',
    '20.0',
    '40.0',
    '10.0',
    '20.0',
    '2.00x',
    '18.0',
    '110',
    '110',
  ]);
  assert.deepEqual(row('current 2'), [
    '100',
    '0',
    '/metrics',
    'current 2',
    'bbb2222+',
    '17.0',
    '33.0',
    '11.0',
    '22.0',
    '1.50x',
    '15.0',
    '110',
    '109',
  ]);
  // Medians of two runs are the lower middle ones (percentile's nearest rank); the ratio is the
  // median of 2.00x and 1.50x (baseline) and of 1.20x and 1.50x (current), not a ratio of medians.
  assert.deepEqual(row('baseline median'), [
    '100',
    '0',
    '/metrics',
    'baseline median',
    'aaa1111',
    '20.0',
    '36.0',
    '10.0',
    '20.0',
    '1.50x',
    '18.0',
    '100',
    '110',
  ]);
  assert.deepEqual(row('current median'), [
    '100',
    '0',
    '/metrics',
    'current median',
    'bbb2222',
    '17.0',
    '30.0',
    '10.0',
    '22.0',
    '1.20x',
    '15.0',
    '110',
    '108',
  ]);
  assert.equal(
    lines.length,
    2 + 4 + 2,
    'header, rule, four runs, two medians; the prefix endpoint, not measured, has none',
  );
});
