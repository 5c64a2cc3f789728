#!/usr/bin/env node
// Hosts N ARCUS test doubles for the cache exporter benchmark, in a process of its own, so that
// neither the exporter nor the floor client share an event loop with the servers they measure.
//
//   node bench/cache-exporter/doubles.mjs --zk=127.0.0.1:2181 --nodes=100 --prefixes=50 [--per-code=100] [--traffic]
//        [--traffic-ms=50] [--first-code=0]
//
// Starts the doubles (max_stats_prefixes above P, stats detail on), fills each with P prefixes
// (p<i>:k1, p<i>:k2 kv, p<i>:l1 list, p<i>:b1 btree; plus one key without prefix), runs four reads
// per prefix (get hit, get miss, lop get, bop get) so `stats detail dump` has lines, maps them in
// ZooKeeper under service codes bench0, bench1, ... (per-code nodes each) and registers each on its
// own session like a real server. With --traffic, every double's request counters (`cmd_*`, hits,
// misses, bytes read and written) then grow every --traffic-ms as if it served a mixed load, so that every
// node's counters differ between two scrapes, as on a production cluster. Then prints one JSON line on stdout ({"ready":true,"nodes":[...]}) and waits.
// --first-code=K: service codes bench<K>, bench<K+1>, ...: several doubles processes side by side
// (the first, K=0, removes the mappings a killed earlier run left).
// "stop" on stdin, stdin closing, SIGTERM or SIGINT: unregister, unmap, exit 0.
import { connect } from 'node:net';
import { createInterface } from 'node:readline';
import { ArcusZk, startArcusDoubles } from '../../packages/testkit/dist/src/index.js';
import { parseArgs } from '../lib/args.mjs';

const args = parseArgs(process.argv.slice(2), import.meta.url);
const ZK = args.zk;
const N = Number(args.nodes ?? 10);
const P = Number(args.prefixes ?? 0);
const PER_CODE = Number(args['per-code'] ?? 100);
const HEARTBEAT_MS = Number(args['heartbeat-ms'] ?? 3000);
const CONCURRENCY = 32;
const TRAFFIC = args.traffic === 'true';
const TRAFFIC_MS = Number(args['traffic-ms'] ?? 50);
const FIRST_CODE = Number(args['first-code'] ?? 0);
if (!ZK || !(N > 0) || !(P >= 0) || !(TRAFFIC_MS > 0) || !Number.isInteger(FIRST_CODE) || FIRST_CODE < 0) {
  process.stderr.write(
    'usage: doubles.mjs --zk=host:port --nodes=N --prefixes=P [--per-code=100] [--heartbeat-ms=3000] [--traffic-ms=50] [--first-code=0]\n',
  );
  process.exit(2);
}

const log = (msg) => process.stderr.write(`[doubles] ${msg}\n`);

/**
 * fn again when ZooKeeper lost the connection under it (the client reconnects within the session):
 * right after the previous configuration's hundreds of sessions close, the server can drop a
 * client for a moment. For idempotent steps only (map, unmap, create a service code).
 */
async function retrying(what, fn) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const code = err?.cause?.getCode?.();
      // CONNECTION_LOSS (-4) and OPERATION_TIMEOUT (-7): the request may or may not have run.
      if (attempt >= 5 || (code !== -4 && code !== -7)) throw err;
      log(`${what}: ${err.message}; retrying (${attempt})`);
      await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
    }
  }
}

/** Runs fn over items with at most `limit` in flight. */
async function pool(items, limit, fn) {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i], i);
    }
  });
  await Promise.all(workers);
}

const zkCall = (fn) => new Promise((resolve, reject) => fn((err, value) => (err ? reject(err) : resolve(value))));

let doubles = [];
let arcus;
let stopping;

async function stop(code = 0) {
  // However it ends (a dead ZooKeeper session retries every unmap), it ends within 15 s.
  forceExit();
  stopping ??= (async () => {
    const started = Date.now();
    await Promise.allSettled(doubles.map((d) => d.stop()));
    if (arcus) {
      await pool(doubles, CONCURRENCY, (d) =>
        retrying(`unmap ${d.address}`, () => arcus.unmapServer(d.address)).catch(() => undefined),
      );
      await arcus.close().catch(() => undefined);
    }
    log(`stopped ${doubles.length} doubles in ${Date.now() - started} ms`);
    process.exit(code);
  })();
  return stopping;
}
process.on('SIGTERM', () => void stop(0));
process.on('SIGINT', () => void stop(0));
// A forced exit if a ZooKeeper close hangs.
const forceExit = () => setTimeout(() => process.exit(1), 15_000).unref();
process.on('SIGTERM', forceExit);

/** Reads issued over the wire so the doubles' detail statistics (stats detail dump) have lines. */
function exercise(double, prefixes) {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: double.host, port: double.port });
    let received = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`${double.address}: no answer to the detail warm-up`));
    }, 60_000);
    socket.on('error', reject);
    socket.on('data', (chunk) => {
      // Only the tail matters: VERSION comes last.
      received = (received + chunk.toString('latin1')).slice(-64);
      if (received.includes('VERSION ')) {
        clearTimeout(timer);
        socket.end();
        resolve();
      }
    });
    let text = '';
    for (const p of prefixes) {
      text += `get ${p}:k1\r\nget ${p}:missing\r\nlop get ${p}:l1 0..10\r\nbop get ${p}:b1 0..1000000000\r\n`;
    }
    text += 'get nokey\r\nversion\r\n';
    socket.write(text);
  });
}

