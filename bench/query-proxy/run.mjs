#!/usr/bin/env node
// Query proxy benchmark: the same dashboard queries sent straight to a real VictoriaMetrics store
// and through the real proxy (bin/query-proxy, single-group path: parsed, forwarded untouched with
// nocache=1, relayed back), alternated in one run, at 1 and 32 concurrent clients. Beside them the
// floor (floor.mjs): a bare node:http pass-through, the least any Node hop costs; and, when asked,
// a baseline build's proxy on the same stores. See README.md.
//
//   node bench/query-proxy/run.mjs [--ensembles=2] [--service-codes=10] [--nodes=20] [--seed=1]
//        [--requests=1000] [--round=200] [--warmup=3000] [--concurrency=32] [--window=2]
//        [--windows=10] [--layout=shared|split] [--no-floor] [--floor-piped] [--profile]
//        [--baseline=COMMIT | --baseline-tree=DIR] [--no-hostile] [--hostile-bursts=40]
//        [--hostile-connections=200] [--hostile-length=200000] [--out=PATH]
//
// --baseline-tree=DIR: a built checkout whose bin/query-proxy is measured too, as the path
// "proxy (baseline)", alternated with this checkout's proxy and the direct store on the same data.
// --baseline=COMMIT: the same for a commit of this repository, checked out and built first
// (bench/lib/baseline.mjs).
//
// Two stores (short: the fleet's cache metrics with scrape="short", every 5 s over the last hour;
// long: a little scrape="long" data), the proxy with promxy.yml routing scrape=short/long to them.
// Every request is a POST, form-encoded, Accept-Encoding: gzip, as the dashboard server sends it;
// timed from the call to the last (compressed) body byte over keep-alive connections (node:http
// Agent, maxSockets = concurrency). Paths take turns in rounds (--round requests each at c=1,
// --window seconds each at c=32), their order rotated every round.
// Prints a markdown report: per query the c=1 p50 of each path; per path p50/p99/mean at c=1,
// req/s and p50/p99 at c=32, the proxy's (and floor's) CPU ms per request, the store's CPU per
// request, the load generator's CPU, the proxy's peak RSS; what ran on which core; one verdict line
// per goal: c=1 latency through the proxy <= 1.25x direct (p50 and p99), c=32 throughput >= 0.9x
// direct; with a baseline, both proxies against direct and against each other.
// Then the hostile-neighbour row (hostile.mjs): one of the queries timed at c=1 through the proxy
// idle, while bursts of --hostile-connections nested --hostile-length character queries go to a
// bare node:http refuser, and while they go to the proxy; --no-hostile skips it.
// --out=PATH also writes the report there (.json: every figure as JSON instead).
import { spawn, spawnSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { Agent, request } from 'node:http';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { parseArgs } from '../lib/args.mjs';
import { builtBaseline } from '../lib/baseline.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
const { freePort, seededRandom } = await import(join(ROOT, 'packages/testkit/dist/src/index.js'));
const { cpuMs, percentile: pct, statusKb } = await import(join(HERE, '..', 'lib', 'process.mjs'));
const { summarizeProfile } = await import(join(HERE, '..', 'cache-exporter', 'profile-summary.mjs'));
const { childPid, measureHostile, summarizeHostile } = await import(join(HERE, 'hostile.mjs'));
/** The hostile neighbour and the bare refuser: the query proxy's test support, built. */
const HOSTILE_MODULE = join(ROOT, 'packages/query-proxy/dist/test/support/hostile-neighbour.js');

// ---------------------------------------------------------------------------------------------
// Options

const args = parseArgs(process.argv.slice(2), import.meta.url);
const int = (name, fallback) => {
  const v = Number(args[name] ?? fallback);
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} must be a positive integer`);
  return v;
};
const OPTS = {
  ensembles: int('ensembles', 2),
  serviceCodes: int('service-codes', 10),
  nodes: int('nodes', 20),
  seed: int('seed', 1),
  /** c=1: measured requests per path, sent in rounds of `round`. */
  requests: int('requests', 1000),
  round: int('round', 200),
  warmup: int('warmup', 3000),
  concurrency: int('concurrency', 32),
  /** c=concurrency: seconds per window, windows per path. */
  window: Number(args.window ?? 2),
  windows: int('windows', 10),
  layout: args.layout ?? 'shared',
  floor: args['no-floor'] === undefined,
  /** The floor pipes each answer chunk by chunk (floor.mjs --pipe) instead of relaying it as the proxy does. */
  floorPiped: args['floor-piped'] !== undefined,
  profile: args.profile !== undefined,
  hostile: args['no-hostile'] === undefined,
  /** Rounds of the hostile row: each has an idle stretch, a burst to the refuser and one to the proxy. */
  hostileBursts: int('hostile-bursts', 40),
  hostileConnections: int('hostile-connections', 200),
  hostileLength: int('hostile-length', 200_000),
  out: args.out,
};
if (!['split', 'shared'].includes(OPTS.layout)) throw new Error('--layout must be split or shared');
if (!(OPTS.window > 0)) throw new Error('--window must be a positive number of seconds');
if (OPTS.ensembles > 9 || OPTS.serviceCodes > 99 || OPTS.nodes > 250)
  throw new Error('at most 9 ensembles, 99 service codes and 250 nodes per service code');

/** The goals: the proxy's c=1 latency (p50 and p99) against direct, its c=32 throughput against direct. */
const LATENCY_GOAL = 1.25;
const THROUGHPUT_GOAL = 0.9;

/** A checkout's commit, `+` when its packages/ or bin/ hold uncommitted changes; '?' outside git. */
function commitOf(tree) {
  const head = spawnSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: tree, encoding: 'utf8' });
  if (head.status !== 0) return '?';
  const dirty = spawnSync('git', ['status', '--porcelain', '--', 'packages', 'bin'], { cwd: tree, encoding: 'utf8' });
  return `${head.stdout.trim()}${dirty.stdout.trim() ? '+' : ''}`;
}

/** The baseline build whose proxy is measured beside this checkout's, if any: { dir, commit }. */
function baselineBuild() {
  if (args.baseline !== undefined && args['baseline-tree'] !== undefined)
    throw new Error('--baseline and --baseline-tree: one or the other');
  let dir;
  if (args['baseline-tree'] !== undefined) dir = resolve(String(args['baseline-tree']));
  else if (args.baseline !== undefined) {
    if (args.baseline === 'true') throw new Error('--baseline=<commit or ref>');
    dir = builtBaseline(String(args.baseline), { log }).dir;
  } else return undefined;
  for (const file of ['bin/query-proxy', 'packages/query-proxy/dist/src/index.js']) {
    if (!existsSync(join(dir, file)))
      throw new Error(`baseline ${dir}: no ${file} there (a built checkout, npx tsc -b)`);
  }
  return { dir, commit: commitOf(dir) };
}

const STEP_MS = 5000; // the cache job scrapes every 5 s
const SPAN_MS = 3600_000; // one hour of samples
const RANGE_STEP_S = 15;
const SERIES_PER_BATCH = 100; // 72,000 sample lines (~10 MB) per import
const log = (msg) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const BASELINE = baselineBuild();
if (OPTS.hostile && !existsSync(HOSTILE_MODULE))
  throw new Error(`no ${HOSTILE_MODULE}: build first (npx tsc -b), or skip the hostile row (--no-hostile)`);
const COMMIT = commitOf(ROOT);

// ---------------------------------------------------------------------------------------------
// Layout: which process runs on which core

const tasksetOk = spawnSync('taskset', ['-c', '0', 'true']).status === 0;
const PIN = OPTS.layout === 'split' && tasksetOk && availableParallelism() >= 2;
const layoutNote = PIN
  ? 'split: the stores, the proxy and the floor pinned to core 0 (taskset -c 0, started there, so the stores run GOMAXPROCS=1); ' +
    'the load generator (this process) pinned to core 1 once the data is loaded'
  : `shared${OPTS.layout === 'shared' ? '' : ` (split asked for, but ${!tasksetOk ? 'taskset is missing or not working' : 'there are fewer than 2 cores'})`}: ` +
    `nothing pinned; the stores (GOMAXPROCS=${availableParallelism()}), the proxy, the floor and the load generator (this process) share the ${availableParallelism()} cores`;
const onCore0 = (argv) => (PIN ? ['taskset', ['-c', '0', ...argv]] : [argv[0], argv.slice(1)]);

// ---------------------------------------------------------------------------------------------
// Child processes: tracked, killed by PID whatever way this process ends; the temp dir removed.

const dir = mkdtempSync(join(tmpdir(), 'bench-query-proxy-'));
const children = new Set();
/** The hostile neighbour and the refuser, forked by the support module: { pid, close() }. */
const forked = new Set();
let cleaning;

function track(child, name) {
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  child.once('error', (err) => log(`${name}: ${err.message}`));
  const p = { child, name, exited, pid: child.pid };
  children.add(p);
  void exited.then(() => children.delete(p));
  return p;
}

async function stopChild(p, graceMs = 5000) {
  if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill('SIGTERM');
  const timer = setTimeout(() => {
    log(`${p.name} did not stop within ${graceMs} ms: SIGKILL`);
    p.child.kill('SIGKILL');
  }, graceMs);
  await p.exited;
  clearTimeout(timer);
}

function cleanUp() {
  cleaning ??= (async () => {
    await Promise.allSettled([...children].map((p) => stopChild(p)));
    await Promise.allSettled([...forked].map((p) => p.close()));
    rmSync(dir, { recursive: true, force: true });
  })();
  return cleaning;
}
process.on('exit', () => {
  for (const p of children) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  for (const { pid } of forked) {
    try {
      if (pid !== undefined) process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  rmSync(dir, { recursive: true, force: true });
});
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(signal, () => {
    interrupted = true;
    log(`${signal}: stopping everything`);
    void cleanUp().finally(() => process.exit(130));
  });
}

const tail = (file, lines = 15) => {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
};

/** A server on core 0 (split layout), its output to a log file; ready when `ready()` resolves true. */
async function startServer(name, argv, logFile, ready, timeoutMs = 30_000) {
  const fd = openSync(logFile, 'a');
  const [cmd, cmdArgs] = onCore0(argv);
  const p = track(spawn(cmd, cmdArgs, { stdio: ['ignore', fd, fd], cwd: dir }), name);
  closeSync(fd);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (p.child.exitCode !== null || p.child.signalCode !== null)
      throw new Error(`${name} exited (${p.child.exitCode ?? p.child.signalCode}); end of its log:\n${tail(logFile)}`);
    if (await ready().catch(() => false)) return p;
    if (Date.now() > deadline)
      throw new Error(`${name} not ready within ${timeoutMs} ms; end of its log:\n${tail(logFile)}`);
    await sleep(100);
  }
}

async function startStore(name) {
  const port = await freePort();
  const data = join(dir, `${name}-data`);
  const argv = [
    'victoria-metrics',
    `-httpListenAddr=127.0.0.1:${port}`,
    `-storageDataPath=${data}`,
    '-retentionPeriod=100y',
    '-search.latencyOffset=0s',
    '-loggerLevel=WARN',
  ];
  const url = `http://127.0.0.1:${port}`;
  const p = await startServer(
    `victoria-metrics ${name}`,
    argv,
    join(dir, `${name}.log`),
    async () => (await fetch(`${url}/health`)).status === 200,
  );
  return { ...p, port, url };
}

