import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  MergeError,
  mergeMetadata,
  mergeQueryData,
  mergeSeriesData,
  mergeStringLists,
  parseQueryProxyConfig,
  sortByValue,
} from '../../src/index.js';

const groups = parseQueryProxyConfig('promxy.yml', {
  promxy: {
    server_groups: [
      { static_configs: [{ targets: ['a:1'] }], label_filter: { static_labels_include: { scrape: ['short'] } } },
      { static_configs: [{ targets: ['b:1'] }], label_filter: { static_labels_include: { scrape: ['long'] } } },
      { static_configs: [{ targets: ['c:1'] }], labels: { dc: 'east' } },
    ],
  },
}).groups;
const [g0, g1, g2] = groups as [(typeof groups)[0], (typeof groups)[0], (typeof groups)[0]];
const vector = (...series: Array<[Record<string, string>, string]>) => ({
  resultType: 'vector',
  result: series.map(([metric, v]) => ({ metric, value: [100, v] })),
});

describe('mergeQueryData', () => {
  it('unites distinct series in group order', () => {
    const merged = mergeQueryData([
      { group: g0, data: vector([{ __name__: 'up', scrape: 'short' }, '1']) },
      { group: g1, data: vector([{ __name__: 'up', scrape: 'long' }, '0']) },
    ]);
    assert.deepEqual(merged.warnings, []);
    assert.deepEqual(
      merged.data,
      vector([{ __name__: 'up', scrape: 'short' }, '1'], [{ __name__: 'up', scrape: 'long' }, '0']),
    );
  });

  it('shows a label set two groups return once, from the first, and says so naming at most three', () => {
    const five = Array.from({ length: 5 }, (_, i) => [{ node: `n${i}` }, '1'] as [Record<string, string>, string]);
    const merged = mergeQueryData([
      { group: g0, data: vector(...five) },
      { group: g1, data: vector(...five.map(([m]) => [m, '2'] as [Record<string, string>, string])) },
    ]);
    assert.equal((merged.data.result as unknown[]).length, 5);
    assert.deepEqual(
      (merged.data.result as Array<{ value: [number, string] }>).map((s) => s.value[1]),
      ['1', '1', '1', '1', '1'],
    );
    assert.equal(merged.warnings.length, 1);
    assert.match(
      merged.warnings[0]!,
      /^5 series returned by more than one server group \(\{node="n0"\}, \{node="n1"\}, \{node="n2"\} and 2 more\); each is shown once, from group 0 \(scrape=short\), and the other group's values \(group 1 \(scrape=long\)\) are left out$/,
    );
  });

  it("adds a group's labels to its series (the series' own value wins), which keeps the groups apart", () => {
    const merged = mergeQueryData([
      { group: g0, data: vector([{ node: 'a' }, '1']) },
      { group: g2, data: vector([{ node: 'a' }, '2'], [{ node: 'b', dc: 'west' }, '3']) },
    ]);
    assert.deepEqual(merged.warnings, []);
    assert.deepEqual(
      (merged.data.result as Array<{ metric: object }>).map((s) => s.metric),
      [{ node: 'a' }, { node: 'a', dc: 'east' }, { node: 'b', dc: 'west' }],
    );
  });

  it('merges matrices like vectors, and scalars by taking the first with a warning when they differ', () => {
    const matrix = mergeQueryData([
      { group: g0, data: { resultType: 'matrix', result: [{ metric: { a: '1' }, values: [[1, '1']] }] } },
      { group: g1, data: { resultType: 'matrix', result: [{ metric: { a: '2' }, values: [[1, '2']] }] } },
    ]);
    assert.equal((matrix.data.result as unknown[]).length, 2);
    const scalar = mergeQueryData([
      { group: g0, data: { resultType: 'scalar', result: [1, '5'] } },
      { group: g1, data: { resultType: 'scalar', result: [1, '7'] } },
    ]);
    assert.deepEqual(scalar.data.result, [1, '5']);
    assert.match(
      scalar.warnings[0]!,
      /different scalars; shown is group 0 \(scrape=short\)'s, not group 1 \(scrape=long\)'s/,
    );
  });

  it('refuses answers it cannot read, naming the group', () => {
    assert.throws(
      () => mergeQueryData([{ group: g0, data: { result: [] } }]),
      new MergeError('group 0 (scrape=short) answered without data.resultType'),
    );
    assert.throws(
      () => mergeQueryData([{ group: g1, data: { resultType: 'vector', result: [{ value: [1, '1'] }] } }]),
      /group 1 \(scrape=long\) answered a series without its metric labels/,
    );
    assert.throws(
      () =>
        mergeQueryData([
          { group: g0, data: vector() },
          { group: g1, data: { resultType: 'matrix', result: [] } },
        ]),
      /different result types \(vector, matrix\)/,
    );
  });
});

describe('sortByValue', () => {
  it("orders a merged vector as sort() and sort_desc() order one store's: NaN last, ties as they came", () => {
    const merged = vector(
      [{ n: 'a' }, '2'],
      [{ n: 'b' }, 'NaN'],
      [{ n: 'c' }, '-Inf'],
      [{ n: 'd' }, '10'],
      [{ n: 'e' }, '+Inf'],
      [{ n: 'f' }, '2'],
      [{ n: 'g' }, '1e-3'],
    );
    const names = (data: { result: unknown }) =>
      (data.result as Array<{ metric: { n: string } }>).map((s) => s.metric.n).join('');
    assert.equal(names(sortByValue(merged as never, false)), 'cgafdeb');
    assert.equal(names(sortByValue(merged as never, true)), 'edafgcb');
    const matrix = { resultType: 'matrix' as const, result: [{ metric: { n: 'x' }, values: [] }] };
    assert.equal(sortByValue(matrix, false), matrix, 'a range answer has no order to keep');
  });
});

describe('the listing endpoints', () => {
  it('series: the union of label sets, a shared one listed once', () => {
    const merged = mergeSeriesData([
      { group: g0, data: [{ __name__: 'x', a: '1' }, { __name__: 'y' }] },
      { group: g1, data: [{ a: '1', __name__: 'x' }] },
    ]);
    assert.deepEqual(merged.data, [{ __name__: 'x', a: '1' }, { __name__: 'y' }]);
  });
  it('labels and values: the sorted union, null as none, group label names added', () => {
    assert.deepEqual(
      mergeStringLists(
        [
          { group: g0, data: ['b', 'a'] },
          { group: g1, data: null },
          { group: g2, data: ['a', 'c'] },
        ],
        (g) => Object.keys(g.labels),
      ).data,
      ['a', 'b', 'c', 'dc'],
    );
    assert.throws(() => mergeStringLists([{ group: g0, data: [1] }]), /not a string/);
  });
  it('metadata: entries per metric, the same entry once', () => {
    const entry = { type: 'counter', help: 'h', unit: '' };
    assert.deepEqual(
      mergeMetadata([
        { group: g0, data: { x: [entry] } },
        { group: g1, data: { x: [entry, { ...entry, help: 'other' }], y: [entry] } },
      ]).data,
      {
        x: [entry, { ...entry, help: 'other' }],
        y: [entry],
      },
    );
  });
});
