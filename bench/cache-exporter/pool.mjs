#!/usr/bin/env node
// Several runs of the cache exporter benchmark, pooled: the reports run.mjs wrote (`--out=FILE`)
// read together, per build, configuration and setup. Prints the pooled p50 and p99 of the exporter
// and of the floor, their p99 ratio with a 95 % interval that draws runs as well as rounds (so
// the spread between runs widens it), each run's own ratio, and the latency goal at 100 nodes on
// the pooled samples.
//
//   node bench/cache-exporter/pool.mjs [--goal-ratio=1.5] [--nodes=100] <report.json>...
//   e.g. for i in 1 2 3; do node bench/cache-exporter/run.mjs --nodes=100 --prefixes=0,50 \
//          --endpoints=metrics --scrapes=1000 --traffic --out=bench/cache-exporter/results/goal-$i.json; done
//        node bench/cache-exporter/pool.mjs bench/cache-exporter/results/goal-*.json
import { readFileSync } from 'node:fs';
import { parseArgs } from '../lib/args.mjs';
import { pooledGoals, pooledTable, poolReports, runLines } from '../lib/pool.mjs';

const argv = process.argv.slice(2);
const files = argv.filter((a) => !a.startsWith('--'));
const args = parseArgs(
  argv.filter((a) => a.startsWith('--')),
  import.meta.url,
);
const goalRatio = Number(args['goal-ratio'] ?? 1.5);
const nodes = Number(args.nodes ?? 100);
if (!(goalRatio > 0)) throw new Error(`--goal-ratio=${args['goal-ratio']}: a positive number`);
if (!Number.isInteger(nodes) || nodes <= 0) throw new Error(`--nodes=${args.nodes}: a whole number above 0`);
if (files.length === 0) throw new Error('no reports given: node bench/cache-exporter/pool.mjs <report.json>... (run.mjs --out=FILE writes one)');

const reports = files.map((file) => {
  let text;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${file}: cannot be read (${err.code ?? err.message})`);
  }
  try {
    return { file, report: JSON.parse(text) };
  } catch (err) {
    throw new Error(`${file}: not JSON (${err.message})`);
  }
});

const pooled = poolReports(reports);
if (pooled.length === 0) throw new Error('the reports hold no measured endpoint');
process.stdout.write(`cache exporter benchmark, ${files.length} reports pooled; latencies in ms\n\n`);
process.stdout.write(`${pooledTable(pooled, { goalRatio })}\n\n${runLines(pooled)}\n`);
const goals = pooledGoals(pooled, { nodes, goalRatio });
if (goals.length > 0) {
  process.stdout.write('\ngoals, on the pooled samples:\n');
  for (const g of goals) process.stdout.write(`  ${g.status.padEnd(6)}  ${g.goal}: ${g.detail}\n`);
}
