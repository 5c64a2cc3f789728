#!/usr/bin/env node
// The cache exporter as a store runs it: what it costs idle and scraped every 5 s, from 10 nodes to
// a fleet, with a baseline commit's exporter alternated in the same run. See README.md beside this.
//
//   node bench/cache-exporter/steady.mjs [--nodes=10] [--baseline=<commit>] [--pairs=1]
//        [--window-s=60] [--settle-s=20] [--interval-s=5] [--warmup=20] [--traffic]
//        [--servers=doubles|memcached] [--per-process=1000] [--profile] [--phases] [--idle-only] [--exporter-flags="..."] [--exporter-node-flags="..."]
//        [--out=bench/cache-exporter/results/steady.json]
// --nodes: N values (e.g. 10,1000,2000,5000), the doubles spread over processes of --per-process.
// --servers=memcached: real memcached processes (the test kit's) instead of ARCUS doubles, each
//   registered on a ZooKeeper session of its own; without the ARCUS-only stats.
// --baseline: also measure that commit's exporter (built in a worktree, bench/lib/baseline.mjs),
//   runs in the order A B B A ... (--pairs pairs) against the same doubles.
// For each exporter: ready (every node up with a QoS result), --settle-s without scrapes, an idle
// window of --window-s (CPU from /proc/<pid>/stat), --warmup scrapes, then a scraped window of
// --window-s with a scrape every --interval-s (CPU, RSS, latency, body size).
// --profile: the current side's exporter under node --cpu-prof; the top functions of each window.
// --phases: the exporter logs at debug; the medians of its collect / render / total ms a scrape.
// --idle-only: the idle window alone (no scrapes), for changes to the background work.
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { gunzipSync } from 'node:zlib';
import { ArcusZk, freePort, startMemcached, tempDir } from '../../packages/testkit/dist/src/index.js';
import { alternationOrder } from '../lib/alternate.mjs';
import { parseArgs } from '../lib/args.mjs';
import { BareHttpClient } from '../lib/bare-http.mjs';
import { builtBaseline } from '../lib/baseline.mjs';
import { cpuMs, percentile, shebangNodeFlags, statusKb } from '../lib/process.mjs';
import { fmt, formatTable } from '../lib/table.mjs';
import { summarizeProfile } from './profile-summary.mjs';
import { doublesCommand, startBenchZooKeeper } from './servers.mjs';

const HERE = dirname(new URL(import.meta.url).pathname);
const ROOT = join(HERE, '..', '..');

const args = parseArgs(process.argv.slice(2), import.meta.url);
const list = (value, fallback) =>
  value === undefined ? fallback : String(value).split(',').filter(Boolean).map(Number);
const words = (value) => (value ? String(value).split(/\s+/).filter(Boolean) : []);
const OPTS = {
  nodes: list(args.nodes, [10]),
  baseline: args.baseline && args.baseline !== 'true' ? String(args.baseline) : undefined,
  pairs: Number(args.pairs ?? 1),
  windowS: Number(args['window-s'] ?? 60),
  settleS: Number(args['settle-s'] ?? 20),
  intervalS: Number(args['interval-s'] ?? 5),
  warmup: Number(args.warmup ?? 20),
  traffic: args.traffic === 'true',
  perProcess: Number(args['per-process'] ?? 1000),
  servers: String(args.servers ?? 'doubles'),
  profile: args.profile === 'true',
  phases: args.phases === 'true',
  idleOnly: args['idle-only'] === 'true',
  exporterFlags: words(args['exporter-flags']),
  exporterNodeFlags: words(args['exporter-node-flags']),
  out: args.out ?? join(HERE, 'results', 'steady.json'),
};
for (const n of [...OPTS.nodes, OPTS.pairs, OPTS.windowS, OPTS.intervalS, OPTS.perProcess]) {
  if (!Number.isInteger(n) || n <= 0) throw new Error(`bad number in the arguments: ${n}`);
}
if (OPTS.servers !== 'doubles' && OPTS.servers !== 'memcached')
  throw new Error(`--servers=${OPTS.servers}: doubles or memcached`);