// ---------------------------------------------------------------------------------------------
// Data: an ARCUS fleet as the cache exporter exposes it (docs/metrics.md), every 5 s for an hour.

const END_MS = Math.floor(Date.now() / STEP_MS) * STEP_MS;
const END_S = END_MS / 1000;
const SAMPLES = SPAN_MS / STEP_MS; // 720 per series
const svc = (c) => `svc-${String(c).padStart(2, '0')}`;

function fleet() {
  const nodes = [];
  for (let e = 0; e < OPTS.ensembles; e++) {
    for (let c = 0; c < OPTS.serviceCodes; c++) {
      for (let n = 0; n < OPTS.nodes; n++) {
        nodes.push({
          labels: `ensemble="e${e + 1}",service_code="${svc(c)}",node="10.${e}.${c}.${n + 1}:11211",hostname="cache-e${e + 1}-${svc(c)}-${String(n + 1).padStart(3, '0')}"`,
        });
      }
    }
  }
  return nodes;
}

/**
 * The series of one node with a value generator each: counters increase by a rate with jitter,
 * gauges drift. Generators take the sample index and return the value.
 */
function nodeSeries(node, rng, scrape) {
  const base = `${node.labels},scrape="${scrape}"`;
  const getRate = 500 + rng() * 4500;
  const hitRatio = 0.7 + rng() * 0.29;
  const limit = [64, 256, 1024][Math.floor(rng() * 3)] * 1024 * 1024;
  const fill = 0.5 + rng() * 0.45;
  const conns = 50 + Math.floor(rng() * 450);
  const evictRate = rng() < 0.3 ? rng() * 20 : 0;
  const counter = (rate) => {
    let total = Math.floor(rng() * 1e9);
    return () => (total += Math.round(rate * (STEP_MS / 1000) * (0.8 + rng() * 0.4)));
  };
  const gets = counter(getRate);
  let lastGets = 0;
  let hits = 0;
  return [
    [`arcus_up{${base}}`, () => 1],
    // hits and misses follow the gets of the same sample (arcus_commands_total{command="get"} comes first).
    [`arcus_commands_total{${base},command="get"}`, () => (lastGets = gets())],
    [`arcus_command_hits_total{${base},command="get"}`, () => (hits = Math.round(lastGets * hitRatio))],
    [`arcus_command_misses_total{${base},command="get"}`, () => lastGets - hits],
    [`arcus_commands_total{${base},command="set"}`, counter(getRate / 5)],
    [`arcus_commands_total{${base},command="delete"}`, counter(getRate / 50)],
    [`arcus_commands_total{${base},command="incr"}`, counter(getRate / 20)],
    [`arcus_items_evicted_total{${base}}`, counter(evictRate)],
    [`arcus_bytes{${base}}`, (i) => Math.round(limit * fill * (1 + 0.05 * Math.sin(i / 60)) * (0.99 + rng() * 0.02))],
    [`arcus_limit_bytes{${base}}`, () => limit],
    [`arcus_connections{${base}}`, () => conns + Math.floor(rng() * 20)],
  ];
}

