// Pooling run.mjs reports (bench/lib/pool.mjs): rounds cut as run.mjs shares them, samples pooled
// per build and configuration, the interval, the goal.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { pooledGoals, pooledTable, poolReports, roundsOf, runLines } from '../../pool.mjs';
import { percentile } from '../../process.mjs';

/** A run.mjs-shaped report of one /metrics configuration, from the given samples. */
function report({ commit = 'abc1234', nodes = 100, prefixes = 0, exp, floor, compressed = floor, block = 5, traffic = true }) {
  const side = (samples) => ({ n: samples.length, p50: percentile(samples, 50), p99: percentile(samples, 99), samples });
  return {
    code: { commit, packagesModified: [] },
    options: { scrapes: exp.length, block, traffic, gzip: true, client: 'bare', perCode: 100, pin: false, paceMs: 100, exporterFlags: [], exporterNodeFlags: [] },
    results: [
      {
        nodes,
        prefixes,
        metrics: { exporter: side(exp), floor: side(floor), compressedFloor: side(compressed) },
        prefixMetrics: { exporter: { n: 0, samples: [] }, floor: { n: 0, samples: [] } },
      },
    ],
  };
}

/** Fewer bootstrap draws than pool.mjs makes: enough to hold the point, quick to test. */
const FEW = { iterations: 200 };

/** Seeded samples: a base of `base` ms and a tail scaled by `tail`. */
function samples(count, base, tail, seed) {
  let x = seed;
  const rand = () => ((x = (x * 48271) % 2147483647) / 2147483647);
  return Array.from({ length: count }, () => base + tail * rand() ** 6);
}

test('roundsOf cuts the samples as run.mjs shares scrapes over its rounds', () => {
  const s = Array.from({ length: 13 }, (_, i) => i);
  // 13 samples over ceil(13 / 5) = 3 rounds: 4, 4, 5 (floor((i + 1) 13 / 3) - floor(i 13 / 3)).
  assert.deepEqual(
    roundsOf(s, 3).map((r) => r.length),
    [4, 4, 5],
  );
  assert.deepEqual(roundsOf(s, 3).flat(), s, 'in order, none lost');
  // Fewer samples than rounds (prefix scrapes): empty rounds are left out.
  assert.deepEqual(roundsOf([1, 2], 5), [[1], [2]]);
  assert.deepEqual(roundsOf([], 4), []);
});

test('poolReports pools the samples of one build and configuration, and keeps other builds apart', () => {
  const a = report({ exp: samples(300, 16, 20, 1), floor: samples(300, 13, 12, 2) });
  const b = report({ exp: samples(300, 16, 25, 3), floor: samples(300, 13, 9, 4) });
  const other = report({ commit: 'def5678', exp: samples(300, 20, 30, 5), floor: samples(300, 13, 12, 6) });
  const pooled = poolReports(
    [
      { file: 'a.json', report: a },
      { file: 'b.json', report: b },
      { file: 'c.json', report: other },
    ],
    FEW,
  );
  assert.equal(pooled.length, 2);
  const [ab, c] = pooled;
  assert.equal(ab.commit, 'abc1234');
  assert.deepEqual(
    ab.runs.map((r) => r.file),
    ['a.json', 'b.json'],
  );
  assert.equal(ab.scrapes, 600);
  const exp = [...a.results[0].metrics.exporter.samples, ...b.results[0].metrics.exporter.samples];
  const floor = [...a.results[0].metrics.floor.samples, ...b.results[0].metrics.floor.samples];
  assert.equal(ab.expP99, percentile(exp, 99));
  assert.equal(ab.floorP50, percentile(floor, 50));
  assert.equal(ab.ratio, percentile(exp, 99) / percentile(floor, 99));
  assert.ok(ab.interval.low <= ab.ratio && ab.ratio <= ab.interval.high, `${ab.interval.low}..${ab.interval.high} holds ${ab.ratio}`);
  // Each run's own ratio, as run.mjs printed it.
  assert.equal(ab.runs[0].ratio, a.results[0].metrics.exporter.p99 / a.results[0].metrics.floor.p99);
  assert.equal(ab.runs[1].ratio, b.results[0].metrics.exporter.p99 / b.results[0].metrics.floor.p99);
  assert.equal(c.commit, 'def5678');
  assert.equal(c.runs.length, 1);
  // The compressing floor here is the floor itself: a ratio of 1.
  assert.equal(ab.compressedRatio, 1);
  // Seeded: the same reports, the same interval.
  assert.deepEqual(poolReports([{ file: 'a.json', report: a }, { file: 'b.json', report: b }], FEW)[0].interval, ab.interval);
});

