// What the benchmarks read about a process they measure, and their percentiles.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** CPU ms (user + system, all threads) a process has used, from /proc/<pid>/stat. */
export function cpuMs(pid) {
  // utime and stime (fields 14, 15) in clock ticks; counted after the last ')' (the name may hold spaces).
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
}

/**
 * The main thread of process `pid` as the scheduler saw it (/proc/<pid>/task/<pid>/schedstat):
 * time on a CPU and time spent runnable but waiting for one (the run queue), in ms since it started;
 * undefined where the kernel keeps no such file. The difference of two readings around a scrape
 * tells how much of the scrape the thread worked and how much it waited for a CPU that others held.
 */
export function mainThreadSched(pid) {
  try {
    const [onCpuNs, waitNs] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'latin1').split(' ');
    return { cpuMs: Number(onCpuNs) / 1e6, waitMs: Number(waitNs) / 1e6 };
  } catch {
    return undefined;
  }
}

/**
 * Starts timing the run-queue wait of process `pid`'s main thread: the function returned gives the
 * ms it waited for a CPU since (undefined without schedstat, or once the process is gone).
 */
export function runQueueWait(pid) {
  const start = mainThreadSched(pid);
  return () => {
    const now = start && mainThreadSched(pid);
    return now && now.waitMs - start.waitMs;
  };
}

/**
 * What waiting for a CPU did to a set of latencies: `ms[i]` a latency, `waitMs[i]` how long the
 * side measured waited in the run queue during it (mainThreadSched). waitAtP99: the mean wait of
 * the samples at or above the p99 latency; lessWaitP99: the p99 of the latencies less their waits.
 * Undefined when the waits are missing (no schedstat).
 */
export function waitSummary(ms, waitMs) {
  if (ms.length === 0 || waitMs.length !== ms.length) return undefined;
  const p99 = percentile(ms, 99);
  const tail = waitMs.filter((_, i) => ms[i] >= p99);
  return {
    waitP50: percentile(waitMs, 50),
    waitP99: percentile(waitMs, 99),
    waitAtP99: tail.reduce((a, b) => a + b, 0) / tail.length,
    lessWaitP99: percentile(
      ms.map((v, i) => v - waitMs[i]),
      99,
    ),
  };
}

/** On-CPU ms of every thread of process `pid` (schedstat), summed; 0 once it is gone. */
function processOnCpuMs(pid) {
  let tids;
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return 0;
  }
  let ns = 0;
  for (const tid of tids) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'latin1').split(' ')[0]);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return ns / 1e6;
}

/**
 * Who used the machine's CPUs: the on-CPU ms (every thread, from schedstat) of each named process
 * (`{ name: pid }`) and, as `other`, of every other process on the machine. Call it again to end
 * the census: the function returned gives the ms each used since (this process's less what the
 * census's own readings took), and `wallMs`. Undefined where the kernel keeps no schedstat. A
 * process that starts or ends between the two readings counts only with what it used while both
 * saw it; a thread that ends in between takes its time with it.
 */
export function cpuCensus(named) {
  const before = mainThreadSched(process.pid);
  if (before === undefined) return undefined;
  // Reading /proc takes this thread a few ms: that is left out of this process's figure. The
  // first reading reads this process first, the last one last, so both are inside the span;
  // the time each reading takes on this thread is taken off.
  const read = (selfFirst) => {
    const byPid = new Map();
    if (selfFirst) byPid.set(process.pid, processOnCpuMs(process.pid));
    for (const entry of readdirSync('/proc')) {
      const pid = Number(entry);
      if (/^\d+$/.test(entry) && pid !== process.pid) byPid.set(pid, processOnCpuMs(pid));
    }
    if (!selfFirst) byPid.set(process.pid, processOnCpuMs(process.pid));
    return byPid;
  };
  const start = read(true);
  const startWall = performance.now();
  let ownMs = mainThreadSched(process.pid).cpuMs - before.cpuMs;
  return () => {
    const beforeEnd = mainThreadSched(process.pid);
    const end = read(false);
    ownMs += mainThreadSched(process.pid).cpuMs - beforeEnd.cpuMs;
    const wallMs = performance.now() - startWall;
    end.set(process.pid, end.get(process.pid) - ownMs);
    const used = (pid) => (start.has(pid) && end.has(pid) ? Math.max(0, end.get(pid) - start.get(pid)) : 0);
    const result = { wallMs };
    const namedPids = new Set();
    for (const [name, pid] of Object.entries(named)) {
      result[name] = used(pid);
      namedPids.add(pid);
    }
    let other = 0;
    for (const pid of end.keys()) if (!namedPids.has(pid)) other += used(pid);
    result.other = other;
    return result;
  };
}