/** Sample lines (Prometheus text with timestamps) of a batch of nodes, every `every`-th sample. */
function sampleText(nodes, rng, scrape, every = 1) {
  const lines = [];
  for (const node of nodes) {
    const series = nodeSeries(node, rng, scrape);
    for (let i = 0; i < SAMPLES; i += every) {
      const at = END_MS - (SAMPLES - 1 - i) * STEP_MS;
      for (const [name, value] of series) lines.push(`${name} ${value(i)} ${at}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

async function importText(store, text) {
  const response = await fetch(`${store.url}/api/v1/import/prometheus`, { method: 'POST', body: text });
  if (response.status !== 204)
    throw new Error(`import into ${store.name}: ${response.status} ${await response.text()}`);
}

/** Until a query at END counts `expected` series of the scrape (the store makes new series searchable a moment after a flush). */
async function waitSearchable(store, scrape, expected) {
  const query = encodeURIComponent(`count({__name__=~"arcus_.*",scrape="${scrape}"})`);
  const deadline = Date.now() + 60_000;
  for (;;) {
    await fetch(`${store.url}/internal/force_flush`);
    const answer = await (await fetch(`${store.url}/api/v1/query?query=${query}&time=${END_S}&nocache=1`)).json();
    const seen = Number(answer.data?.result?.[0]?.value[1] ?? 0);
    if (seen >= expected) return;
    if (Date.now() > deadline) throw new Error(`${store.name}: ${seen} of ${expected} series searchable after 60 s`);
    await sleep(200);
  }
}

async function loadData(short, long) {
  const nodes = fleet();
  const rng = seededRandom(OPTS.seed);
  const perNode = nodeSeries(nodes[0], () => 0.5, 'x').length;
  let bytes = 0;
  let pending = Promise.resolve();
  const nodesPerBatch = Math.max(1, Math.floor(SERIES_PER_BATCH / perNode));
  for (let i = 0; i < nodes.length; i += nodesPerBatch) {
    // The next batch is generated while the store ingests the previous one.
    const text = sampleText(nodes.slice(i, i + nodesPerBatch), rng, 'short');
    bytes += text.length;
    await pending;
    pending = importText(short, text);
  }
  await pending;
  // The long store: the same fleet at one sample a minute (a fraction of the short store's data).
  const longText = sampleText(nodes, rng, 'long', 12);
  await importText(long, longText);
  await Promise.all([
    waitSearchable(short, 'short', nodes.length * perNode),
    waitSearchable(long, 'long', nodes.length * perNode),
  ]);
  return {
    nodes: nodes.length,
    series: nodes.length * perNode,
    samples: nodes.length * perNode * SAMPLES,
    mb: bytes / 1e6,
    longSeries: nodes.length * perNode,
  };
}

/** Waits until the store uses less than 3 % of a core over a second (at most 60 s); returns the seconds waited. */
async function settle(store) {
  const t0 = performance.now();
  for (;;) {
    const before = cpuMs(store.pid);
    await sleep(1000);
    const used = cpuMs(store.pid) - before;
    if (used < 30 || performance.now() - t0 > 60_000) return (performance.now() - t0) / 1000;
  }
}

// ---------------------------------------------------------------------------------------------
// The dashboard's queries: every selector carries scrape="short", so every one routes single.

const E1_SVC = `ensemble="e1",service_code="${svc(Math.min(3, OPTS.serviceCodes - 1))}"`;
const QUERIES = [
  { name: 'up (all nodes)', endpoint: 'query', query: 'arcus_up{scrape="short"}' },
  {
    name: 'commands/s by service code',
    endpoint: 'query',
    query: 'sum by (service_code) (rate(arcus_commands_total{scrape="short"}[1m]))',
  },
  { name: 'top 10 memory', endpoint: 'query', query: 'topk(10, arcus_bytes{scrape="short"})' },
  {
    name: 'memory use by service code',
    endpoint: 'query',
    query:
      'sum by (service_code) (arcus_bytes{scrape="short"}) / sum by (service_code) (arcus_limit_bytes{scrape="short"})',
  },
  {
    name: 'down nodes',
    endpoint: 'query',
    query: 'count by (ensemble, service_code) (arcus_up{scrape="short"} == 0) or vector(0)',
  },
  {
    name: 'get hit ratio by service code, 1h',
    endpoint: 'query_range',
    query:
      'sum by (service_code) (rate(arcus_command_hits_total{scrape="short",command="get"}[1m])) / sum by (service_code) (rate(arcus_commands_total{scrape="short",command="get"}[1m]))',
  },
  { name: 'memory per node (1 svc), 1h', endpoint: 'query_range', query: `arcus_bytes{scrape="short",${E1_SVC}}` },
  {
    name: 'connections per node (1 svc), 1h',
    endpoint: 'query_range',
    query: `arcus_connections{scrape="short",${E1_SVC}}`,
  },
  {
    name: 'commands/s by command (1 ensemble), 1h',
    endpoint: 'query_range',
    query: 'sum by (command) (rate(arcus_commands_total{scrape="short",ensemble="e1"}[1m]))',
  },
  {
    name: 'evictions/s by service code, 1h',
    endpoint: 'query_range',
    query: 'sum by (service_code) (rate(arcus_items_evicted_total{scrape="short"}[1m]))',
  },
].map((q) => {
  const form = new URLSearchParams({ query: q.query });
  if (q.endpoint === 'query') form.set('time', String(END_S));
  else {
    form.set('start', String(END_S - SPAN_MS / 1000));
    form.set('end', String(END_S));
    form.set('step', String(RANGE_STEP_S));
  }
  return { ...q, body: Buffer.from(form.toString()) };
});

/** The plain query of the hostile row: a dashboard panel's, small answer, one of the cheaper for the store. */
const HOSTILE_PLAIN = QUERIES.find((q) => q.name === 'top 10 memory');

// ---------------------------------------------------------------------------------------------
// HTTP: what the dashboard server sends; timed from the call to the last body byte.

/** Requests sent to each path, all phases together (the proxy's own counter must agree). */
const sentTo = {};

/** One request. keep: collect the body (the checks); otherwise only count its bytes. */
function send(target, q, { keep = false } = {}) {
  sentTo[target.name] = (sentTo[target.name] ?? 0) + 1;
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = request(
      {
        host: '127.0.0.1',
        port: target.port,
        method: 'POST',
        path: `/api/v1/${q.endpoint}${target.search}`,
        agent: target.agent,
        headers: {
          'Content-Type': 'application/x-www-form-urlencoded',
          'Content-Length': q.body.length,
          'Accept-Encoding': 'gzip',
        },
      },
      (res) => {
        const chunks = [];
        let bytes = 0;
        res.on('data', (chunk) => {
          bytes += chunk.length;
          if (keep) chunks.push(chunk);
        });
        res.on('end', () => {
          const ms = performance.now() - started;
          if (res.statusCode !== 200)
            reject(
              new Error(
                `${target.name}: ${q.name}: HTTP ${res.statusCode}${keep ? `: ${Buffer.concat(chunks).toString().slice(0, 300)}` : ''}`,
              ),
            );
          else resolve({ ms, bytes, headers: res.headers, raw: keep ? Buffer.concat(chunks) : undefined });
        });
        res.on('error', reject);
      },
    );
    req.on('error', (err) => reject(new Error(`${target.name}: ${q.name}: ${err.message}`)));
    req.end(q.body);
  });
}

const decode = (r) => (r.headers['content-encoding'] === 'gzip' ? gunzipSync(r.raw) : r.raw);

/** Same JSON, except that numbers written as strings (sample values) may differ by 1e-9 relative. */
function closeEnough(a, b) {
  if (typeof a === 'string' && typeof b === 'string') {
    if (a === b) return true;
    const [x, y] = [Number(a), Number(b)];
    return (
      a.trim() !== '' &&
      b.trim() !== '' &&
      Number.isFinite(x) &&
      Number.isFinite(y) &&
      Math.abs(x - y) <= 1e-9 * Math.max(Math.abs(x), Math.abs(y))
    );
  }
  if (Array.isArray(a) || Array.isArray(b))
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => closeEnough(v, b[i]));
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && closeEnough(a[k], b[k]));
  }
  return a === b;
}

/**
 * Once, untimed: every path answers every query with the store's own bytes, and the proxy routes it
 * single. A store running an aggregation on several cores sums in a different order from one call
 * to the next (the last digits of a float change): an answer that differs from the store's is
 * compared again as JSON with sample values equal to 1e-9 (relative), and the query is counted
 * among those whose answers the store itself varies. Two direct answers that agree prove nothing:
 * the next call may sum in another order.
 */
async function checkAnswers(targets) {
  const direct = targets.find((t) => t.name === 'direct');
  const sizes = [];
  const unstable = [];
  for (const q of QUERIES) {
    const reference = await send(direct, q, { keep: true });
    const body = decode(reference).toString('utf8');
    const parsed = JSON.parse(body);
    if (parsed.status !== 'success' || !(parsed.data?.result?.length > 0))
      throw new Error(`direct: ${q.name}: no data: ${body.slice(0, 300)}`);
    let stable = decode(await send(direct, q, { keep: true })).toString('utf8') === body;
    for (const t of targets) {
      if (t === direct) continue;
      const r = await send(t, q, { keep: true });
      if (t.proxy && r.headers['x-cachemon-route'] !== 'single') {
        throw new Error(
          `${label(t.name)}: ${q.name}: X-Cachemon-Route is ${JSON.stringify(r.headers['x-cachemon-route'])}, not "single": the benchmark measures the single path only`,
        );
      }
      if (r.headers['content-encoding'] !== reference.headers['content-encoding']) {
        throw new Error(
          `${t.name}: ${q.name}: content-encoding ${r.headers['content-encoding']} vs the store's ${reference.headers['content-encoding']}`,
        );
      }
      const other = decode(r).toString('utf8');
      if (other === body) continue;
      if (!closeEnough(JSON.parse(other), parsed)) {
        throw new Error(
          `${label(t.name)}: ${q.name}: the answer differs from the store's own (after gunzip, sample values to 1e-9):\n  direct: ${body.slice(0, 300)}\n  ${t.name}: ${other.slice(0, 300)}`,
        );
      }
      stable = false;
    }
    if (!stable) unstable.push(q.name);
    sizes.push({
      series: parsed.data.result.length,
      json: body.length,
      wire: reference.raw.length,
      encoding: reference.headers['content-encoding'] ?? 'identity',
      stable,
    });
  }
  return { sizes, unstable };
}

