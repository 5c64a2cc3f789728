// What bench/cache-exporter/pool.mjs computes: several run.mjs reports pooled, per build and
// configuration. A p99 of 1,000 scrapes rests on its ten slowest, and one run's ratio moves by more
// than most changes gain; the same build run five times holds five times the tail. Pure functions
// of the reports.
import { percentile, pooledRatioInterval } from './process.mjs';
import { fmt, formatTable } from './table.mjs';

/**
 * A side's samples (in the order taken) cut into run.mjs's rounds: `rounds` of them, round i
 * holding floor((i + 1) n / rounds) - floor(i n / rounds) of the n samples, as run.mjs shares a
 * side's scrapes over its rounds. Empty rounds are left out (run.mjs keeps none either).
 */
export function roundsOf(samples, rounds) {
  const out = [];
  for (let i = 0, at = 0; i < rounds; i++) {
    const k = Math.floor(((i + 1) * samples.length) / rounds) - Math.floor((i * samples.length) / rounds);
    if (k > 0) out.push(samples.slice(at, at + k));
    at += k;
  }
  return out;
}

/** What must be the same for runs to be pooled, besides the build and the configuration. */
function setupOf(options) {
  const o = options ?? {};
  const parts = [
    o.traffic ? 'traffic' : 'no traffic',
    o.gzip === false ? 'no gzip' : 'gzip',
    `client ${o.client ?? 'bare'}`,
    `${o.perCode ?? 100} per code`,
    o.pin ? 'pinned' : '',
    `pace ${o.paceMs ?? 100} ms`,
    ...(o.exporterFlags ?? []),
    ...(o.exporterNodeFlags ?? []),
  ];
  return parts.filter(Boolean).join(', ');
}

/**
 * The reports' measurements pooled per build (commit), configuration (N, P, endpoint) and setup
 * (traffic, gzip, flags...). `reports`: [{ file, report }] with run.mjs's JSON reports. Each group:
 * its runs (file, ratio of p99s, compressing floor's ratio), and the pooled samples' p50 and p99 of
 * each side, their p99 ratio and its 95 % interval (pooledRatioInterval: runs drawn, then their
 * rounds), and the same for the compressing floor over the floor. A report without samples is
 * refused, naming its file.
 */
export function poolReports(reports, { iterations = 2000, seed = 1 } = {}) {
  const groups = new Map();
  for (const { file, report } of reports) {
    if (!report || !Array.isArray(report.results) || !report.options) throw new Error(`${file}: not a report of bench/cache-exporter/run.mjs (no results or options)`);
    const rounds = Math.max(1, Math.ceil(report.options.scrapes / report.options.block));
    if (!Number.isFinite(rounds)) throw new Error(`${file}: options.scrapes and options.block must be numbers`);
    const commit = `${report.code?.commit ?? '?'}${report.code?.packagesModified?.length ? '+' : ''}`;
    const setup = setupOf(report.options);
    for (const result of report.results) {
      for (const [endpoint, measured] of [
        ['/metrics', result.metrics],
        ['/metrics/prefixes', result.prefixMetrics],
      ]) {
        if (!measured || !measured.exporter || measured.exporter.n === 0) continue;
        const exp = measured.exporter.samples;
        const floor = measured.floor?.samples;
        if (!Array.isArray(exp) || !Array.isArray(floor) || exp.length !== measured.exporter.n || floor.length !== exp.length) {
          throw new Error(`${file}: N=${result.nodes} P=${result.prefixes} ${endpoint}: the exporter's and the floor's samples are missing or of different counts`);
        }
        const compressed = endpoint === '/metrics' && Array.isArray(measured.compressedFloor?.samples) && measured.compressedFloor.samples.length === exp.length ? measured.compressedFloor.samples : undefined;
        const key = `${commit}|${result.nodes}|${result.prefixes}|${endpoint}|${setup}`;
        if (!groups.has(key)) groups.set(key, { commit, nodes: result.nodes, prefixes: result.prefixes, endpoint, setup, runs: [] });
        groups.get(key).runs.push({
          file,
          exp,
          floor,
          compressed,
          expBlocks: roundsOf(exp, rounds),
          floorBlocks: roundsOf(floor, rounds),
          compressedBlocks: compressed && roundsOf(compressed, rounds),
          ratio: percentile(exp, 99) / percentile(floor, 99),
          compressedRatio: compressed ? percentile(compressed, 99) / percentile(floor, 99) : NaN,
        });
      }
    }
  }
  return [...groups.values()].map((group) => {
    const exp = group.runs.flatMap((r) => r.exp);
    const floor = group.runs.flatMap((r) => r.floor);
    const withCompressed = group.runs.every((r) => r.compressed);
    const compressed = withCompressed ? group.runs.flatMap((r) => r.compressed) : [];
    return {
      commit: group.commit,
      nodes: group.nodes,
      prefixes: group.prefixes,
      endpoint: group.endpoint,
      setup: group.setup,
      runs: group.runs.map((r) => ({ file: r.file, scrapes: r.exp.length, expP99: percentile(r.exp, 99), floorP99: percentile(r.floor, 99), ratio: r.ratio, compressedRatio: r.compressedRatio })),
      scrapes: exp.length,
      expP50: percentile(exp, 50),
      expP99: percentile(exp, 99),
      floorP50: percentile(floor, 50),
      floorP99: percentile(floor, 99),
      ratio: percentile(exp, 99) / percentile(floor, 99),
      interval: pooledRatioInterval(
        group.runs.map((r) => ({ expBlocks: r.expBlocks, floorBlocks: r.floorBlocks })),
        { iterations, seed },
      ),
      compressedRatio: withCompressed ? percentile(compressed, 99) / percentile(floor, 99) : NaN,
      compressedInterval: withCompressed
        ? pooledRatioInterval(
            group.runs.map((r) => ({ expBlocks: r.compressedBlocks, floorBlocks: r.floorBlocks })),
            { iterations, seed },
          )
        : { low: NaN, high: NaN },
    };
  });
}

