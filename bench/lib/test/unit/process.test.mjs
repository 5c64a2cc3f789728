// The benchmarks' measuring helpers: what they compute from known input, and what they read from
// this very process.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  allowedCpus,
  cpuCensus,
  cpuMs,
  mainThreadSched,
  parseCpuList,
  percentile,
  pinProcess,
  pooledRatioInterval,
  ratioInterval,
  runQueueWait,
  shebangNodeFlags,
  splitCpus,
  statusKb,
  waitSummary,
} from '../../process.mjs';

test('percentile is nearest-rank', () => {
  const values = Array.from({ length: 100 }, (_, i) => 100 - i); // 100..1, unsorted on purpose
  assert.equal(percentile(values, 50), 50);
  assert.equal(percentile(values, 99), 99);
  assert.equal(percentile(values, 100), 100);
  assert.equal(percentile([7], 99), 7);
});

test('waitSummary: the waits, the wait of the tail, and the p99 less the waits', () => {
  // 100 samples: latency i + 1 ms; the two slowest waited 30 and 20 ms, the others 1 ms.
  const ms = Array.from({ length: 100 }, (_, i) => i + 1);
  const wait = ms.map((v) => (v === 100 ? 30 : v === 99 ? 20 : 1));
  const s = waitSummary(ms, wait);
  assert.equal(s.waitP50, 1);
  assert.equal(s.waitP99, 20);
  // p99 latency is 99 ms: the samples at or above it are 99 and 100, waits 20 and 30.
  assert.equal(s.waitAtP99, 25);
  // Less their waits: 0..97 for the others, 79 and 70 for the two slowest; of these 100 values the
  // 99th smallest is 96.
  assert.equal(s.lessWaitP99, 96);
  assert.equal(waitSummary(ms, wait.slice(1)), undefined, 'waits missing for some samples');
  assert.equal(waitSummary([], []), undefined);
});

test('ratioInterval brackets the ratio of the pooled p99s and is the same for the same seed', () => {
  let x = 1;
  const rand = () => (x = (x * 48271) % 2147483647) / 2147483647;
  const blocks = (scale) =>
    Array.from({ length: 40 }, () => Array.from({ length: 10 }, () => scale * (10 + 20 * rand() ** 4)));
  const exp = blocks(1.3);
  const floor = blocks(1);
  const point = percentile(exp.flat(), 99) / percentile(floor.flat(), 99);
  const a = ratioInterval(exp, floor, { seed: 7 });
  assert.ok(a.low <= point && point <= a.high, `${a.low}..${a.high} holds ${point}`);
  assert.ok(a.high > a.low);
  assert.deepEqual(ratioInterval(exp, floor, { seed: 7 }), a);
});

test('pooledRatioInterval: runs that disagree widen the interval beyond drawing their blocks alone', () => {
  let x = 3;
  const rand = () => (x = (x * 48271) % 2147483647) / 2147483647;
  const blocks = (scale) =>
    Array.from({ length: 40 }, () => Array.from({ length: 10 }, () => scale * (10 + 20 * rand() ** 4)));
  // Three runs: the floor's tail is light in one, heavy in another, so their ratios differ.
  const runs = [1, 1.6, 1.2].map((floorScale) => ({ expBlocks: blocks(1.3), floorBlocks: blocks(floorScale) }));
  const pooledExp = runs.flatMap((r) => r.expBlocks.flat());
  const pooledFloor = runs.flatMap((r) => r.floorBlocks.flat());
  const point = percentile(pooledExp, 99) / percentile(pooledFloor, 99);
  const pooled = pooledRatioInterval(runs, { seed: 5 });
  assert.ok(pooled.low <= point && point <= pooled.high, `${pooled.low}..${pooled.high} holds ${point}`);
  // Drawing runs as well as blocks: the spread between runs is in the interval.
  const flat = ratioInterval(
    runs.flatMap((r) => r.expBlocks),
    runs.flatMap((r) => r.floorBlocks),
    { seed: 5 },
  );
  assert.ok(pooled.high - pooled.low > flat.high - flat.low, 'wider than drawing the pooled blocks alone');
  assert.deepEqual(pooledRatioInterval(runs, { seed: 5 }), pooled);
  // One run: the same as ratioInterval.
  assert.deepEqual(
    pooledRatioInterval(runs.slice(0, 1), { seed: 5 }),
    ratioInterval(runs[0].expBlocks, runs[0].floorBlocks, { seed: 5 }),
  );
});

test('mainThreadSched reads this process: CPU grows with work, the wait never goes back', () => {
  const first = mainThreadSched(process.pid);
  if (process.platform !== 'linux') {
    assert.equal(first, undefined);
    return;
  }
  assert.ok(first !== undefined, 'schedstat of this process');
  // Spin until the main thread itself has had 30 ms more of a CPU, as schedstat counts it: with
  // other work on the cores a wall-time spin waits in the run queue, and the process's CPU time
  // (process.cpuUsage) also counts its other threads.
  const giveUp = performance.now() + 30_000;
  let spin = 0;
  let second = first;
  while (second.cpuMs - first.cpuMs < 30 && performance.now() < giveUp) {
    for (let i = 0; i < 10_000; i++) spin++;
    second = mainThreadSched(process.pid);
  }
  assert.ok(spin > 0);
  assert.ok(second.cpuMs - first.cpuMs >= 30, `on a CPU ${second.cpuMs - first.cpuMs} ms after 30 s of spinning`);
  assert.ok(second.waitMs >= first.waitMs);
  assert.equal(mainThreadSched(2 ** 22 + 12345), undefined, 'no such process');
});

