// What bench/cache-exporter/alternate.mjs computes: the order of the runs, and the table that puts
// them side by side. Pure functions of run.mjs's reports.
import { percentile } from './process.mjs';
import { fmt, formatTable } from './table.mjs';

/**
 * The sides of `pairs` pairs of runs, baseline first, then in the order A B B A A B ...: a machine
 * whose speed drifts over the runs favours neither side.
 */
export function alternationOrder(pairs) {
  const order = [];
  for (let i = 0; i < pairs; i++) order.push(...(i % 2 === 0 ? ['baseline', 'current'] : ['current', 'baseline']));
  return order;
}

/** The median of `values` (the lower middle one of an even count, as percentile() ranks). */
const median = (values) => percentile(values, 50);

/**
 * One row per run and endpoint measured, then one per side with the medians of its runs (of two
 * runs or more; the p99/floor column: the median of the runs' ratios), for each
 * configuration (N, P). `runs`: [{ side: 'baseline' | 'current', index, report }] with run.mjs's
 * JSON reports.
 */
export function sideBySide(runs) {
  const header = [
    'N',
    'P',
    'endpoint',
    'run',
    'commit',
    'exp p50',
    'exp p99',
    'floor p50',
    'floor p99',
    'p99/floor',
    'CPU ms/scr',
    'wire KB',
    'RSS MB',
  ];
  const rows = [];
  const configurations = new Map();
  for (const run of runs) {
    for (const result of run.report.results) {
      for (const [endpoint, measured] of [
        ['/metrics', result.metrics],
        ['/metrics/prefixes', result.prefixMetrics],
      ]) {
        if (!measured || measured.exporter.n === 0) continue;
        const key = `${result.nodes} ${result.prefixes} ${endpoint}`;
        if (!configurations.has(key))
          configurations.set(key, { nodes: result.nodes, prefixes: result.prefixes, endpoint, runs: [] });
        configurations.get(key).runs.push({
          side: run.side,
          label: `${run.side} ${run.index}`,
          // `+`: its packages/ or bin/ held uncommitted changes (run.mjs's packagesModified).
          commit: `${run.report.code.commit}${run.report.code.packagesModified?.length ? '+' : ''}`,
          expP50: measured.exporter.p50,
          expP99: measured.exporter.p99,
          floorP50: measured.floor.p50,
          floorP99: measured.floor.p99,
          cpu: measured.exporter.netMsPerScrape,
          // The last body as sent (gzipped unless --no-gzip).
          wire: measured.exporter.wireBytes / 1024,
          rss: result.rss.maxMB,
        });
      }
    }
  }
  for (const { nodes, prefixes, endpoint, runs: measured } of configurations.values()) {
    const row = (label, commit, m) => [
      nodes,
      prefixes,
      endpoint,
      label,
      commit,
      fmt(m.expP50),
      fmt(m.expP99),
      fmt(m.floorP50),
      fmt(m.floorP99),
      `${(m.ratio ?? m.expP99 / m.floorP99).toFixed(2)}x`,
      fmt(m.cpu),
      fmt(m.wire),
      fmt(m.rss),
    ];
    for (const m of measured) rows.push(row(m.label, m.commit, m));
    for (const side of ['baseline', 'current']) {
      const of = measured.filter((m) => m.side === side);
      if (of.length < 2) continue;
      const pick = (field) => median(of.map((m) => m[field]));
      rows.push(
        row(`${side} median`, of[0].commit, {
          expP50: pick('expP50'),
          expP99: pick('expP99'),
          floorP50: pick('floorP50'),
          floorP99: pick('floorP99'),
          // The median of the runs' ratios, not the ratio of the medians.
          ratio: median(of.map((m) => m.expP99 / m.floorP99)),
          cpu: pick('cpu'),
          wire: pick('wire'),
          rss: pick('rss'),
        }),
      );
    }
  }
  return formatTable(header, rows, 5);
}
