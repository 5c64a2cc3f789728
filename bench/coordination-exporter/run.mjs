#!/usr/bin/env node
// Coordination exporter benchmark: the real exporter process (bin/coordination-exporter) against a
// real ZooKeeper ensemble of 3 and of 7 servers, with and without a server that accepts and never
// answers; beside it the floor, a bare socket client reading the same `mntr` replies.
//
//   node bench/coordination-exporter/run.mjs [--sizes=3,7] [--scrapes=1000] [--warmup=2000] [--pace-ms=50]
//                                            [--timeout-s=1] [--out=PATH]
//                                            [--exporter-node-flags="--cpu-prof --cpu-prof-dir=DIR"]
//                                            [--client=bare|node] [--compare-clients] [--runs=K]
//
// Scrapes go like a store's: gzip asked for, timed to the last byte of the compressed body over a
// keep-alive connection (as bench/cache-exporter does), by a bare HTTP client
// (bench/lib/bare-http.mjs) that, like the floor's sockets, does next to nothing itself;
// `--client=node` times them through node:http's client instead, and `--compare-clients` through
// both. `--runs=K` pools K runs, each on a new ensemble. Prints, per configuration: exporter
// /metrics p50/p99 (ms), floor p50/p99, p99/floor with a 95 % interval (paired block bootstrap),
// exporter CPU ms per scrape, series, RSS, and how long each side's main thread waited for a CPU
// (the run queue) and what its p99 is without that wait. Goals: p99 within 1.5x of the floor when every server
// answers, and bounded by the scrape deadline when one hangs.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';

/** Exporter processes started and not yet exited. */
const running = new Set();
const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
const { freePort, startZooKeeperEnsemble } = await import(join(ROOT, 'packages/testkit/dist/src/index.js'));
const {
  cpuMs,
  percentile: pct,
  pooledRatioInterval,
  ratioInterval,
  runQueueWait,
  statusKb,
  waitSummary,
} = await import(join(HERE, '..', 'lib', 'process.mjs'));
const { BareHttpClient, NodeHttpClient } = await import(join(HERE, '..', 'lib', 'bare-http.mjs'));

const { parseArgs } = await import(join(HERE, '..', 'lib', 'args.mjs'));
const args = parseArgs(process.argv.slice(2), import.meta.url);
const SIZES = (args.sizes ?? '3,7').split(',').map(Number);
// The p99 of 100 samples is the single slowest; 1000 make it the 10th, and a ratio of two of them
// moves far less from run to run (the interval printed beside it says how much).
const SCRAPES = Number(args.scrapes ?? 1000);
// A freshly started ensemble has a tail of its own, which the floor's p99 follows: K runs, each on
// a new ensemble, pooled (the hung-server case is measured in the first only).
const RUNS = Number(args.runs ?? 1);
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error(`--runs=${args.runs}: a whole number of runs, 1 or more`);
const PACE_MS = Number(args['pace-ms'] ?? 50);
// Scrapes (and as many floor rounds) before measuring, back to back. V8 runs a function in its
// baseline tier until it has run enough bytecode, and the code that runs once a scrape (the HTTP
// exchange, the scrape's set-up and rendering) needs ~1,000-2,000 scrapes for that: without them
// the measurement is of the first hour of an exporter scraped every few seconds, not of one that
// has been running. A hung server's scrapes last the whole deadline: 5 then.
const WARMUP = Number(args.warmup ?? 2000);
if (!Number.isInteger(WARMUP) || WARMUP < 0)
  throw new Error(`--warmup=${args.warmup}: a whole number of scrapes, 0 or more`);
