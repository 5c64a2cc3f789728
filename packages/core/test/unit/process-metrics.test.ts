import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { register } from 'prom-client';
import { createProcessMetrics } from '../../src/index.js';
import { eventually } from '../support/eventually.js';

interface Family {
  help: string;
  type: string;
  /** Every sample: its name, labels and value. */
  samples: Array<{ name: string; labels: Record<string, string>; value: number }>;
}

/** A strict reading of exposition text: every line a HELP, a TYPE, a blank, or a sample of the family just declared. */
function families(text: string): Map<string, Family> {
  const out = new Map<string, Family>();
  let current: Family | undefined;
  let currentName = '';
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let m = /^# HELP (\S+) (.*)$/.exec(line);
    if (m) {
      assert.ok(!out.has(m[1]!), `${m[1]} declared twice`);
      currentName = m[1]!;
      current = { help: m[2]!, type: '', samples: [] };
      out.set(currentName, current);
      continue;
    }
    m = /^# TYPE (\S+) (counter|gauge|histogram)$/.exec(line);
    if (m) {
      assert.equal(m[1], currentName, `TYPE of ${m[1]} right after its HELP`);
      current!.type = m[2]!;
      continue;
    }
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `not a sample line: ${line}`);
    assert.ok(m[1]!.startsWith(currentName), `${m[1]} outside its family (${currentName})`);
    const labels: Record<string, string> = {};
    for (const pair of (m[2] ?? '').split(',').filter(Boolean)) {
      const [name, value] = pair.split('=');
      labels[name!] = JSON.parse(value!) as string;
    }
    // prom-client writes NaN as `Nan`: the event-loop mean before the sampler's first interval.
    const value = /^nan$/i.test(m[3]!) ? Number.NaN : Number(m[3]);
    assert.ok(!Number.isNaN(value) || /^nan$/i.test(m[3]!), `value of ${line}`);
    current!.samples.push({ name: m[1]!, labels, value });
  }
  return out;
}

