import assert from 'node:assert/strict';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { collectDefaultMetrics, register, Registry } from 'prom-client';
import { createProcessMetrics, type ProcessMetrics } from '../../src/index.js';
import { countOpenFds } from '../../src/process-metrics.js';

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
    const value = Number(m[3]);
    assert.ok(!Number.isNaN(value), `value of ${line}`);
    current!.samples.push({ name: m[1]!, labels, value });
  }
  return out;
}

const value = (all: Map<string, Family>, name: string, labels: Record<string, string> = {}): number => {
  const family = all.get(name) ?? [...all.values()].find((f) => f.samples.some((s) => s.name === name));
  const sample = family?.samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  assert.ok(sample, `${name} ${JSON.stringify(labels)}`);
  return sample.value;
};

const opened: ProcessMetrics[] = [];
const open = (): ProcessMetrics => {
  const metrics = createProcessMetrics();
  opened.push(metrics);
  return metrics;
};
after(() => {
  for (const metrics of opened) metrics.close();
});

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

describe('process metrics', () => {
  it("has prom-client's default families, with their help, types and label names, but the lag's standard deviation", async () => {
    const ours = open();
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    gc();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const theirs = families(await registry.metrics());
    const mine = families(ours.text());
    theirs.delete('nodejs_eventloop_lag_stddev_seconds');
    assert.deepEqual([...mine.keys()].sort(), [...theirs.keys()].sort());
    for (const [name, family] of theirs) {
      assert.equal(mine.get(name)!.help, family.help, `${name} help`);
      assert.equal(mine.get(name)!.type, family.type, `${name} type`);
      const labelNames = (f: Family) => [...new Set(f.samples.flatMap((s) => Object.keys(s.labels)))].sort();
      if (family.samples.length > 0 && mine.get(name)!.samples.length > 0) assert.deepEqual(labelNames(mine.get(name)!), labelNames(family), `${name} labels`);
    }
    assert.equal(value(mine, 'process_start_time_seconds'), value(theirs, 'process_start_time_seconds'));
    assert.equal(value(mine, 'process_max_fds'), value(theirs, 'process_max_fds'));
    assert.deepEqual(mine.get('nodejs_version_info')!.samples, theirs.get('nodejs_version_info')!.samples);
  });

  it('reads the process as it is now', () => {
    const metrics = open();
    const before = process.cpuUsage();
    // Spin until 20 ms of user CPU have been used (not 20 ms of wall time: on a busy machine this
    // process may get less of the CPU than that).
    while (process.cpuUsage(before).user < 20_000);
    const text = families(metrics.text());
    const cpu = process.cpuUsage();
    const user = value(text, 'process_cpu_user_seconds_total');
    const system = value(text, 'process_cpu_system_seconds_total');
    assert.ok(user >= before.user / 1e6 + 0.02 && user <= cpu.user / 1e6, `user ${user}`);
    assert.ok(Math.abs(value(text, 'process_cpu_seconds_total') - (user + system)) < 1e-9);
    const rss = process.memoryUsage.rss();
    assert.ok(Math.abs(value(text, 'process_resident_memory_bytes') - rss) < rss * 0.2, 'resident memory');
    assert.ok(value(text, 'process_virtual_memory_bytes') > rss);
    assert.ok(value(text, 'process_heap_bytes') > 0);
    // The fields as /proc/self/status has them (read here the plain way), within what a few
    // allocations between the two reads can move.
    const status = readFileSync('/proc/self/status', 'latin1');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)![1]) * 1024;
    for (const [name, field] of [['process_virtual_memory_bytes', 'VmSize'], ['process_heap_bytes', 'VmData'], ['process_resident_memory_bytes', 'VmRSS']] as const) {
      const expected = kb(field);
      assert.ok(Math.abs(value(text, name) - expected) <= expected * 0.05, `${name} ${value(text, name)} vs ${field} ${expected}`);
    }
    const fds = readdirSync('/proc/self/fd').length - 1;
    assert.ok(Math.abs(value(text, 'process_open_fds') - fds) <= 2, `open fds ${value(text, 'process_open_fds')} vs ${fds}`);
    const spaces = getHeapSpaceStatistics().map((s) => s.space_name.replace(/_space$/, ''));
    assert.deepEqual(
      text.get('nodejs_heap_space_size_total_bytes')!.samples.map((s) => s.labels.space),
      spaces,
    );
    assert.ok(value(text, 'nodejs_heap_space_size_used_bytes', { space: 'old' }) > 0);
    assert.ok(value(text, 'nodejs_heap_size_used_bytes') <= value(text, 'nodejs_heap_size_total_bytes'));
    // This file's own timer keeps the loop alive: a Timeout resource and handle.
    const timer = setTimeout(() => undefined, 10_000);
    const withTimer = families(metrics.text());
    clearTimeout(timer);
    assert.ok(value(withTimer, 'nodejs_active_resources', { type: 'Timeout' }) >= 1);
    assert.ok(value(withTimer, 'nodejs_active_resources_total') >= 1);
  });

  it('counts open file descriptors exactly, as the /proc/self/fd listing does', () => {
    const before = countOpenFds();
    assert.equal(before, readdirSync('/proc/self/fd').length - 1);
    const opened = Array.from({ length: 7 }, () => openSync('/proc/self/status', 'r'));
    try {
      assert.equal(countOpenFds(), before + 7);
      assert.equal(countOpenFds(), readdirSync('/proc/self/fd').length - 1);
    } finally {
      for (const fd of opened) closeSync(fd);
    }
    assert.equal(countOpenFds(), before);
  });

  it('counts every garbage collection in a cumulative histogram by kind', async () => {
    const metrics = open();
    const count = (text: Map<string, Family>) => text.get('nodejs_gc_duration_seconds')!.samples.find((s) => s.name === 'nodejs_gc_duration_seconds_count' && s.labels.kind === 'major')?.value ?? 0;
    const before = count(families(metrics.text()));
    gc();
    gc();
    gc();
    // GC entries are delivered asynchronously.
    for (let i = 0; i < 100 && count(families(metrics.text())) - before < 3; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    const text = families(metrics.text());
    assert.equal(count(text) - before, 3);
    const samples = text.get('nodejs_gc_duration_seconds')!.samples.filter((s) => s.labels.kind === 'major');
    const buckets = samples.filter((s) => s.name.endsWith('_bucket'));
    assert.deepEqual(buckets.map((s) => s.labels.le), ['0.001', '0.01', '0.1', '1', '2', '5', '+Inf']);
    for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i]!.value >= buckets[i - 1]!.value, 'cumulative');
    assert.equal(buckets.at(-1)!.value, count(text));
    assert.ok(value(text, 'nodejs_gc_duration_seconds_sum', { kind: 'major' }) > 0);
  });

  it('is its own: never on prom-client\'s global registry, one instance not resetting another', async () => {
    const a = open();
    const b = open();
    await new Promise((resolve) => setTimeout(resolve, 100));
    a.text();
    assert.ok(value(families(b.text()), 'nodejs_eventloop_lag_min_seconds') > 0, "a's read did not reset b's sampler");
    assert.doesNotMatch(await register.metrics(), /process_|nodejs_/);
    assert.equal(await a.metrics().then((text) => families(text).has('process_cpu_seconds_total')), true);
  });
});

