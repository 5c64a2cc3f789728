#!/usr/bin/env node
// Who held the two CPUs while the slowest /metrics scrapes ran. Runs one configuration of run.mjs
// with the exporter's debug log (each scrape's end and length, by its own clock), records the
// kernel's scheduler events (tracefs: switches, wakeups, moves between CPUs) from the end of the
// warm-up to the end of the /metrics measurement, and prints, for the slowest scrapes and for
// median ones, how many milliseconds each kind of thread was on a CPU during the scrape (the
// exporter's main thread and its V8 helper threads, the doubles, the driver, the floor, ZooKeeper,
// anything else, idle CPUs), and how long the exporter's and the doubles' main threads took turns
// on one CPU while another CPU was idle.
//
//   sudo node bench/cache-exporter/sched-trace.mjs --nodes=100 --prefixes=0 --traffic [run.mjs options]
//
// Needs root and tracefs (/sys/kernel/tracing). One N and one P; --endpoints is set to metrics.
// The run's own table is printed first, then this one. The trace and thread list are kept in
// results/sched/ for a second look (`--analyze=<dir>` reads them again without running).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = fileURLToPath(new URL('.', import.meta.url));
/** The events recorded: who ran (sched_switch), the CPU a woken thread was put on (sched_wakeup), and moves between CPUs. */
const EVENTS = ['sched_switch', 'sched_wakeup', 'sched_migrate_task'];
const TRACING = '/sys/kernel/tracing';

/** One sched_switch line of the trace: cpu, time in ms (trace clock), the thread leaving and the one coming. */
export function parseSwitch(line) {
  const m = /\[(\d+)\]\s+\S+\s+([\d.]+): sched_switch: .*prev_pid=(\d+) .*next_pid=(\d+)/.exec(line);
  return m ? { cpu: Number(m[1]), ms: Number(m[2]) * 1000, prev: Number(m[3]), next: Number(m[4]) } : undefined;
}

/**
 * A line of the trace that puts a thread on a CPU's run queue: sched_wakeup (the CPU it is woken
 * on) or sched_migrate_task (the CPU it is moved to), as {ms, tid, cpu}.
 */
export function parseArrival(line) {
  const m = /\s([\d.]+): (?:sched_wakeup: .*\bpid=(\d+) .*target_cpu=(\d+)|sched_migrate_task: .*\bpid=(\d+) .*dest_cpu=(\d+))/.exec(line);
  if (!m) return undefined;
  return m[2] !== undefined ? { ms: Number(m[1]) * 1000, tid: Number(m[2]), cpu: Number(m[3]) } : { ms: Number(m[1]) * 1000, tid: Number(m[4]), cpu: Number(m[5]) };
}

/**
 * The on-CPU intervals {start, end, tid, cpu} of every thread, idle (tid 0) included, sorted by
 * start, from switches (parseSwitch) and arrivals (parseArrival) in time order. A switch away
 * from a thread the CPU was not known to run means the switch to it was not recorded: on this
 * kind of VM the kernel records no switch away from one CPU's idle task. The thread then ran from
 * its arrival on that CPU (a wakeup there, or a move there, since the CPU's last switch), and the
 * CPU ran what it ran before until then; without such an arrival, from the CPU's last switch.
 */
export function onCpuIntervals(events) {
  const current = new Map();
  const arrivals = new Map();
  const intervals = [];
  for (const e of events) {
    if (e.prev === undefined) {
      arrivals.set(e.tid, e);
      continue;
    }
    const before = current.get(e.cpu);
    if (before !== undefined) {
      let from = before.ms;
      if (before.tid !== e.prev) {
        const arrival = arrivals.get(e.prev);
        if (arrival !== undefined && arrival.cpu === e.cpu && arrival.ms >= before.ms && arrival.ms <= e.ms) {
          intervals.push({ start: before.ms, end: arrival.ms, tid: before.tid, cpu: e.cpu });
          from = arrival.ms;
        }
      }
      intervals.push({ start: from, end: e.ms, tid: e.prev, cpu: e.cpu });
    }
    current.set(e.cpu, { ms: e.ms, tid: e.next });
  }
  return intervals.sort((a, b) => a.start - b.start);
}