// ---------------------------------------------------------------------------------------------
// Measurement

/** CPU ms of each process measured, and of this process, now. */
function cpuSnapshot(pids) {
  const self = process.cpuUsage();
  return {
    self: (self.user + self.system) / 1000,
    ...Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuMs(pid)])),
  };
}
const cpuDelta = (a, b) => Object.fromEntries(Object.keys(a).map((k) => [k, b[k] - a[k]]));

function newStats() {
  return { ms: [], perQuery: QUERIES.map(() => []), bytes: 0, requests: 0, wallMs: 0, cpu: {}, windows: [] };
}
function addCpu(stats, delta) {
  for (const [k, v] of Object.entries(delta)) stats.cpu[k] = (stats.cpu[k] ?? 0) + v;
}

/** c=1: `count` requests to one target, one at a time, cycling the queries from `offset`. */
async function sequential(target, count, offset, stats, pids) {
  const before = cpuSnapshot(pids);
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const k = (offset + i) % QUERIES.length;
    const r = await send(target, QUERIES[k]);
    if (stats) {
      stats.ms.push(r.ms);
      stats.perQuery[k].push(r.ms);
      stats.bytes += r.bytes;
    }
  }
  if (stats) {
    stats.wallMs += performance.now() - t0;
    stats.requests += count;
    addCpu(stats, cpuDelta(before, cpuSnapshot(pids)));
  }
}

/**
 * c=N: N loops over the target's pool for `seconds`, taking the queries in turn. Throughput counts
 * the answers completed within the window (those still in flight at its end finish, are timed, and
 * are not counted), so the drain after the window weighs on no path.
 */
async function windowed(target, concurrency, seconds, stats, pids) {
  const before = cpuSnapshot(pids);
  const t0 = performance.now();
  const deadline = t0 + seconds * 1000;
  let next = 0;
  let inWindow = 0;
  const ms = [];
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const k = next++ % QUERIES.length;
        const r = await send(target, QUERIES[k]);
        ms.push(r.ms);
        if (stats) stats.bytes += r.bytes;
        if (performance.now() <= deadline) inWindow++;
      }
    }),
  );
  const wallMs = performance.now() - t0;
  if (stats) {
    stats.ms.push(...ms);
    stats.requests += ms.length;
    stats.inWindow = (stats.inWindow ?? 0) + inWindow;
    stats.windowMs = (stats.windowMs ?? 0) + seconds * 1000;
    stats.wallMs += wallMs;
    stats.windows.push(inWindow / seconds);
    addCpu(stats, cpuDelta(before, cpuSnapshot(pids)));
  }
}

/** Self time of a .cpuprofile by where the code lives: a package, a node: module, native calls (writev...), GC. */
function profileByPackage(path, top = 12) {
  const profile = JSON.parse(readFileSync(path, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const where = ({ url, functionName }) => {
    if (!url) return functionName.startsWith('(') ? functionName : `native ${functionName}`;
    const pkg = /node_modules\/(@[^/]+\/[^/]+|[^/]+)/.exec(url) ?? /packages\/([^/]+)/.exec(url);
    if (pkg) return pkg[1];
    return url.startsWith('node:') ? url.split('/').slice(0, 2).join('/') : url;
  };
  const self = new Map();
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const key = where(byId.get(id));
    if (key === '(idle)') return;
    busy += profile.timeDeltas[i] ?? 0;
    self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([k, us]) => `${(us / 1000).toFixed(0).padStart(8)} ms ${((100 * us) / busy).toFixed(1).padStart(5)} %  ${k}`)
    .join('\n');
}

const rotate = (list, by) => list.map((_, i) => list[(i + by) % list.length]);

/** A path's name in the report. */
const label = (path) => (path === 'baseline' ? 'proxy (baseline)' : path);

/** How many API requests a proxy counted, by route decision (cachemon_query_proxy_requests_total). */
async function routedBy(port) {
  const exposition = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const routed = {};
  for (const m of exposition.matchAll(/^cachemon_query_proxy_requests_total\{([^}]*)\} (\S+)$/gm)) {
    const decision = /decision="([^"]*)"/.exec(m[1])?.[1] ?? '?';
    routed[decision] = (routed[decision] ?? 0) + Number(m[2]);
  }
  return routed;
}

/** What each side answered to the hostile queries, in a sentence. */
function answersSaid(answered) {
  return Object.entries(answered)
    .map(
      ([who, a]) =>
        `${who === 'refuser' ? 'the refuser' : label(who)}: ${a.sent - a.lost.length} of ${a.sent} hostile queries answered with a 400 bad_data ` +
        `(${a.messages.map((m) => `"${m}"`).join(', ')})` +
        (a.lost.length ? `, ${a.lost.length} reset before the 400 was read (${[...new Set(a.lost)].join(', ')})` : ''),
    )
    .join('; ');
}

/**
 * The hostile-neighbour row: the plain query through each proxy, idle, while the neighbour's bursts
 * go to the bare refuser, and while they go to that proxy (hostile.mjs). The neighbour and the
 * refuser are started here, after the other phases, so that they weigh on nothing else.
 */
