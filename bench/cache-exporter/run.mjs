#!/usr/bin/env node
// Cache exporter benchmark: the real exporter process (bin/cache-exporter) against N ARCUS test
// doubles registered in a real ZooKeeper, compared with the floor (a bare socket client reading
// the same replies from the same servers). See README.md beside this file.
//
//   node bench/cache-exporter/run.mjs [--nodes=10,100,500] [--prefixes=0,50,500] [--scrapes=50]
//        [--prefix-scrapes=20] [--quick] [--no-gzip] [--traffic] [--profile] [--per-code=100]
//        [--endpoints=metrics,prefixes] [--exporter-flags="-qos-interval=5s ..."]
//        [--exporter-node-flags="--max-semi-space-size=8 ..."] [--keep-logs]
//        [--client=bare|node] [--warmup=1000] [--warmup-s=20] [--pin] [--out=bench/cache-exporter/results/latest.json]
//        [--exporter-tree=DIR]   (the built checkout whose bin/cache-exporter is measured; alternate.mjs)
import { spawn, spawnSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { Agent, request } from 'node:http';
import { dirname, join, relative, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { gunzipSync } from 'node:zlib';
import { freePort, tempDir } from '../../packages/testkit/dist/src/index.js';
import { parseArgs } from '../lib/args.mjs';
import { BareHttpClient, NodeHttpClient } from '../lib/bare-http.mjs';
import {
  allowedCpus,
  cpuCensus,
  cpuMs,
  percentile,
  pinProcess,
  ratioInterval,
  runQueueWait,
  shebangNodeFlags,
  splitCpus,
  statusKb,
  waitSummary,
} from '../lib/process.mjs';
import { fmt, formatTable } from '../lib/table.mjs';
import { summarizeProfile } from './profile-summary.mjs';
import { doublesCommand, startBenchZooKeeper } from './servers.mjs';

const HERE = dirname(new URL(import.meta.url).pathname);
const ROOT = join(HERE, '..', '..');

// ---------------------------------------------------------------------------------------------
// Options

const args = parseArgs(process.argv.slice(2), import.meta.url);
/**
 * The checkout whose exporter is measured: this one, or another built one (a baseline, see
 * alternate.mjs). Everything else (this driver, the doubles, the floor) is this checkout's.
 */
const EXPORTER_TREE = args['exporter-tree'] ? resolve(String(args['exporter-tree'])) : ROOT;
const EXPORTER_BIN = join(EXPORTER_TREE, 'bin', 'cache-exporter');
if (!existsSync(EXPORTER_BIN)) throw new Error(`--exporter-tree=${EXPORTER_TREE}: no bin/cache-exporter there`);
/** The node flags bin/cache-exporter runs with (its first line): the exporter is measured as shipped. */
const EXPORTER_BIN_NODE_FLAGS = shebangNodeFlags(EXPORTER_BIN);
const quick = args.quick === 'true';
if (args.client !== undefined && args.client !== 'bare' && args.client !== 'node')
  throw new Error(`--client=${args.client}: bare or node`);
const list = (value, fallback) =>
  value === undefined ? fallback : String(value).split(',').filter(Boolean).map(Number);
const OPTS = {
  nodes: list(args.nodes, quick ? [10, 100] : [10, 100, 500]),
  prefixes: list(args.prefixes, quick ? [0, 50] : [0, 50, 500]),
  scrapes: Number(args.scrapes ?? (quick ? 20 : 50)),
  prefixScrapes: Number(args['prefix-scrapes'] ?? (quick ? 8 : 20)),
  /** Wall-time budget for the prefix scrapes (and as much floor) of one configuration. */
  prefixBudgetMs: Number(args['prefix-budget-ms'] ?? (quick ? 15_000 : 30_000)),
  gzip: args['no-gzip'] !== 'true',
  /** What times the scrapes: `bare` (bench/lib/bare-http.mjs) or `node` (node:http's client). */
  client: String(args.client ?? 'bare'),
  /** The doubles' counters move all the time, as if they served requests (every node's change between two scrapes). */
  traffic: args.traffic === 'true',
  profile: args.profile === 'true',
  /** Write a V8 heap snapshot of the exporter at the end of each configuration (results/heap/). */
  heapSnapshot: args['heap-snapshot'] === 'true',
  perCode: Number(args['per-code'] ?? 100),
  exporterFlags: args['exporter-flags'] ? String(args['exporter-flags']).split(/\s+/).filter(Boolean) : [],
  /** Keep the exporter's config and log under results/logs/N<n>-P<p>/ (with --trace-gc, say). */
  keepLogs: args['keep-logs'] === 'true',
  /** The exporter's log level (debug logs each scrape's collect and render times). */
  exporterLogLevel: args['exporter-log-level'] ? String(args['exporter-log-level']) : undefined,
  /** Extra node flags for the exporter process (e.g. --max-semi-space-size=8, --trace-gc). */
  exporterNodeFlags: args['exporter-node-flags']
    ? String(args['exporter-node-flags']).split(/\s+/).filter(Boolean)
    : [],
  out: args.out ?? join(HERE, 'results', 'latest.json'),
  /** Which endpoints to measure (both by default); one alone makes a --profile about that one. */
  endpoints: String(args.endpoints ?? 'metrics,prefixes').split(','),
  /** Scrapes per block: blocks of exporter, floor and idle time alternate inside each round. */
  block: Number(args.block ?? 5),
  /** Least time between two scrape starts (a store scrapes sequentially; ~10/s at most here). */
  paceMs: Number(args['pace-ms'] ?? 100),
  /**
   * `/metrics` scrapes (and as many floor rounds) before measuring, back to back, for at most
   * warmupS seconds. V8 runs a function in its baseline tier until it has run enough bytecode:
   * the code that runs once a scrape (the HTTP exchange, the scrape's set-up, the body's end)
   * needs ~1,000 scrapes for that, which an exporter scraped every 5 s has after ~1.5 hours.
   */
  warmup: Number(args.warmup ?? (quick ? 200 : 1000)),
  warmupS: Number(args['warmup-s'] ?? 20),
  /**
   * The servers on CPUs of their own: the doubles on the upper half of the CPUs this process may
   * use, everything else (this driver, ZooKeeper, the exporter, the floor) on the lower half.
   */
  pin: args.pin === 'true',
};
for (const n of [...OPTS.nodes, ...OPTS.prefixes, OPTS.scrapes, OPTS.prefixScrapes, OPTS.warmup, OPTS.warmupS]) {
  if (!Number.isInteger(n) || n < 0) throw new Error(`bad number in the arguments: ${n}`);
}
const PINNING = OPTS.pin ? splitCpus(allowedCpus(process.pid)) : undefined;
const METRICS_TIMEOUT_S = 5; // the cache job scrapes every 5 s
const PREFIXES_TIMEOUT_S = 10; // the arcus_prefixes job scrapes every 1 m; the store's default timeout

// ---------------------------------------------------------------------------------------------
// Child processes: tracked, and killed by PID whatever way this process ends.

const children = new Set();
let zk;
let cleaning;

function track(child, name) {
  child.benchName = name;
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

function killAll(signal) {
  for (const child of children) {
    try {
      if (child.exitCode === null && child.signalCode === null) process.kill(child.pid, signal);
    } catch {
      // gone already
    }
  }
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

async function cleanup() {
  cleaning ??= (async () => {
    await Promise.allSettled([...children].map((c) => stopChild(c, { graceMs: 5000 })));
    if (zk) await zk.stop().catch(() => undefined);
  })();
  return cleaning;
}

// Last resort (exit without cleanup): SIGKILL what is left. ZooKeeper is killed by the testkit's own hook.
process.on('exit', () => killAll('SIGKILL'));
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    log(`${signal}: stopping every child process`);
    void cleanup().finally(() => process.exit(130));
  });
}

const log = (msg) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** Reads JSON lines from a child's stdout; next() resolves with the next one. */
function jsonLines(child, name) {
  const queue = [];
  const waiters = [];
  let ended = false;
  const rl = createInterface({ input: child.stdout });
  rl.on('line', (line) => {
    let value;
    try {
      value = JSON.parse(line);
    } catch {
      log(`${name}: ${line}`);
      return;
    }
    const waiter = waiters.shift();
    if (waiter) waiter.resolve(value);
    else queue.push(value);
  });
  child.once('exit', (code, signal) => {
    ended = true;
    for (const w of waiters.splice(0)) w.reject(new Error(`${name} exited (code ${code}, signal ${signal})`));
  });
  return {
    next(timeoutMs = 60_000) {
      if (queue.length > 0) return Promise.resolve(queue.shift());
      if (ended) return Promise.reject(new Error(`${name} has exited`));
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${name}: no answer within ${timeoutMs} ms`)), timeoutMs);
        waiters.push({
          resolve: (v) => (clearTimeout(timer), resolve(v)),
          reject: (e) => (clearTimeout(timer), reject(e)),
        });
      });
    },
  };
}

// ---------------------------------------------------------------------------------------------
// ZooKeeper, doubles, floor, exporter

async function startDoubles(n, p) {
  const { command, args } = doublesCommand({
    zk: zk.address,
    nodes: n,
    prefixes: p,
    perCode: OPTS.perCode,
    traffic: OPTS.traffic,
    cpus: PINNING?.servers,
  });
  const child = track(spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] }), 'doubles');
  const lines = jsonLines(child, 'doubles');
  const ready = await lines.next(300_000);
  if (!ready.ready) throw new Error(`doubles: unexpected first line ${JSON.stringify(ready)}`);
  return {
    child,
    ...ready,
    stop: () => stopChild(child, { gentle: () => child.stdin.end('stop\n'), graceMs: 20_000 }),
  };
}

async function startFloor(addresses) {
  const child = track(
    spawn(process.execPath, [join(HERE, 'floor.mjs')], { stdio: ['pipe', 'pipe', 'inherit'] }),
    'floor',
  );
  const lines = jsonLines(child, 'floor');
  const call = async (message, timeoutMs = 120_000) => {
    child.stdin.write(`${JSON.stringify(message)}\n`);
    const answer = await lines.next(timeoutMs);
    if (answer.op === 'error') throw new Error(`floor: ${answer.error}`);
    return answer;
  };
  await call({ op: 'connect', nodes: addresses });
  return {
    child,
    pid: child.pid,
    round: (kind) => call({ op: 'round', kind }),
    /** The body the `compressed` rounds compress (see floor.mjs). */
    body: (path) => call({ op: 'body', path }),
    stop: () =>
      stopChild(child, { gentle: () => child.stdin.end(`${JSON.stringify({ op: 'close' })}\n`), graceMs: 5000 }),
  };
}

async function startExporter(label) {
  const dir = OPTS.keepLogs ? join(HERE, 'results', 'logs', label) : await tempDir('bench-cache-exporter-');
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const configFile = join(dir, 'exporter.json');
  writeFileSync(
    configFile,
    JSON.stringify(
      {
        listen: `127.0.0.1:${port}`,
        ensembleByName: { bench: [zk.address] },
        ...(OPTS.exporterLogLevel ? { log: { level: OPTS.exporterLogLevel } } : {}),
      },
      null,
      2,
    ),
  );
  const logFile = join(dir, 'exporter.log');
  const fd = openSync(logFile, 'a');
  // --exporter-node-flags come after the shipped ones: for a V8 flag given twice, the last counts.
  const nodeFlags = [...EXPORTER_BIN_NODE_FLAGS, ...OPTS.exporterNodeFlags];
  let profileDir;
  if (OPTS.profile) {
    profileDir = join(HERE, 'results', 'profiles', label);
    mkdirSync(profileDir, { recursive: true });
    nodeFlags.push('--cpu-prof', `--cpu-prof-dir=${profileDir}`);
  }
  let heapDir;
  if (OPTS.heapSnapshot) {
    heapDir = join(HERE, 'results', 'heap', label);
    mkdirSync(heapDir, { recursive: true });
    nodeFlags.push('--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${heapDir}`);
  }
  const child = track(
    spawn(process.execPath, [...nodeFlags, EXPORTER_BIN, `-config-file=${configFile}`, ...OPTS.exporterFlags], {
      stdio: ['ignore', fd, fd],
      cwd: dir,
    }),
    'exporter',
  );
  closeSync(fd);
  const url = `http://127.0.0.1:${port}`;
  const startedAt = Date.now();
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`exporter exited ${child.exitCode}:\n${readFileSync(logFile, 'utf8').slice(-3000)}`);
    if ((await statusOf(url, '/-/ready', 2000)) === 200) break;
    if (Date.now() - startedAt > 30_000)
      throw new Error(`exporter not ready within 30 s:\n${readFileSync(logFile, 'utf8').slice(-3000)}`);
    await sleep(100);
  }
  // The timed scrapes go through this client; readiness above through node:http, untimed.
  const client = OPTS.client === 'node' ? new NodeHttpClient('127.0.0.1', port) : new BareHttpClient('127.0.0.1', port);
  return {
    child,
    pid: child.pid,
    url,
    client,
    logFile,
    profileDir,
    heapDir,
    startedAt,
    stop: () => {
      client.close();
      return stopChild(child, { graceMs: 10_000 });
    },
  };
}