const TIMEOUT_S = Number(args['timeout-s'] ?? 1);
const OUT = args.out ?? join(HERE, 'results', 'latest.json');
/** How scrapes are timed: `bare` (bench/lib/bare-http.mjs, the default) or `node` (node:http's client). */
const CLIENT = args.client ?? 'bare';
if (CLIENT !== 'bare' && CLIENT !== 'node') throw new Error(`--client=${CLIENT}: bare or node`);
/** Also time every round through the other client (its own connection), to show what the client adds. */
const COMPARE_CLIENTS = args['compare-clients'] === 'true';
/** The exporter's --log.level (debug logs each scrape's read and render times, on stdout). */
const EXPORTER_LOG_LEVEL = args['exporter-log-level'] ?? 'warn';
/** Extra node flags for the exporter process, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`. */
const EXPORTER_NODE_FLAGS = args['exporter-node-flags']
  ? String(args['exporter-node-flags']).split(/\s+/).filter(Boolean)
  : [];
const log = (msg) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/**
 * One floor round: mntr to every answering server at once, until each has closed. Resolves to its
 * ms; `wait` gets how long this process's main thread waited for a CPU meanwhile (runQueueWait).
 */
function floorRound(addresses, wait) {
  const waited = runQueueWait(process.pid);
  const started = performance.now();
  return Promise.all(
    addresses.map(
      (address) =>
        new Promise((resolve, reject) => {
          const colon = address.lastIndexOf(':');
          const socket = connect({ host: address.slice(0, colon), port: Number(address.slice(colon + 1)) }, () =>
            socket.end('mntr'),
          );
          socket.on('data', () => undefined);
          socket.on('error', reject);
          socket.on('close', resolve);
        }),
    ),
  ).then(() => {
    const ms = performance.now() - started;
    const waitMs = waited();
    if (waitMs !== undefined) wait.push(waitMs);
    return ms;
  });
}

/**
 * One scrape as a store makes it: gzip asked for, timed from the request to the last byte of the
 * (still compressed) body over one keep-alive connection; decompressed afterwards, untimed. With
 * `pid`, `waitMs`: how long that process's main thread waited for a CPU meanwhile. `client` is a
 * BareHttpClient (the default: a client that does next to nothing, like the floor's sockets) or,
 * with `--client=node` and in the comparison of `--compare-clients`, a NodeHttpClient.
 */
async function scrape(client, pid) {
  const waited = pid === undefined ? undefined : runQueueWait(pid);
  const { status, headers, body, ms } = await client.get(
    '/metrics',
    { 'X-Prometheus-Scrape-Timeout-Seconds': String(TIMEOUT_S), 'Accept-Encoding': 'gzip' },
    { timeoutMs: TIMEOUT_S * 1000 + 30_000 },
  );
  const waitMs = waited?.();
  if (status !== 200) throw new Error(`GET /metrics: HTTP ${status}`);
  return { ms, waitMs, text: (headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body).toString('utf8') };
}