async function hostileRow(proxy, proxyPort, baseline, baselinePort) {
  const { startHostileNeighbour, startRefuser } = await import(HOSTILE_MODULE);
  const start = async (role, started) => {
    const handle = await started;
    const entry = { pid: childPid('hostile-neighbour.js', role), close: () => handle.close() };
    forked.add(entry);
    return { handle, pid: entry.pid };
  };
  const refuser = await start('refuser', startRefuser());
  const neighbour = await start(
    'neighbour',
    startHostileNeighbour({ connections: OPTS.hostileConnections, queryLength: OPTS.hostileLength }),
  );
  if (PIN) {
    // Placed as the processes they stand beside: the refuser as the proxy, the neighbour as the load generator.
    for (const [pid, core] of [
      [refuser.pid, '0'],
      [neighbour.pid, '1'],
    ]) {
      const r = spawnSync('taskset', ['-a', '-p', '-c', core, String(pid)], { encoding: 'utf8' });
      if (pid === undefined || r.status !== 0) throw new Error(`taskset -a -p -c ${core} ${pid}: ${r.stderr}`);
    }
  }
  log(
    `hostile neighbour pid ${neighbour.pid ?? '?'} (nice 19: ${OPTS.hostileConnections} connections, queries of ${OPTS.hostileLength} characters), ` +
      `bare refuser pid ${refuser.pid ?? '?'} on 127.0.0.1:${refuser.handle.port}; ${OPTS.hostileBursts} rounds of idle, a burst to the refuser and one to the proxy, ` +
      `"${HOSTILE_PLAIN.name}" timed back to back`,
  );
  const subject = (name, p, port) => ({
    name,
    port,
    pid: p.pid,
    target: { name, port, search: '', proxy: true, agent: new Agent({ keepAlive: true, maxSockets: 1 }) },
  });
  const subjects = [
    subject('proxy', proxy, proxyPort),
    ...(baseline ? [subject('baseline', baseline, baselinePort)] : []),
  ];
  const t0 = performance.now();
  const measured = await measureHostile({
    subjects,
    neighbour: neighbour.handle,
    refuser: refuser.handle,
    connections: OPTS.hostileConnections,
    bursts: OPTS.hostileBursts,
    plain: async (target) => (await send(target, HOSTILE_PLAIN)).ms,
    cpuMs,
    pids: { refuser: refuser.pid, neighbour: neighbour.pid },
    log,
  });
  for (const s of subjects) s.target.agent.destroy();
  for (const p of [neighbour, refuser]) {
    await p.handle.close();
    for (const entry of forked) if (entry.pid === p.pid) forked.delete(entry);
  }
  const seconds = (performance.now() - t0) / 1000;
  log(`hostile: done in ${seconds.toFixed(0)} s; ${answersSaid(measured.answered)}`);
  return { ...measured, seconds, refuserPid: refuser.pid, neighbourPid: neighbour.pid };
}

// ---------------------------------------------------------------------------------------------
// Run