// ---------------------------------------------------------------------------------------------
// HTTP. Scrapes go over one keep-alive connection per exporter, like a store's scraper, through
// exporter.client (bench/lib/bare-http.mjs); this is the untimed readiness check.

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

/** The status of GET `path`, or undefined when nothing answers within `timeoutMs`. */
function statusOf(base, path, timeoutMs) {
  return new Promise((resolve) => {
    const req = request(`${base}${path}`, { agent, timeout: timeoutMs }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
      res.on('error', () => resolve(undefined));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(undefined));
    req.end();
  });
}

/**
 * One scrape; `waitMs`: how long the exporter's main thread waited for a CPU while it ran (from the
 * request to the last byte; undefined without schedstat).
 */
async function scrape(exporter, path, timeoutSeconds) {
  const headers = { 'X-Prometheus-Scrape-Timeout-Seconds': String(timeoutSeconds) };
  if (OPTS.gzip) headers['Accept-Encoding'] = 'gzip';
  let res;
  try {
    const waited = runQueueWait(exporter.pid);
    const {
      status,
      headers: answerHeaders,
      body,
      ms,
    } = await exporter.client.get(path, headers, { timeoutMs: timeoutSeconds * 1000 + 30_000 });
    res = { status, ms, measured: waited(), raw: body, encoding: answerHeaders['content-encoding'] };
  } catch (err) {
    await sleep(200);
    const { exitCode, signalCode } = exporter.child;
    if (exitCode === null && signalCode === null) throw err;
    const tail = readFileSync(exporter.logFile, 'utf8').split('\n').slice(-15).join('\n');
    throw new Error(
      `GET ${path}: the exporter died (code ${exitCode}, signal ${signalCode}); end of its log:\n${tail}`,
    );
  }
  if (res.status !== 200) throw new Error(`GET ${path}: HTTP ${res.status}: ${res.raw.toString().slice(0, 300)}`);
  const { raw, encoding } = res;
  let text;
  return {
    ms: res.ms,
    waitMs: res.measured,
    wireBytes: raw.length,
    /** The body as text, decoded on first use (a measured block decodes its bodies after its last scrape). */
    get text() {
      text ??= (encoding === 'gzip' ? gunzipSync(raw) : raw).toString('utf8');
      return text;
    },
  };
}