if (!(OPTS.settleS >= 0) || !Number.isInteger(OPTS.warmup) || OPTS.warmup < 0)
  throw new Error('--settle-s and --warmup: 0 or more');
/** The doubles' counters move once a second: every node's differ between two scrapes, at little cost to the doubles. */
const TRAFFIC_MS = 1000;
const SCRAPE_TIMEOUT_S = OPTS.intervalS;

const log = (msg) => process.stderr.write(`[steady ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

// ---------------------------------------------------------------------------------------------
// Child processes, killed by PID however this process ends.

const children = new Set();
let zk;

function track(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

async function stopChild(child, { gentle, graceMs = 10_000 } = {}) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    if (gentle) gentle();
    else process.kill(child.pid, 'SIGTERM');
  } catch {
    // gone
  }
  const timer = setTimeout(() => {
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }, graceMs);
  await exited;
  clearTimeout(timer);
}

let cleaning;
function cleanup() {
  cleaning ??= (async () => {
    await Promise.allSettled([...children].map((c) => stopChild(c, { graceMs: 20_000 })));
    if (zk) await zk.stop().catch(() => undefined);
  })();
  return cleaning;
}
process.on('exit', () => {
  for (const child of children) {
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    log(`${signal}: stopping every child process`);
    void cleanup().finally(() => process.exit(130));
  });
}

// ---------------------------------------------------------------------------------------------
// Doubles and exporters

/** N doubles in processes of at most --per-process each (file descriptors: ~4 a double), started one after the other. */
async function startDoubles(n) {
  const processes = [];
  const nodes = [];
  for (let first = 0; first < n; first += OPTS.perProcess) {
    const count = Math.min(OPTS.perProcess, n - first);
    const { command, args: argv } = doublesCommand({
      zk: zk.address,
      nodes: count,
      traffic: OPTS.traffic,
      trafficMs: TRAFFIC_MS,
      // 100 nodes a service code: the processes' codes follow each other.
      firstCode: first / 100,
    });
    const child = track(spawn(command, argv, { stdio: ['pipe', 'pipe', 'inherit'] }));
    const ready = await new Promise((resolve, reject) => {
      const lines = createInterface({ input: child.stdout });
      lines.once('line', (line) => resolve(JSON.parse(line)));
      child.once('exit', (code) => reject(new Error(`doubles exited (${code}) before they were ready`)));
    });
    processes.push(child);
    nodes.push(...ready.nodes);
  }
  return {
    nodes,
    stop: () =>
      Promise.all(processes.map((c) => stopChild(c, { gentle: () => c.stdin.end('stop\n'), graceMs: 30_000 }))),
  };
}

/** N memcached servers, mapped and registered as ARCUS servers register (100 a service code). */
async function startMemcachedFleet(n) {
  const arcus = await ArcusZk.connect(zk.address);
  const codes = Array.from({ length: Math.ceil(n / 100) }, (_, i) => `bench${i}`);
  for (const code of codes) await arcus.createServiceCode(code);
  const servers = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < n) {
        const code = codes[Math.floor(next++ / 100)];
        const server = await startMemcached({ extraArgs: ['-t', '1'] });
        servers.push(server);
        await arcus.mapServer(server.address, code);
        server.registration = await arcus.registerNode(server.address, code);
      }
    }),
  );
  return {
    nodes: servers.map((server) => ({ address: server.address })),
    stop: async () => {
      await Promise.allSettled(servers.map((server) => server.registration?.unregister()));
      await Promise.allSettled(servers.map((server) => server.stop()));
      await arcus.close();
    },
  };
}

/** The commit of `tree` (`+`: uncommitted changes under packages/ or bin/). */
function commitOf(tree) {
  const git = (...a) => spawnSync('git', a, { cwd: tree, encoding: 'utf8' }).stdout?.trim() ?? '';
  return `${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--', 'packages', 'bin') ? '+' : ''}`;
}

async function startExporter(tree, label, profile) {
  const dir = await tempDir('bench-steady-');
  const port = await freePort();
  const configFile = join(dir, 'exporter.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      listen: `127.0.0.1:${port}`,
      ensembleByName: { bench: [zk.address] },
      ...(OPTS.phases ? { log: { level: 'debug' } } : {}),
    }),
  );
  const bin = join(tree, 'bin', 'cache-exporter');
  const nodeFlags = [...shebangNodeFlags(bin), ...OPTS.exporterNodeFlags];
  let profileDir;
  if (profile) {
    profileDir = join(HERE, 'results', 'profiles', `steady-${label}`);
    rmSync(profileDir, { recursive: true, force: true });
    mkdirSync(profileDir, { recursive: true });
    nodeFlags.push('--cpu-prof', `--cpu-prof-dir=${profileDir}`);
  }
  const logFile = join(dir, 'exporter.log');
  const fd = openSync(logFile, 'a');
  const child = track(
    spawn(process.execPath, [...nodeFlags, bin, `-config-file=${configFile}`, ...OPTS.exporterFlags], {
      stdio: ['ignore', fd, fd],
      cwd: dir,
    }),
  );
  closeSync(fd);
  const client = new BareHttpClient('127.0.0.1', port);
  return {
    child,
    pid: child.pid,
    client,
    logFile,
    profileDir,
    spawnedAt: performance.now(),
    stop: () => {
      client.close();
      return stopChild(child);
    },
  };
}