test('runQueueWait gives the wait since it started, and undefined for a process that is not there', () => {
  const waited = runQueueWait(process.pid);
  const wait = waited();
  if (process.platform !== 'linux') {
    assert.equal(wait, undefined);
    return;
  }
  assert.ok(wait >= 0 && wait < 1000, String(wait));
  assert.equal(runQueueWait(2 ** 22 + 12345)(), undefined);
});

test('cpuMs and statusKb read /proc of this process', { skip: process.platform !== 'linux' && 'procfs only' }, () => {
  assert.ok(cpuMs(process.pid) >= 0);
  assert.ok(statusKb(process.pid, 'VmRSS') > 1000);
  assert.ok(Number.isNaN(statusKb(process.pid, 'NoSuchField')));
});

test("shebangNodeFlags reads the node flags of a script's first line", () => {
  const dir = mkdtempSync(join(tmpdir(), 'shebang-'));
  try {
    const flags = (firstLine) => {
      writeFileSync(join(dir, 'bin'), `${firstLine}\nimport './main.js';\n`);
      return shebangNodeFlags(join(dir, 'bin'));
    };
    assert.deepEqual(flags('#!/usr/bin/env -S node --max-semi-space-size=8 --max-old-space-size=512'), [
      '--max-semi-space-size=8',
      '--max-old-space-size=512',
    ]);
    assert.deepEqual(flags('#!/usr/local/bin/node --stack-size=900'), ['--stack-size=900']);
    assert.deepEqual(flags('#!/usr/bin/env node'), []);
    assert.deepEqual(flags('#!/bin/sh'), []);
    assert.deepEqual(flags('// no shebang'), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // The exporter as shipped runs with flags of its own.
  assert.ok(
    shebangNodeFlags(new URL('../../../../bin/cache-exporter', import.meta.url)).some((flag) =>
      flag.startsWith('--max-old-space-size='),
    ),
  );
});

test('cpuCensus: what a busy child and this process used, and the rest as other', async () => {
  // Both spin for CPU time, not wall time, so a loaded machine only makes the test slower: the
  // child 300 ms (then says so and waits to be killed), this process 150 ms.
  const spin =
    'const u = () => { const c = process.cpuUsage(); return (c.user + c.system) / 1000; }; const s = u(); while (u() - s < 300); process.stdout.write("done\\n"); setInterval(() => {}, 1000);';
  const child = spawn(process.execPath, ['-e', spin], { stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    const end = cpuCensus({ child: child.pid, self: process.pid });
    assert.notEqual(end, undefined, 'this kernel keeps schedstat');
    const childDone = new Promise((resolve) => child.stdout.once('data', resolve));
    const own = () => {
      const c = process.cpuUsage();
      return (c.user + c.system) / 1000;
    };
    const start = own();
    while (own() - start < 150);
    await childDone;
    const used = end();
    assert.ok(used.child >= 280, `child ${used.child} ms`);
    assert.ok(used.child <= used.wallMs * 2, `child ${used.child} ms in ${used.wallMs} ms`);
    assert.ok(used.self >= 140 && used.self <= used.wallMs * 2, `self ${used.self} ms in ${used.wallMs} ms`);
    assert.ok(used.other >= 0);
    assert.deepEqual(Object.keys(used).sort(), ['child', 'other', 'self', 'wallMs']);
  } finally {
    child.kill('SIGKILL');
  }
});

test("parseCpuList reads the kernel's CPU lists and refuses anything else", () => {
  assert.deepEqual(parseCpuList('0'), [0]);
  assert.deepEqual(parseCpuList('0-3,6,8-9'), [0, 1, 2, 3, 6, 8, 9]);
  assert.deepEqual(parseCpuList('4,0-1'), [0, 1, 4]);
  for (const bad of ['', 'a', '3-1', '1,,2', '1-']) assert.throws(() => parseCpuList(bad), /not a CPU list/, bad);
});

test('splitCpus: the servers get the upper half, the rest the lower (the larger when odd)', () => {
  assert.deepEqual(splitCpus([0, 1]), { others: '0', servers: '1' });
  assert.deepEqual(splitCpus([0, 1, 2]), { others: '0,1', servers: '2' });
  assert.deepEqual(splitCpus([2, 3, 6, 7]), { others: '2,3', servers: '6,7' });
  assert.throws(() => splitCpus([0]), /at least 2 CPUs/);
});

test(
  'pinProcess binds every thread of a process; allowedCpus reads it back',
  { skip: process.platform !== 'linux' && 'procfs only' },
  async () => {
    const cpus = allowedCpus(process.pid);
    assert.ok(cpus.length >= 1 && cpus.every(Number.isInteger));
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' });
    try {
      await new Promise((resolve) => child.once('spawn', resolve));
      const last = cpus.at(-1);
      pinProcess(child.pid, String(last));
      assert.deepEqual(allowedCpus(child.pid), [last]);
      assert.throws(() => pinProcess(child.pid, 'x'), /taskset --pid/);
    } finally {
      child.kill('SIGKILL');
    }
  },
);
