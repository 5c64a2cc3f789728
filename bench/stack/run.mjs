#!/usr/bin/env node
// Stack benchmark: how long `npm run demo` takes from its start to every component healthy, and
// what every process of the running demo holds in memory.
//
//   node bench/stack/run.mjs [--runs=2] [--settle=30] [--out=PATH]
//
// Each run installs the demo into a fresh temporary DEMO_DIR (as on a machine that never ran it,
// apart from the build and the system packages), starts it with packages/stack/dist/src/demo.js,
// polls every component's health endpoint every 50 ms from the moment the command started, and
// records when each first answered. After --settle seconds of the demo running (scrapes, rules
// and traffic going), it reads VmRSS and VmHWM of every process (pid files, the demo cluster and
// its ZooKeeper), then stops the demo. Needs the shipped ports (8082 8084 8428 8429 8430 9093
// 9095 9100 9141 9151) free. Prints a table per run.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from '../lib/args.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
const { statusKb } = await import(join(HERE, '..', 'lib', 'process.mjs'));
const args = parseArgs(process.argv.slice(2), import.meta.url);
const RUNS = Number(args.runs ?? 2);
const SETTLE_S = Number(args.settle ?? 30);

const HEALTH = [
  ['short-term store', 'http://127.0.0.1:8428/health'],
  ['long-term store', 'http://127.0.0.1:8429/health'],
  ['alert router', 'http://127.0.0.1:9093/-/ready'],
  ['rule evaluator', 'http://127.0.0.1:8430/-/healthy'],
  ['host exporter', 'http://127.0.0.1:9100/metrics'],
  ['cache exporter', 'http://127.0.0.1:9151/-/ready'],
  ['coordination exporter', 'http://127.0.0.1:9141/-/ready'],
  ['topology provider', 'http://127.0.0.1:8084/-/ready'],
  ['query proxy', 'http://127.0.0.1:8082/-/ready'],
];

const ok = async (url) => {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(1000) });
    await response.arrayBuffer();
    return response.ok;
  } catch {
    return false;
  }
};
const run = (dir, command) =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, 'packages/stack/dist/src/demo.js'), command], {
      env: { ...process.env, DEMO_DIR: dir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    child.on('exit', (code) => resolve({ code, out }));
  });
const children = (pid) => {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((t) =>
      readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number),
    );
  } catch {
    return [];
  }
};
const mb = (kb) => (kb / 1024).toFixed(1);

const report = [];
for (let r = 1; r <= RUNS; r++) {
  const dir = mkdtempSync(join(tmpdir(), 'cachemon-bench-stack-'));
  const started = performance.now();
  const healthyAt = new Map();
  const demo = run(dir, 'start');
  while (healthyAt.size < HEALTH.length && performance.now() - started < 180_000) {
    await Promise.all(
      HEALTH.filter(([name]) => !healthyAt.has(name)).map(async ([name, url]) => {
        if (await ok(url)) healthyAt.set(name, performance.now() - started);
      }),
    );
    await sleep(50);
  }
  const { code, out } = await demo;
  if (code !== 0 || healthyAt.size < HEALTH.length) {
    process.stderr.write(
      `run ${r}: the demo did not come up (exit ${code}; healthy: ${[...healthyAt.keys()].join(', ')})\n${out}\n`,
    );
    await run(dir, 'stop');
    rmSync(dir, { recursive: true, force: true });
    process.exit(1);
  }
  const commandMs = performance.now() - started;
  await sleep(SETTLE_S * 1000);
  const install = join(dir, 'install');
  const processes = [];
  for (const [label, file] of [
    ['short-term store', 'short_term_store/run/short.pid'],
    ['long-term store', 'short_term_store/run/long.pid'],
    ['alert router', 'alert_router/run/alert_router.pid'],
    ['rule evaluator', 'rule_evaluator/run/rule_evaluator.pid'],
    ['host exporter', 'host_exporter/run/host_exporter.pid'],
    ['cache exporter', 'cache_exporter/run/demo.pid'],
    ['coordination exporter', 'coordination_exporter/run/demo.pid'],
    ['topology provider', 'topology_provider/run/topology_provider.pid'],
    ['query proxy', 'query_proxy/run/query_proxy.pid'],
  ]) {
    const pid = Number(readFileSync(join(install, file), 'utf8'));
    processes.push([label, pid]);
  }
  const cluster = JSON.parse(readFileSync(join(dir, 'cluster.json'), 'utf8')).pid;
  processes.push(['demo cluster (ARCUS doubles, traffic)', cluster]);
  for (const child of children(cluster)) processes.push(['demo ZooKeeper (JVM)', child]);
  const rows = processes.map(([label, pid]) => [label, pid, statusKb(pid, 'VmRSS'), statusKb(pid, 'VmHWM')]);
  const stopStarted = performance.now();
  await run(dir, 'stop');
  const stopMs = performance.now() - stopStarted;
  rmSync(dir, { recursive: true, force: true });

  const lines = [
    `### run ${r}`,
    '',
    `\`npm run demo\` (install + demo cluster + every start.sh): command returned after ${(commandMs / 1000).toFixed(1)} s; all healthy after ${(Math.max(...healthyAt.values()) / 1000).toFixed(1)} s; \`demo:stop\` took ${(stopMs / 1000).toFixed(1)} s.`,
    '',
    '| component | healthy after (s) |',
    '|:--|--:|',
  ];
  for (const [name] of HEALTH) lines.push(`| ${name} | ${(healthyAt.get(name) / 1000).toFixed(2)} |`);
  lines.push('', `| process (after ${SETTLE_S} s running) | pid | RSS MB | peak RSS MB |`, '|:--|--:|--:|--:|');
  let total = 0;
  for (const [label, pid, rss, hwm] of rows) {
    total += rss;
    lines.push(`| ${label} | ${pid} | ${mb(rss)} | ${mb(hwm)} |`);
  }
  lines.push(`| **total** | | **${mb(total)}** | |`, '');
  report.push(lines.join('\n'));
  process.stdout.write(`${lines.join('\n')}\n`);
}
if (args.out) writeFileSync(args.out, `${report.join('\n')}\n`);