/** One /metrics scrape as a store makes it (gzip, its timeout header); the body is decoded later, untimed. */
async function scrape(exporter) {
  const headers = { 'Accept-Encoding': 'gzip', 'X-Prometheus-Scrape-Timeout-Seconds': String(SCRAPE_TIMEOUT_S) };
  let answer;
  try {
    answer = await exporter.client.get('/metrics', headers, { timeoutMs: SCRAPE_TIMEOUT_S * 1000 + 30_000 });
  } catch (err) {
    if (exporter.child.exitCode !== null)
      throw new Error(`the exporter died:\n${readFileSync(exporter.logFile, 'utf8').slice(-2000)}`);
    throw err;
  }
  if (answer.status !== 200) throw new Error(`GET /metrics: HTTP ${answer.status}`);
  const raw = answer.body;
  const gzipped = answer.headers['content-encoding'] === 'gzip';
  return { ms: answer.ms, wireBytes: raw.length, text: () => (gzipped ? gunzipSync(raw) : raw).toString('utf8') };
}

/**
 * What the QoS probes measured, over the nodes of one body: per probe, the median and p90 of
 * arcus_qos_latency_seconds in µs. A change to how probes are scheduled must leave these alone.
 */
function qosLatencies(text) {
  const byProbe = new Map();
  for (const m of text.matchAll(/^arcus_qos_latency_seconds\{probe="(\w+)",[^}]*\} (\S+)$/gm)) {
    if (!byProbe.has(m[1])) byProbe.set(m[1], []);
    byProbe.get(m[1]).push(Number(m[2]) * 1e6);
  }
  return Object.fromEntries(
    [...byProbe].map(([probe, us]) => [probe, { p50: percentile(us, 50), p90: percentile(us, 90) }]),
  );
}