const ratioText = (r) => (Number.isFinite(r) ? `${r.toFixed(2)}x` : '-');
const intervalText = (i) => (Number.isFinite(i.low) ? `${i.low.toFixed(2)}-${i.high.toFixed(2)}x` : '-');

/**
 * The pooled groups as a table (one row a group), each run's ratio beside it, and how many runs
 * had their own ratio within `goalRatio`.
 */
export function pooledTable(pooled, { goalRatio = 1.5 } = {}) {
  const header = ['N', 'P', 'endpoint', 'commit', 'runs', 'scrapes', 'exp p50', 'exp p99', 'floor p50', 'floor p99', 'p99/floor', '95% interval', `runs <= ${goalRatio}x`, 'compressing floor/floor', '95% interval'];
  const rows = pooled.map((g) => [
    g.nodes,
    g.prefixes,
    g.endpoint,
    g.commit,
    g.runs.length,
    g.scrapes,
    fmt(g.expP50),
    fmt(g.expP99),
    fmt(g.floorP50),
    fmt(g.floorP99),
    ratioText(g.ratio),
    intervalText(g.interval),
    `${g.runs.filter((r) => r.ratio <= goalRatio).length} of ${g.runs.length}`,
    ratioText(g.compressedRatio),
    intervalText(g.compressedInterval),
  ]);
  return formatTable(header, rows, 4);
}

/** Each group's runs, one line each: the file, its scrapes, its p99s and their ratio. */
export function runLines(pooled) {
  const lines = [];
  for (const g of pooled) {
    lines.push(`N=${g.nodes} P=${g.prefixes} ${g.endpoint} at ${g.commit} (${g.setup}):`);
    for (const r of g.runs) {
      lines.push(`  ${r.file}: ${r.scrapes} scrapes, exp p99 ${fmt(r.expP99)} ms, floor p99 ${fmt(r.floorP99)} ms, ${ratioText(r.ratio)}; compressing floor ${ratioText(r.compressedRatio)}`);
    }
  }
  return lines.join('\n');
}

/**
 * The latency goal on the pooled samples (`/metrics` at `nodes` nodes): the pooled p99
 * within `goalRatio` x the floor's and under `goalMs`; `interval` says whether the 95 % interval's
 * upper end is within the ratio too.
 */
export function pooledGoals(pooled, { nodes = 100, goalRatio = 1.5, goalMs = 100 } = {}) {
  return pooled
    .filter((g) => g.nodes === nodes && g.endpoint === '/metrics')
    .map((g) => {
      const pass = g.ratio <= goalRatio && g.expP99 < goalMs;
      return {
        goal: `N=${g.nodes} P=${g.prefixes} at ${g.commit}: pooled /metrics p99 <= ${goalRatio}x floor p99 and < ${goalMs} ms`,
        status: pass ? 'PASS' : 'FAIL',
        intervalWithin: g.interval.high <= goalRatio,
        detail: `${g.runs.length} runs, ${g.scrapes} scrapes: p99 ${fmt(g.expP99)} ms, floor p99 ${fmt(g.floorP99)} ms, ratio ${ratioText(g.ratio)} (95% interval ${intervalText(g.interval)}, ${g.interval.high <= goalRatio ? 'within' : 'reaching past'} ${goalRatio}x)`,
      };
    });
}