async function measure(size, ensemble, hung) {
  const servers = ensemble.servers.map((s) => s.address);
  const zkHosts = hung ? [...servers, hung] : servers;
  const port = await freePort();
  const exporter = spawn(
    process.execPath,
    [
      ...EXPORTER_NODE_FLAGS,
      join(ROOT, 'bin', 'coordination-exporter'),
      `--listen=127.0.0.1:${port}`,
      `--zk-hosts=${zkHosts.join(',')}`,
      `--log.level=${EXPORTER_LOG_LEVEL}`,
    ],
    {
      stdio: ['ignore', EXPORTER_LOG_LEVEL === 'warn' ? 'ignore' : 'inherit', 'inherit'],
    },
  );
  running.add(exporter);
  exporter.once('exit', () => running.delete(exporter));
  const client = CLIENT === 'node' ? new NodeHttpClient('127.0.0.1', port) : new BareHttpClient('127.0.0.1', port);
  // --compare-clients: the other client too, on a connection of its own, in the same rounds.
  const other =
    COMPARE_CLIENTS && !hung
      ? CLIENT === 'node'
        ? new BareHttpClient('127.0.0.1', port)
        : new NodeHttpClient('127.0.0.1', port)
      : undefined;
  try {
    for (let i = 0; ; i++) {
      try {
        const { text } = await scrape(client);
        if ((text.match(/^zk_up\{[^}]*\} 1$/gm) ?? []).length === size) break;
      } catch {
        // not listening yet
      }
      if (i > 200) throw new Error('exporter not ready');
      await sleep(100);
    }
    const warmup = hung ? Math.min(WARMUP, 5) : WARMUP;
    const warmed = Date.now();
    for (let i = 0; i < warmup; i++) await scrape(client);
    for (let i = 0; i < warmup; i++) await floorRound(servers, []);
    for (let i = 0; i < Math.min(warmup, 5) && other; i++) await scrape(other);
    if (warmup > 5)
      log(
        `${size} servers${hung ? ' + hung' : ''}: warmed up with ${warmup} scrapes and floor rounds in ${((Date.now() - warmed) / 1000).toFixed(1)} s`,
      );
    const exp = [];
    const floor = [];
    const expBlocks = [];
    const floorBlocks = [];
    const expWait = [];
    const floorWait = [];
    const otherMs = [];
    let cpu = 0;
    let rss = 0;
    let series = 0;
    const sides = {
      exp: async () => {
        const before = cpuMs(exporter.pid);
        const expBlock = [];
        for (let i = 0; i < 10; i++) {
          await sleep(PACE_MS);
          const { ms, waitMs, text } = await scrape(client, exporter.pid);
          expBlock.push(ms);
          if (waitMs !== undefined) expWait.push(waitMs);
          series = text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;
        }
        cpu += cpuMs(exporter.pid) - before;
        rss = Math.max(rss, statusKb(exporter.pid, 'VmRSS') / 1024);
        exp.push(...expBlock);
        expBlocks.push(expBlock);
      },
      floor: async () => {
        const floorBlock = [];
        for (let i = 0; i < 10; i++) {
          await sleep(PACE_MS);
          floorBlock.push(await floorRound(servers, floorWait));
        }
        floor.push(...floorBlock);
        floorBlocks.push(floorBlock);
      },
      other: async () => {
        for (let i = 0; i < 10; i++) {
          await sleep(PACE_MS);
          otherMs.push((await scrape(other)).ms);
        }
      },
    };
    const order = other ? ['exp', 'floor', 'other'] : ['exp', 'floor'];
    // With a hung server every scrape lasts the whole deadline: fewer of them. The order of the
    // sides turns every round, so that none always follows the other.
    for (let block = 0; block < (hung ? 2 : SCRAPES / 10); block++) {
      for (let k = 0; k < order.length; k++) await sides[order[(block + k) % order.length]]();
    }
    // The paired bootstrap wants each round's exporter and floor blocks side by side.
    if (expBlocks.length !== floorBlocks.length) throw new Error('unpaired blocks');
    return {
      size,
      hung: Boolean(hung),
      exp: { p50: pct(exp, 50), p99: pct(exp, 99) },
      floor: { p50: pct(floor, 50), p99: pct(floor, 99) },
      ratio: { p99: pct(exp, 99) / pct(floor, 99), interval95: ratioInterval(expBlocks, floorBlocks) },
      samples: { exp: expBlocks, floor: floorBlocks },
      // How long each side's main thread waited for a CPU (waitSummary); undefined without schedstat.
      runQueue: { exp: waitSummary(exp, expWait), floor: waitSummary(floor, floorWait) },
      cpuMsPerScrape: cpu / exp.length,
      series,
      rssMb: rss,
      // --compare-clients: the same exporter through the other client, in the same rounds.
      other: other
        ? {
            client: CLIENT === 'node' ? 'bare' : 'node',
            p50: pct(otherMs, 50),
            p99: pct(otherMs, 99),
            ratio: pct(otherMs, 99) / pct(floor, 99),
          }
        : undefined,
    };
  } finally {
    client.close();
    other?.close();
    exporter.kill('SIGTERM');
    await new Promise((resolve) => exporter.once('exit', resolve));
  }
}

// An interrupted run leaves no exporter behind (ZooKeeper is stopped by the testkit's own exit hook).
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    log(`${signal}: stopping the exporter`);
    process.exit(130);
  });
}