/**
 * A full garbage collection of this process, between blocks (nothing timed runs). Checking a
 * 100-node body makes ~5 MB of garbage (the inflated body and its text); left to V8, this process
 * could collect it while later scrapes and floor rounds were timed: its helper threads take a core
 * from the exporter, the doubles or the floor, and a pause of its main thread when an answer's
 * last byte arrives would count in the exporter's latency (the floor times its rounds in a process
 * of its own). See README.md, "The driver's own garbage".
 */
const collectGarbage = (() => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc');
  setFlagsFromString('--no-expose-gc');
  return typeof gc === 'function' ? () => gc() : () => undefined;
})();

/** Samples (non-comment, non-empty lines) of an exposition text. */
function seriesCount(text) {
  let count = 0;
  let pos = 0;
  while (pos < text.length) {
    let nl = text.indexOf('\n', pos);
    if (nl === -1) nl = text.length;
    if (nl > pos && text.charCodeAt(pos) !== 0x23 /* # */) count++;
    pos = nl + 1;
  }
  return count;
}

const count = (text, re) => (text.match(re) ?? []).length;
const upCount = (text) => count(text, /^arcus_up\{[^}]*\} 1$/gm);
const prefixOkNodes = (text) => {
  let sum = 0;
  for (const m of text.matchAll(/^arcus_prefix_nodes\{state="ok",[^}]*\} (\d+)$/gm)) sum += Number(m[1]);
  return sum;
};

/** nodejs_heap_size_total/used, external memory and RSS as the exporter reports them, in MB. */
function selfMemory(text) {
  const value = (name) => {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
    return m ? Math.round((Number(m[1]) / 1048576) * 10) / 10 : null;
  };
  return {
    heapTotal: value('nodejs_heap_size_total_bytes'),
    heapUsed: value('nodejs_heap_size_used_bytes'),
    external: value('nodejs_external_memory_bytes'),
    resident: value('process_resident_memory_bytes'),
    spaces: Object.fromEntries(
      [...text.matchAll(/^nodejs_heap_space_size_total_bytes\{space="(\w+)"[^}]*\} (\S+)$/gm)].map((m) => [
        m[1],
        Math.round((Number(m[2]) / 1048576) * 10) / 10,
      ]),
    ),
  };
}

/**
 * Where the exporter's resident memory is, from /proc/<pid>/smaps, in MB: `[heap]` (malloc's
 * brk heap), anonymous mappings (V8's heap pages, buffers, malloc's mmap arenas), the node binary
 * and shared libraries, stacks.
 */
