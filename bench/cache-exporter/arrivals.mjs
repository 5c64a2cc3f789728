#!/usr/bin/env node
// When the replies of a floor round arrive, and how much of a collector's work per reply hides
// behind the servers' time. Starts ZooKeeper and N ARCUS doubles (doubles.mjs, with --traffic),
// then measures from this process, alternating three kinds of rounds 100 ms apart:
//   one    `stats` to one node only (the round trip of a single request);
//   plain  `stats` to every node at once, as the floor does (floor.mjs): bytes in, END lines found;
//   busy   the same, with --spin-us of CPU spent on each reply as it arrives (a stand-in for a
//          collector's parsing, rendering and compressing of that reply).
// For each kind it prints the p50 and p99 of: the time to write every request, the arrival of the
// first, middle and last reply, and the round's end. If the per-reply work ran beside the servers'
// own, busy would end about when plain does; if they take turns on one CPU, busy ends later by
// N x spin.
//
//   node bench/cache-exporter/arrivals.mjs [--nodes=100] [--spin-us=25] [--rounds=200] [--pin]
//
// --pin: the doubles on the upper half of the CPUs this process may use, this process and
// ZooKeeper on the lower half (as `run.mjs --pin`): servers on CPUs of their own, as on machines
// of their own. Everything runs on loopback and is stopped at the end, on failure and on Ctrl-C.
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from '../lib/args.mjs';
import { allowedCpus, percentile, pinProcess, splitCpus } from '../lib/process.mjs';
import { doublesCommand, startBenchZooKeeper } from './servers.mjs';
const args = parseArgs(process.argv.slice(2), import.meta.url);
const N = Number(args.nodes ?? 100);
const SPIN_US = Number(args['spin-us'] ?? 25);
const ROUNDS = Number(args.rounds ?? 200);
const PIN = args.pin === 'true';
for (const [name, value] of Object.entries({ nodes: N, 'spin-us': SPIN_US, rounds: ROUNDS })) {
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name}=${value}: a positive whole number`);
}
const pinning = PIN ? splitCpus(allowedCpus(process.pid)) : undefined;

let zk;
let doubles;
const sockets = [];

async function cleanUp() {
  for (const socket of sockets) socket.destroy();
  if (doubles && doubles.exitCode === null) {
    const exited = new Promise((resolve) => doubles.once('exit', resolve));
    doubles.stdin.end('stop\n');
    const timer = setTimeout(() => doubles.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
  }
  if (zk) await zk.stop();
}
process.on('SIGINT', () => void cleanUp().finally(() => process.exit(130)));

/** Spends `us` microseconds of CPU on this thread. */
function spin(us) {
  const until = process.hrtime.bigint() + BigInt(Math.round(us * 1000));
  while (process.hrtime.bigint() < until);
}

/** One round: `stats` to the first `count` nodes; per reply, `spinUs` of CPU once its END is in. */
function round(count, spinUs) {
  return new Promise((resolve, reject) => {
    const targets = sockets.slice(0, count);
    const t0 = performance.now();
    const arrivals = [];
    let writes = 0;
    let left = targets.length;
    for (const socket of targets) {
      let tail = '';
      const onData = (chunk) => {
        const text = tail + chunk.toString('latin1');
        if (!text.includes('\nEND\r\n')) {
          tail = text.slice(-8);
          return;
        }
        socket.off('data', onData);
        arrivals.push(performance.now() - t0);
        if (spinUs > 0) spin(spinUs);
        if (--left > 0) return;
        clearTimeout(timer);
        const end = performance.now() - t0;
        resolve({ writes, first: arrivals[0], middle: arrivals[Math.floor(arrivals.length / 2)], last: arrivals.at(-1), end });
      };
      socket.on('data', onData);
    }
    const timer = setTimeout(() => reject(new Error(`a round of ${count} got ${targets.length - left} replies in 10 s`)), 10_000);
    for (const socket of targets) socket.write('stats\r\n');
    writes = performance.now() - t0;
  });
}

async function main() {
  if (pinning) pinProcess(process.pid, pinning.others);
  zk = await startBenchZooKeeper();
  const { command, args: commandArgs } = doublesCommand({ zk: zk.address, nodes: N, traffic: true, cpus: pinning?.servers });
  doubles = spawn(command, commandArgs, { stdio: ['pipe', 'pipe', 'inherit'] });
  const first = await new Promise((resolve, reject) => {
    createInterface({ input: doubles.stdout }).once('line', (line) => resolve(JSON.parse(line)));
    doubles.once('exit', (code) => reject(new Error(`doubles exited ${code} before they were ready`)));
  });
  for (const { address } of first.nodes) {
    const at = address.lastIndexOf(':');
    const socket = connect({ host: address.slice(0, at), port: Number(address.slice(at + 1)) });
    socket.setNoDelay(true);
    sockets.push(socket);
  }
  await Promise.all(sockets.map((socket) => new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject))));

  const kinds = { one: [1, 0], plain: [N, 0], busy: [N, SPIN_US] };
  for (let i = 0; i < 100; i++) await round(N, i % 2 ? SPIN_US : 0); // warm-up
  const results = { one: [], plain: [], busy: [] };
  for (let i = 0; i < ROUNDS; i++) {
    for (const [kind, [count, spinUs]] of Object.entries(kinds)) {
      await sleep(100);
      results[kind].push(await round(count, spinUs));
    }
  }

  const layout = pinning ? `doubles on CPUs ${pinning.servers}, this process and ZooKeeper on ${pinning.others}` : 'no CPU pinning';
  console.log(`\nreply arrivals: ${N} doubles (--traffic), ${ROUNDS} rounds of each kind, busy = ${SPIN_US} us per reply; ${layout}`);
  console.log('ms from the first write, p50 / p99\n');
  const fields = ['writes', 'first', 'middle', 'last', 'end'];
  console.log(['kind ', ...fields.map((f) => f.padStart(13))].join(' '));
  for (const [kind, rows] of Object.entries(results)) {
    const cells = fields.map((f) => {
      const values = rows.map((r) => r[f]);
      return `${percentile(values, 50).toFixed(2)} / ${percentile(values, 99).toFixed(2)}`.padStart(13);
    });
    console.log([kind.padEnd(5), ...cells].join(' '));
  }
  const plain = percentile(results.plain.map((r) => r.end), 50);
  const busy = percentile(results.busy.map((r) => r.end), 50);
  console.log(`\nbusy - plain at the p50: ${(busy - plain).toFixed(2)} ms of the ${((N * SPIN_US) / 1000).toFixed(2)} ms spent on the replies`);
}

try {
  await main();
} finally {
  await cleanUp();
}
