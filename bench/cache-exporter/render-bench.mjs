#!/usr/bin/env node
// Micro benchmark (not a test) of one /metrics scrape's CPU inside the exporter, in one process:
// N nodes' captured ARCUS `stats` and `stats slabs` replies (their counters changed every scrape)
// handed to the renderer as they would arrive, the body rendered and compressed as the exporter
// does it (GzipBody). No sockets: what the renderer and the body cost, apart from the network
// and the servers. Run it with the node flags of bin/cache-exporter's first line.
//
//   npx tsc -b && node --max-semi-space-size=2 --max-old-space-size=512 --no-allocation-site-pretenuring \
//     bench/cache-exporter/render-bench.mjs [--nodes=2000] [--scrapes=30] [--whole]
// --whole: render into one ExpositionBuffer and gzip it on zlib's thread pool (the way before GzipBody).
// Prints ms per scrape (median) of accepting the replies and of rendering and compressing, and
// the CPU of the whole run (every thread).
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { gunzipSync, gzip } from 'node:zlib';
import { ExpositionBuffer } from '../../packages/core/dist/src/index.js';
import { parseStats } from '../../packages/arcus/dist/src/index.js';
import { GzipBody } from '../../packages/cache-exporter/dist/src/metrics/gzip-body.js';
import { NodeMetricsRenderer } from '../../packages/cache-exporter/dist/src/metrics/render.js';
import { parseArgs } from '../lib/args.mjs';
import { percentile } from '../lib/process.mjs';

const args = parseArgs(process.argv.slice(2), import.meta.url);
const N = Number(args.nodes ?? 2000);
const SCRAPES = Number(args.scrapes ?? 30);
const WHOLE = args.whole === 'true';
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

const gzipAsync = promisify(gzip);
const renderer = new NodeMetricsRenderer('bench');
const rows = { accept: [], render: [] };
let bodyBytes = 0;
let wireBytes = 0;
let lastBytes = 64 * 1024;
let cpu0;
for (let scrape = 0; scrape < SCRAPES + 5; scrape++) {
  const qos = {
    at: Date.now(),
    results: [
      { probe: 'kv_set', ok: true, seconds: 0.0002 },
      { probe: 'kv_get', ok: true, seconds: 0.00015 },
    ],
  };
  if (scrape === 5) cpu0 = process.cpuUsage();
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
  let gzipped;
  if (WHOLE) {
    const out = new ExpositionBuffer(lastBytes + 64 * 1024);
    renderer.render(snapshots, out, () => qos);
    lastBytes = out.byteLength;
    gzipped = await gzipAsync(out.toBuffer(), { level: 1 });
  } else {
    const out = new GzipBody();
    renderer.render(snapshots, out, () => qos);
    gzipped = out.finish();
  }
  const t2 = performance.now();
  if (scrape === 0) bodyBytes = gunzipSync(gzipped).length;
  wireBytes = gzipped.length;
  if (scrape < 5) continue; // warm-up
  rows.accept.push(t1 - t0);
  rows.render.push(t2 - t1);
  await new Promise((resolve) => setImmediate(resolve));
}
const cpu = process.cpuUsage(cpu0);
const med = (values) => percentile(values, 50).toFixed(1);
process.stdout.write(
  `${N} nodes, ${SCRAPES} scrapes${WHOLE ? ', whole body' : ''}: accept ${med(rows.accept)} ms, render and compress ${med(rows.render)} ms (wall, median); ` +
    `CPU ${((cpu.user + cpu.system) / 1000 / SCRAPES).toFixed(1)} ms a scrape; body ${(bodyBytes / 1e6).toFixed(1)} MB, gzipped ${(wireBytes / 1e6).toFixed(2)} MB\n`,
);
