#!/usr/bin/env node
// What compressing the node lines of a /metrics body costs, three ways side by side on the same
// lines: core's LineDeflater (keys written as references to the key before, fixed codes), zlib
// level 1 fed node by node on one kept stream (core's BlockDeflater, how the cache exporter
// compressed its stats families before), and zlib level 1 on the whole text at once
// (deflateRawSync). Each way's output is inflated and compared with the text before timing.
//
//   npx tsc -b
//   node bench/core/line-deflate.mjs [--nodes=100] [--rounds=7] [--calls=50]
//
// The lines are those of an ARCUS node's stats families as the exporter writes them: per node,
// families of one line (`arcus_<stat>{<node labels>} <value>`) and families of one line per
// command (`arcus_commands_total{command="get",<node labels>} <value>`), family by family, node
// by node, values of 1 to 10 digits that change every call.
import { constants, crc32, deflateRawSync, inflateRawSync } from 'node:zlib';
import { BlockDeflater, crcRegister, crcShift, editsBetween, LineDeflater } from '../../packages/core/dist/src/index.js';
import { parseArgs } from '../lib/args.mjs';
import { percentile } from '../lib/process.mjs';
import { formatTable } from '../lib/table.mjs';

const args = parseArgs(process.argv.slice(2), import.meta.url);
const NODES = Number(args.nodes ?? 100);
const ROUNDS = Number(args.rounds ?? 7);
const CALLS = Number(args.calls ?? 50);

const COMMANDS = ['get', 'set', 'add', 'replace', 'append', 'prepend', 'cas', 'incr', 'decr', 'delete', 'touch', 'flush', 'getattr', 'setattr'];
for (const kind of ['lop', 'sop', 'mop', 'bop']) for (const op of ['create', 'insert', 'delete', 'get', 'update']) COMMANDS.push(`${kind}_${op}`);
// Six families of one line per command (commands, hits, misses, ...), 45 of one line per node.
const FAMILIES = [
  ...['commands', 'hits', 'misses', 'bad_value', 'not_found', 'type_mismatch'].map((name) => ({ name: `arcus_${name}_total`, labels: COMMANDS.map((c) => `command="${c}",`) })),
  ...Array.from({ length: 45 }, (_, i) => ({ name: `arcus_stat_${i}`, labels: [''] })),
];
const nodeLabels = (n) => `ensemble="ensemble-1",service_code="svc${Math.floor(n / 100)}",node="10.1.${Math.floor(n / 250)}.${n % 250}:11211",hostname="cache-${n}.example.com"`;

/** Per node, per family: its lines' keys; per call, values. */
const nodes = Array.from({ length: NODES }, (_, n) =>
  FAMILIES.map((family) => family.labels.map((extra) => Buffer.from(`${family.name}{${extra}${nodeLabels(n)}} `))),
);
let seed = 1;
const random = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
/** Each node's lines of each family as one segment of text (what a node's area holds), with each line's value length. */
function segments() {
  return nodes.map((families) =>
    families.map((keys) => {
      const values = keys.map(() => String(Math.floor(random() * 10 ** (1 + Math.floor(random() * 10)))));
      return { bytes: Buffer.from(keys.map((key, i) => `${key.toString('latin1')}${values[i]}\n`).join(''), 'latin1'), valueLengths: Int32Array.from(values, (v) => v.length) };
    }),
  );
}

const heads = FAMILIES.map((f) => Buffer.from(`# HELP ${f.name} A family.\n# TYPE ${f.name} counter\n`));
/** Bytes two keys share at their start and end. */
function shared(a, b) {
  const most = Math.min(a.length, b.length);
  let prefix = 0;
  while (prefix < most && a[prefix] === b[prefix]) prefix++;
  let suffix = 0;
  while (suffix < most - prefix && a[a.length - 1 - suffix] === b[b.length - 1 - suffix]) suffix++;
  return [prefix, suffix];
}
// What the exporter computes once per node and plan (LineKeys): each key's length, CRC register
// and shift, what it shares with the key before it, where its node labels are; and, once per pair
// of nodes one after the other in a body, how one node's labels are written from the other's.
const lineKeys = nodes.map((families, n) =>
  families.map((keys, f) => {
    const links = new Uint16Array(keys.length * 2);
    keys.forEach((key, i) => {
      if (i === 0) return;
      [links[2 * i], links[2 * i + 1]] = shared(keys[i - 1], key);
    });
    const head = `${FAMILIES[f].name}{`.length;
    return {
      lengths: Uint32Array.from(keys, (k) => k.length),
      registers: Int32Array.from(keys, (k) => crcRegister(k)),
      shifts: keys.map((k) => crcShift(k.length)),
      links,
      heads: Uint16Array.from(FAMILIES[f].labels, (extra) => head + extra.length),
      tail: 2,
      starts: new Int32Array(keys.length),
    };
  }),
);
const bases = nodes.map((_, n) => Buffer.from(nodeLabels(n)));
const edits = nodes.map((_, n) => (n > 0 ? editsBetween(bases[n - 1], bases[n]) : undefined));