function residentByMapping(pid) {
  const out = { brkHeap: 0, anonymous: 0, nodeBinary: 0, libraries: 0, other: 0 };
  let kind = 'other';
  let text;
  try {
    text = readFileSync(`/proc/${pid}/smaps`, 'utf8');
  } catch {
    return undefined;
  }
  for (const line of text.split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      const path = head[1];
      kind =
        path === ''
          ? 'anonymous'
          : path === '[heap]'
            ? 'brkHeap'
            : path.startsWith('[')
              ? 'other'
              : /\.so(\.|$)/.test(path)
                ? 'libraries'
                : path === process.execPath || path.endsWith('/node')
                  ? 'nodeBinary'
                  : 'other';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) out[kind] += Number(rss[1]);
  }
  for (const k of Object.keys(out)) out[k] = Math.round((out[k] / 1024) * 10) / 10;
  return out;
}

// ---------------------------------------------------------------------------------------------
// /proc readings of the exporter process

// ---------------------------------------------------------------------------------------------
// Statistics

/**
 * How long the exporter's and the floor's main thread waited for a CPU during each scrape or round
 * (runnable, but the CPUs held by others: the doubles, ZooKeeper, the driver, V8's helper threads),
 * and the latency less that wait (waitSummary). The difference says how much of a p99 is the
 * machine's two cores being busy rather than work of the side measured.
 */
function runQueue(exp, floor) {
  const exporter = waitSummary(exp.ms, exp.wait);
  const floorSide = waitSummary(floor.ms, floor.wait);
  return exporter && floorSide ? { exporter, floor: floorSide } : undefined;
}

const summary = (values) => ({
  n: values.length,
  p50: percentile(values, 50),
  p99: percentile(values, 99),
  mean: values.length ? values.reduce((a, b) => a + b, 0) / values.length : NaN,
  max: values.length ? Math.max(...values) : NaN,
  /** Every sample, in the order taken (rounded to 0.01 ms). */
  samples: values.map((v) => Math.round(v * 100) / 100),
});
const round1 = (v) => (Number.isFinite(v) ? Math.round(v * 10) / 10 : null);

// ---------------------------------------------------------------------------------------------
// One configuration

/** Calls fn `times` times, starting calls at least paceMs apart. */
async function paced(times, fn) {
  let last = -Infinity;
  for (let i = 0; i < times; i++) {
    const wait = last + OPTS.paceMs - performance.now();
    if (wait > 0) await sleep(wait);
    last = performance.now();
    await fn(i);
  }
}

async function waitForNodes(exporter, n) {
  const deadline = Date.now() + 120_000;
  let up = 0;
  for (;;) {
    const { text } = await scrape(exporter, '/metrics', METRICS_TIMEOUT_S);
    up = upCount(text);
    if (up === n) return;
    if (Date.now() > deadline)
      throw new Error(`only ${up} of ${n} nodes show arcus_up 1 after 120 s (see ${exporter.logFile})`);
    await sleep(500);
  }
}

/** Until every node has a QoS result (the first round starts within one interval), at most 20 s. */
async function waitForQos(exporter, n) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const { text } = await scrape(exporter, '/metrics', METRICS_TIMEOUT_S);
    const have = count(text, /^arcus_qos_last_run_timestamp_seconds\{/gm);
    if (have >= n) return true;
    if (Date.now() > deadline) {
      log(`  QoS results for ${have} of ${n} nodes after 20 s; measuring anyway`);
      return false;
    }
    await sleep(500);
  }
}

