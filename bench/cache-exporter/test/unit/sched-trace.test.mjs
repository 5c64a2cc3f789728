// sched-trace.mjs's reading of the kernel's sched_switch events and of who ran when.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { analyze, onCpuIntervals, parseSwitch, roleOfCommand, usageBetween } from '../../sched-trace.mjs';

const line = (cpu, seconds, prev, next) =>
  `  node-${prev}   [00${cpu}] d..2. ${seconds.toFixed(6)}: sched_switch: prev_comm=node prev_pid=${prev} prev_prio=120 prev_state=S ==> next_comm=node next_pid=${next} next_prio=120`;

test('parseSwitch reads cpu, time and both threads; other lines are not switches', () => {
  assert.deepEqual(parseSwitch(line(1, 21367.0837, 14204, 0)), { cpu: 1, ms: 21367083.7, prev: 14204, next: 0 });
  assert.equal(parseSwitch('# tracer: nop'), undefined);
  assert.equal(parseSwitch('  node-1 [000] d..2. 5.000000: sched_wakeup: comm=node pid=2'), undefined);
});

test('onCpuIntervals and usageBetween: each thread is on its CPU from the switch to it until the switch away', () => {
  const switches = [
    { cpu: 0, ms: 0, prev: 0, next: 10 },
    { cpu: 1, ms: 0, prev: 0, next: 20 },
    { cpu: 0, ms: 4, prev: 10, next: 11 },
    { cpu: 1, ms: 6, prev: 20, next: 0 },
    { cpu: 0, ms: 10, prev: 11, next: 0 },
  ];
  const intervals = onCpuIntervals(switches);
  assert.deepEqual(intervals, [
    { start: 0, end: 4, tid: 10 },
    { start: 0, end: 6, tid: 20 },
    { start: 4, end: 10, tid: 11 },
  ]);
  const roles = new Map([[10, 'a'], [11, 'b'], [20, 'c']]);
  assert.deepEqual(usageBetween(intervals, 2, 8, (tid) => roles.get(tid)), { a: 2, c: 4, b: 4 });
  assert.deepEqual(usageBetween(intervals, 20, 30, (tid) => roles.get(tid)), {});
});

test('roleOfCommand tells the benchmark processes apart', () => {
  assert.equal(roleOfCommand('/usr/bin/node --max-semi-space-size=8 /x/bin/cache-exporter -config-file=/tmp/c.json '), 'exporter');
  assert.equal(roleOfCommand('/usr/bin/node /x/bench/cache-exporter/doubles.mjs --zk=1'), 'doubles');
  assert.equal(roleOfCommand('/usr/bin/node /x/bench/cache-exporter/floor.mjs '), 'floor');
  assert.equal(roleOfCommand('node bench/cache-exporter/run.mjs --nodes=100'), 'driver');
  assert.equal(roleOfCommand('java -Xmx128m org.apache.zookeeper.server.quorum.QuorumPeerMain /tmp/zoo.cfg'), 'zookeeper');
  assert.equal(roleOfCommand('/usr/sbin/sshd'), 'other');
});

test('analyze puts each scrape of the exporter log against the trace: the slowest scrape shows its helper threads', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sched-trace-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // The trace clock is 1000 s behind the epoch clock.
  writeFileSync(join(dir, 'clock.json'), JSON.stringify({ epochMs: 2_000_000_000_000, monoMs: 1_999_999_000_000 }));
  writeFileSync(
    join(dir, 'threads.json'),
    JSON.stringify([
      { tid: 100, pid: 100, cmdline: 'node /x/bin/cache-exporter -config-file=c' },
      { tid: 101, pid: 100, cmdline: 'node /x/bin/cache-exporter -config-file=c' },
      { tid: 200, pid: 200, cmdline: 'node doubles.mjs' },
    ]),
  );
  const mono = (ms) => (1_999_999_000_000 + ms) / 1000; // trace seconds of an epoch offset
  // Scrape 1 (0-10 ms): main thread on CPU 0 throughout, doubles on CPU 1. Scrape 2 (20-50 ms):
  // main thread 20-30, helper 30-50 on CPU 0; doubles 20-50 on CPU 1.
  writeFileSync(
    join(dir, 'trace.txt'),
    [
      '# tracer: nop',
      line(0, mono(0), 0, 100),
      line(1, mono(0), 0, 200),
      line(0, mono(10), 100, 0),
      line(1, mono(10), 200, 0),
      line(0, mono(20), 0, 100),
      line(1, mono(20), 0, 200),
      line(0, mono(30), 100, 101),
      line(0, mono(50), 101, 0),
      line(1, mono(50), 200, 0),
      line(0, mono(60), 0, 0),
    ].join('\n'),
  );
  const log = (endMs, totalMs) => JSON.stringify({ level: 'debug', time: new Date(2_000_000_000_000 + endMs).toISOString(), totalMs, msg: 'scrape collected' });
  writeFileSync(join(dir, 'exporter.log'), [log(10, 10), '{"msg":"other"}', log(50, 30)].join('\n'));
  const table = analyze(dir, 2).split('\n');
  assert.match(table[0], /^2 scrapes in the trace/);
  const cells = (label) => table.find((row) => row.startsWith(label)).trim().split(/\s{2,}/);
  // ms, exporter main, exporter helpers, doubles, driver, floor, zookeeper, other, idle
  assert.deepEqual(cells('slowest 1').slice(1).map(Number), [30, 10, 20, 30, 0, 0, 0, 0, 0]);
  assert.deepEqual(cells('slowest 2').slice(1).map(Number), [10, 10, 0, 10, 0, 0, 0, 0, 0]);
});