const results = [];
const hungServer = createServer(() => undefined); // accepts, reads, never answers
const hungPort = await freePort();
await new Promise((resolve) => hungServer.listen(hungPort, '127.0.0.1', resolve));
const hung = `127.0.0.1:${hungPort}`;
try {
  for (const size of SIZES) {
    for (let run = 1; run <= RUNS; run++) {
      log(`starting a ${size}-server ensemble${RUNS > 1 ? ` (run ${run} of ${RUNS})` : ''}`);
      const ensemble = await startZooKeeperEnsemble({ size });
      try {
        await ensemble.waitForLeader({ timeoutMs: 60_000 });
        await sleep(2000);
        // The hung server bounds a scrape by its deadline whatever the ensemble: measured once.
        for (const withHung of run === 1 ? [false, true] : [false]) {
          const result = { run, ...(await measure(size, ensemble, withHung ? hung : undefined)) };
          log(
            `${size} servers${withHung ? ' + hung' : ''}: exporter p50 ${result.exp.p50.toFixed(1)} p99 ${result.exp.p99.toFixed(1)} ms, floor ${result.floor.p50.toFixed(1)}/${result.floor.p99.toFixed(1)}`,
          );
          results.push(result);
        }
      } finally {
        await ensemble.stop();
      }
    }
  }
} finally {
  hungServer.close();
}

/**
 * --runs=K: per size, the K runs' samples pooled, and the ratio's interval from a two-level
 * bootstrap (runs, then blocks within a run), since each run's ensemble has a tail of its own.
 */
const pooled =
  RUNS < 2
    ? []
    : SIZES.map((size) => {
        const runs = results.filter((r) => r.size === size && !r.hung);
        const exp = runs.flatMap((r) => r.samples.exp.flat());
        const floor = runs.flatMap((r) => r.samples.floor.flat());
        return {
          size,
          runs: runs.length,
          exp: { p50: pct(exp, 50), p99: pct(exp, 99) },
          floor: { p50: pct(floor, 50), p99: pct(floor, 99) },
          ratio: {
            p99: pct(exp, 99) / pct(floor, 99),
            interval95: pooledRatioInterval(
              runs.map((r) => ({ expBlocks: r.samples.exp, floorBlocks: r.samples.floor })),
            ),
          },
          perRun: runs.map((r) => r.ratio.p99),
        };
      });