/** A `kB` field of /proc/<pid>/status (VmRSS, VmHWM, ...), in kB; NaN when absent. */
export function statusKb(pid, field) {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

/** Nearest-rank percentile (p99 of 50 samples is the largest). */
export function percentile(values, p) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/**
 * How far a ratio of percentiles (exporter p99 / floor p99) can be trusted: a 95 % interval from a
 * paired block bootstrap. The samples come in blocks taken back to back (a block of exporter
 * scrapes, then a block of floor rounds), so block i of each side saw the same state of the
 * machine; whole blocks are drawn with replacement, the same indices for both sides, and the
 * ratio computed again `iterations` times. Seeded, so a result prints the same interval twice.
 * With 100 samples the p99 is the largest one, and the interval says how little that decides.
 */
export function ratioInterval(expBlocks, floorBlocks, { p = 99, iterations = 2000, seed = 1 } = {}) {
  const n = Math.min(expBlocks.length, floorBlocks.length);
  if (n < 2) return { low: NaN, high: NaN };
  return bootstrap({ p, iterations, seed }, (random, exp, floor) =>
    drawBlocks(random, expBlocks, floorBlocks, exp, floor),
  );
}

/**
 * ratioInterval over several runs pooled (each with its own start of the servers measured, whose
 * tail can differ from one start to the next): a two-level bootstrap. Each iteration draws as many
 * runs as there are, with replacement, then within each drawn run its blocks with replacement (the
 * same indices for both sides), and computes the ratio of the pooled percentiles. The spread
 * between runs thus widens the interval as much as it should. `runs`: [{ expBlocks, floorBlocks }].
 */
export function pooledRatioInterval(runs, { p = 99, iterations = 2000, seed = 1 } = {}) {
  const usable = runs.filter((r) => Math.min(r.expBlocks.length, r.floorBlocks.length) >= 2);
  if (usable.length < 2)
    return usable.length === 1
      ? ratioInterval(usable[0].expBlocks, usable[0].floorBlocks, { p, iterations, seed })
      : { low: NaN, high: NaN };
  return bootstrap({ p, iterations, seed }, (random, exp, floor) => {
    for (let r = 0; r < usable.length; r++) {
      const { expBlocks, floorBlocks } = usable[Math.floor(random() * usable.length)];
      drawBlocks(random, expBlocks, floorBlocks, exp, floor);
    }
  });
}

/** As many blocks as a run has, drawn with replacement, the same indices for both sides. */
function drawBlocks(random, expBlocks, floorBlocks, exp, floor) {
  const n = Math.min(expBlocks.length, floorBlocks.length);
  for (let b = 0; b < n; b++) {
    const pick = Math.floor(random() * n);
    for (const v of expBlocks[pick]) exp.push(v);
    for (const v of floorBlocks[pick]) floor.push(v);
  }
}

/**
 * The middle 95 % of `iterations` ratios of the p-th percentiles of samples that `draw(random, exp,
 * floor)` fills anew each time.
 */
function bootstrap({ p, iterations, seed }, draw) {
  const random = xorshift(seed);
  const ratios = new Float64Array(iterations);
  for (let it = 0; it < iterations; it++) {
    const exp = [];
    const floor = [];
    draw(random, exp, floor);
    ratios[it] = percentile(exp, p) / percentile(floor, p);
  }
  ratios.sort();
  return {
    low: ratios[Math.floor(iterations * 0.025)],
    high: ratios[Math.min(iterations - 1, Math.ceil(iterations * 0.975) - 1)],
  };
}

/** xorshift32 in [0, 1), seeded: the bootstraps print the same interval for the same samples. */
function xorshift(seed) {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state / 4294967296;
  };
}

/**
 * The node flags of an executable script's first line, `#!/usr/bin/env -S node <flags>` (none for
 * a plain `#!/usr/bin/env node`): what the script runs with when executed itself, which a benchmark
 * that starts it as `node <flags> <script>` must pass to measure the same thing.
 */
export function shebangNodeFlags(file) {
  const first = readFileSync(file, 'utf8').split('\n', 1)[0];
  if (!first.startsWith('#!')) return [];
  const words = first.slice(2).trim().split(/\s+/);
  const at = words.findIndex((word) => word === 'node' || word.endsWith('/node'));
  return at === -1 ? [] : words.slice(at + 1).filter((word) => word.startsWith('-'));
}

/** The CPUs a process may run on (`Cpus_allowed_list` of /proc/<pid>/status), in ascending order. */
export function allowedCpus(pid) {
  const m = /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`/proc/${pid}/status has no Cpus_allowed_list`);
  return parseCpuList(m[1]);
}

/** A kernel CPU list (`0-3,6,8-9`) as numbers, ascending. */
export function parseCpuList(text) {
  const cpus = new Set();
  for (const part of text.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) throw new Error(`not a CPU list: ${text}`);
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    if (to < from) throw new Error(`not a CPU list: ${text}`);
    for (let cpu = from; cpu <= to; cpu++) cpus.add(cpu);
  }
  return [...cpus].sort((a, b) => a - b);
}

/**
 * CPUs split in two for `--pin`: `servers` the upper half (the smaller when odd), `others` the
 * rest, as lists taskset takes. Throws with fewer than two.
 */
export function splitCpus(cpus) {
  if (cpus.length < 2) throw new Error(`--pin needs at least 2 CPUs; this process may use ${cpus.length}`);
  const cut = Math.ceil(cpus.length / 2);
  return { others: cpus.slice(0, cut).join(','), servers: cpus.slice(cut).join(',') };
}

/** Binds every thread of a process (and the threads and processes it starts after) to `cpus` (taskset). */
export function pinProcess(pid, cpus) {
  const result = spawnSync('taskset', ['--all-tasks', '--cpu-list', '--pid', cpus, String(pid)], { encoding: 'utf8' });
  if (result.error) throw new Error(`taskset: ${result.error.message} (util-linux)`);
  if (result.status !== 0) throw new Error(`taskset --pid ${pid}: ${result.stderr.trim() || `exit ${result.status}`}`);
}
