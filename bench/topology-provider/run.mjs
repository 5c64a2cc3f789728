#!/usr/bin/env node
// Topology provider benchmark: the real daemon (bin/topology-provider) serving the dashboard's JSON
// datasource protocol from memory, with its ensembles on real ZooKeeper servers holding an ARCUS
// layout of 10,000 nodes; beside it the floor, a bare node:http server answering fixed bytes.
//
//   node bench/topology-provider/run.mjs [--ensembles=5] [--service-codes=100] [--nodes=20]
//                                        [--requests=5000] [--warmup=2000] [--concurrency=8]
//                                        [--seconds=10] [--seed=1] [--no-pin] [--out=PATH]
//
// The daemon runs pinned to core 0 (taskset -c 0); this process (the load generator) and the
// ZooKeeper servers move to core 1 once the layout is written.
// Prints, per query kind: requests, p50/p99/max (ms, request start to last body byte, one request
// at a time over one keep-alive connection), answer bytes; then throughput at --concurrency with
// the daemon's CPU ms per request, the ZooKeeper reads made while loaded (goal: none), the floor's
// p50/p99 and the daemon's peak RSS. Goal: p99 < 2 ms for every kind, 0 ZooKeeper reads per request.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import zookeeper from 'node-zookeeper-client';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
const { startZooKeeper, freePort, fourLetterWord, seededRandom, serviceCodeData, mappingData } = await import(
  join(ROOT, 'packages/testkit/dist/src/index.js')
);
const { cpuMs, percentile: pct, statusKb } = await import(join(HERE, '..', 'lib', 'process.mjs'));

const { parseArgs } = await import(join(HERE, '..', 'lib', 'args.mjs'));
const args = parseArgs(process.argv.slice(2), import.meta.url);
const ENSEMBLES = Number(args.ensembles ?? 5);
const SERVICE_CODES = Number(args['service-codes'] ?? 100);
const NODES = Number(args.nodes ?? 20);
const REQUESTS = Number(args.requests ?? 5000);
const WARMUP = Number(args.warmup ?? 2000);
const CONCURRENCY = Number(args.concurrency ?? 8);
const SECONDS = Number(args.seconds ?? 10);
const SEED = Number(args.seed ?? 1);
const OUT = args.out ?? join(HERE, 'results', 'latest.json');
const CREATE_BATCH = 500;
const BENCH_SESSION_TIMEOUT_MS = 10_000; // the test kit's ZooKeeper caps sessions at 20 ticks of 500 ms
const log = (msg) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

for (const [name, value] of Object.entries({ ENSEMBLES, SERVICE_CODES, NODES, REQUESTS, CONCURRENCY, SECONDS })) {
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`--${name.toLowerCase().replace('_', '-')} must be a positive integer`);
}
if (SERVICE_CODES > 1000 || NODES > 10_000)
  throw new Error('at most 1000 service codes (svc-000..svc-999) and 10000 nodes per service code');

const svc = (i) => `svc-${String(i).padStart(3, '0')}`;
const ensembleName = (i) => `e${i + 1}`;

// ---------------------------------------------------------------------------------------------
// Pinning

const tasksetOk = spawnSync('taskset', ['-c', '0', 'true']).status === 0;
const PIN = tasksetOk && args['no-pin'] === undefined && availableParallelism() >= 2;
const pinNote = PIN
  ? 'daemon and floor pinned to core 0 (taskset -c 0), load generator and ZooKeeper servers to core 1 once the layout is written'
  : `UNPINNED (${!tasksetOk ? 'taskset missing or not working' : args['no-pin'] !== undefined ? '--no-pin' : 'fewer than 2 cores'}): daemon, floor and load generator share the cores`;

