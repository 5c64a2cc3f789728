// What the benchmarks read about a process they measure, and their percentiles.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** CPU ms (user + system, all threads) a process has used, from /proc/<pid>/stat. */
export function cpuMs(pid) {
  // utime and stime (fields 14, 15) in clock ticks; counted after the last ')' (the name may hold spaces).
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
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
