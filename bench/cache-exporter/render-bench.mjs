#!/usr/bin/env node
// Micro benchmark (not a test) of one /metrics scrape's CPU inside the exporter, in one process:
// N nodes' captured ARCUS `stats` and `stats slabs` replies (their counters changed every scrape)
// handed to the renderer as they would arrive, the body rendered and gzipped. No sockets: what
// the renderer and the body cost, apart from the network and the servers.
//
//   npx tsc -b && node bench/cache-exporter/render-bench.mjs [--nodes=2000] [--scrapes=30] [--no-gzip]
// Prints ms per scrape (median) of accepting the replies, rendering, gzip, the garbage
// collector's time in them, the body size and the heap used after the last scrape.
import { readFileSync } from 'node:fs';
import { PerformanceObserver } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { ExpositionBuffer } from '../../packages/core/dist/src/index.js';
import { parseStats } from '../../packages/arcus/dist/src/index.js';
import { NodeMetricsRenderer } from '../../packages/cache-exporter/dist/src/metrics/render.js';
import { parseArgs } from '../lib/args.mjs';
import { percentile } from '../lib/process.mjs';

const args = parseArgs(process.argv.slice(2), import.meta.url);
const N = Number(args.nodes ?? 2000);
const SCRAPES = Number(args.scrapes ?? 30);
const GZIP = args['no-gzip'] !== 'true';
const SAMPLES = new URL('../../packages/testkit/fixtures/arcus-1.15.0/', import.meta.url);
const sample = (name) => readFileSync(new URL(name, SAMPLES), 'latin1');

const statsText = sample('01-stats.raw');
const slabsText = sample('03-stats-slabs.raw');
const settings = parseStats(sample('02-stats-settings.raw'));
const zookeeper = parseStats(sample('04-stats-zookeeper.raw'));

/** The stats reply with every counter of the node moved on by `tick` (lengths change now and then, as in production). */
function statsReply(i, tick) {
  return Buffer.from(
    statsText.replace(/^(STAT (?:cmd_|get_|bytes_|total_items|curr_items)\w*) (\d+)\r$/gm, (_, head, value) => {
      return `${head} ${Number(value) + i * 7 + tick * (13 + (i % 50))}\r`;
    }),
    'latin1',
  );
}

const nodes = Array.from({ length: N }, (_, i) => ({
  serviceCode: `bench${Math.floor(i / 100)}`,
  node: `127.0.0.1:${20000 + i}`,
  hostname: 'localhost',
  live: true,
  mapped: true,
}));
const slabs = Buffer.from(slabsText, 'latin1');
// Two replies a node, taken in turn: every scrape sees changed counters.
const replies = nodes.map((_, i) => [statsReply(i, 0), statsReply(i, 1)]);

let gcMs = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcMs += entry.duration;
}).observe({ entryTypes: ['gc'] });

const gzipAsync = promisify(gzip);
const renderer = new NodeMetricsRenderer('bench');
const rows = { accept: [], render: [], gzip: [], gc: [] };
let bodyBytes = 0;
let lastBytes = 64 * 1024;
for (let scrape = 0; scrape < SCRAPES + 5; scrape++) {
  const qos = { at: Date.now(), results: [{ probe: 'kv_set', ok: true, seconds: 0.0002 }, { probe: 'kv_get', ok: true, seconds: 0.00015 }] };
  const gc0 = gcMs;
  const t0 = performance.now();
  const snapshots = nodes.map((node, i) => ({
    node,
    up: true,
    durationSeconds: 0.001,
    stats: renderer.acceptStats(node, replies[i][scrape % 2]),
    slabs: renderer.acceptSlabs(node, slabs, false),
    settings,
    zookeeper,
  }));
  const t1 = performance.now();
  const out = new ExpositionBuffer(lastBytes + 64 * 1024);
  renderer.render(snapshots, out, () => qos);
  const body = out.toBuffer();
  lastBytes = body.length;
  const t2 = performance.now();
  if (GZIP) await gzipAsync(body, { level: 1 });
  const t3 = performance.now();
  bodyBytes = body.length;
  if (scrape < 5) continue; // warm-up
  rows.accept.push(t1 - t0);
  rows.render.push(t2 - t1);
  rows.gzip.push(t3 - t2);
  rows.gc.push(gcMs - gc0);
  await new Promise((resolve) => setImmediate(resolve));
}
const med = (values) => percentile(values, 50).toFixed(1);
process.stdout.write(
  `${N} nodes, ${SCRAPES} scrapes: accept ${med(rows.accept)} ms, render ${med(rows.render)} ms, gzip ${med(rows.gzip)} ms (wall), ` +
    `GC ${med(rows.gc)} ms a scrape; body ${(bodyBytes / 1e6).toFixed(1)} MB; heap used ${(process.memoryUsage().heapUsed / 1048576).toFixed(0)} MB\n`,
);
