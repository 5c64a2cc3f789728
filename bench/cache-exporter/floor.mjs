#!/usr/bin/env node
// The floor of the cache exporter benchmark: the least any collector can do. One persistent
// connection per node; a round writes the command(s) to every node at once and ends when every
// reply's END line has been read. No parsing, no rendering: bytes in, END lines counted.
//
// Driven over stdin/stdout, one JSON object per line:
//   {"op":"connect","nodes":["127.0.0.1:1234", ...]}  -> {"op":"connect","ms":..}
//   {"op":"body","path":"/tmp/x"}                      -> {"op":"body","bytes":..}
//   {"op":"round","kind":"stats"|"compressed"|"prefixes"[,"check":true]}
//                                                     -> {"op":"round","ms":..,"bytes":..,"waitMs":..[,"compressedBytes":..,"verified":..]}
//   {"op":"close"}                                    -> exits
// kind stats: `stats\r\n`; kind prefixes: `stats prefixes\r\nstats detail dump\r\n` (two replies).
// kind compressed: `stats`, and the least a collector that sends the exporter's body gzipped must
// add to it: the body (given by op body: an uncompressed /metrics body of the exporter) is cut in
// as many slices as there are nodes, and each node's slice is compressed the moment its reply has
// arrived, with node's zlib at the exporter's level (1), on its own, ending on a sync flush; the
// round ends when the last slice is compressed. No parsing, no rendering, no HTTP. With `check`,
// the compressed parts are inflated after the timed part and compared with the body: `verified`
// says whether they were the body.
// waitMs: how long this process's main thread waited for a CPU during the round (runQueueWait).
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { createInterface } from 'node:readline';
import { constants, deflateRawSync, inflateRawSync } from 'node:zlib';
import { runQueueWait } from '../lib/process.mjs';

const COMMANDS = {
  stats: { text: 'stats\r\n', replies: 1 },
  compressed: { text: 'stats\r\n', replies: 1, compress: true },
  prefixes: { text: 'stats prefixes\r\nstats detail dump\r\n', replies: 2 },
};
// Every reply ends with an END line; no STAT/PREFIX line can hold "\nEND\r\n".
const END = Buffer.from('\nEND\r\n');
const TAIL = END.length - 1;
const ROUND_TIMEOUT_MS = 60_000;

/** The body the compressed rounds compress (op body), its slice per node, and the round's compressed slices. */
let body;
let parts = [];
/** The exporter's gzip level. */
const LEVEL = 1;

class NodeSocket {
  constructor(address, index) {
    this.index = index;
    const at = address.lastIndexOf(':');
    this.address = address;
    this.socket = connect({ host: address.slice(0, at), port: Number(address.slice(at + 1)) });
    this.socket.setNoDelay(true);
    // The last bytes of the stream, to find an END line split across two chunks.
    this.tail = Buffer.from('\n');
    this.waiting = 0;
    this.onDone = undefined;
    this.bytes = 0;
    this.socket.on('data', (chunk) => this.onData(chunk));
    this.socket.on('error', (err) => this.fail(err));
    this.socket.on('close', () => this.fail(new Error(`${address} closed the connection`)));
  }

  ready() {
    return new Promise((resolve, reject) => {
      this.socket.once('connect', resolve);
      this.socket.once('error', reject);
    });
  }

  send(command) {
    this.compress = command.compress === true;
    this.waiting = command.replies;
    this.bytes = 0;
    return new Promise((resolve, reject) => {
      this.onDone = { resolve, reject };
      this.socket.write(command.text);
    });
  }

