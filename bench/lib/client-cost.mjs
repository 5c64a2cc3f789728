#!/usr/bin/env node
// What the measuring client itself adds to a timed HTTP exchange: the same node:http server (in a
// process of its own, answering every GET with a fixed body) asked through node:http's client and
// through the bare client of bare-http.mjs, alternated in blocks, paced as the exporter benchmarks
// pace their scrapes. Prints p50/p90/p99 of each and their difference.
//
//   node bench/lib/client-cost.mjs [--requests=1000] [--pace-ms=50] [--bytes=20000]
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from './args.mjs';
import { BareHttpClient, NodeHttpClient } from './bare-http.mjs';
import { percentile } from './process.mjs';

const args = parseArgs(process.argv.slice(2), import.meta.url);
const REQUESTS = Number(args.requests ?? 1000);
const PACE_MS = Number(args['pace-ms'] ?? 50);
const BYTES = Number(args.bytes ?? 20_000);

if (args.serve === 'true') {
  const body = Buffer.alloc(BYTES, 'a');
  const server = createServer((req, res) => {
    res.setHeader('Content-Type', 'text/plain; version=0.0.4');
    res.setHeader('Content-Length', body.length);
    res.end(body);
  });
  server.listen(0, '127.0.0.1', () => process.send?.(server.address().port));
} else {
  const child = fork(process.argv[1], ['--serve', `--bytes=${BYTES}`]);
  try {
    const port = await new Promise((resolve) => child.once('message', resolve));
    const node = new NodeHttpClient('127.0.0.1', port);
    const viaNode = async () => {
      const { ms, body } = await node.get('/metrics');
      if (body.length !== BYTES) throw new Error(`node:http read ${body.length} bytes`);
      return ms;
    };
    const bare = new BareHttpClient('127.0.0.1', port);
    const viaBare = async () => {
      const { ms, body } = await bare.get('/metrics');
      if (body.length !== BYTES) throw new Error(`bare client read ${body.length} bytes`);
      return ms;
    };
    for (let i = 0; i < 50; i++) {
      await viaNode();
      await viaBare();
    }
    const times = { 'node:http': [], bare: [] };
    for (let block = 0; block < REQUESTS / 10; block++) {
      const order = block % 2 === 0 ? ['node:http', 'bare'] : ['bare', 'node:http'];
      for (const name of order) {
        for (let i = 0; i < 10; i++) {
          await sleep(PACE_MS);
          times[name].push(await (name === 'bare' ? viaBare() : viaNode()));
        }
      }
    }
    bare.close();
    node.close();
    const row = (name) =>
      `${name.padEnd(9)}  ${[50, 90, 99].map((p) => percentile(times[name], p).toFixed(3).padStart(6)).join('  ')}`;
    console.log(
      `client     p50 ms  p90 ms  p99 ms   (${REQUESTS} GETs each of a ${BYTES}-byte answer, ${PACE_MS} ms apart, alternated in blocks of 10)`,
    );
    console.log(row('node:http'));
    console.log(row('bare'));
    const diff = (p) => (percentile(times['node:http'], p) - percentile(times.bare, p)).toFixed(3);
    console.log(`node:http's client adds ${diff(50)} ms at the p50, ${diff(99)} ms at the p99`);
  } finally {
    child.kill();
  }
}