/** The value of an unlabelled gauge (or its first series) in an exposition text. */
const gauge = (text, name) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1]);
const upCount = (text) => (text.match(/^arcus_up\{[^}]*\} 1$/gm) ?? []).length;
const qosCount = (text) => (text.match(/^arcus_qos_last_run_timestamp_seconds\{/gm) ?? []).length;

/** Until every node is up with a QoS result; the exporter may be still connecting to ZooKeeper at first. */
async function waitForNodes(exporter, n) {
  const deadline = Date.now() + 120_000 + n * 30;
  for (;;) {
    let up = 0;
    let qos = 0;
    try {
      const text = (await scrape(exporter)).text();
      up = upCount(text);
      qos = qosCount(text);
      if (up === n && qos >= n) return;
    } catch (err) {
      if (exporter.child.exitCode !== null) throw err;
    }
    if (Date.now() > deadline)
      throw new Error(`${up} of ${n} nodes up, ${qos} with QoS, after waiting (${exporter.logFile})`);
    await sleep(1000);
  }
}

/** Medians of the last `count` scrapes' debug lines (`scrape collected`): collect, render and total ms. */
function scrapePhases(logFile, count) {
  const lines = readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((line) => line.includes('"scrape collected"'))
    .slice(-count)
    .map((line) => JSON.parse(line));
  const of = (field) =>
    percentile(
      lines.map((l) => l[field]),
      50,
    );
  return { collectMs: of('collectMs'), renderMs: of('renderMs'), totalMs: of('totalMs') };
}

const qosText = (qos) =>
  Object.entries(qos)
    .map(([probe, { p50, p90 }]) => `${probe} ${fmt(p50)}/${fmt(p90)}`)
    .join(', ');

/** CPU ms per second of wall time while `during` runs. */
async function cpuRate(pid, during) {
  const c0 = cpuMs(pid);
  const t0 = performance.now();
  const value = await during();
  return { msPerS: ((cpuMs(pid) - c0) * 1000) / (performance.now() - t0), value };
}

/** One exporter's run: idle window, warm-up, scraped window. */
async function measure(side, tree, n, index) {
  const label = `N${n}-${side}-${index}`;
  const profile = OPTS.profile && side === 'current';
  const exporter = await startExporter(tree, label, profile);
  try {
    await waitForNodes(exporter, n);
    await sleep(OPTS.settleS * 1000);
    const idleFrom = (performance.now() - exporter.spawnedAt) / 1000;
    const idle = await cpuRate(exporter.pid, () => sleep(OPTS.windowS * 1000));
    if (OPTS.idleOnly) {
      const qos = qosLatencies((await scrape(exporter)).text());
      log(`${label}: idle ${fmt(idle.msPerS)} ms/s; QoS µs p50/p90 ${qosText(qos)}`);
      return {
        result: { nodes: n, side, index, commit: commitOf(tree), idleMsPerS: idle.msPerS, scrapes: 0, qos },
        profile: profile && { label, dir: exporter.profileDir, idleFrom, scrapedFrom: Infinity },
      };
    }
    for (let i = 0; i < OPTS.warmup; i++) {
      const started = performance.now();
      await scrape(exporter);
      await sleep(Math.max(0, 200 - (performance.now() - started)));
    }
    // The warm-up's garbage and timers settle as between two scrapes.
    await sleep(OPTS.intervalS * 1000);
    const scrapedFrom = (performance.now() - exporter.spawnedAt) / 1000;
    const count = Math.max(1, Math.round(OPTS.windowS / OPTS.intervalS));
    let rssMaxKb = 0;
    const sampler = setInterval(() => (rssMaxKb = Math.max(rssMaxKb, statusKb(exporter.pid, 'VmRSS'))), 250);
    const scraped = await cpuRate(exporter.pid, async () => {
      const start = performance.now();
      const answers = [];
      for (let i = 0; i < count; i++) {
        const wait = start + i * OPTS.intervalS * 1000 - performance.now();
        if (wait > 0) await sleep(wait);
        answers.push(await scrape(exporter));
      }
      const wait = start + count * OPTS.intervalS * 1000 - performance.now();
      if (wait > 0) await sleep(wait);
      return answers;
    });
    clearInterval(sampler);
    const phases = OPTS.phases ? scrapePhases(exporter.logFile, count) : undefined;
    const answers = scraped.value;
    const ms = answers.map((a) => a.ms);
    const text = answers.at(-1).text();
    const incomplete = answers.filter((a) => upCount(a.text()) !== n).length;
    const result = {
      nodes: n,
      side,
      index,
      commit: commitOf(tree),
      idleMsPerS: idle.msPerS,
      allInMsPerS: scraped.msPerS,
      scrapes: ms.length,
      p50: percentile(ms, 50),
      p99: percentile(ms, 99),
      max: Math.max(...ms),
      ms: ms.map((v) => Math.round(v * 10) / 10),
      incomplete,
      rssMaxMB: rssMaxKb / 1024,
      hwmMB: statusKb(exporter.pid, 'VmHWM') / 1024,
      bodyBytes: Buffer.byteLength(text),
      wireBytes: answers.at(-1).wireBytes,
      // The exporter's own view at the last scrape (prom-client's process metrics), MB.
      heapUsedMB: gauge(text, 'nodejs_heap_size_used_bytes') / 1048576,
      externalMB: gauge(text, 'nodejs_external_memory_bytes') / 1048576,
      qos: qosLatencies(text),
      ...(phases ? { phases } : {}),
    };
    log(
      `${label}: idle ${fmt(result.idleMsPerS)} ms/s, scraped ${fmt(result.allInMsPerS)} ms/s, p50 ${fmt(result.p50)} p99 ${fmt(result.p99)} ms, RSS ${fmt(result.rssMaxMB)} MB (heap ${fmt(result.heapUsedMB)}, external ${fmt(result.externalMB)})` +
        `; QoS µs p50/p90 ${qosText(result.qos)}` +
        (phases
          ? `; median collect ${fmt(phases.collectMs)}, render ${fmt(phases.renderMs)}, total ${fmt(phases.totalMs)} ms`
          : ''),
    );
    return { result, profile: profile && { label, dir: exporter.profileDir, idleFrom, scrapedFrom } };
  } finally {
    await exporter.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// Report

const median = (values) => percentile(values, 50);

function runsTable(results) {
  const header = [
    'N',
    'run',
    'commit',
    'idle ms/s',
    'all-in ms/s',
    '% core',
    'p50 ms',
    'p99 ms',
    'max ms',
    'RSS MB',
    'body MB',
    'wire KB',
  ];
  const rows = results.map((r) => [
    r.nodes,
    `${r.side} ${r.index}${r.incomplete ? ` (${r.incomplete} incomplete)` : ''}`,
    r.commit,
    fmt(r.idleMsPerS),
    fmt(r.allInMsPerS),
    fmt(r.allInMsPerS / 10),
    fmt(r.p50),
    fmt(r.p99),
    fmt(r.max),
    fmt(r.rssMaxMB),
    r.bodyBytes === undefined ? '-' : (r.bodyBytes / 1e6).toFixed(2),
    fmt(r.wireBytes / 1024),
  ]);
  return formatTable(header, rows);
}

/** Per side and N, the medians of its runs, and the per-node figures that show how cost grows with N. */
function scalingTable(results) {
  const header = [
    'side',
    'N',
    'idle ms/s',
    'all-in ms/s',
    'CPU ms/node/scrape',
    'p99 ms',
    'RSS MB',
    'RSS KB/node',
    'added KB/node',
    'body B/node',
  ];
  const rows = [];
  for (const side of ['baseline', 'current']) {
    let previous;
    for (const n of OPTS.nodes) {
      const of = results.filter((r) => r.side === side && r.nodes === n);
      if (of.length === 0) continue;
      const pick = (field) => median(of.map((r) => r[field]));
      const rss = pick('rssMaxMB');
      rows.push([
        side,
        n,
        fmt(pick('idleMsPerS')),
        fmt(pick('allInMsPerS')),
        ((pick('allInMsPerS') * OPTS.intervalS) / n).toFixed(3),
        fmt(pick('p99')),
        fmt(rss),
        fmt((rss * 1024) / n),
        // What each node past the previous N added.
        previous ? fmt(((rss - previous.rss) * 1024) / (n - previous.n)) : '-',
        fmt(pick('bodyBytes') / n),
      ]);
      previous = { n, rss };
    }
  }
  return formatTable(header, rows, 2);
}

function goals(results) {
  const current = (n) => results.filter((r) => r.side === 'current' && r.nodes === n);
  const goal = (n, text, test) => {
    const of = current(n);
    if (of.length === 0) return `  NOT RUN ${text}`;
    const pick = (field) => median(of.map((r) => r[field]));
    const [pass, detail] = test(pick);
    return `  ${(pass ? 'PASS' : 'FAIL').padEnd(7)} ${text}: ${detail}`;
  };
  return [
    goal(10, 'N=10: all-in CPU <= 6 ms/s', (v) => [
      v('allInMsPerS') <= 6,
      `${fmt(v('allInMsPerS'))} ms/s (idle ${fmt(v('idleMsPerS'))})`,
    ]),
    goal(2000, 'N=2000: p99 < 500 ms, < 15 % of a core, RSS < 260 MB', (v) => [
      v('p99') < 500 && v('allInMsPerS') < 150 && v('rssMaxMB') < 260,
      `p99 ${fmt(v('p99'))} ms, ${fmt(v('allInMsPerS') / 10)} %, ${fmt(v('rssMaxMB'))} MB`,
    ]),
    goal(5000, 'N=5000: p99 < 2 s, < 40 % of a core, RSS < 560 MB', (v) => [
      v('p99') < 2000 && v('allInMsPerS') < 400 && v('rssMaxMB') < 560,
      `p99 ${fmt(v('p99'))} ms, ${fmt(v('allInMsPerS') / 10)} %, ${fmt(v('rssMaxMB'))} MB`,
    ]),
  ].join('\n');
}

async function main() {
  const started = Date.now();
  const trees = { current: ROOT };
  if (OPTS.baseline) trees.baseline = builtBaseline(OPTS.baseline, { log }).dir;
  const order = OPTS.baseline ? alternationOrder(OPTS.pairs) : Array(OPTS.pairs).fill('current');
  zk = await startBenchZooKeeper();
  log(`ZooKeeper ${zk.address}; N=${OPTS.nodes.join(',')}, runs ${order.join(' ')}`);
  const results = [];
  const profiles = [];
  for (const n of OPTS.nodes) {
    const t0 = Date.now();
    const doubles = OPTS.servers === 'memcached' ? await startMemcachedFleet(n) : await startDoubles(n);
    log(`N=${n}: ${doubles.nodes.length} ${OPTS.servers} ready in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    try {
      const counts = { baseline: 0, current: 0 };
      for (const side of order) {
        const { result, profile } = await measure(side, trees[side], n, ++counts[side]);
        results.push(result);
        if (profile) profiles.push(profile);
      }
    } finally {
      await doubles.stop();
    }
  }
  await zk.stop();
  zk = undefined;
  const report = {
    when: new Date().toISOString(),
    options: OPTS,
    trees,
    wallSeconds: Math.round((Date.now() - started) / 1000),
    results,
  };
  mkdirSync(dirname(OPTS.out), { recursive: true });
  writeFileSync(OPTS.out, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(
    `\ncache exporter, steady state (${report.wallSeconds} s): idle and scraped windows of ${OPTS.windowS} s, a gzip /metrics scrape every ${OPTS.intervalS} s${OPTS.traffic ? ', doubles with traffic' : ''}\n` +
      `CPU: every thread of the exporter, /proc/<pid>/stat; % core = all-in ms/s / 10; RSS: highest VmRSS in the scraped window\n\n` +
      `${runsTable(results)}\n\n${scalingTable(results)}\n\ngoals (current side, median of its runs):\n${goals(results)}\n\nresults: ${relative(process.cwd(), resolve(OPTS.out))}\n`,
  );
  // The profile's clock starts about when the process does: the windows are placed from the spawn.
  for (const { label, dir, idleFrom, scrapedFrom } of profiles) {
    for (const f of readdirSync(dir).filter((name) => name.endsWith('.cpuprofile'))) {
      const path = join(dir, f);
      process.stdout.write(
        `\n${label}, idle window:\n${summarizeProfile(path, 15, idleFrom, idleFrom + OPTS.windowS)}\n`,
      );
      process.stdout.write(`\n${label}, scraped window:\n${summarizeProfile(path, 25, scrapedFrom)}\n`);
    }
  }
}

main().then(
  async () => {
    await cleanup();
    process.exit(0);
  },
  async (err) => {
    log(`failed: ${err?.stack ?? err}`);
    await cleanup();
    process.exit(1);
  },
);