  onData(chunk) {
    this.bytes += chunk.length;
    // Matches across the boundary: the window holds at most TAIL bytes of each side.
    const window = Buffer.concat([this.tail, chunk.subarray(0, TAIL)]);
    let found = window.indexOf(END) === -1 ? 0 : 1;
    for (let at = chunk.indexOf(END); at !== -1; at = chunk.indexOf(END, at + END.length)) found++;
    this.tail =
      chunk.length >= TAIL
        ? Buffer.from(chunk.subarray(chunk.length - TAIL))
        : Buffer.concat([this.tail, chunk]).subarray(-TAIL);
    if (found === 0 || this.onDone === undefined) return;
    this.waiting -= found;
    if (this.waiting <= 0) {
      const done = this.onDone;
      this.onDone = undefined;
      if (this.compress)
        parts[this.index] = deflateRawSync(body.slices[this.index], {
          level: LEVEL,
          finishFlush: constants.Z_SYNC_FLUSH,
        });
      done.resolve(this.bytes);
    }
  }

  fail(err) {
    const done = this.onDone;
    this.onDone = undefined;
    done?.reject(err);
  }

  close() {
    this.socket.removeAllListeners('close');
    this.socket.destroy();
  }
}

let sockets = [];
const reply = (obj) => process.stdout.write(`${JSON.stringify(obj)}\n`);

/** The compressed rounds' output is the body: its parts, in node order, end on a sync flush; a final empty block ends them. */
function verify(compressed) {
  return inflateRawSync(Buffer.concat([...compressed, FINAL_EMPTY_BLOCK])).equals(body.bytes);
}
const FINAL_EMPTY_BLOCK = Buffer.from([0x03, 0x00]);

async function round(kind, check = false) {
  const command = COMMANDS[kind];
  if (!command) throw new Error(`unknown round kind ${kind}`);
  const waited = runQueueWait(process.pid);
  const started = performance.now();
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`round ${kind} not done within ${ROUND_TIMEOUT_MS} ms`)),
      ROUND_TIMEOUT_MS,
    );
  });
  try {
    if (command.compress && body === undefined) throw new Error('round compressed before op body');
    parts = new Array(sockets.length);
    const sizes = await Promise.race([Promise.all(sockets.map((s) => s.send(command))), timeout]);
    const compressed = command.compress ? parts : undefined;
    const ms = performance.now() - started;
    const result = { ms, bytes: sizes.reduce((a, b) => a + b, 0), waitMs: waited() };
    if (compressed) {
      result.compressedBytes = compressed.reduce((a, part) => a + part.length, 0);
      if (check) result.verified = verify(compressed);
    }
    return result;
  } finally {
    clearTimeout(timer);
  }
}

async function handle(message) {
  switch (message.op) {
    case 'connect': {
      const started = performance.now();
      sockets = message.nodes.map((address, index) => new NodeSocket(address, index));
      await Promise.all(sockets.map((s) => s.ready()));
      return { op: 'connect', ms: performance.now() - started, nodes: sockets.length };
    }
    case 'body': {
      if (sockets.length === 0) throw new Error('op body before op connect');
      const bytes = readFileSync(message.path);
      const slices = sockets.map((_, i) =>
        bytes.subarray(
          Math.floor((i * bytes.length) / sockets.length),
          Math.floor(((i + 1) * bytes.length) / sockets.length),
        ),
      );
      body = { bytes, slices };
      return { op: 'body', bytes: bytes.length };
    }
    case 'round':
      return { op: 'round', kind: message.kind, ...(await round(message.kind, message.check === true)) };
    case 'cpu':
      return { op: 'cpu', cpu: process.cpuUsage() };
    case 'close':
      for (const s of sockets) s.close();
      process.exit(0);
      break;
    default:
      throw new Error(`unknown op ${message.op}`);
  }
}

// One message at a time, in order.
let queue = Promise.resolve();
const input = createInterface({ input: process.stdin });
input.on('line', (line) => {
  if (line.trim() === '') return;
  queue = queue.then(async () => {
    try {
      reply(await handle(JSON.parse(line)));
    } catch (err) {
      reply({ op: 'error', error: String(err?.message ?? err) });
    }
  });
});
input.on('close', () => {
  for (const s of sockets) s.close();
  process.exit(0);
});
