#!/usr/bin/env node
// What the exporter's renderer costs a /metrics scrape, without sockets, servers or HTTP: N nodes'
// `stats` replies (the captured ARCUS 1.15.0 reply, its counters moving every scrape as under
// traffic), each node's settings and ZooKeeper status, and QoS results of which two nodes' change
// per scrape (probes every 5 s, scrapes every 100 ms). Per scrape it times
//
//   accept:  NodeMetricsRenderer.acceptStats() of every reply, as the collector calls it when each
//            reply arrives (matching, rewriting, and compressing the streamed families);
//   prepare: NodeMetricsRenderer.prepareQos(), which the exporter calls while the nodes are asked
//            (the QoS families compressed ahead; 0 for a checkout without it);
//   render:  NodeMetricsRenderer.render() into a gzipped body, what is left after the last reply.
//
// With --baseline=DIR (a built checkout, e.g. the worktree alternate.mjs makes), the same replies
// go to that checkout's renderer too, in alternated blocks, and both are printed side by side.
//
//   node bench/cache-exporter/render.mjs [--nodes=100] [--scrapes=600] [--block=50] [--baseline=DIR]
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from '../lib/args.mjs';
import { percentile } from '../lib/process.mjs';
import { formatTable } from '../lib/table.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = parseArgs(process.argv.slice(2), import.meta.url);
for (const key of Object.keys(args)) {
  if (!['nodes', 'scrapes', 'block', 'baseline'].includes(key)) throw new Error(`unknown option --${key}`);
}
const NODES = Number(args.nodes ?? 100);
const SCRAPES = Number(args.scrapes ?? 600);
const BLOCK = Number(args.block ?? 50);
for (const [name, value] of [['nodes', NODES], ['scrapes', SCRAPES], ['block', BLOCK]]) {
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a whole number of at least 1, not ${args[name]}`);
}
const WARMUP = Math.min(200, Math.floor(SCRAPES / 3));

const { seededRandom } = await import(pathToFileURL(join(ROOT, 'packages/testkit/dist/src/index.js')).href);

async function load(tree) {
  const exporter = await import(pathToFileURL(join(tree, 'packages/cache-exporter/dist/src/index.js')).href);
  const core = await import(pathToFileURL(join(tree, 'packages/core/dist/src/index.js')).href);
  return { NodeMetricsRenderer: exporter.NodeMetricsRenderer, ExpositionBuffer: core.ExpositionBuffer, GzipStream: core.GzipStream };
}

const FIXTURES = join(ROOT, 'packages/testkit/fixtures/arcus-1.15.0');
const entries = (file) =>
  readFileSync(join(FIXTURES, file), 'latin1')
    .split('\r\n')
    .filter((line) => line.startsWith('STAT '))
    .map((line) => {
      const [, name, ...value] = line.split(' ');
      return [name, value.join(' ')];
    });

// The same replies for both sides, run after run.
const random = seededRandom(20261127);

const nodes = Array.from({ length: NODES }, (_, i) => ({
  serviceCode: `bench${Math.floor(i / 100)}`,
  node: `127.0.0.1:${20000 + i}`,
  hostname: `cache-host-${i}`,
  live: true,
}));
const fields = nodes.map(() => entries('01-stats.raw'));
const settings = nodes.map(() => entries('02-stats-settings.raw'));
const zookeeper = nodes.map(() => entries('04-stats-zookeeper.raw'));
const qosResult = () => ({
  at: Date.now(),
  results: [
    { probe: 'kv_set', ok: true, seconds: random() / 1000 },
    { probe: 'kv_get', ok: true, seconds: random() / 1000 },
  ],
});
const qos = nodes.map(() => qosResult());
const MOVING = /^(cmd_|get_|set_|incr_|decr_|delete_|touch_|bytes|total_items|curr_items|.*_hits$|.*_misses$|rusage_)/;

/** The next scrape's replies: most counters move, as under traffic; two nodes have new QoS results. */
function nextScrape() {
  for (const list of fields) {
    for (const field of list) {
      if (!MOVING.test(field[0]) || random() >= 0.7) continue;
      field[1] = field[0].startsWith('rusage_') ? (Number(field[1]) + 0.001).toFixed(6) : String(Number(field[1]) + 1 + Math.floor(random() * 50));
    }
  }
  for (let j = 0; j < 2; j++) qos[Math.floor(random() * NODES)] = qosResult();
  return {
    replies: fields.map((list) => Buffer.from(`${list.map(([name, value]) => `STAT ${name} ${value}\r\n`).join('')}END\r\n`, 'latin1')),
    qos: new Map(nodes.map((node, i) => [node, qos[i]])),
    durations: nodes.map(() => random() / 100),
  };
}

function side(name, lib) {
  const renderer = new lib.NodeMetricsRenderer('bench');
  const piece = Buffer.allocUnsafeSlow(256 * 1024);
  const accept = [];
  const prepare = [];
  const render = [];
  let lastBody;
  return {
    name,
    accept,
    prepare,
    render,
    /** The last body's gzipped size and its sample lines (checked: it must inflate). */
    get body() {
      const text = gunzipSync(lastBody).toString();
      return { bytes: lastBody.length, series: text.split('\n').filter((line) => line !== '' && !line.startsWith('#')).length };
    },
    scrape(input, measured) {
      const qosOf = (node) => input.qos.get(node);
      const t0 = performance.now();
      renderer.beginCollection(true);
      const tp = performance.now();
      renderer.prepareQos?.(nodes, qosOf);
      const ta = performance.now();
      const snapshots = nodes.map((node, i) => ({
        node,
        up: true,
        durationSeconds: input.durations[i],
        stats: renderer.acceptStats(node, input.replies[i]),
        settings: settings[i],
        zookeeper: zookeeper[i],
      }));
      const t1 = performance.now();
      const stream = new lib.GzipStream();
      const out = new lib.ExpositionBuffer(piece.length, piece, stream);
      renderer.render(snapshots, out, qosOf);
      const t2 = performance.now();
      out.end();
      const parts = stream.endParts();
      if (measured) {
        accept.push(tp - t0 + (t1 - ta));
        prepare.push(ta - tp);
        render.push(t2 - t1);
        lastBody = Buffer.concat(parts);
      }
    },
  };
}

const sides = [side('this checkout', await load(ROOT))];
if (args.baseline !== undefined) sides.unshift(side(`baseline ${basename(resolve(args.baseline))}`, await load(resolve(args.baseline))));

// Blocks of scrapes, the sides alternated (A B B A ...) so that neither always runs warm or first.
for (let scrape = 0, block = 0; scrape < WARMUP + SCRAPES; scrape += BLOCK, block++) {
  const inputs = Array.from({ length: Math.min(BLOCK, WARMUP + SCRAPES - scrape) }, () => nextScrape());
  const order = block % 2 === 0 ? sides : [...sides].reverse();
  for (const each of order) inputs.forEach((input, i) => each.scrape(input, scrape + i >= WARMUP));
}

const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;
const f = (ms) => ms.toFixed(3);
console.log(`renderer, ${NODES} nodes, ${SCRAPES} scrapes after ${WARMUP} (node ${process.version}); ms per scrape`);
console.log('');
console.log(
  formatTable(
    ['side', 'accept mean', 'prepare mean', 'render mean', 'render p50', 'render p99', 'all', 'body KB', 'series'],
    sides.map((each) => {
      const body = each.body;
      return [
        each.name,
        f(mean(each.accept)),
        f(mean(each.prepare)),
        f(mean(each.render)),
        f(percentile(each.render, 50)),
        f(percentile(each.render, 99)),
        f(mean(each.accept) + mean(each.prepare) + mean(each.render)),
        (body.bytes / 1024).toFixed(0),
        String(body.series),
      ];
    }),
    1,
  ),
);