async function runConfig(n, p) {
  const label = `N${n}-P${p}`;
  log(`${label}: starting ${n} doubles with ${p} prefixes`);
  const t0 = Date.now();
  // The exporter first: it watches ZooKeeper, sees the nodes join, and its QoS rounds are already
  // running when the last one has registered (saves most of a QoS interval of waiting).
  const build = codeVersion().build; // what this exporter loads
  const exporter = await startExporter(label);
  let doubles;
  let floor;
  try {
    doubles = await startDoubles(n, p);
    const addresses = doubles.nodes.map((d) => d.address);
    floor = await startFloor(addresses);
    await waitForNodes(exporter, n);
    await waitForQos(exporter, n);
    log(
      `${label}: ready in ${Date.now() - t0} ms (doubles set up in ${doubles.setupMs} ms, doubles RSS ${doubles.rssMB} MB); warming up`,
    );
    // The compressing floor compresses a /metrics body of this exporter (see "The compressing floor").
    const measureMetrics = OPTS.endpoints.includes('metrics');
    let compressedBodyBytes = 0;
    if (measureMetrics) {
      const bodyDir = await tempDir('bench-cache-exporter-body-');
      const bodyFile = join(bodyDir, 'metrics.txt');
      writeFileSync(bodyFile, (await scrape(exporter, '/metrics', METRICS_TIMEOUT_S)).text);
      compressedBodyBytes = (await floor.body(bodyFile)).bytes;
      rmSync(bodyDir, { recursive: true, force: true });
    }

    // Warm-up (JIT, connections, first aux read), not measured: back to back, then three paced.
    const warmStart = Date.now();
    const warmUntil = warmStart + OPTS.warmupS * 1000;
    let warmed = 0;
    for (; warmed < OPTS.warmup && Date.now() < warmUntil; warmed++) {
      await scrape(exporter, '/metrics', METRICS_TIMEOUT_S);
      await floor.round('stats');
      if (measureMetrics) await floor.round('compressed');
    }
    if (warmed > 0)
      log(
        `${label}: warmed up with ${warmed} /metrics scrapes and floor rounds (of each kind) in ${((Date.now() - warmStart) / 1000).toFixed(1)} s`,
      );
    await paced(3, () => scrape(exporter, '/metrics', METRICS_TIMEOUT_S));
    await paced(3, () => floor.round('stats'));
    if (measureMetrics) await paced(3, () => floor.round('compressed'));
    let warmPrefixMs = OPTS.paceMs;
    if (OPTS.endpoints.includes('prefixes')) {
      warmPrefixMs = (await scrape(exporter, '/metrics/prefixes', PREFIXES_TIMEOUT_S)).ms;
      await floor.round('prefixes');
      // A second warm-up only when cheap: at 500 x 500 one scrape takes seconds and JIT is warm.
      if (warmPrefixMs < 2000) {
        await sleep(OPTS.paceMs);
        warmPrefixMs = (await scrape(exporter, '/metrics/prefixes', PREFIXES_TIMEOUT_S)).ms;
        await floor.round('prefixes');
      }
    }

    // Prefix scrapes are slow at large N x P: fit them (and as many floor rounds) in the budget,
    // but take at least 5 (3 when one takes seconds).
    const perPrefixPair = 2 * Math.max(OPTS.paceMs, warmPrefixMs);
    const atLeast = Math.min(OPTS.prefixScrapes, warmPrefixMs < 2000 ? 5 : 3);
    const prefixScrapes = Math.max(
      atLeast,
      Math.min(OPTS.prefixScrapes, Math.floor(OPTS.prefixBudgetMs / perPrefixPair)),
    );
    if (prefixScrapes < OPTS.prefixScrapes)
      log(
        `${label}: a prefix scrape takes ~${Math.round(warmPrefixMs)} ms; ${prefixScrapes} prefix scrapes instead of ${OPTS.prefixScrapes}`,
      );

    // The exporter's tallies, one per endpoint.
    const tally = () => ({
      ms: [],
      wait: [],
      rounds: [],
      cpuMs: 0,
      wallMs: 0,
      scrapes: 0,
      series: 0,
      bytes: 0,
      wire: 0,
      incomplete: 0,
    });
    const m = tally();
    const pf = tally();
    const fs = { ms: [], wait: [], rounds: [], bytes: 0 };
    const fc = { ms: [], wait: [], rounds: [], bytes: 0, compressedBytes: 0 };
    const fp = { ms: [], wait: [], rounds: [], bytes: 0 };
    const idle = { cpuMs: 0, wallMs: 0 };
    let rssMax = 0;
    let rssIdleMin = Infinity;
    let lastMetricsText = '';
    const sampleRss = () => {
      const kb = statusKb(exporter.pid, 'VmRSS');
      if (kb > rssMax) rssMax = kb;
    };
    const sampler = setInterval(sampleRss, 100);
    // Who used the CPUs while each side was measured (cpuCensus): per block kind, summed.
    const censusPids = {
      exporter: exporter.pid,
      doubles: doubles.child.pid,
      floor: floor.pid,
      driver: process.pid,
      zookeeper: zk.pid,
    };
    const census = new Map();
    const startCensus = (kind) => {
      const end = cpuCensus(censusPids);
      return (count) => {
        const used = end?.();
        if (used === undefined || count === 0) return;
        const sum = census.get(kind) ?? { count: 0 };
        for (const [name, ms] of Object.entries(used)) sum[name] = (sum[name] ?? 0) + ms;
        sum.count += count;
        census.set(kind, sum);
      };
    };

    const rounds = Math.max(1, Math.ceil(OPTS.scrapes / OPTS.block));
    const share = (total, i) => Math.floor(((i + 1) * total) / rounds) - Math.floor((i * total) / rounds);
    let lastBusyWall = 500;

    const exporterBlock = async (acc, path, timeoutS, times) => {
      if (times === 0) return 0;
      // The census reads /proc for a few ms: outside the exporter's CPU and wall of the block.
      const endCensus = startCensus(path);
      const c0 = cpuMs(exporter.pid);
      const w0 = performance.now();
      const answers = [];
      await paced(times, async () => {
        const r = await scrape(exporter, path, timeoutS);
        acc.ms.push(r.ms);
        if (Number.isFinite(r.waitMs)) acc.wait.push(r.waitMs);
        answers.push(r);
        sampleRss();
      });
      const wall = performance.now() - w0;
      acc.cpuMs += cpuMs(exporter.pid) - c0;
      endCensus(times);
      acc.wallMs += wall;
      acc.scrapes += times;
      // The bodies are checked once the block is done, not between its scrapes (collectGarbage):
      // every one for the nodes it shows up; the last for the series count and sizes reported.
      for (const r of answers) {
        if (path === '/metrics' ? upCount(r.text) !== n : prefixOkNodes(r.text) !== n) acc.incomplete++;
      }
      const last = answers.at(-1);
      acc.series = seriesCount(last.text);
      if (path === '/metrics') lastMetricsText = last.text;
      acc.bytes = last.text.length;
      acc.wire = last.wireBytes;
      answers.length = 0;
      collectGarbage();
      return wall;
    };
    const floorBlock = async (acc, kind, times) => {
      const endCensus = startCensus(`floor ${kind}`);
      await paced(times, async () => {
        const r = await floor.round(kind);
        acc.ms.push(r.ms);
        if (Number.isFinite(r.waitMs)) acc.wait.push(r.waitMs);
        acc.bytes = r.bytes;
        if (r.compressedBytes !== undefined) acc.compressedBytes = r.compressedBytes;
      });
      endCensus(times);
      collectGarbage(); // as after an exporter block
    };
    const idleBlock = async () => {
      const c0 = cpuMs(exporter.pid);
      const w0 = performance.now();
      await sleep(lastBusyWall);
      idle.wallMs += performance.now() - w0;
      idle.cpuMs += cpuMs(exporter.pid) - c0;
      sampleRss();
      rssIdleMin = Math.min(rssIdleMin, statusKb(exporter.pid, 'VmRSS'));
    };

    collectGarbage(); // the warm-up's garbage, before the first measured block
    const measureStart = Date.now();
    for (let i = 0; i < rounds; i++) {
      const ms = OPTS.endpoints.includes('metrics') ? share(OPTS.scrapes, i) : 0;
      const ps = OPTS.endpoints.includes('prefixes') ? share(prefixScrapes, i) : 0;
      let busy = 0;
      const blocks = [
        async () => (busy += await exporterBlock(m, '/metrics', METRICS_TIMEOUT_S, ms)),
        () => floorBlock(fs, 'stats', ms),
        () => floorBlock(fc, 'compressed', ms),
        async () => {
          // Idle time equal to the exporter's busy time of the previous round (the first: 500 ms).
          await idleBlock();
        },
        async () => (busy += await exporterBlock(pf, '/metrics/prefixes', PREFIXES_TIMEOUT_S, ps)),
        () => floorBlock(fp, 'prefixes', ps),
      ];
      // Rotate the order every round, so no side always follows the other.
      const marks = [m.ms.length, fs.ms.length, pf.ms.length, fp.ms.length, fc.ms.length];
      for (let k = 0; k < blocks.length; k++) await blocks[(k + i) % blocks.length]();
      // Each round's samples, side by side, for the interval of the p99 ratio (ratioInterval).
      if (ms > 0) {
        m.rounds.push(m.ms.slice(marks[0]));
        fs.rounds.push(fs.ms.slice(marks[1]));
        fc.rounds.push(fc.ms.slice(marks[4]));
      }
      if (ps > 0) {
        pf.rounds.push(pf.ms.slice(marks[2]));
        fp.rounds.push(fp.ms.slice(marks[3]));
      }
      lastBusyWall = Math.max(200, busy);
    }
    clearInterval(sampler);
    const hwm = statusKb(exporter.pid, 'VmHWM');
    const measureMs = Date.now() - measureStart;

    const idleRate = idle.wallMs > 0 ? idle.cpuMs / idle.wallMs : 0; // CPU ms per wall ms
    const cpu = (acc) => ({
      rawMsPerScrape: acc.scrapes ? acc.cpuMs / acc.scrapes : NaN,
      netMsPerScrape: acc.scrapes ? (acc.cpuMs - idleRate * acc.wallMs) / acc.scrapes : NaN,
    });
    const result = {
      nodes: n,
      prefixes: p,
      build,
      serviceCodes: doubles.serviceCodes.length,
      setupMs: Date.now() - t0 - measureMs,
      measureMs,
      idle: { cpuMsPerSecond: idleRate * 1000, wallMs: idle.wallMs },
      metrics: {
        exporter: {
          ...summary(m.ms),
          ...cpu(m),
          series: m.series,
          bodyBytes: m.bytes,
          wireBytes: m.wire,
          incomplete: m.incomplete,
        },
        floor: { ...summary(fs.ms), bytes: fs.bytes },
        // 95 % interval of exporter p99 / floor p99, from the rounds (paired block bootstrap).
        ratioInterval95: ratioInterval(m.rounds, fs.rounds),
        runQueue: runQueue(m, fs),
        // The floor plus compressing the exporter's body (floor.mjs, kind compressed), and the
        // 95 % intervals of its p99 over the floor's and of the exporter's p99 over it.
        compressedFloor: {
          ...summary(fc.ms),
          // The body compressed (taken before the warm-up).
          bodyBytes: compressedBodyBytes,
          compressedBytes: fc.compressedBytes,
          overFloorInterval95: ratioInterval(fc.rounds, fs.rounds),
          exporterOverInterval95: ratioInterval(m.rounds, fc.rounds),
        },
      },
      prefixMetrics: {
        exporter: {
          ...summary(pf.ms),
          ...cpu(pf),
          series: pf.series,
          bodyBytes: pf.bytes,
          wireBytes: pf.wire,
          incomplete: pf.incomplete,
        },
        floor: { ...summary(fp.ms), bytes: fp.bytes },
        ratioInterval95: ratioInterval(pf.rounds, fp.rounds),
        runQueue: runQueue(pf, fp),
      },
      // max: highest VmRSS seen while measuring (sampled every 100 ms and after every scrape);
      // idleMin: lowest at the end of an idle block (what the process settles to between scrapes).
      rss: { maxMB: rssMax / 1024, idleMinMB: rssIdleMin / 1024, hwmMB: hwm / 1024 },
      // The exporter's own view of its memory at the last /metrics scrape (prom-client default metrics).
      selfMemoryMB: selfMemory(lastMetricsText),
      // Where the resident memory was at the end of the measurement.
      residentMB: residentByMapping(exporter.pid),
      // Per block kind (`/metrics`, `floor stats`, ...): CPU ms each process used during those
      // blocks, per scrape or round (the 100 ms pace included), and wall ms per scrape or round.
      cpuCensus: Object.fromEntries(
        [...census].map(([kind, { count, ...sums }]) => [
          kind,
          Object.fromEntries(Object.entries(sums).map(([name, ms]) => [name, ms / count])),
        ]),
      ),
    };
    log(
      `${label}: /metrics p50 ${round1(result.metrics.exporter.p50)} p99 ${round1(result.metrics.exporter.p99)} ms ` +
        `(floor ${round1(result.metrics.floor.p50)}/${round1(result.metrics.floor.p99)}), ` +
        `/metrics/prefixes p50 ${round1(result.prefixMetrics.exporter.p50)} p99 ${round1(result.prefixMetrics.exporter.p99)} ms ` +
        `(floor ${round1(result.prefixMetrics.floor.p50)}/${round1(result.prefixMetrics.floor.p99)}), RSS max ${round1(result.rss.maxMB)} MB`,
    );
    if (exporter.heapDir) {
      process.kill(exporter.pid, 'SIGUSR2');
      // The snapshot is complete when its file stops growing.
      let last = -1;
      for (let i = 0; i < 300; i++) {
        await sleep(200);
        const files = readdirSync(exporter.heapDir).filter((f) => f.endsWith('.heapsnapshot'));
        const size = files.reduce((a, f) => a + statSync(join(exporter.heapDir, f)).size, 0);
        if (size > 0 && size === last) break;
        last = size;
      }
      log(`${label}: heap snapshot in ${relative(ROOT, exporter.heapDir)}`);
    }
    return result;
  } finally {
    await exporter.stop();
    if (exporter?.profileDir) {
      const files = existsSync(exporter.profileDir)
        ? readdirSync(exporter.profileDir).filter((f) => f.endsWith('.cpuprofile'))
        : [];
      for (const f of files) {
        const path = join(exporter.profileDir, f);
        log(`${label}: CPU profile ${relative(ROOT, path)}`);
        process.stderr.write(summarizeProfile(path, 15) + '\n');
      }
    }
    await floor?.stop();
    await doubles?.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// Report

function table(results) {
  const header = [
    'N',
    'P',
    'endpoint',
    'exp p50',
    'exp p99',
    'floor p50',
    'floor p99',
    'p99/floor',
    '95% interval',
    'CPU ms/scr net (raw)',
    'series',
    'RSS MB',
  ];
  const rows = [];
  for (const r of results) {
    for (const [name, e] of [
      ['/metrics', r.metrics],
      ['/metrics/prefixes', r.prefixMetrics],
    ]) {
      if (e.exporter.n === 0) continue;
      rows.push([
        r.nodes,
        r.prefixes,
        name + (e.exporter.incomplete ? ` (${e.exporter.incomplete} incomplete)` : ''),
        fmt(e.exporter.p50),
        fmt(e.exporter.p99),
        fmt(e.floor.p50),
        fmt(e.floor.p99),
        `${(e.exporter.p99 / e.floor.p99).toFixed(2)}x`,
        interval(e.ratioInterval95),
        `${fmt(e.exporter.netMsPerScrape)} (${fmt(e.exporter.rawMsPerScrape)})`,
        e.exporter.series,
        fmt(r.rss.maxMB),
      ]);
    }
  }
  return formatTable(header, rows);
}

/**
 * The compressing floor of each configuration's /metrics beside the floor and the exporter;
 * undefined when /metrics was not measured.
 */
function compressedTable(results) {
  const header = [
    'N',
    'P',
    'body',
    'floor p50',
    'floor p99',
    'floor+gzip p50',
    'floor+gzip p99',
    'its p99/floor',
    '95% interval',
    'exp p99/it',
    '95% interval',
  ];
  const rows = [];
  for (const r of results) {
    const { exporter, floor, compressedFloor: c } = r.metrics;
    if (exporter.n === 0 || !c || c.n === 0) continue;
    rows.push([
      r.nodes,
      r.prefixes,
      `${(c.bodyBytes / 1e6).toFixed(2)} MB -> ${(c.compressedBytes / 1e3).toFixed(0)} KB`,
      fmt(floor.p50),
      fmt(floor.p99),
      fmt(c.p50),
      fmt(c.p99),
      `${(c.p99 / floor.p99).toFixed(2)}x`,
      interval(c.overFloorInterval95),
      `${(exporter.p99 / c.p99).toFixed(2)}x`,
      interval(c.exporterOverInterval95),
    ]);
  }
  if (rows.length === 0) return undefined;
  return formatTable(header, rows);
}

/** The run-queue figures (runQueue) of each configuration; undefined when none has them. */
function waitTable(results) {
  const header = [
    'N',
    'P',
    'endpoint',
    'exp wait p50',
    'exp wait p99',
    'exp wait at p99',
    'floor wait p99',
    'floor wait at p99',
    'exp p99 less wait',
    'floor p99 less wait',
    'ratio',
  ];
  const rows = [];
  for (const r of results) {
    for (const [name, e] of [
      ['/metrics', r.metrics],
      ['/metrics/prefixes', r.prefixMetrics],
    ]) {
      const q = e.runQueue;
      if (e.exporter.n === 0 || q === undefined) continue;
      rows.push([
        r.nodes,
        r.prefixes,
        name,
        fmt(q.exporter.waitP50),
        fmt(q.exporter.waitP99),
        fmt(q.exporter.waitAtP99),
        fmt(q.floor.waitP99),
        fmt(q.floor.waitAtP99),
        fmt(q.exporter.lessWaitP99),
        fmt(q.floor.lessWaitP99),
        `${(q.exporter.lessWaitP99 / q.floor.lessWaitP99).toFixed(2)}x`,
      ]);
    }
  }
  if (rows.length === 0) return undefined;
  return formatTable(header, rows);
}

function censusTable(results) {
  const names = ['exporter', 'doubles', 'floor', 'driver', 'zookeeper', 'other'];
  const header = ['N', 'P', 'while measuring', ...names, 'all'];
  const rows = [];
  for (const r of results) {
    for (const [kind, c] of Object.entries(r.cpuCensus ?? {})) {
      rows.push([
        r.nodes,
        r.prefixes,
        kind,
        ...names.map((name) => fmt(c[name])),
        fmt(names.reduce((a, name) => a + (c[name] ?? 0), 0)),
      ]);
    }
  }
  if (rows.length === 0) return undefined;
  return formatTable(header, rows);
}

const interval = (i) => (i && Number.isFinite(i.low) ? `${i.low.toFixed(2)}-${i.high.toFixed(2)}x` : '-');

function goals(results) {
  const find = (n, p) => results.find((r) => r.nodes === n && r.prefixes === p);
  const out = [];
  for (const p of [0, 50]) {
    const r = find(100, p);
    const name = `N=100 P=${p}: /metrics p99 <= 1.5x floor p99 and < 100 ms`;
    if (!r) {
      out.push({ goal: name, status: 'NOT RUN' });
      continue;
    }
    const { exporter, floor } = r.metrics;
    const ratio = exporter.p99 / floor.p99;
    const pass = ratio <= 1.5 && exporter.p99 < 100;
    const within = r.metrics.ratioInterval95?.high <= 1.5 ? ', all of it within the goal' : '';
    out.push({
      goal: name,
      status: pass ? 'PASS' : 'FAIL',
      detail:
        `p99 ${fmt(exporter.p99)} ms, floor p99 ${fmt(floor.p99)} ms, ratio ${ratio.toFixed(2)}x (95% interval ${interval(r.metrics.ratioInterval95)}${within})` +
        (r.metrics.compressedFloor?.n > 0
          ? `; compressing the body alone: ${(r.metrics.compressedFloor.p99 / floor.p99).toFixed(2)}x`
          : ''),
    });
  }
  const big = find(500, 50);
  out.push(
    big
      ? {
          goal: 'N=500 P=50: exporter RSS < 150 MB',
          status: big.rss.maxMB < 150 ? 'PASS' : 'FAIL',
          detail: `max VmRSS ${fmt(big.rss.maxMB)} MB (VmHWM ${fmt(big.rss.hwmMB)} MB)`,
        }
      : { goal: 'N=500 P=50: exporter RSS < 150 MB', status: 'NOT RUN' },
  );
  return out;
}

/**
 * The commit measured, whether packages/ differed from it, and the time of the newest built file
 * the exporter loads (the build is what runs; a rebuild during the run makes a mixed result).
 */
function codeVersion() {
  const git = (...a) => spawnSync('git', a, { cwd: EXPORTER_TREE, encoding: 'utf8' }).stdout?.trim() ?? '';
  const dirty = git('status', '--porcelain', '--', 'packages', 'bin');
  let newest = 0;
  const walk = (dir) => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.js')) newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  for (const pkg of ['core', 'arcus', 'cache-exporter']) walk(join(EXPORTER_TREE, 'packages', pkg, 'dist', 'src'));
  return {
    commit: git('rev-parse', '--short', 'HEAD'),
    ...(EXPORTER_TREE === ROOT ? {} : { tree: EXPORTER_TREE }),
    packagesModified: dirty === '' ? [] : dirty.split('\n'),
    build: new Date(newest).toISOString(),
  };
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const started = Date.now();
  if (PINNING) {
    pinProcess(process.pid, PINNING.others);
    log(
      `pinned: doubles on CPUs ${PINNING.servers}; this driver, ZooKeeper, the exporter and the floor on CPUs ${PINNING.others}`,
    );
  }
  const codeAtStart = codeVersion();
  log(
    `code: commit ${codeAtStart.commit}${codeAtStart.tree ? ` (the exporter of ${codeAtStart.tree})` : ''}, build ${codeAtStart.build}${codeAtStart.packagesModified.length ? `, uncommitted: ${codeAtStart.packagesModified.join('; ')}` : ''}`,
  );
  log(
    `matrix nodes=${OPTS.nodes.join(',')} prefixes=${OPTS.prefixes.join(',')}; ${OPTS.scrapes} /metrics and up to ${OPTS.prefixScrapes} /metrics/prefixes scrapes per configuration${OPTS.gzip ? ', gzip' : ''}${OPTS.traffic ? ', doubles with traffic' : ''}, scrapes timed by the ${OPTS.client === 'node' ? 'node:http' : 'bare HTTP'} client`,
  );
  zk = await startBenchZooKeeper();
  log(`ZooKeeper ${zk.address} (pid ${zk.pid})`);
  const results = [];
  for (const n of OPTS.nodes) {
    for (const p of OPTS.prefixes) results.push(await runConfig(n, p));
  }
  await zk.stop();
  zk = undefined;

  const evaluated = goals(results);
  const mixed = results.filter((r) => r.build !== codeAtStart.build).map((r) => `N${r.nodes}-P${r.prefixes}`);
  const report = {
    when: new Date().toISOString(),
    machine: { cpus: (await import('node:os')).cpus().length, node: process.version },
    code: codeAtStart,
    exporterNodeFlags: [...EXPORTER_BIN_NODE_FLAGS, ...OPTS.exporterNodeFlags],
    options: OPTS,
    wallSeconds: Math.round((Date.now() - started) / 1000),
    ...(mixed.length
      ? {
          warning: `the build changed during the run: ${mixed.join(', ')} ran a newer build than the first configuration (see results[].build)`,
        }
      : {}),
    results,
    goals: evaluated,
  };
  mkdirSync(dirname(OPTS.out), { recursive: true });
  writeFileSync(OPTS.out, `${JSON.stringify(report, null, 2)}\n`);

  const modified = report.code.packagesModified.length
    ? `, ${report.code.packagesModified.length} uncommitted change(s) in packages/`
    : '';
  process.stdout.write(
    `\ncache exporter benchmark (commit ${report.code.commit}${report.code.tree ? `, the exporter of ${report.code.tree}` : ''}${modified}; ${report.machine.cpus} CPUs, node ${process.version}, ${report.wallSeconds} s; scrapes timed by the ${OPTS.client === 'node' ? 'node:http' : 'bare HTTP'} client${PINNING ? `; doubles pinned to CPUs ${PINNING.servers}, the rest to ${PINNING.others}` : ''})\n`,
  );
  process.stdout.write(`exporter node flags: ${report.exporterNodeFlags.join(' ') || 'none'}\n`);
  if (report.warning) process.stdout.write(`WARNING: ${report.warning}\n`);
  process.stdout.write(
    'latencies in ms per scrape (floor: per round to all nodes); CPU: exporter ms per scrape net of idle (raw)\n\n',
  );
  process.stdout.write(`${table(results)}\n\n`);
  const compressed = compressedTable(results);
  if (compressed) {
    process.stdout.write(
      "the compressing floor: the floor round plus compressing the exporter's /metrics body, each node's share as its reply arrives (floor.mjs)\n\n" +
        `${compressed}\n\n`,
    );
  }
  const waits = waitTable(results);
  if (waits)
    process.stdout.write(
      `main thread waiting for a CPU (run queue), ms per scrape; p99 of the latency less that wait\n\n${waits}\n\n`,
    );
  const censusText = censusTable(results);
  if (censusText) {
    process.stdout.write(
      'CPU each process used while a side was measured, ms per scrape or round (every thread, schedstat; the 100 ms pace between scrapes included)\n\n' +
        `${censusText}\n\n`,
    );
  }
  process.stdout.write(
    `idle exporter CPU (QoS etc.), ms per second: ${results.map((r) => `N${r.nodes}/P${r.prefixes} ${fmt(r.idle.cpuMsPerSecond)}`).join(', ')}\n\n`,
  );
  process.stdout.write('goals:\n');
  for (const g of evaluated)
    process.stdout.write(`  ${g.status.padEnd(7)} ${g.goal}${g.detail ? `: ${g.detail}` : ''}\n`);
  process.stdout.write(`\nresults: ${relative(process.cwd(), OPTS.out)}\n`);
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