/**
 * The spans {start, end} during which threads `a` and `b` belonged to one CPU (the CPU each last
 * ran on, or was woken on or moved to) while another CPU was idle: the two took turns on one CPU
 * with a CPU free. From onCpuIntervals and the arrivals (parseArrival).
 */
export function sharedCpuSpans(intervals, arrivals, a, b) {
  const points = [];
  for (const iv of intervals) {
    if (iv.tid === a || iv.tid === b) points.push({ ms: iv.start, tid: iv.tid, cpu: iv.cpu });
    if (iv.tid === 0) points.push({ ms: iv.start, idle: iv.cpu, on: true }, { ms: iv.end, idle: iv.cpu, on: false });
  }
  for (const arrival of arrivals) if (arrival.tid === a || arrival.tid === b) points.push(arrival);
  // At one time, an idle span's end before the next one's start.
  points.sort((x, y) => x.ms - y.ms || (x.on === false ? -1 : 0) - (y.on === false ? -1 : 0));
  const where = new Map();
  const idle = new Set();
  const spans = [];
  let since;
  for (const point of points) {
    if (point.idle !== undefined) {
      if (point.on) idle.add(point.idle);
      else idle.delete(point.idle);
    } else {
      where.set(point.tid, point.cpu);
    }
    const cpu = where.get(a);
    let shared = false;
    if (cpu !== undefined && cpu === where.get(b)) for (const other of idle) if (other !== cpu) shared = true;
    if (shared && since === undefined) since = point.ms;
    if (!shared && since !== undefined) {
      if (point.ms > since) spans.push({ start: since, end: point.ms });
      since = undefined;
    }
  }
  return spans;
}

/** Milliseconds each role (roleOf(tid)) was on a CPU within [from, to); `intervals` sorted by start. */
export function usageBetween(intervals, from, to, roleOf) {
  const used = {};
  for (const iv of intervals) {
    if (iv.start >= to) break;
    if (iv.end <= from) continue;
    const role = roleOf(iv.tid);
    used[role] = (used[role] ?? 0) + Math.min(iv.end, to) - Math.max(iv.start, from);
  }
  return used;
}

/** The role of a process from its command line: exporter, doubles, floor, driver, zookeeper or other. */
export function roleOfCommand(cmdline) {
  if (/cache-exporter\b.*-config-file|bin\/cache-exporter/.test(cmdline)) return 'exporter';
  if (cmdline.includes('doubles.mjs')) return 'doubles';
  if (cmdline.includes('floor.mjs')) return 'floor';
  if (cmdline.includes('run.mjs')) return 'driver';
  if (/zookeeper/i.test(cmdline)) return 'zookeeper';
  return 'other';
}

/** ms of the scrape during which the exporter's main thread and the doubles' shared a CPU while another idled (sharedCpuSpans). */
const SHARED_COLUMN = 'exp+doubles on one CPU, one idle';
const ROLES = ['exporter main', 'exporter helpers', 'doubles', 'driver', 'floor', 'zookeeper', 'other', 'idle', SHARED_COLUMN];

function threadTable() {
  const rows = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    let cmdline;
    let tasks;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue; // gone meanwhile
    }
    for (const tid of tasks) rows.push({ tid: Number(tid), pid: Number(pid), cmdline });
  }
  return rows;
}