const value = (all: Map<string, Family>, name: string, labels: Record<string, string> = {}): number => {
  const family = all.get(name) ?? [...all.values()].find((f) => f.samples.some((s) => s.name === name));
  const sample = family?.samples.find(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  assert.ok(sample, `${name} ${JSON.stringify(labels)}`);
  return sample.value;
};

const read = async (metrics: { metrics(): Promise<string> }): Promise<Map<string, Family>> =>
  families(await metrics.metrics());
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/**
 * A read once the event-loop sampler has taken a sample (before, its min is a placeholder of
 * billions of seconds and its mean NaN). A read resets the sampler: each try waits for a new one.
 */
const readSampled = (metrics: { metrics(): Promise<string> }): Promise<Map<string, Family>> =>
  eventually(
    async () => {
      const all = await read(metrics);
      const min = value(all, 'nodejs_eventloop_lag_min_seconds');
      assert.ok(min < 1, `nodejs_eventloop_lag_min_seconds ${min}`);
      return all;
    },
    { intervalMs: 20 },
  );

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

describe('process metrics', () => {
  it("has prom-client's default families but the gauges named like counters", async () => {
    const metrics = createProcessMetrics();
    const all = await readSampled(metrics);
    assert.deepEqual([...all.keys()].sort(), [
      'nodejs_active_handles',
      'nodejs_active_requests',
      'nodejs_active_resources',
      'nodejs_eventloop_lag_max_seconds',
      'nodejs_eventloop_lag_mean_seconds',
      'nodejs_eventloop_lag_min_seconds',
      'nodejs_eventloop_lag_p50_seconds',
      'nodejs_eventloop_lag_p90_seconds',
      'nodejs_eventloop_lag_p99_seconds',
      'nodejs_eventloop_lag_seconds',
      'nodejs_eventloop_lag_stddev_seconds',
      'nodejs_external_memory_bytes',
      'nodejs_gc_duration_seconds',
      'nodejs_heap_size_total_bytes',
      'nodejs_heap_size_used_bytes',
      'nodejs_heap_space_size_available_bytes',
      'nodejs_heap_space_size_total_bytes',
      'nodejs_heap_space_size_used_bytes',
      'nodejs_version_info',
      'process_cpu_seconds_total',
      'process_cpu_system_seconds_total',
      'process_cpu_user_seconds_total',
      'process_heap_bytes',
      'process_max_fds',
      'process_open_fds',
      'process_resident_memory_bytes',
      'process_start_time_seconds',
      'process_virtual_memory_bytes',
    ]);
    for (const [name, family] of all)
      assert.equal(
        family.type,
        name.endsWith('_total') ? 'counter' : name === 'nodejs_gc_duration_seconds' ? 'histogram' : 'gauge',
        name,
      );
    const [major, minor, patch] = process.versions.node.split('.');
    assert.deepEqual(all.get('nodejs_version_info')!.samples, [
      { name: 'nodejs_version_info', labels: { version: process.version, major, minor, patch }, value: 1 },
    ]);
    assert.ok(
      Math.abs(value(all, 'process_start_time_seconds') - (Date.now() / 1000 - process.uptime())) <= 1,
      'start time',
    );
    const limit = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))![1];
    assert.equal(value(all, 'process_max_fds'), Number(limit));
  });

  it('reads the process as it is now', async () => {
    const metrics = createProcessMetrics();
    // The CPU counters count from the collector's start: a read, 20 ms of user CPU (not of wall
    // time: on a busy machine this process may get less of the CPU than that), a read.
    const first = await read(metrics);
    const before = process.cpuUsage();
    while (process.cpuUsage(before).user < 20_000);
    const text = await read(metrics);
    const cpu = process.cpuUsage();
    const user = value(text, 'process_cpu_user_seconds_total');
    const system = value(text, 'process_cpu_system_seconds_total');
    assert.ok(user - value(first, 'process_cpu_user_seconds_total') >= 0.02 && user <= cpu.user / 1e6, `user ${user}`);
    assert.ok(system <= cpu.system / 1e6, `system ${system}`);
    assert.ok(Math.abs(value(text, 'process_cpu_seconds_total') - (user + system)) < 1e-9);
    // The fields as /proc/self/status has them, within what a few allocations between the two
    // reads can move.
    const status = readFileSync('/proc/self/status', 'latin1');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)![1]) * 1024;
    for (const [name, field] of [
      ['process_virtual_memory_bytes', 'VmSize'],
      ['process_heap_bytes', 'VmData'],
      ['process_resident_memory_bytes', 'VmRSS'],
    ] as const) {
      const expected = kb(field);
      assert.ok(
        Math.abs(value(text, name) - expected) <= expected * 0.05,
        `${name} ${value(text, name)} vs ${field} ${expected}`,
      );
    }
    const fds = readdirSync('/proc/self/fd').length - 1;
    assert.ok(
      Math.abs(value(text, 'process_open_fds') - fds) <= 2,
      `open fds ${value(text, 'process_open_fds')} vs ${fds}`,
    );
    const spaces = getHeapSpaceStatistics().map((s) => s.space_name.replace(/_space$/, ''));
    assert.deepEqual(
      text.get('nodejs_heap_space_size_total_bytes')!.samples.map((s) => s.labels.space),
      spaces,
    );
    assert.ok(value(text, 'nodejs_heap_space_size_used_bytes', { space: 'old' }) > 0);
    assert.ok(value(text, 'nodejs_heap_size_used_bytes') <= value(text, 'nodejs_heap_size_total_bytes'));
    // A timer of this file's own keeps the loop alive: a Timeout resource.
    const timer = setTimeout(() => undefined, 10_000);
    const withTimer = await read(metrics);
    clearTimeout(timer);
    assert.ok(value(withTimer, 'nodejs_active_resources', { type: 'Timeout' }) >= 1);
  });

  it('counts every garbage collection in a cumulative histogram by kind, also those delivered together', async () => {
    const metrics = createProcessMetrics();
    const count = (text: Map<string, Family>) =>
      text
        .get('nodejs_gc_duration_seconds')!
        .samples.find((s) => s.name === 'nodejs_gc_duration_seconds_count' && s.labels.kind === 'major')?.value ?? 0;
    const before = count(await read(metrics));
    // Three collections in one synchronous stretch: Node delivers their entries in one batch, later.
    gc();
    gc();
    gc();
    const text = await eventually(
      async () => {
        const all = await read(metrics);
        assert.ok(count(all) - before >= 3, `${count(all) - before} major collections counted`);
        return all;
      },
      { intervalMs: 10 },
    );
    // At least the three: V8 may add a major collection of its own on a busy machine.
    const samples = text.get('nodejs_gc_duration_seconds')!.samples.filter((s) => s.labels.kind === 'major');
    const buckets = samples.filter((s) => s.name.endsWith('_bucket'));
    assert.deepEqual(
      buckets.map((s) => s.labels.le),
      ['0.001', '0.01', '0.1', '1', '2', '5', '+Inf'],
    );
    for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i]!.value >= buckets[i - 1]!.value, 'cumulative');
    assert.equal(buckets.at(-1)!.value, count(text));
    assert.ok(value(text, 'nodejs_gc_duration_seconds_sum', { kind: 'major' }) > 0);
  });

  it("is its own: never on prom-client's global registry, one instance not resetting another", async () => {
    const a = createProcessMetrics();
    const b = createProcessMetrics();
    // Both samplers have samples once a's has; a's reads reset a's alone.
    await readSampled(a);
    // Read in one synchronous stretch, so the sampler takes no sample between them (a read
    // resets its sampler when it starts): had a's read reset b's, b would show the placeholder.
    const aRead = a.metrics();
    const bRead = b.metrics();
    await aRead;
    const min = value(families(await bRead), 'nodejs_eventloop_lag_min_seconds');
    assert.ok(min > 0 && min < 1, `a's read did not reset b's sampler: min ${min}`);
    assert.doesNotMatch(await register.metrics(), /process_|nodejs_/);
  });
});