test('poolReports keeps runs of another setup apart, and refuses a report without samples, naming its file', () => {
  const a = report({ exp: samples(100, 16, 20, 1), floor: samples(100, 13, 12, 2) });
  const quiet = report({ exp: samples(100, 16, 20, 1), floor: samples(100, 13, 12, 2), traffic: false });
  const pooled = poolReports(
    [
      { file: 'a.json', report: a },
      { file: 'q.json', report: quiet },
    ],
    FEW,
  );
  assert.equal(pooled.length, 2);
  assert.match(pooled[1].setup, /no traffic/);

  const trimmed = report({ exp: samples(100, 16, 20, 1), floor: samples(100, 13, 12, 2) });
  trimmed.results[0].metrics.floor.samples = trimmed.results[0].metrics.floor.samples.slice(1);
  assert.throws(() => poolReports([{ file: 'trimmed.json', report: trimmed }]), /trimmed\.json: N=100 P=0 \/metrics: .*samples/);
  assert.throws(() => poolReports([{ file: 'x.json', report: { hello: 1 } }]), /x\.json: not a report/);
});

test('pooledGoals: the ratio of the pooled p99s decides, and says whether its interval is within the goal too', () => {
  const close = report({ exp: samples(1000, 13, 14, 7), floor: samples(1000, 13, 10, 8) });
  const far = report({ prefixes: 50, exp: samples(1000, 13, 40, 9), floor: samples(1000, 13, 10, 10) });
  const pooled = poolReports(
    [
      { file: 'close.json', report: close },
      { file: 'far.json', report: far },
    ],
    FEW,
  );
  const goals = pooledGoals(pooled, { goalRatio: 1.5 });
  assert.equal(goals.length, 2);
  const [p0, p50] = goals;
  assert.equal(p0.status, 'PASS', `close: ${p0.detail}`);
  assert.equal(p50.status, 'FAIL', `far: ${p50.detail}`);
  assert.equal(p50.intervalWithin, false);
  assert.match(p0.goal, /N=100 P=0 at abc1234/);
  // Another node count: no goal.
  assert.deepEqual(pooledGoals(pooled, { nodes: 500 }), []);

  const table = pooledTable(pooled);
  assert.match(table, /runs <= 1\.5x/);
  assert.match(table, new RegExp(`${pooled[0].ratio.toFixed(2)}x`));
  assert.match(table, /1 of 1/);
  assert.match(runLines(pooled), /close\.json: 1000 scrapes/);
});

test('pool.mjs prints the pooled table, each run and the goal; a report it cannot read is named', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pool-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const files = [1, 2].map((i) => {
    const file = join(dir, `goal-${i}.json`);
    writeFileSync(file, JSON.stringify(report({ exp: samples(200, 16, 10, 10 + i), floor: samples(200, 13, 10, 20 + i) })));
    return file;
  });
  const pool = fileURLToPath(new URL('../../../cache-exporter/pool.mjs', import.meta.url));
  const ok = spawnSync(process.execPath, [pool, ...files], { encoding: 'utf8' });
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(ok.stdout, /2 reports pooled/);
  assert.match(ok.stdout, /100\s+0\s+\/metrics\s+abc1234\s+2\s+400/);
  assert.match(ok.stdout, new RegExp(`${files[1].replaceAll('/', '\\/')}: 200 scrapes`));
  assert.match(ok.stdout, /(PASS|FAIL)\s+N=100 P=0 at abc1234: pooled \/metrics p99/);

  const missing = spawnSync(process.execPath, [pool, files[0], join(dir, 'none.json')], { encoding: 'utf8' });
  assert.notEqual(missing.status, 0);
  assert.match(missing.stderr, /none\.json: cannot be read \(ENOENT\)/);
  writeFileSync(join(dir, 'bad.json'), '{');
  const bad = spawnSync(process.execPath, [pool, join(dir, 'bad.json')], { encoding: 'utf8' });
  assert.match(bad.stderr, /bad\.json: not JSON/);
  const none = spawnSync(process.execPath, [pool], { encoding: 'utf8' });
  assert.match(none.stderr, /no reports given/);
});
