import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  MergeError,
  mergeMetadata,
  mergeQueryData,
  mergeReplicaMetadata,
  mergeReplicaQueryData,
  mergeReplicaSeries,
  mergeReplicaStrings,
  mergeSamples,
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

/** Samples `[seconds, value]` at each of `seconds`, valued by `value`. */
const at = (seconds: number[], value: (s: number) => string = (s) => String(s)) =>
  seconds.map((s) => [s, value(s)] as [number, string]);
const range = (from: number, to: number, step: number) =>
  Array.from({ length: Math.floor((to - from) / step) + 1 }, (_, i) => from + i * step);
const matrix = (...series: Array<[Record<string, string>, Array<[number, string]>]>) => ({
  resultType: 'matrix',
  result: series.map(([metric, values]) => ({ metric, values })),
});

describe("merging a group's replicas (promxy's MergeSampleStream)", () => {
  const full = range(0, 600, 60);
  const holed = full.filter((s) => s < 180 || s > 300);

  it("fills a hole in one replica from the other; where both have a sample, the fuller replica's stands", () => {
    const a = at(holed, (s) => `a${s}`);
    const b = at(full, (s) => `b${s}`);
    // The fuller side is the base, whichever comes first; the other adds only what the base lacks.
    assert.deepEqual(mergeSamples(a, b, 10_000), { samples: b, filled: 0 });
    assert.deepEqual(mergeSamples(b, a, 10_000), { samples: b, filled: 0 });
    // Holes in both: each fills the other's.
    const c = at(
      full.filter((s) => s !== 480),
      (s) => `c${s}`,
    );
    const merged = mergeSamples(a, c, 10_000);
    assert.deepEqual(
      merged.samples.map(([s, v]) => `${s}:${String(v)}`),
      full.map((s) => (s === 480 ? `${s}:a${s}` : `${s}:c${s}`)),
    );
    assert.equal(merged.filled, 1);
    // As many samples on each side: the first one given is the base.
    const d = at(full, (s) => `d${s}`);
    assert.deepEqual(mergeSamples(d, b, 10_000).samples, d);
  });

  it('takes two samples closer than anti_affinity as one scrape seen by both replicas at different times', () => {
    // b scraped 3 s after a, every 15 s, and stopped early; a lost a minute (a restart) and has more.
    const a = at([...range(0, 120, 15), ...range(195, 300, 15)], () => 'a');
    const b = at(range(3, 213, 15), () => 'b');
    const merged = mergeSamples(a, b, 10_000);
    // b's samples within 10 s of one of a's are left out (123 after 120, 198 after 195); in a's
    // gap those more than 10 s from both ends are taken (183 is 12 s before 195).
    assert.deepEqual(
      merged.samples.map(([s, v]) => `${s}${String(v)}`),
      [
        ...range(0, 120, 15).map((s) => `${s}a`),
        '138b',
        '153b',
        '168b',
        '183b',
        ...range(195, 300, 15).map((s) => `${s}a`),
      ],
    );
    assert.equal(merged.filled, 4);
    // With a window of 0 every distinct instant is kept, a shared one once.
    const exact = mergeSamples(at([0, 10, 20]), at([10, 15, 30]), 0);
    assert.deepEqual(
      exact.samples.map(([s]) => s),
      [0, 10, 15, 20, 30],
    );
    assert.equal(exact.filled, 2);
  });

  it("takes the other's samples from before the base begins and after it ends, beyond the window", () => {
    const merged = mergeSamples(at(range(100, 200, 10)), at([50, 60, 95, 205, 215]), 4000);
    assert.deepEqual(
      merged.samples.map(([s]) => s),
      [50, 60, 95, ...range(100, 200, 10), 205, 215],
    );
    assert.deepEqual(
      mergeSamples(at(range(100, 200, 10)), at([50, 97, 203, 250]), 4000).samples.map(([s]) => s),
      [50, ...range(100, 200, 10), 250],
    );
  });

  it('a range answer: series united by label set, each once, holes filled, counted', () => {
    const up = { __name__: 'up', node: 'n1' };
    const other = { __name__: 'up', node: 'n2' };
    const merged = mergeReplicaQueryData(
      [
        { replica: 'http://a', data: matrix([up, at(holed)], [other, at(full)]) },
        { replica: 'http://b', data: matrix([other, at(full, () => 'b')], [up, at(full)]) },
        { replica: 'http://c', data: matrix([{ __name__: 'up', node: 'n3' }, at([60])]) },
      ],
      10_000,
    );
    assert.deepEqual(
      merged.data,
      matrix([up, at(full)], [other, at(full)], [{ __name__: 'up', node: 'n3' }, at([60])]),
    );
    assert.equal(merged.filled, 0, "b's fuller series is the base: nothing of a is taken into it");
    const both = mergeReplicaQueryData(
      [
        { replica: 'http://a', data: matrix([up, at(holed)]) },
        { replica: 'http://b', data: matrix([up, at(full.filter((s) => s !== 600))]) },
      ],
      10_000,
    );
    assert.deepEqual(both.data, matrix([up, at(full)]));
    assert.equal(both.filled, 1);
  });

  it("an instant vector: each series once, the first replica's sample where several have one; a scalar the first's", () => {
    const merged = mergeReplicaQueryData(
      [
        { replica: 'http://a', data: vector([{ n: '1' }, '0'], [{ n: '2' }, '5']) },
        { replica: 'http://b', data: vector([{ n: '2' }, '6'], [{ n: '3' }, '7'], [{ n: '1' }, '1']) },
      ],
      10_000,
    );
    assert.deepEqual(merged.data, vector([{ n: '1' }, '0'], [{ n: '2' }, '5'], [{ n: '3' }, '7']));
    const scalar = (v: string) => ({ resultType: 'scalar', result: [100, v] });
    assert.deepEqual(
      mergeReplicaQueryData(
        [
          { replica: 'http://a', data: scalar('1') },
          { replica: 'http://b', data: scalar('2') },
        ],
        10_000,
      ).data,
      scalar('1'),
    );
    assert.throws(
      () =>
        mergeReplicaQueryData(
          [
            { replica: 'http://a', data: vector() },
            { replica: 'http://b', data: matrix() },
          ],
          10_000,
        ),
      (err: unknown) => err instanceof MergeError && /replicas answered different result types/.test(err.message),
    );
    assert.throws(
      () =>
        mergeReplicaQueryData(
          [
            { replica: 'http://a', data: { resultType: 'matrix', result: [{ metric: {}, values: [1] }] } },
            { replica: 'http://b', data: matrix([{}, at([1])]) },
          ],
          0,
        ),
      /replica http:\/\/a answered a series whose values are not \[time, value\] pairs/,
    );
  });

  it('series, labels, label values, metadata: the union of the replicas, each entry once', () => {
    assert.deepEqual(
      mergeReplicaSeries([
        { replica: 'http://a', data: [{ __name__: 'x', n: '1' }] },
        {
          replica: 'http://b',
          data: [
            { n: '1', __name__: 'x' },
            { __name__: 'x', n: '2' },
          ],
        },
      ]).data,
      [
        { __name__: 'x', n: '1' },
        { __name__: 'x', n: '2' },
      ],
    );
    assert.deepEqual(
      mergeReplicaStrings([
        { replica: 'http://a', data: ['n', '__name__'] },
        { replica: 'http://b', data: ['job', 'n'] },
      ]).data,
      ['__name__', 'job', 'n'],
    );
    const entry = { type: 'gauge', help: 'h', unit: '' };
    assert.deepEqual(
      mergeReplicaMetadata([
        { replica: 'http://a', data: { x: [entry] } },
        { replica: 'http://b', data: { x: [entry], y: [entry] } },
      ]).data,
      { x: [entry], y: [entry] },
    );
    assert.throws(
      () => mergeReplicaSeries([{ replica: 'http://a', data: {} }]),
      /replica http:\/\/a answered series data that is not a list/,
    );
  });
});
