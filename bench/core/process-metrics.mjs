#!/usr/bin/env node
// What reading the daemons' process_* and nodejs_* metrics costs per scrape, and its fd count
// (process_open_fds) two ways side by side: listing /proc/self/fd (the baseline, what prom-client
// does) and the directory's size (one stat(2); Linux 6.2 and later give the count there).
// Holds --sockets loopback connections open first, as an exporter holds one per node.
//   node bench/core/process-metrics.mjs [--sockets=110] [--calls=2000] [--rounds=5]
// Run `npx tsc -b` first: it uses the build of packages/core.
import { readdirSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { parseArgs } from '../lib/args.mjs';
import { countOpenFds, ProcessMetrics } from '../../packages/core/dist/src/process-metrics.js';

const args = parseArgs(process.argv.slice(2), import.meta.url);
const SOCKETS = Number(args.sockets ?? 110);
const CALLS = Number(args.calls ?? 2000);
const ROUNDS = Number(args.rounds ?? 5);
for (const [name, value] of [['sockets', SOCKETS], ['calls', CALLS], ['rounds', ROUNDS]]) {
  if (!Number.isInteger(value) || value < (name === 'sockets' ? 0 : 1)) throw new Error(`--${name}=${args[name]}: not a whole number${name === 'sockets' ? '' : ' above 0'}`);
}

const accepted = [];
const server = createServer((socket) => accepted.push(socket));
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const clients = await Promise.all(
  Array.from({ length: SOCKETS }, () => new Promise((resolve, reject) => {
    const socket = connect(server.address().port, '127.0.0.1', () => resolve(socket));
    socket.on('error', reject);
  })),
);

while (accepted.length < SOCKETS) await new Promise((resolve) => setTimeout(resolve, 5));

const listing = () => readdirSync('/proc/self/fd').length - 1;
const metrics = new ProcessMetrics();
const ways = [
  ['fd count by listing /proc/self/fd', listing],
  ['fd count by stat of /proc/self/fd', countOpenFds],
  ['process metrics text (whole read)', () => metrics.text().length],
];

const fds = listing();
if (countOpenFds() !== fds) throw new Error(`the two counts differ: listing ${fds}, stat ${countOpenFds()}`);
console.log(`${fds} open fds (${SOCKETS} loopback connections, both ends), ${CALLS} calls per round, ${ROUNDS} rounds, interleaved; median of the rounds`);
const perCall = new Map(ways.map(([name]) => [name, []]));
for (let round = 0; round < ROUNDS + 1; round++) {
  for (const [name, read] of ways) {
    // Each call timed on its own, the event loop turning between calls as between scrapes: a read
    // schedules an immediate (the event-loop lag), which piles up in a loop that never yields.
    let ns = 0n;
    for (let i = 0; i < CALLS; i++) {
      const start = process.hrtime.bigint();
      read();
      ns += process.hrtime.bigint() - start;
      await new Promise(setImmediate);
    }
    const us = Number(ns) / 1000 / CALLS;
    if (round > 0) perCall.get(name).push(us); // round 0 warms up
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [name, list] of perCall) console.log(`${name.padEnd(36)} ${median(list).toFixed(1).padStart(8)} us per call`);
const ratio = median(perCall.get(ways[0][0])) / median(perCall.get(ways[1][0]));
console.log(`stat is ${ratio.toFixed(0)}x faster than the listing`);

metrics.close();
for (const socket of [...clients, ...accepted]) socket.destroy();
server.close();