describe('the event loop lag family', () => {
  it('is reported once per statistic, without the standard deviation, from a 10 ms sampler read and reset per scrape', async () => {
    const metrics = open();
    const lag = (text: string, name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    const first = metrics.text();
    for (const stat of ['min', 'max', 'mean', 'p50', 'p90', 'p99']) {
      assert.equal(first.match(new RegExp(`^# TYPE nodejs_eventloop_lag_${stat}_seconds gauge$`, 'gm'))?.length, 1, stat);
    }
    assert.equal(first.match(/^# TYPE nodejs_eventloop_lag_seconds gauge$/gm)?.length, 1);
    assert.doesNotMatch(first, /nodejs_eventloop_lag_stddev_seconds/);
    assert.ok(lag(first, 'nodejs_eventloop_lag_min_seconds') < 1, 'no placeholder before the first sample');

    await new Promise((resolve) => setTimeout(resolve, 300));
    const idle = metrics.text();
    // An idle loop: the 10 ms timer fires about every 10 ms (later on a loaded machine, but
    // nowhere near the 200 ms block below).
    for (const stat of ['min', 'p50', 'mean', 'p99']) {
      const seconds = lag(idle, `nodejs_eventloop_lag_${stat}_seconds`);
      assert.ok(seconds > 0.005 && seconds < 0.15, `${stat} ${seconds}`);
    }
    // The lag itself: how long an immediate waited at the last read, shown at this one.
    assert.ok(lag(idle, 'nodejs_eventloop_lag_seconds') > 0);
    // A blocked loop shows in the next scrape's max, and only there. (Not right after a scrape: the
    // first interval after a reset only starts the next one, in Node's histogram as in prom-client.)
    await new Promise((resolve) => setTimeout(resolve, 50));
    // 200 ms: far above what a busy machine's scheduling adds to an idle loop's 10 ms timer.
    const until = performance.now() + 200;
    while (performance.now() < until);
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.ok(lag(metrics.text(), 'nodejs_eventloop_lag_max_seconds') >= 0.2, 'the 200 ms block is the max');
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.ok(lag(metrics.text(), 'nodejs_eventloop_lag_max_seconds') < 0.2, 'reset after the scrape');
  });
});