/** The table of the slowest and median scrapes, from a kept directory. */
export function analyze(dir, slowest = 12) {
  const clock = JSON.parse(readFileSync(join(dir, 'clock.json'), 'utf8'));
  const epochMinusMono = clock.epochMs - clock.monoMs;
  const threads = JSON.parse(readFileSync(join(dir, 'threads.json'), 'utf8'));
  const roleByTid = new Map();
  for (const { tid, pid, cmdline } of threads) {
    const role = roleOfCommand(cmdline);
    roleByTid.set(tid, role === 'exporter' ? (tid === pid ? 'exporter main' : 'exporter helpers') : role);
  }
  const roleOf = (tid) => (tid === 0 ? 'idle' : (roleByTid.get(tid) ?? 'other'));
  const events = [];
  const arrivals = [];
  for (const line of readFileSync(join(dir, 'trace.txt'), 'utf8').split('\n')) {
    const e = parseSwitch(line) ?? parseArrival(line);
    if (e === undefined) continue;
    events.push(e);
    if (e.prev === undefined) arrivals.push(e);
  }
  const intervals = onCpuIntervals(events);
  if (intervals.length === 0) throw new Error(`${dir}/trace.txt holds no sched_switch events`);
  const mainOf = (role) => threads.find((t) => t.tid === t.pid && roleOfCommand(t.cmdline) === role)?.tid;
  // Traces without wakeups and moves (recorded since 2026-11-27, later) count only where switches put the two.
  const shared = sharedCpuSpans(intervals, arrivals, mainOf('exporter'), mainOf('doubles'));
  const first = intervals[0].start;
  const lastEnd = intervals.at(-1).end;
  const scrapes = [];
  for (const line of readFileSync(join(dir, 'exporter.log'), 'utf8').split('\n')) {
    if (!line.includes('"scrape collected"')) continue;
    const entry = JSON.parse(line);
    const end = Date.parse(entry.time) - epochMinusMono;
    const start = end - entry.totalMs;
    if (start >= first && end <= lastEnd) {
      const used = usageBetween(intervals, start, end, roleOf);
      used[SHARED_COLUMN] = usageBetween(shared, start, end, () => SHARED_COLUMN)[SHARED_COLUMN] ?? 0;
      scrapes.push({ ms: entry.totalMs, used });
    }
  }
  if (scrapes.length === 0) throw new Error(`no scrape of ${dir}/exporter.log falls within the trace`);
  scrapes.sort((a, b) => b.ms - a.ms);
  const mean = (list) => {
    const out = { ms: 0, used: {} };
    for (const s of list) {
      out.ms += s.ms / list.length;
      for (const role of ROLES) out.used[role] = (out.used[role] ?? 0) + (s.used[role] ?? 0) / list.length;
    }
    return out;
  };
  const row = (label, s) => [label.padEnd(22), s.ms.toFixed(1).padStart(8), ...ROLES.map((r) => (s.used[r] ?? 0).toFixed(1).padStart(r.length + 2))].join('');
  const middle = Math.floor(scrapes.length / 2);
  const lines = [
    `${scrapes.length} scrapes in the trace; ms of CPU each kind of thread had during a scrape (the exporter's own clock; two CPUs),`,
    `and the ms the exporter's and the doubles' main threads spent on one CPU while another was idle (the last column)`,
    '',
    ['scrape'.padEnd(22), 'ms'.padStart(8), ...ROLES.map((r) => r.padStart(r.length + 2))].join(''),
    ...scrapes.slice(0, slowest).map((s, i) => row(`slowest ${i + 1}`, s)),
    row(`mean of slowest 3 %`, mean(scrapes.slice(0, Math.max(1, Math.ceil(scrapes.length * 0.03))))),
    row('mean of the middle 10', mean(scrapes.slice(Math.max(0, middle - 5), middle + 5))),
    row('mean of all', mean(scrapes)),
  ];
  return lines.join('\n');
}