const started = performance.now();
let result;
let settleS;
try {
  log(`layout: ${layoutNote}`);
  const short = await startStore('short');
  const long = await startStore('long');
  log(`stores: short ${short.url} (pid ${short.pid}), long ${long.url} (pid ${long.pid})`);

  const t0 = performance.now();
  const data = await loadData(short, long);
  const loadS = (performance.now() - t0) / 1000;
  log(
    `loaded ${data.series} series, ${(data.samples / 1e6).toFixed(2)} M samples (${data.mb.toFixed(0)} MB of text) into the short store and ${data.longSeries} series (1/min) into the long one in ${loadS.toFixed(1)} s`,
  );

  // The import leaves the store merging parts in the background for a while: wait until it idles,
  // so that the first rounds do not share the core with the merges.
  settleS = await settle(short);
  log(`short store idle after ${settleS.toFixed(1)} s of background merging`);

  if (PIN) {
    const r = spawnSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`taskset -a -p -c 1 ${process.pid} failed: ${r.stderr}`);
  }

  // The proxy, as the stack runs it.
  const proxyPort = await freePort();
  const configFile = join(dir, 'promxy.yml');
  const group = (store, scrape) =>
    `    - static_configs: [{ targets: ["127.0.0.1:${store.port}"] }]\n` +
    `      label_filter: { static_labels_include: { scrape: [${scrape}] } }\n` +
    `      query_params: { nocache: 1 }\n      timeout: 5s\n`;
  writeFileSync(configFile, `promxy:\n  server_groups:\n${group(short, 'short')}${group(long, 'long')}`);
  const profileFlags = (name) => (OPTS.profile ? ['--cpu-prof', `--cpu-prof-dir=${join(dir, `profile-${name}`)}`] : []);
  const nodeFlags = profileFlags('proxy');
  const proxyLog = join(dir, 'proxy.log');
  const proxy = await startServer(
    'query proxy',
    [
      process.execPath,
      ...nodeFlags,
      join(ROOT, 'bin', 'query-proxy'),
      `--bind-addr=127.0.0.1:${proxyPort}`,
      `--config=${configFile}`,
    ],
    proxyLog,
    async () => (await fetch(`http://127.0.0.1:${proxyPort}/-/ready`)).status === 200,
  );
  log(
    `query proxy pid ${proxy.pid} on 127.0.0.1:${proxyPort}${OPTS.profile ? ' (under --cpu-prof: its figures are not comparable with a run without)' : ''}`,
  );

  let baseline;
  let baselinePort;
  if (BASELINE) {
    baselinePort = await freePort();
    baseline = await startServer(
      'query proxy (baseline)',
      [
        process.execPath,
        ...profileFlags('baseline'),
        join(BASELINE.dir, 'bin', 'query-proxy'),
        `--bind-addr=127.0.0.1:${baselinePort}`,
        `--config=${configFile}`,
      ],
      join(dir, 'baseline.log'),
      async () => (await fetch(`http://127.0.0.1:${baselinePort}/-/ready`)).status === 200,
    );
    log(`baseline query proxy (${BASELINE.commit}, ${BASELINE.dir}) pid ${baseline.pid} on 127.0.0.1:${baselinePort}`);
  }

  let floor;
  let floorPort;
  if (OPTS.floor) {
    const floorLog = join(dir, 'floor.log');
    const fd = openSync(floorLog, 'a');
    const [cmd, cmdArgs] = onCore0([
      process.execPath,
      ...profileFlags('floor'),
      join(HERE, 'floor.mjs'),
      `127.0.0.1:${short.port}`,
      'nocache=1',
      ...(OPTS.floorPiped ? ['--pipe'] : []),
    ]);
    floor = track(spawn(cmd, cmdArgs, { stdio: ['ignore', 'pipe', fd] }), 'floor');
    closeSync(fd);
    floorPort = await new Promise((resolve, reject) => {
      let text = '';
      floor.child.stdout.on('data', (chunk) => {
        text += chunk;
        if (text.includes('\n')) resolve(Number(text.trim()));
      });
      floor.exited.then(() => reject(new Error(`the floor exited before listening:\n${tail(floorLog)}`)));
    });
    log(`floor pid ${floor.pid} on 127.0.0.1:${floorPort}`);
  }

  const target = (name, port, search, sockets, proxied = false) => ({
    name,
    port,
    search,
    proxy: proxied,
    agent: new Agent({ keepAlive: true, maxSockets: sockets }),
  });
  const targetsFor = (sockets) => [
    target('direct', short.port, '?nocache=1', sockets),
    target('proxy', proxyPort, '', sockets, true),
    ...(baseline ? [target('baseline', baselinePort, '', sockets, true)] : []),
    ...(OPTS.floor ? [target('floor', floorPort, '', sockets)] : []),
  ];
  const pids = {
    store: short.pid,
    proxy: proxy.pid,
    ...(baseline ? { baseline: baseline.pid } : {}),
    ...(floor ? { floor: floor.pid } : {}),
  };

  const { sizes, unstable } = await checkAnswers(targetsFor(1));
  log(
    `answers checked: every proxied answer (${baseline ? 'both proxies' : 'the proxy'}) routed single and byte-equal (after gunzip) to the store's, ${QUERIES.length} queries` +
      (unstable.length
        ? `; the store's own answers to ${unstable.length} (${unstable.join(', ')}) differ in the last float digits from call to call, compared as JSON with values to 1e-9`
        : ''),
  );

  // --- c=1
  const seq = targetsFor(1);
  log(`c=1: warm-up ${OPTS.warmup} requests per path`);
  for (const t of seq) await sequential(t, OPTS.warmup, 0, undefined, pids);
  const c1 = Object.fromEntries(seq.map((t) => [t.name, newStats()]));
  const rounds = Math.ceil(OPTS.requests / OPTS.round);
  log(`c=1: ${rounds} rounds of ${OPTS.round} requests per path, paths alternating`);
  for (let r = 0; r < rounds; r++) {
    const count = Math.min(OPTS.round, OPTS.requests - r * OPTS.round);
    for (const t of rotate(seq, r)) await sequential(t, count, r * OPTS.round, c1[t.name], pids);
  }
  for (const t of seq) t.agent.destroy();

  // --- c=N
  const par = targetsFor(OPTS.concurrency);
  log(`c=${OPTS.concurrency}: warm-up window of ${Math.min(2, OPTS.window)} s per path`);
  for (const t of par) await windowed(t, OPTS.concurrency, Math.min(2, OPTS.window), undefined, pids);
  const cN = Object.fromEntries(par.map((t) => [t.name, newStats()]));
  log(`c=${OPTS.concurrency}: ${OPTS.windows} windows of ${OPTS.window} s per path, paths alternating`);
  for (let r = 0; r < OPTS.windows; r++) {
    for (const t of rotate(par, r)) await windowed(t, OPTS.concurrency, OPTS.window, cN[t.name], pids);
    log(
      `  window set ${r + 1}: ${par.map((t) => `${t.name} ${cN[t.name].windows.at(-1).toFixed(0)} req/s`).join(', ')}`,
    );
  }
  for (const t of par) t.agent.destroy();

  const hostile = OPTS.hostile ? await hostileRow(proxy, proxyPort, baseline, baselinePort) : undefined;

  // Each proxy's own count: every API request it served was routed single, but the hostile ones,
  // every one refused as invalid.
  for (const [name, port] of [['proxy', proxyPort], ...(baseline ? [['baseline', baselinePort]] : [])]) {
    const routed = await routedBy(port);
    const refused = hostile?.answered[name].sent ?? 0;
    const other = Object.entries(routed).filter(([d, n]) => d !== 'single' && d !== 'invalid' && n > 0);
    if (other.length > 0 || routed.single !== sentTo[name] || (routed.invalid ?? 0) !== refused) {
      throw new Error(
        `${label(name)} counted ${JSON.stringify(routed)} requests by route decision; the bench sent ${sentTo[name]}, all meant to route single, and ${refused} hostile ones, meant to be invalid`,
      );
    }
    log(
      `${label(name)}: cachemon_query_proxy_requests_total ${routed.single} single, as many as sent${hostile ? `, and ${refused} invalid, as many as the hostile ones` : ''}; no other decision`,
    );
  }

  const memory = { proxyHwmMb: statusKb(proxy.pid, 'VmHWM') / 1024, proxyRssMb: statusKb(proxy.pid, 'VmRSS') / 1024 };
  if (baseline) memory.baselineHwmMb = statusKb(baseline.pid, 'VmHWM') / 1024;
  if (floor) memory.floorHwmMb = statusKb(floor.pid, 'VmHWM') / 1024;
  memory.storeHwmMb = statusKb(short.pid, 'VmHWM') / 1024;

  let profile;
  if (OPTS.profile) {
    profile = [];
    for (const [name, p] of [
      ['proxy', proxy],
      ['baseline', baseline],
      ['floor', floor],
    ]) {
      if (!p) continue;
      await stopChild(p, 10_000);
      const from = join(dir, `profile-${name}`);
      const file = readdirSync(from).find((f) => f.endsWith('.cpuprofile'));
      if (!file) {
        profile.push(`(the ${name} wrote no profile)`);
        continue;
      }
      const keep = join(HERE, 'results', `${name}.cpuprofile`);
      mkdirSync(dirname(keep), { recursive: true });
      writeFileSync(keep, readFileSync(join(from, file)));
      profile.push(
        `${name}: self time by package (startup included)\n${profileByPackage(keep)}\n\n${name}: top functions\n${summarizeProfile(keep, 15)}`,
      );
    }
    profile = profile.join('\n\n');
  }

  result = { data, loadS, settleS, sizes, unstable, c1, cN, memory, profile, hostile, routedSingle: sentTo.proxy };
} catch (err) {
  // Interrupted: the requests in flight fail as the processes stop; that is no failure to report.
  if (interrupted) await cleanUp().finally(() => process.exit(130));
  log(`failed: ${err?.stack ?? err}`);
  const proxyTail = tail(join(dir, 'proxy.log'), 10);
  if (proxyTail !== '(no log)' && proxyTail !== '') log(`last lines of the proxy's log:\n${proxyTail}`);
  process.exitCode = 1;
} finally {
  log('stopping the proxies, the floor and the stores');
  await cleanUp();
}
if (result === undefined) process.exit(process.exitCode ?? 1);

// ---------------------------------------------------------------------------------------------
// Report