async function main() {
  const started = Date.now();
  doubles = await startArcusDoubles(N, {
    maxStatsPrefixes: Math.max(1000, P + 10),
    detailEnabled: true,
    heartbeatIntervalMs: HEARTBEAT_MS,
  });
  arcus = await ArcusZk.connect(ZK);

  // A private ZooKeeper, but an earlier run may have been killed: drop its leftover mappings.
  for (const root of FIRST_CODE === 0 ? ['/arcus'] : []) {
    const path = `${root}/cache_server_mapping`;
    const exists = await zkCall((cb) => arcus.client.exists(path, cb));
    if (!exists) continue;
    const stale = await zkCall((cb) => arcus.client.getChildren(path, cb));
    if (stale.length > 0) log(`removing ${stale.length} stale mappings`);
    await pool(stale, CONCURRENCY, (address) => retrying(`unmap ${address}`, () => arcus.unmapServer(address)));
  }

  const codes = Array.from({ length: Math.ceil(N / PER_CODE) }, (_, i) => `bench${FIRST_CODE + i}`);
  for (const code of codes) await retrying(`service code ${code}`, () => arcus.createServiceCode(code));
  const serviceCodeOf = (i) => codes[Math.floor(i / PER_CODE)];
  await pool(doubles, CONCURRENCY, (d, i) =>
    retrying(`map ${d.address}`, () => arcus.mapServer(d.address, serviceCodeOf(i))),
  );
  const mappedAt = Date.now();

  const prefixes = Array.from({ length: P }, (_, i) => `p${i}`);
  const keys = [{ key: 'nokey' }];
  for (const p of prefixes) {
    keys.push(
      { key: `${p}:k1` },
      { key: `${p}:k2`, bytes: 100 },
      { key: `${p}:l1`, type: 'list' },
      { key: `${p}:b1`, type: 'btree' },
    );
  }
  // One double at a time, yielding between them: 500 doubles x 500 prefixes is ~15 s of work, and
  // the ZooKeeper session (at most 10 s with the test kit's tickTime of 500 ms) must keep its pings.
  for (const d of doubles) {
    d.populate(keys);
    await new Promise((resolve) => setImmediate(resolve));
  }
  const populatedAt = Date.now();
  await pool(doubles, 16, (d) => exercise(d, prefixes));
  const exercisedAt = Date.now();

  await pool(doubles, CONCURRENCY, (d) => d.register(arcus));
  for (const d of doubles) d.heartbeat();
  const registeredAt = Date.now();
  log(
    `${N} doubles, ${P} prefixes, ${codes.length} service code(s): started+mapped ${mappedAt - started} ms, ` +
      `populated ${populatedAt - mappedAt} ms, detail warm-up ${exercisedAt - populatedAt} ms, registered ${registeredAt - exercisedAt} ms`,
  );
  process.stdout.write(
    `${JSON.stringify({
      ready: true,
      pid: process.pid,
      setupMs: registeredAt - started,
      rssMB: Math.round(process.memoryUsage().rss / 1048576),
      serviceCodes: codes,
      nodes: doubles.map((d, i) => ({ address: d.address, serviceCode: serviceCodeOf(i) })),
    })}\n`,
  );

  if (TRAFFIC) {
    // A mixed load of a few thousand requests a second per node: key-value, list, set, b+tree.
    const ops = [
      ['get', ['hits', 'misses']],
      ['set', []],
      ['delete', ['hits', 'misses']],
      ['incr', ['hits', 'misses']],
      ['lop_insert', ['hits', 'misses']],
      ['lop_get', ['elem_hits', 'none_hits', 'misses']],
      ['sop_exist', ['hits', 'misses']],
      ['bop_get', ['elem_hits', 'none_hits', 'misses']],
      ['bop_insert', ['hits', 'misses']],
    ];
    const tick = setInterval(() => {
      for (const d of doubles) {
        const counts = {};
        let requests = 0;
        for (const [op, outcomes] of ops) {
          const n = 1 + Math.floor(Math.random() * 200);
          requests += n;
          counts[`cmd_${op}`] = n;
          for (const outcome of outcomes) counts[`${op}_${outcome}`] = Math.floor(Math.random() * n);
        }
        counts.bytes_read = requests * 60;
        counts.bytes_written = requests * 140;
        d.addTraffic(counts);
      }
    }, TRAFFIC_MS);
    tick.unref();
  }

  const input = createInterface({ input: process.stdin });
  input.on('line', (line) => {
    if (line.trim() === 'stop') void stop(0);
    else if (line.trim() === 'cpu') process.stdout.write(`${JSON.stringify({ cpu: process.cpuUsage() })}\n`);
  });
  input.on('close', () => void stop(0));
}

main().catch((err) => {
  log(`failed: ${err?.stack ?? err}`);
  void stop(1);
});