describe('the event loop lag family', () => {
  it('comes from a 10 ms sampler read and reset per scrape', async () => {
    const metrics = createProcessMetrics();
    const lag = (text: string, name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    await metrics.metrics();
    // The idle stretch measured (not a wait for an event: the samples taken meanwhile are the point).
    await sleep(300);
    const idle = await metrics.metrics();
    // An idle loop: the 10 ms timer fires about every 10 ms (later on a loaded machine, but
    // nowhere near the 200 ms block below).
    for (const stat of ['min', 'p50', 'mean', 'p99']) {
      const seconds = lag(idle, `nodejs_eventloop_lag_${stat}_seconds`);
      assert.ok(seconds > 0.005 && seconds < 0.15, `${stat} ${seconds}`);
    }
    // The lag itself: how long an immediate waited at the last read, shown at this one.
    assert.ok(lag(idle, 'nodejs_eventloop_lag_seconds') > 0);
    // A blocked loop shows in the next scrape's max, and only there. (Not right after a scrape: the
    // first interval after a reset only starts the next one.) Timers run in the order they fall
    // due, so one set for later than the sampler's 10 ms runs after a tick of it, however late.
    await sleep(50);
    // 200 ms: far above what a busy machine's scheduling adds to an idle loop's 10 ms timer.
    const until = performance.now() + 200;
    while (performance.now() < until);
    // The sampler's tick, overdue since the block, runs before this later timer: it records the block.
    await sleep(30);
    const blocked = await metrics.metrics();
    assert.ok(lag(blocked, 'nodejs_eventloop_lag_max_seconds') >= 0.2, 'the 200 ms block is the max');
    // The next read, right after: a sampler not reset would still hold the block.
    assert.ok(lag(await metrics.metrics(), 'nodejs_eventloop_lag_max_seconds') < 0.2, 'reset after the scrape');
  });
});