const { data, c1, cN, memory, sizes } = result;
const paths = Object.keys(c1);
/** The paths measured against direct: the proxy, the baseline's proxy, the floor. */
const others = paths.filter((p) => p !== 'direct');
const f = (v, d = 2) => (Number.isFinite(v) ? v.toFixed(d) : '-');
const mean = (a) => a.reduce((s, v) => s + v, 0) / a.length;
const ratio = (a, b) => a / b;
const x = (v, d = 2) => `${f(v, d)}x`;
const lines = [];
const out = (s = '') => lines.push(s);
const table = (header, rows, align) => {
  const all = [header, ...rows].map((r) => r.map(String));
  const widths = header.map((_, i) => Math.max(3, ...all.map((r) => r[i].length)));
  const line = (r) =>
    `| ${r.map((c, i) => (align[i] === 'l' ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  out(line(all[0]));
  out(`|${widths.map((w, i) => (align[i] === 'l' ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`);
  for (const r of all.slice(1)) out(line(r));
};

const c1s = Object.fromEntries(
  paths.map((p) => [p, { p50: pct(c1[p].ms, 50), p99: pct(c1[p].ms, 99), mean: mean(c1[p].ms) }]),
);
const cNs = Object.fromEntries(
  paths.map((p) => [
    p,
    { rps: cN[p].inWindow / (cN[p].windowMs / 1000), p50: pct(cN[p].ms, 50), p99: pct(cN[p].ms, 99) },
  ]),
);
/** Throughput ratios of the windows of one round (each path once, back to back): median, lowest, highest. */
const paired = (p) => {
  const r = cN[p].windows.map((w, i) => w / cN.direct.windows[i]);
  return { median: pct(r, 50), min: Math.min(...r), max: Math.max(...r) };
};
const perReq = (stats, key) => (stats.cpu[key] ?? NaN) / stats.requests;
const selfPct = (stats) => (stats.cpu.self / stats.wallMs) * 100;
const hwm = {
  direct: memory.storeHwmMb,
  proxy: memory.proxyHwmMb,
  baseline: memory.baselineHwmMb,
  floor: memory.floorHwmMb,
};
const blank = others.map(() => '');

out(`## query proxy benchmark, single-group path`);
out();
out(
  `${cpus().length} cores, node ${process.version}; short store: ${data.series} series (${data.nodes} nodes x ${data.series / data.nodes}), ` +
    `${(data.samples / 1e6).toFixed(2)} M samples every 5 s over 1 h, loaded in ${result.loadS.toFixed(1)} s (+${result.settleS.toFixed(0)} s until it idled); ${QUERIES.length} dashboard queries ` +
    `(${QUERIES.filter((q) => q.endpoint === 'query').length} instant, ${QUERIES.filter((q) => q.endpoint === 'query_range').length} range 1 h step ${RANGE_STEP_S} s), POST, gzip.`,
);
out(`Layout: ${layoutNote}.`);
out(
  `Paths: direct = POST /api/v1/<endpoint>?nocache=1 to the store; proxy = bin/query-proxy of this checkout (${COMMIT})` +
    `${BASELINE ? `; proxy (baseline) = bin/query-proxy of ${BASELINE.commit} (${BASELINE.dir}), same config and stores` : ''}` +
    ` (answers checked once: X-Cachemon-Route single, body byte-equal to the store's${result.unstable.length ? `, except for ${result.unstable.length} aggregations whose last float digits the store itself changes from call to call (sample values compared to 1e-9)` : ''}; each proxy's own counter: as many requests as sent, all single${result.hostile ? ', but the hostile ones, all invalid' : ''})` +
    `${paths.includes('floor') ? `; floor = bare node:http pass-through (floor.mjs${OPTS.floorPiped ? ' --pipe: answers piped chunk by chunk' : ', answers relayed as the proxy does: held up to 64 KB, written once'}), placed like the proxy` : ''}.`,
);
out(
  `c=1: ${OPTS.requests} requests per path in rounds of ${OPTS.round} after ${OPTS.warmup} warm-up; c=${OPTS.concurrency}: ${OPTS.windows} windows of ${OPTS.window} s per path; paths alternating, order rotated every round.`,
);
out();
out('### c=1, per query (p50 ms)');
out();
table(
  [
    'query',
    'kind',
    'series',
    'wire KB',
    ...paths.map((p) => `${label(p)} p50`),
    ...others.map((p) => `${label(p)}/direct`),
  ],
  QUERIES.map((q, k) => {
    const p50 = Object.fromEntries(paths.map((p) => [p, pct(c1[p].perQuery[k], 50)]));
    return [
      q.name,
      q.endpoint === 'query' ? 'instant' : 'range',
      sizes[k].series,
      f(sizes[k].wire / 1024, 1),
      ...paths.map((p) => f(p50[p], 3)),
      ...others.map((p) => x(ratio(p50[p], p50.direct))),
    ];
  }),
  ['l', 'l', 'r', 'r', ...paths.map(() => 'r'), ...others.map(() => 'r')],
);
out();
out('### summary');
out();
table(
  ['', ...paths.map(label), ...others.map((p) => `${label(p)}/direct`)],
  [
    ...['p50', 'p99', 'mean'].map((s) => [
      `c=1 ${s} ms`,
      ...paths.map((p) => f(c1s[p][s], 3)),
      ...others.map((p) => x(ratio(c1s[p][s], c1s.direct[s]))),
    ]),
    [
      `c=${OPTS.concurrency} req/s`,
      ...paths.map((p) => f(cNs[p].rps, 0)),
      ...others.map((p) => x(ratio(cNs[p].rps, cNs.direct.rps))),
    ],
    [
      `c=${OPTS.concurrency} req/s, windows lowest-highest; ratio per round: median (lowest-highest)`,
      ...paths.map((p) => `${f(Math.min(...cN[p].windows), 0)}-${f(Math.max(...cN[p].windows), 0)}`),
      ...others.map((p) => `${x(paired(p).median)} (${f(paired(p).min)}-${f(paired(p).max)})`),
    ],
    ...['p50', 'p99'].map((s) => [
      `c=${OPTS.concurrency} ${s} ms`,
      ...paths.map((p) => f(cNs[p][s], 1)),
      ...others.map((p) => x(ratio(cNs[p][s], cNs.direct[s]))),
    ]),
    ['c=1 hop CPU ms/req', ...paths.map((p) => (p === 'direct' ? '-' : f(perReq(c1[p], p), 3))), ...blank],
    [
      `c=${OPTS.concurrency} hop CPU ms/req`,
      ...paths.map((p) => (p === 'direct' ? '-' : f(perReq(cN[p], p), 3))),
      ...blank,
    ],
    ['c=1 store CPU ms/req', ...paths.map((p) => f(perReq(c1[p], 'store'), 3)), ...blank],
    [`c=${OPTS.concurrency} store CPU ms/req`, ...paths.map((p) => f(perReq(cN[p], 'store'), 3)), ...blank],
    [
      `load generator CPU, % of a core (c=1 / c=${OPTS.concurrency})`,
      ...paths.map((p) => `${f(selfPct(c1[p]), 0)} / ${f(selfPct(cN[p]), 0)}`),
      ...blank,
    ],
    ['peak RSS (VmHWM) MB', ...paths.map((p) => `${f(hwm[p], 0)}${p === 'direct' ? ' (store)' : ''}`), ...blank],
  ],
  ['l', ...paths.map(() => 'r'), ...others.map(() => 'r')],
);
out();
out(
  'hop CPU: user+system CPU of the proxy (or floor) process over its own rounds/windows, per request; store CPU: the short store over the same time.',
);
out();
const latOk = c1s.proxy.p50 <= LATENCY_GOAL * c1s.direct.p50 && c1s.proxy.p99 <= LATENCY_GOAL * c1s.direct.p99;
const tputOk = cNs.proxy.rps >= THROUGHPUT_GOAL * cNs.direct.rps;
out('### goals');
out();
out(
  `- latency at c=1 (proxy <= ${LATENCY_GOAL}x direct, p50 and p99): **${latOk ? 'met' : 'NOT met'}**: p50 ${f(c1s.proxy.p50, 3)} vs ${f(c1s.direct.p50, 3)} ms = ${x(ratio(c1s.proxy.p50, c1s.direct.p50), 3)}, ` +
    `p99 ${f(c1s.proxy.p99, 3)} vs ${f(c1s.direct.p99, 3)} ms = ${x(ratio(c1s.proxy.p99, c1s.direct.p99), 3)} (mean ${x(ratio(c1s.proxy.mean, c1s.direct.mean), 3)})`,
);
out(
  `- throughput at c=${OPTS.concurrency} (proxy >= ${THROUGHPUT_GOAL}x direct): **${tputOk ? 'met' : 'NOT met'}**: ${f(cNs.proxy.rps, 0)} vs ${f(cNs.direct.rps, 0)} req/s = ${x(ratio(cNs.proxy.rps, cNs.direct.rps), 3)} (per round: median ${x(paired('proxy').median, 3)})`,
);
let versus;
if (paths.includes('baseline')) {
  // Each proxy against the direct store measured in the same rounds, then the two against each other.
  const row = (name, of) => [name, x(of('baseline'), 3), x(of('proxy'), 3), x(of('proxy') / of('baseline'), 3)];
  versus = {
    c1p50: [ratio(c1s.baseline.p50, c1s.direct.p50), ratio(c1s.proxy.p50, c1s.direct.p50)],
    c1p99: [ratio(c1s.baseline.p99, c1s.direct.p99), ratio(c1s.proxy.p99, c1s.direct.p99)],
    cNrps: [ratio(cNs.baseline.rps, cNs.direct.rps), ratio(cNs.proxy.rps, cNs.direct.rps)],
  };
  out();
  out(`### this checkout (${COMMIT}) against the baseline (${BASELINE.commit})`);
  out();
  table(
    ['', 'proxy (baseline)', 'proxy', 'proxy / baseline'],
    [
      row('c=1 p50 / direct', (p) => ratio(c1s[p].p50, c1s.direct.p50)),
      row('c=1 p99 / direct', (p) => ratio(c1s[p].p99, c1s.direct.p99)),
      row(`c=${OPTS.concurrency} req/s / direct`, (p) => ratio(cNs[p].rps, cNs.direct.rps)),
      row(`c=${OPTS.concurrency} req/s / direct, per-round median`, (p) => paired(p).median),
      [
        `c=1 / c=${OPTS.concurrency} hop CPU ms/req`,
        ...['baseline', 'proxy'].map((p) => `${f(perReq(c1[p], p), 3)} / ${f(perReq(cN[p], p), 3)}`),
        `${x(perReq(c1.proxy, 'proxy') / perReq(c1.baseline, 'baseline'))} / ${x(perReq(cN.proxy, 'proxy') / perReq(cN.baseline, 'baseline'))}`,
      ],
      ['peak RSS (VmHWM) MB', f(hwm.baseline, 0), f(hwm.proxy, 0), x(hwm.proxy / hwm.baseline)],
    ],
    ['l', 'r', 'r', 'r'],
  );
}
let hostileFigures;
/** The proxies some of whose hostile connections ended before their 400 was read: [[name, answered]]. */
let hostileLost = [];
if (result.hostile) {
  const h = result.hostile;
  hostileFigures = Object.fromEntries(Object.entries(h.stats).map(([name, s]) => [name, summarizeHostile(s, pct)]));
  const lat = (v) => `${f(v.p50, 2)} / ${f(v.p99, 2)} (${v.n})`;
  const both = (r) => `${x(r.p50)} / ${x(r.p99)}`;
  out();
  out(
    `### hostile neighbour: "${HOSTILE_PLAIN.name}" at c=1 beside bursts of ${OPTS.hostileConnections} nested ${f(OPTS.hostileLength / 1000, 0)} K character queries`,
  );
  out();
  table(
    [
      '',
      '(a) idle p50 / p99 ms (n)',
      '(b) bursts to the refuser',
      '(c) bursts to the proxy',
      '(c)/(a) p50 / p99',
      '(c)/(b) p50 / p99',
    ],
    Object.entries(hostileFigures).map(([name, v]) => [
      label(name),
      lat(v.idle),
      lat(v.refuser),
      lat(v.hostile),
      both(v.ratios.c_a),
      both(v.ratios.c_b),
    ]),
    ['l', 'r', 'r', 'r', 'r', 'r'],
  );
  out();
  table(
    [
      'per burst (mean)',
      'bursts',
      'ms to the last answer, (b) / (c)',
      'proxy CPU ms, (b) / (c)',
      'proxy CPU ms refusing',
      'refuser CPU ms',
      'neighbour CPU ms',
    ],
    Object.entries(hostileFigures).map(([name, v]) => [
      label(name),
      v.perBurst.bursts,
      `${f(v.perBurst.refuserBurstMs, 0)} / ${f(v.perBurst.proxyBurstMs, 0)}`,
      `${f(v.perBurst.proxyCpuAtRefuserMs, 0)} / ${f(v.perBurst.proxyCpuMs, 0)}`,
      f(v.perBurst.proxyRefusingCpuMs, 0),
      f(v.perBurst.refuserCpuMs, 0),
      f(v.perBurst.neighbourCpuMs, 0),
    ]),
    ['l', 'r', 'r', 'r', 'r', 'r', 'r'],
  );
  out();
  out(
    `Each round: (a) the plain query alone for as long as a burst takes, (b) during a burst to a bare node:http server that refuses every request with a 400 and closes, ` +
      `(c) during a burst to the proxy; order rotated every round, one round before unrecorded (counted below). ` +
      `Proxy CPU refusing: its CPU during (c) less its plain queries at what each cost it during (b). The neighbour runs at nice 19.`,
  );
  out();
  out(
    `Answers (every one read must be a 400 {"status":"error","errorType":"bad_data","error":...}): ${answersSaid(h.answered)}.`,
  );
  hostileLost = Object.entries(h.answered).filter(([who, a]) => who !== 'refuser' && a.lost.length > 0);
  out();
  out(
    `- every hostile query to ${Object.keys(h.stats)
      .map((p) => `the ${label(p)}`)
      .join(' and ')} answered with its 400: ` +
      (hostileLost.length === 0
        ? '**yes**'
        : `**NO**: ${hostileLost.map(([who, a]) => `${label(who)} ${a.lost.length} of ${a.sent}`).join(', ')} connections reset before the 400 was read`),
  );
}
const report = lines.join('\n');
const totalS = (performance.now() - started) / 1000;
process.stdout.write(`\n${report}\n\n(run took ${totalS.toFixed(0)} s)\n`);
if (result.profile)
  process.stderr.write(
    `\nCPU profiles (results/*.cpuprofile; the processes ran under --cpu-prof, so the figures above are inflated):\n${result.profile}\n`,
  );
if (OPTS.out) {
  mkdirSync(dirname(OPTS.out), { recursive: true });
  if (OPTS.out.endsWith('.json')) {
    const strip = (s) =>
      Object.fromEntries(
        Object.entries(s).map(([p, v]) => [
          p,
          { requests: v.requests, wallMs: v.wallMs, bytes: v.bytes, cpu: v.cpu, windows: v.windows },
        ]),
      );
    const json = {
      at: new Date().toISOString(),
      commit: COMMIT,
      baseline: BASELINE,
      options: OPTS,
      layout: layoutNote,
      data,
      sizes,
      c1: c1s,
      cN: cNs,
      c1raw: strip(c1),
      cNraw: strip(cN),
      memory,
      goals: { latency: latOk, throughput: tputOk },
      versus,
      hostile: hostileFigures && {
        plainQuery: HOSTILE_PLAIN.name,
        seconds: result.hostile.seconds,
        answered: result.hostile.answered,
        every400: hostileLost.length === 0,
        ...hostileFigures,
      },
      totalS,
    };
    writeFileSync(OPTS.out, `${JSON.stringify(json, null, 2)}\n`);
  } else writeFileSync(OPTS.out, `${report}\n`);
  log(`report written to ${OPTS.out}`);
}
if (hostileLost.length > 0) {
  // The figures stand, but a client of the proxy lost its answer: that is a failure of the run.
  log(
    `FAILED: not every hostile query got its 400: ${hostileLost.map(([who, a]) => `${label(who)} ${a.lost.length} of ${a.sent} reset before the answer was read`).join(', ')}`,
  );
  process.exit(1);
}
process.exit(0);