const lineDeflater = new LineDeflater();
function lineWay(segs) {
  const blocks = [];
  for (let f = 0; f < FAMILIES.length; f++) {
    lineDeflater.literals(heads[f]);
    for (let n = 0; n < NODES; n++) {
      const { bytes, valueLengths } = segs[n][f];
      lineDeflater.run(bytes, 0, lineKeys[n][f], valueLengths, 0, valueLengths.length, n > 0 ? lineKeys[n - 1][f] : undefined, edits[n]);
    }
    blocks.push(lineDeflater.end());
  }
  return blocks;
}

const blockDeflater = BlockDeflater.create();
function streamWay(segs) {
  const blocks = [];
  for (let f = 0; f < FAMILIES.length; f++) {
    blockDeflater.write(heads[f]);
    for (let n = 0; n < NODES; n++) blockDeflater.write(segs[n][f].bytes, segs[n][f].valueLengths.length);
    blocks.push(blockDeflater.end());
  }
  return blocks;
}

function wholeWay(segs) {
  const text = Buffer.concat(FAMILIES.flatMap((_, f) => [heads[f], ...segs.map((node) => node[f].bytes)]));
  return [{ parts: [deflateRawSync(text, { level: 1 })], crc: crc32(text), length: text.length }];
}

const WAYS = [
  ['LineDeflater', lineWay],
  ['zlib level 1, node by node (BlockDeflater)', streamWay],
  ['zlib level 1, whole text (deflateRawSync, CRC-32)', wholeWay],
];

// Check each way once: its output inflates to the text, and its CRC-32 is the text's.
const check = segments();
const text = Buffer.concat(FAMILIES.flatMap((_, f) => [heads[f], ...check.map((node) => node[f].bytes)]));
const sizes = new Map();
for (const [name, way] of WAYS) {
  const blocks = way(check);
  const parts = blocks.flatMap((b) => b.parts);
  const inflated = inflateRawSync(Buffer.concat(parts), { finishFlush: constants.Z_SYNC_FLUSH });
  if (!inflated.equals(text)) throw new Error(`${name}: does not inflate to the text`);
  const crcs = blocks.map((b, f) => b.crc === crc32(Buffer.concat([heads[f], ...check.map((node) => node[f].bytes)])));
  if (blocks.length > 1 && !crcs.every(Boolean)) throw new Error(`${name}: wrong CRC-32`);
  sizes.set(name, parts.reduce((sum, p) => sum + p.length, 0));
}

// Rounds of CALLS calls of each way, the ways interleaved call by call, on fresh values each call.
const times = new Map(WAYS.map(([name]) => [name, []]));
for (let round = 0; round < ROUNDS + 1; round++) {
  const perRound = new Map(WAYS.map(([name]) => [name, []]));
  for (let call = 0; call < CALLS; call++) {
    const segs = segments();
    // The first way of a call reads the fresh text from memory, the others from the cache: each
    // way goes first as often as the others.
    for (let i = 0; i < WAYS.length; i++) {
      const [name, way] = WAYS[(call + i) % WAYS.length];
      const started = performance.now();
      way(segs);
      perRound.get(name).push(performance.now() - started);
    }
  }
  if (round === 0) continue; // warm-up
  for (const [name, list] of perRound) times.get(name).push(percentile(list, 50));
}

console.log(`${NODES} nodes, ${FAMILIES.length} families, ${text.length} bytes of text (${(text.length / 1024 / 1024).toFixed(2)} MB); node ${process.version}`);
console.log(`median call of each of ${ROUNDS} rounds of ${CALLS}, then the median round\n`);
const rows = WAYS.map(([name]) => {
  const list = times.get(name).sort((a, b) => a - b);
  return [name, percentile(list, 50).toFixed(2), `${list[0].toFixed(2)}-${list[list.length - 1].toFixed(2)}`, `${Math.round(sizes.get(name) / 1024)} KB`];
});
console.log(formatTable(['way', 'ms a body', 'rounds', 'compressed'], rows, 1));