const f = (v, w) => (typeof v === 'number' ? v.toFixed(1) : String(v)).padStart(w);
console.log(
  `\ncoordination exporter benchmark (${SCRAPES} scrapes per configuration, scrape timeout header ${TIMEOUT_S} s, scrapes timed by the ${CLIENT === 'bare' ? 'bare HTTP client' : 'node:http client'})\n`,
);
console.log(
  `servers  ${RUNS > 1 ? 'run  ' : ''}hung  exp p50  exp p99  floor p50  floor p99  p99/floor  95% interval  CPU ms/scr  series  RSS MB`,
);
const interval = ({ low, high }) => (Number.isFinite(low) ? `${low.toFixed(2)}-${high.toFixed(2)}x` : '-');
for (const r of results) {
  console.log(
    `${String(r.size).padStart(7)}  ${RUNS > 1 ? `${String(r.run).padStart(3)}  ` : ''}${(r.hung ? 'yes' : 'no').padStart(4)}  ${f(r.exp.p50, 7)}  ${f(r.exp.p99, 7)}  ${f(r.floor.p50, 9)}  ${f(r.floor.p99, 9)}  ${r.ratio.p99.toFixed(2).padStart(8)}x  ${(r.hung ? '' : interval(r.ratio.interval95)).padStart(12)}  ${f(r.cpuMsPerScrape, 10)}  ${String(r.series).padStart(6)}  ${f(r.rssMb, 6)}`,
  );
}
if (pooled.length > 0) {
  console.log(`\npooled over ${RUNS} runs (each a new ensemble); interval from runs and blocks drawn again`);
  console.log('servers  exp p50  exp p99  floor p50  floor p99  p99/floor  95% interval  ratio of each run');
  for (const q of pooled) {
    console.log(
      `${String(q.size).padStart(7)}  ${f(q.exp.p50, 7)}  ${f(q.exp.p99, 7)}  ${f(q.floor.p50, 9)}  ${f(q.floor.p99, 9)}  ${q.ratio.p99.toFixed(2).padStart(8)}x  ${interval(q.ratio.interval95).padStart(12)}  ${q.perRun.map((v) => `${v.toFixed(2)}x`).join(' ')}`,
    );
  }
}
const compared = results.filter((r) => r.other);
if (compared.length > 0) {
  console.log(
    `\nthe same exporter timed through the ${compared[0].other.client === 'node' ? 'node:http' : 'bare'} client, in the same rounds (its own connection)`,
  );
  console.log('servers  exp p50  exp p99  p99/floor  adds at p50  adds at p99');
  for (const r of compared) {
    console.log(
      `${String(r.size).padStart(7)}${RUNS > 1 ? ` (run ${r.run})` : ''}  ${f(r.other.p50, 7)}  ${f(r.other.p99, 7)}  ${r.other.ratio.toFixed(2).padStart(8)}x  ${f(r.other.p50 - r.exp.p50, 11)}  ${f(r.other.p99 - r.exp.p99, 11)}`,
    );
  }
}
const waited = results.filter((r) => !r.hung && r.runQueue.exp && r.runQueue.floor);
if (waited.length > 0) {
  console.log('\nmain thread waiting for a CPU (run queue), ms per scrape; p99 of the latency less that wait');
  console.log(
    'servers  exp wait p50  exp wait p99  exp wait at p99  floor wait p99  floor wait at p99  exp p99 less wait  floor p99 less wait  ratio',
  );
  for (const {
    size,
    run,
    runQueue: { exp: e, floor: fl },
  } of waited) {
    console.log(
      `${String(size).padStart(7)}${RUNS > 1 ? ` (run ${run})` : ''}  ${f(e.waitP50, 12)}  ${f(e.waitP99, 12)}  ${f(e.waitAtP99, 15)}  ${f(fl.waitP99, 14)}  ${f(fl.waitAtP99, 17)}  ${f(e.lessWaitP99, 17)}  ${f(fl.lessWaitP99, 19)}  ${(e.lessWaitP99 / fl.lessWaitP99).toFixed(2).padStart(4)}x`,
    );
  }
}
console.log('\ngoals:');
const deadlineMs = TIMEOUT_S * 1000;
const verdict = (q, prefix) => {
  const ok = q.exp.p99 <= 1.5 * q.floor.p99;
  const within =
    q.ratio.interval95.high <= 1.5
      ? ', all of it within the goal'
      : q.ratio.interval95.low > 1.5
        ? ', all of it above the goal'
        : '';
  console.log(
    `  ${ok ? 'PASS' : 'FAIL'}  ${prefix}: p99 ${q.exp.p99.toFixed(1)} ms <= 1.5x floor p99 ${q.floor.p99.toFixed(1)} ms (ratio ${q.ratio.p99.toFixed(2)}x, 95% interval ${interval(q.ratio.interval95)}${within})`,
  );
};
for (const r of results) {
  if (r.hung) {
    const ok = r.exp.p99 <= deadlineMs + 100;
    console.log(
      `  ${ok ? 'PASS' : 'FAIL'}  ${r.size} servers + hung: p99 ${r.exp.p99.toFixed(1)} ms bounded by the ${deadlineMs} ms scrape timeout (+100 ms)`,
    );
  } else if (RUNS < 2) {
    verdict(r, `${r.size} servers`);
  }
}
for (const q of pooled) verdict(q, `${q.size} servers, ${q.runs} runs pooled`);
mkdirSync(dirname(OUT), { recursive: true });
writeFileSync(
  OUT,
  JSON.stringify(
    {
      at: new Date().toISOString(),
      scrapes: SCRAPES,
      runs: RUNS,
      timeoutS: TIMEOUT_S,
      client: CLIENT,
      results,
      pooled,
    },
    null,
    2,
  ),
);
console.log(`\nresults: ${OUT}`);
process.exit(0);