/** Pins a running process, every thread of it, to core 1; threads and children it starts later inherit that. */
function pinToCore1(pid) {
  if (!PIN) return;
  const r = spawnSync('taskset', ['-a', '-p', '-c', '1', String(pid)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`taskset -a -p -c 1 ${pid} failed: ${r.stderr}`);
}
const onCore0 = (argv) => (PIN ? ['taskset', ['-c', '0', ...argv]] : [argv[0], argv.slice(1)]);

// ---------------------------------------------------------------------------------------------
// ZooKeeper: one session per server writes the whole ARCUS layout and owns the ephemeral nodes.

function connectZk(address) {
  const client = zookeeper.createClient(address, {
    sessionTimeout: BENCH_SESSION_TIMEOUT_MS,
    spinDelay: 100,
    retries: 2,
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ZooKeeper session with ${address} within 15 s`)), 15_000);
    client.once('connected', () => {
      clearTimeout(timer);
      resolve(client);
    });
    client.connect();
  });
}

function create(client, path, data, mode = zookeeper.CreateMode.PERSISTENT) {
  return new Promise((resolve, reject) => {
    client.create(path, data === undefined ? null : Buffer.from(data, 'utf8'), mode, (err) =>
      err ? reject(new Error(`create ${path}: ${err}`)) : resolve(),
    );
  });
}

/** Issues the creates CREATE_BATCH at a time, all of a batch in flight at once. */
async function createAll(client, items) {
  for (let i = 0; i < items.length; i += CREATE_BATCH) {
    await Promise.all(items.slice(i, i + CREATE_BATCH).map(([path, data, mode]) => create(client, path, data, mode)));
  }
}

async function populate(client) {
  for (const path of [
    '/arcus',
    '/arcus/cache_list',
    '/arcus/cache_server_mapping',
    '/arcus/cache_server_log',
    '/arcus/client_list',
  ])
    await create(client, path);
  const codes = Array.from({ length: SERVICE_CODES }, (_, i) => svc(i));
  await createAll(
    client,
    codes.map((code) => [`/arcus/cache_list/${code}`, serviceCodeData(code)]),
  );
  const nodes = codes.flatMap((code, c) =>
    Array.from({ length: NODES }, (_, n) => ({ code, port: 20000 + c * NODES + n })),
  );
  await createAll(
    client,
    nodes.map(({ port }) => [`/arcus/cache_server_mapping/127.0.0.1:${port}`, mappingData(port)]),
  );
  await createAll(
    client,
    nodes.map(({ code, port }) => [`/arcus/cache_server_mapping/127.0.0.1:${port}/${code}`]),
  );
  await createAll(
    client,
    nodes.map(({ code, port }) => [
      `/arcus/cache_list/${code}/127.0.0.1:${port}-localhost`,
      '64MB',
      zookeeper.CreateMode.EPHEMERAL,
    ]),
  );
}

async function zkPacketsReceived(servers) {
  let sum = 0;
  for (const zk of servers) {
    const m = /^zk_packets_received\s+(\d+)/m.exec(await fourLetterWord(zk.address, 'mntr'));
    if (!m) throw new Error(`no zk_packets_received in mntr of ${zk.address}`);
    sum += Number(m[1]);
  }
  return sum;
}

// ---------------------------------------------------------------------------------------------
// HTTP

/** One request, timed from the call to the last body byte. */
function send(agent, port, method, path, body) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const headers = body === undefined ? {} : { 'Content-Type': 'application/json', 'Content-Length': body.length };
    const req = request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () =>
        resolve({ ms: performance.now() - started, status: res.statusCode, body: Buffer.concat(chunks) }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function sendOk(agent, port, method, path, body) {
  const r = await send(agent, port, method, path, body);
  if (r.status !== 200) throw new Error(`${method} ${path} -> ${r.status}: ${r.body.toString('utf8').slice(0, 300)}`);
  return r;
}

const now = Date.now();
const RANGE = {
  from: new Date(now - 6 * 3600_000).toISOString(),
  to: new Date(now).toISOString(),
  raw: { from: 'now-6h', to: 'now' },
};
const variableBody = (target) => Buffer.from(JSON.stringify({ payload: { target }, range: RANGE }));
const queryBody = (target) => Buffer.from(JSON.stringify({ range: RANGE, targets: [{ refId: 'A', target }] }));

/** The query kinds: each builds one request from the seeded generator and checks its answer (untimed). */
const KINDS = [
  { name: 'variable ensembles', path: '/variable', make: () => 'ensembles', expect: (a) => a.length === ENSEMBLES },
  {
    name: 'variable service_codes',
    path: '/variable',
    make: (r) => `service_codes ensemble=${pickEnsemble(r)}`,
    expect: (a) => a.length === SERVICE_CODES,
  },
  {
    name: 'variable nodes',
    path: '/variable',
    make: (r) => `nodes ensemble=${pickEnsemble(r)} service_code=${pickCode(r)}`,
    expect: (a) => a.length === NODES,
  },
  {
    name: 'variable host_instances (2 svc)',
    path: '/variable',
    make: (r) => {
      const a = Math.floor(r() * SERVICE_CODES);
      const b = SERVICE_CODES === 1 ? a : (a + 1 + Math.floor(r() * (SERVICE_CODES - 1))) % SERVICE_CODES;
      return `host_instances ensemble=${pickEnsemble(r)} service_code=(${svc(a)}|${svc(b)})`;
    },
    expect: (a) => a.length === 1, // every node's hostname is localhost: one localhost:9100
  },
  { name: 'variable scrape', path: '/variable', make: () => 'scrape', expect: (a) => a.length === 1 },
  {
    name: 'query overview (1 svc)',
    path: '/query',
    make: (r) => `overview ensemble=${pickEnsemble(r)} service_code=${pickCode(r)}`,
    expect: (a) => a[0]?.rows?.length === NODES,
  },
  {
    name: 'query service_code_summary',
    path: '/query',
    make: (r) => `service_code_summary ensemble=${pickEnsemble(r)}`,
    expect: (a) => a[0]?.rows?.length === SERVICE_CODES,
  },
];
const pickEnsemble = (r) => ensembleName(Math.floor(r() * ENSEMBLES));
const pickCode = (r) => svc(Math.floor(r() * SERVICE_CODES));
const bodyOf = (kind, r) => (kind.path === '/variable' ? variableBody(kind.make(r)) : queryBody(kind.make(r)));

function check(kind, body, target) {
  const answer = JSON.parse(body.toString('utf8'));
  if (!kind.expect(answer))
    throw new Error(`${kind.name}: unexpected answer to ${target}: ${body.toString('utf8').slice(0, 300)}`);
}

function summary(ms) {
  return { p50: pct(ms, 50), p99: pct(ms, 99), max: Math.max(...ms) };
}

// ---------------------------------------------------------------------------------------------
// Daemon and floor processes

function track(child, what) {
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  child.once('error', (err) => log(`${what}: ${err.message}`));
  return { child, exited, what };
}

async function stopProcess(p) {
  if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill('SIGTERM');
  const timeout = sleep(5000).then(() => 'timeout');
  if ((await Promise.race([p.exited, timeout])) === 'timeout') {
    log(`${p.what} did not stop within 5 s: SIGKILL`);
    p.child.kill('SIGKILL');
    await p.exited;
  }
}

/** The floor: answers every POST, after reading its body, with the same pre-serialized bytes. */
const FLOOR_SOURCE = `
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
const answer = readFileSync(process.argv[1]);
const server = createServer((req, res) => {
  req.on('data', () => undefined);
  req.on('end', () => {
    res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': answer.length });
    res.end(answer);
  });
});
server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)).closeAllConnections());
`;

// ---------------------------------------------------------------------------------------------
// Run

const started = performance.now();
const servers = [];
const clients = [];
let daemon;
let floor;
const dir = mkdtempSync(join(tmpdir(), 'bench-topology-provider-'));
const daemonLog = join(dir, 'daemon.log');

let cleaning;
/** Stops everything this run started; every caller waits for the same clean-up. */
function cleanUp() {
  cleaning ??= (async () => {
    await stopProcess(floor);
    await stopProcess(daemon);
    for (const c of clients) c.close();
    await Promise.all(
      servers.map((s) => s.stop().catch((err) => log(`stopping ZooKeeper ${s.address}: ${err.message}`))),
    );
    rmSync(dir, { recursive: true, force: true });
  })();
  return cleaning;
}
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    interrupted = true;
    log(`${signal}: stopping everything`);
    cleanUp().finally(() => process.exit(130));
  });
}
// Last resort when this process ends without the clean-up (the test kit kills its ZooKeepers itself).
process.on('exit', () => {
  for (const p of [floor, daemon])
    if (p && p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
});

let result;
try {
  const total = ENSEMBLES * SERVICE_CODES * NODES;
  log(`${pinNote}`);
  log(`starting ${ENSEMBLES} ZooKeeper servers`);
  const settled = await Promise.allSettled(Array.from({ length: ENSEMBLES }, () => startZooKeeper()));
  for (const s of settled) if (s.status === 'fulfilled') servers.push(s.value);
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  log(`ZooKeeper servers ${servers.map((zk) => `${zk.address} (pid ${zk.pid})`).join(', ')}`);

  log(`writing ${ENSEMBLES} x ${SERVICE_CODES} service codes x ${NODES} nodes = ${total} nodes`);
  const t0 = performance.now();
  for (const zk of servers) clients.push(await connectZk(zk.address));
  await Promise.all(clients.map((c) => populate(c)));
  const populateS = (performance.now() - t0) / 1000;
  log(`layout written in ${populateS.toFixed(1)} s`);
  // Written on both cores; from now on core 0 is the daemon's (and later the floor's) alone.
  for (const pid of [process.pid, ...servers.map((zk) => zk.pid)]) pinToCore1(pid);

  const port = await freePort();
  const configFile = join(dir, 'config.json');
  const ensembleByName = Object.fromEntries(servers.map((zk, i) => [ensembleName(i), [zk.address]]));
  writeFileSync(
    configFile,
    JSON.stringify(
      { listen: `127.0.0.1:${port}`, ensembleByName, rawRetention: '14d', log: { level: 'warn', filename: daemonLog } },
      null,
      2,
    ),
  );
  const [cmd, cmdArgs] = onCore0([
    process.execPath,
    join(ROOT, 'bin', 'topology-provider'),
    `-config-file=${configFile}`,
  ]);
  const t1 = performance.now();
  daemon = track(spawn(cmd, cmdArgs, { stdio: ['ignore', 'inherit', 'inherit'] }), 'topology-provider');
  log(`topology-provider pid ${daemon.child.pid}, listening on 127.0.0.1:${port}`);

  // Ready: /-/ready, and the last ensemble's last service code fully read.
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const lastE = ensembleName(ENSEMBLES - 1);
  const lastSvc = svc(SERVICE_CODES - 1);
  for (let i = 0; ; i++) {
    if (daemon.child.exitCode !== null) throw new Error(`topology-provider exited with code ${daemon.child.exitCode}`);
    try {
      if ((await send(agent, port, 'GET', '/-/ready')).status === 200) {
        const codes = await send(agent, port, 'POST', '/variable', variableBody(`service_codes ensemble=${lastE}`));
        const nodes = await send(
          agent,
          port,
          'POST',
          '/variable',
          variableBody(`nodes ensemble=${lastE} service_code=${lastSvc}`),
        );
        if (
          codes.status === 200 &&
          nodes.status === 200 &&
          JSON.parse(codes.body).length === SERVICE_CODES &&
          JSON.parse(nodes.body).length === NODES
        )
          break;
      }
    } catch {
      // not listening yet
    }
    if (i > 600) throw new Error('topology-provider not ready with the whole topology within 60 s');
    await sleep(100);
  }
  const readyS = (performance.now() - t1) / 1000;

  const zkReads = async () => {
    const text = (await sendOk(agent, port, 'GET', '/metrics')).body.toString('utf8');
    const values = [...text.matchAll(/^cachemon_zookeeper_requests_total\{ensemble="[^"]*"\} (\S+)$/gm)].map((m) =>
      Number(m[1]),
    );
    if (values.length !== ENSEMBLES)
      throw new Error(`expected ${ENSEMBLES} cachemon_zookeeper_requests_total series, found ${values.length}`);
    return values.reduce((a, b) => a + b, 0);
  };
  const readsAtReady = await zkReads();
  log(`daemon ready with the whole topology after ${readyS.toFixed(1)} s (${readsAtReady} ZooKeeper reads)`);

  // --- Load: warm-up, latency per kind, throughput. ZooKeeper reads are counted around all three.
  const readsBefore = await zkReads();
  const packetsBefore = await zkPacketsReceived(servers);
  let loadRequests = 0;
  const rng = seededRandom(SEED);

  log(`warm-up: ${WARMUP} requests, mixed kinds`);
  for (let i = 0; i < WARMUP; i++) {
    const kind = KINDS[i % KINDS.length];
    await sendOk(agent, port, 'POST', kind.path, bodyOf(kind, rng));
    loadRequests++;
  }

  // Kinds interleaved (a shuffled round of every kind, REQUESTS rounds), so that what a fresh
  // process still compiles or collects is spread over every kind instead of charged to the first.
  const latency = [];
  const allMs = [];
  let nodesAnswer;
  const perKind = KINDS.map(() => ({ ms: [], bytes: 0 }));
  const order = KINDS.map((_, i) => i);
  for (let round = 0; round < REQUESTS; round++) {
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(rng() * (i + 1));
      [order[i], order[j]] = [order[j], order[i]];
    }
    for (const k of order) {
      const kind = KINDS[k];
      const target = kind.make(rng);
      const body = kind.path === '/variable' ? variableBody(target) : queryBody(target);
      const r = await sendOk(agent, port, 'POST', kind.path, body);
      perKind[k].ms.push(r.ms);
      perKind[k].bytes += r.body.length;
      check(kind, r.body, target);
      if (kind.name === 'variable nodes' && nodesAnswer === undefined) nodesAnswer = r.body;
    }
  }
  for (const [k, kind] of KINDS.entries()) {
    const { ms, bytes } = perKind[k];
    loadRequests += REQUESTS;
    allMs.push(...ms);
    const s = { kind: kind.name, requests: REQUESTS, ...summary(ms), bytes: Math.round(bytes / REQUESTS) };
    latency.push(s);
    log(`${kind.name}: p50 ${s.p50.toFixed(3)} p99 ${s.p99.toFixed(3)} max ${s.max.toFixed(1)} ms, ${s.bytes} bytes`);
  }
  const latencyAll = { kind: 'all', requests: allMs.length, ...summary(allMs) };

  log(`throughput: concurrency ${CONCURRENCY}, mixed kinds, ${SECONDS} s`);
  const pool = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const cpuBefore = cpuMs(daemon.child.pid);
  const selfBefore = process.cpuUsage();
  const tStart = performance.now();
  const deadline = tStart + SECONDS * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < deadline) {
        const kind = KINDS[Math.floor(rng() * KINDS.length)];
        await sendOk(pool, port, 'POST', kind.path, bodyOf(kind, rng));
        done++;
      }
    }),
  );
  const elapsedS = (performance.now() - tStart) / 1000;
  const daemonCpu = cpuMs(daemon.child.pid) - cpuBefore;
  const self = process.cpuUsage(selfBefore);
  pool.destroy();
  loadRequests += done;
  const throughput = {
    concurrency: CONCURRENCY,
    seconds: elapsedS,
    requests: done,
    perSecond: done / elapsedS,
    daemonCpuMsPerRequest: daemonCpu / done,
    daemonCpuPercent: daemonCpu / 10 / elapsedS,
    loadGeneratorCpuPercent: (self.user + self.system) / 1000 / 10 / elapsedS,
  };
  log(
    `throughput: ${throughput.perSecond.toFixed(0)} req/s, daemon ${throughput.daemonCpuMsPerRequest.toFixed(3)} CPU ms/request`,
  );

  const readsAfter = await zkReads();
  const packetsAfter = await zkPacketsReceived(servers);
  const zk = {
    readsAtReady,
    readsDuringLoad: readsAfter - readsBefore,
    loadRequests,
    readsPerRequest: (readsAfter - readsBefore) / loadRequests,
    serverPacketsDuringLoad: packetsAfter - packetsBefore,
  };
  const rss = { hwmMb: statusKb(daemon.child.pid, 'VmHWM') / 1024, rssMb: statusKb(daemon.child.pid, 'VmRSS') / 1024 };
  // What the heap holds, from the daemon's own nodejs_* metrics: live objects vs what V8 keeps.
  {
    const text = (await sendOk(agent, port, 'GET', '/metrics')).body.toString('utf8');
    const read = (name) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN) / 1024 / 1024;
    rss.heapUsedMb = read('nodejs_heap_size_used_bytes');
    rss.heapTotalMb = read('nodejs_heap_size_total_bytes');
    rss.externalMb = read('nodejs_external_memory_bytes');
  }
  agent.destroy();

  // --- Floor: the same closed loop against a bare node:http server answering the nodes answer's bytes.
  log(`floor: bare node:http answering ${nodesAnswer.length} fixed bytes`);
  const answerFile = join(dir, 'floor-answer.json');
  writeFileSync(answerFile, nodesAnswer);
  const [fcmd, fargs] = onCore0([process.execPath, '--input-type=module', '-e', FLOOR_SOURCE, answerFile]);
  floor = track(spawn(fcmd, fargs, { stdio: ['ignore', 'pipe', 'inherit'] }), 'floor');
  const floorPort = await new Promise((resolve, reject) => {
    let text = '';
    floor.child.stdout.on('data', (chunk) => {
      text += chunk;
      if (text.includes('\n')) resolve(Number(text.trim()));
    });
    floor.exited.then(() => reject(new Error('floor server exited before listening')));
  });
  const floorAgent = new Agent({ keepAlive: true, maxSockets: 1 });
  const nodesKind = KINDS.find((k) => k.name === 'variable nodes');
  for (let i = 0; i < WARMUP; i++) await sendOk(floorAgent, floorPort, 'POST', '/variable', bodyOf(nodesKind, rng));
  const floorMs = [];
  for (let i = 0; i < REQUESTS; i++)
    floorMs.push((await sendOk(floorAgent, floorPort, 'POST', '/variable', bodyOf(nodesKind, rng))).ms);
  floorAgent.destroy();
  const floorResult = {
    kind: 'floor (bare node:http)',
    requests: REQUESTS,
    ...summary(floorMs),
    bytes: nodesAnswer.length,
  };

  result = {
    at: new Date().toISOString(),
    sizes: { ensembles: ENSEMBLES, serviceCodes: SERVICE_CODES, nodesPerServiceCode: NODES, nodes: total },
    options: { requests: REQUESTS, warmup: WARMUP, concurrency: CONCURRENCY, seconds: SECONDS, seed: SEED },
    pinned: PIN,
    pinNote,
    populateS,
    readyS,
    latency,
    latencyAll,
    floor: floorResult,
    throughput,
    zk,
    rss,
  };
} catch (err) {
  if (interrupted) await cleanUp().finally(() => process.exit(130));
  log(`failed: ${err.stack ?? err}`);
  try {
    const tail = readFileSync(daemonLog, 'utf8').trim().split('\n').slice(-10).join('\n');
    if (tail) log(`last lines of the daemon log:\n${tail}`);
  } catch {
    // no log yet
  }
  process.exitCode = 1;
} finally {
  log('stopping the daemon, the floor and the ZooKeeper servers');
  await cleanUp();
}
if (result === undefined) process.exit(process.exitCode ?? 1);

// ---------------------------------------------------------------------------------------------
// Report

const r = result;
const f = (v, w, d = 3) => (typeof v === 'number' ? v.toFixed(d) : String(v)).padStart(w);
console.log(
  `\ntopology provider benchmark (${r.sizes.ensembles} ensembles x ${r.sizes.serviceCodes} service codes x ${r.sizes.nodesPerServiceCode} nodes = ${r.sizes.nodes} nodes; ` +
    `${REQUESTS} requests per kind after ${WARMUP} warm-up, one at a time over one keep-alive connection)`,
);
console.log(`${r.pinNote}`);
console.log(
  `layout written in ${r.populateS.toFixed(1)} s; daemon ready with the whole topology after ${r.readyS.toFixed(1)} s (${r.zk.readsAtReady} ZooKeeper reads)\n`,
);
console.log('kind                              requests   p50 ms   p99 ms   max ms   bytes');
const row = (s) =>
  console.log(
    `${s.kind.padEnd(32)}  ${String(s.requests).padStart(8)}  ${f(s.p50, 7)}  ${f(s.p99, 7)}  ${f(s.max, 7, 2)}  ${String(s.bytes ?? '').padStart(6)}`,
  );
for (const s of r.latency) row(s);
row(r.latencyAll);
row(r.floor);
const t = r.throughput;
console.log(
  `\nthroughput (concurrency ${t.concurrency}, mixed kinds, ${t.seconds.toFixed(1)} s): ${t.perSecond.toFixed(0)} req/s; daemon ${t.daemonCpuMsPerRequest.toFixed(3)} CPU ms/request ` +
    `(${t.daemonCpuPercent.toFixed(0)} % of a core); load generator ${t.loadGeneratorCpuPercent.toFixed(0)} % of a core`,
);
console.log(
  `ZooKeeper reads during load (daemon counter): ${r.zk.readsDuringLoad} over ${r.zk.loadRequests} requests = ${r.zk.readsPerRequest.toFixed(4)} per request; ` +
    `server packets during load, incl. pings: ${r.zk.serverPacketsDuringLoad}`,
);
console.log(
  `daemon memory: VmHWM ${r.rss.hwmMb.toFixed(1)} MB, VmRSS ${r.rss.rssMb.toFixed(1)} MB at the end; ` +
    `JS heap ${r.rss.heapUsedMb.toFixed(1)} MB used of ${r.rss.heapTotalMb.toFixed(1)} MB, external ${r.rss.externalMb.toFixed(1)} MB`,
);
console.log(
  `floor p50/p99 ${r.floor.p50.toFixed(3)}/${r.floor.p99.toFixed(3)} ms vs daemon variable nodes ${r.latency[2].p50.toFixed(3)}/${r.latency[2].p99.toFixed(3)} ms (same answer size)`,
);

console.log('\ngoal: p99 < 2 ms (variable and query), 0 ZooKeeper reads per request');
let pass = true;
for (const s of r.latency) {
  const ok = s.p99 < 2;
  pass &&= ok;
  console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${s.kind}: p99 ${s.p99.toFixed(3)} ms`);
}
const zkOk = r.zk.readsDuringLoad === 0;
pass &&= zkOk;
console.log(
  `  ${zkOk ? 'PASS' : 'FAIL'}  ZooKeeper reads per request: ${r.zk.readsPerRequest.toFixed(4)} (${r.zk.readsDuringLoad} reads)`,
);
r.goalsMet = pass;
r.totalS = (performance.now() - started) / 1000;
mkdirSync(dirname(OUT), { recursive: true });
writeFileSync(OUT, JSON.stringify(r, null, 2));
console.log(`\nresults: ${OUT} (run took ${r.totalS.toFixed(0)} s)`);
process.exit(0);
