// sched-trace.mjs's reading of the kernel's sched_switch events and of who ran when.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { analyze, onCpuIntervals, parseArrival, parseSwitch, roleOfCommand, sharedCpuSpans, usageBetween } from '../../sched-trace.mjs';

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
    { start: 0, end: 4, tid: 10, cpu: 0 },
    { start: 0, end: 6, tid: 20, cpu: 1 },
    { start: 4, end: 10, tid: 11, cpu: 0 },
  ]);
  const roles = new Map([[10, 'a'], [11, 'b'], [20, 'c']]);
  assert.deepEqual(usageBetween(intervals, 2, 8, (tid) => roles.get(tid)), { a: 2, c: 4, b: 4 });
  assert.deepEqual(usageBetween(intervals, 20, 30, (tid) => roles.get(tid)), {});
});

test('parseArrival reads wakeups and moves: the thread and the CPU it is put on', () => {
  assert.deepEqual(parseArrival('  <idle>-0  [001] dNh4. 37911.620232: sched_wakeup: comm=node pid=8755 prio=120 target_cpu=001'), { ms: 37911620.232, tid: 8755, cpu: 1 });
  assert.deepEqual(parseArrival('  node-7  [000] d..2. 5.000000: sched_migrate_task: comm=node pid=7 prio=120 orig_cpu=1 dest_cpu=0'), { ms: 5000, tid: 7, cpu: 0 });
  assert.equal(parseArrival('  node-7  [000] d..2. 5.000000: sched_waking: comm=node pid=7 prio=120 target_cpu=000'), undefined);
  assert.equal(parseArrival(line(1, 1, 2, 3)), undefined);
});

test('onCpuIntervals: a switch to a thread that was not recorded starts at its wakeup on that CPU', () => {
  // CPU 1 goes idle at 2; thread 5 is woken there at 7 and leaves it at 9, but the switch from
  // idle to it was not recorded. Without the wakeup, its interval would start at 2.
  const events = [
    { cpu: 1, ms: 0, prev: 0, next: 4 },
    { cpu: 1, ms: 2, prev: 4, next: 0 },
    { ms: 7, tid: 5, cpu: 1 },
    { cpu: 1, ms: 9, prev: 5, next: 0 },
    { ms: 10, tid: 6, cpu: 0 }, // woken on another CPU: not an arrival on CPU 1
    { cpu: 1, ms: 12, prev: 6, next: 0 },
  ];
  assert.deepEqual(onCpuIntervals(events), [
    { start: 0, end: 2, tid: 4, cpu: 1 },
    { start: 2, end: 7, tid: 0, cpu: 1 },
    { start: 7, end: 9, tid: 5, cpu: 1 },
    { start: 9, end: 12, tid: 6, cpu: 1 },
  ]);
});

test('sharedCpuSpans: two threads on one CPU while another CPU idles', () => {
  const intervals = [
    { start: 0, end: 10, tid: 1, cpu: 0 }, // a on CPU 0
    { start: 0, end: 5, tid: 2, cpu: 1 }, // b on CPU 1
    { start: 5, end: 20, tid: 0, cpu: 1 }, // CPU 1 idle from 5
    { start: 10, end: 14, tid: 2, cpu: 0 }, // b runs on CPU 0: a and b on CPU 0, CPU 1 idle
    { start: 14, end: 16, tid: 1, cpu: 0 },
    { start: 20, end: 25, tid: 3, cpu: 1 }, // CPU 1 busy with another thread from 20
  ];
  // b is woken on CPU 1 at 17: the two part.
  assert.deepEqual(sharedCpuSpans(intervals, [{ ms: 17, tid: 2, cpu: 1 }], 1, 2), [{ start: 10, end: 17 }]);
  assert.deepEqual(sharedCpuSpans(intervals, [], 1, 2), [{ start: 10, end: 20 }]);
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
      // Scrape 3 (60-80 ms): main thread and doubles take turns on CPU 0 while CPU 1 idles.
      line(0, mono(60), 0, 100),
      line(0, mono(70), 100, 200),
      line(0, mono(80), 200, 0),
      line(1, mono(90), 0, 0),
      line(0, mono(90), 0, 0),
    ].join('\n'),
  );
  const log = (endMs, totalMs) => JSON.stringify({ level: 'debug', time: new Date(2_000_000_000_000 + endMs).toISOString(), totalMs, msg: 'scrape collected' });
  writeFileSync(join(dir, 'exporter.log'), [log(10, 10), '{"msg":"other"}', log(50, 30), log(80, 20)].join('\n'));
  const table = analyze(dir, 3).split('\n');
  assert.match(table[0], /^3 scrapes in the trace/);
  const cells = (label) => table.find((row) => row.startsWith(label)).trim().split(/\s{2,}/);
  // ms, exporter main, exporter helpers, doubles, driver, floor, zookeeper, other, idle, exporter and doubles on one CPU with one idle
  assert.deepEqual(cells('slowest 1').slice(1).map(Number), [30, 10, 20, 30, 0, 0, 0, 0, 0, 0]);
  // The doubles last ran on CPU 1 until they run on CPU 0 at 70: the two share it for 10 ms.
  assert.deepEqual(cells('slowest 2').slice(1).map(Number), [20, 10, 0, 10, 0, 0, 0, 0, 20, 10]);
  assert.deepEqual(cells('slowest 3').slice(1).map(Number), [10, 10, 0, 10, 0, 0, 0, 0, 0, 0]);
});