async function record(runArgs) {
  for (const option of ['nodes', 'prefixes']) {
    const given = runArgs.find((a) => a.startsWith(`--${option}=`));
    if (given === undefined || given.includes(',')) throw new Error(`give one --${option}=<n> (one configuration is traced)`);
  }
  if (!existsSync(join(TRACING, 'events/sched/sched_switch/enable'))) throw new Error(`no tracefs at ${TRACING} (mount -t tracefs nodev ${TRACING})`);
  if (process.getuid?.() !== 0) throw new Error('tracing needs root');
  const n = runArgs.find((a) => a.startsWith('--nodes=')).slice(8);
  const p = runArgs.find((a) => a.startsWith('--prefixes=')).slice(11);
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const dir = join(HERE, 'results', 'sched', `N${n}-P${p}-${stamp}`);
  mkdirSync(dir, { recursive: true });
  const logDir = join(HERE, 'results', 'logs', `N${n}-P${p}`);
  rmSync(logDir, { recursive: true, force: true }); // --keep-logs appends; this trace wants this run's log only
  const write = (file, text) => writeFileSync(join(TRACING, file), text);
  const read = (file) => readFileSync(join(TRACING, file), 'latin1').trim();
  // The tracefs settings this changes, as they were, to be put back whatever happens.
  // (A buffer never used reads `7 (expanded: 1408)`: its size once in use is put back.)
  const size = read('buffer_size_kb');
  const before = {
    trace_clock: /\[(\S+)\]/.exec(read('trace_clock'))?.[1] ?? 'local',
    buffer_size_kb: /expanded: (\d+)/.exec(size)?.[1] ?? size,
    ...Object.fromEntries(EVENTS.map((event) => [`events/sched/${event}/enable`, read(`events/sched/${event}/enable`)])),
    tracing_on: read('tracing_on'),
  };
  write('tracing_on', '0');
  try {
    write('trace_clock', 'mono');
    write('buffer_size_kb', '262144');
    write('trace', '');
    for (const event of EVENTS) write(`events/sched/${event}/enable`, '1');
    return await traceRun(runArgs, dir, logDir, write);
  } finally {
    write('tracing_on', '0');
    write('trace', '');
    for (const [file, value] of Object.entries(before)) write(file, value);
  }
}

/** run.mjs with the trace on from the end of its warm-up to the end of its measurement. */
async function traceRun(runArgs, dir, logDir, write) {
  const mono = Number(process.hrtime.bigint()) / 1e6;
  writeFileSync(join(dir, 'clock.json'), JSON.stringify({ epochMs: performance.timeOrigin + performance.now(), monoMs: mono }));
  const others = runArgs.filter((a) => !a.startsWith('--endpoints='));
  const child = spawn(process.execPath, [join(HERE, 'run.mjs'), ...others, '--endpoints=metrics', '--keep-logs', '--exporter-log-level=debug'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let tracing = false;
  let done = false;
  const stop = () => {
    if (done) return;
    done = true;
    write('tracing_on', '0');
  };
  // run.mjs logs its progress on stderr: the warm-up's end starts the trace, the measurement's end stops it.
  let pending = '';
  child.stdout.on('data', (chunk) => process.stdout.write(chunk));
  child.stderr.on('data', (chunk) => {
    process.stderr.write(chunk);
    pending += chunk.toString();
    if (!tracing && pending.includes('warmed up')) {
      tracing = true;
      writeFileSync(join(dir, 'threads.json'), JSON.stringify(threadTable()));
      write('tracing_on', '1');
    }
    if (tracing && pending.includes('/metrics p50')) stop();
    pending = pending.slice(-200);
  });
  const code = await new Promise((resolve) => child.on('close', resolve));
  stop();
  writeFileSync(join(dir, 'trace.txt'), readFileSync(join(TRACING, 'trace')));
  if (code !== 0) throw new Error(`run.mjs exited with ${code}`);
  if (!tracing) throw new Error('the run never said it had warmed up: nothing traced');
  writeFileSync(join(dir, 'exporter.log'), readFileSync(join(logDir, 'exporter.log')));
  return dir;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const kept = args.find((a) => a.startsWith('--analyze='));
  try {
    const dir = kept ? kept.slice('--analyze='.length) : await record(args);
    process.stdout.write(`\nsched trace: ${dir}\n${analyze(dir)}\n`);
  } catch (err) {
    process.stderr.write(`sched-trace: ${err.message}\n`);
    process.exit(1);
  }
}
