#!/usr/bin/env node
// What compressing the node lines of a /metrics body costs, three ways side by side on the same
// lines: core's LineDeflater (keys written as references to the same key of the node before,
// fixed codes; what the cache exporter uses for its stats families), zlib level 1 fed node by node
// on one kept stream (core's BlockDeflater, how the exporter compressed them before), and zlib
// level 1 on the whole text at once (deflateRawSync and zlib.crc32). Each way's output is inflated
// and compared with the text, and its CRC-32 checked, before anything is timed.
//
//   npx tsc -b
//   node bench/core/line-deflate.mjs [--nodes=100] [--rounds=7] [--calls=40]
//
// The lines are laid out as the exporter keeps them: per node, one area holding its lines family
// by family (`arcus_<stat>{<node labels>} <value>`, and one line per command in the families of
// `arcus_commands_total{command="get",<node labels>} <value>`), and the keys' LineKeys made once
// per node; values of 1 to 10 digits, drawn again for every call. Two groups of families are
// timed apart, since LineDeflater's cost goes with the runs (a node's lines of one family) as well
// as with the lines: six families of 34 lines a node, and 45 families of one line a node.
import { constants, crc32, deflateRawSync, inflateRawSync } from 'node:zlib';
import { BlockDeflater, editsBetween, LineDeflater, lineKeys } from '../../packages/core/dist/src/index.js';
import { parseArgs } from '../lib/args.mjs';
import { percentile } from '../lib/process.mjs';
import { formatTable } from '../lib/table.mjs';

const args = parseArgs(process.argv.slice(2), import.meta.url);
const NODES = Number(args.nodes ?? 100);
const ROUNDS = Number(args.rounds ?? 7);
const CALLS = Number(args.calls ?? 40);
for (const n of [NODES, ROUNDS, CALLS]) if (!Number.isInteger(n) || n < 1) throw new Error(`bad number in the arguments: ${n}`);

const COMMANDS = ['get', 'set', 'add', 'replace', 'append', 'prepend', 'cas', 'incr', 'decr', 'delete', 'touch', 'flush', 'getattr', 'setattr'];
for (const kind of ['lop', 'sop', 'mop', 'bop']) for (const op of ['create', 'insert', 'delete', 'get', 'update']) COMMANDS.push(`${kind}_${op}`);
const FAMILIES = [
  ...['commands', 'hits', 'misses', 'bad_value', 'not_found', 'type_mismatch'].map((name) => ({ name: `arcus_${name}_total`, extras: COMMANDS.map((c) => `command="${c}",`) })),
  ...Array.from({ length: 45 }, (_, i) => ({ name: `arcus_stat_${i}`, extras: [''] })),
];
const GROUPS = [
  ['6 families x 34 lines a node', 0, 6],
  ['45 families x 1 line a node', 6, FAMILIES.length],
  ['all 51 families', 0, FAMILIES.length],
];
const nodeLabels = (n) => `ensemble="ensemble-1",service_code="svc${Math.floor(n / 100)}",node="10.1.${Math.floor(n / 250)}.${n % 250}:11211",hostname="cache-${n}.example.com"`;
const heads = FAMILIES.map((f) => Buffer.from(`# HELP ${f.name} A family.\n# TYPE ${f.name} counter\n`));
/** Where each family's lines start in a node's k order. */
const familyStarts = [0];
for (const family of FAMILIES) familyStarts.push(familyStarts[familyStarts.length - 1] + family.extras.length);

// Per node, what the exporter makes once (NodeKeys in its render.ts): the keys in k order, their
// LineKeys; and once per pair of nodes one after the other, how one's labels are written from the other's.
const bases = Array.from({ length: NODES }, (_, n) => Buffer.from(nodeLabels(n)));
const nodes = bases.map((base) => {
  const keys = FAMILIES.flatMap((family) => family.extras.map((extra) => Buffer.from(`${family.name}{${extra}${base.toString()}} `)));
  return { keys, lineKeys: lineKeys(keys, base.length, 2, familyStarts) };
});
const edits = bases.map((base, n) => (n > 0 ? editsBetween(bases[n - 1], base) : undefined));

let seed = 1;
const random = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
/** Per node: its area (every line, family by family), each line's value length, each family's segment start and end. */
function areas() {
  return nodes.map(({ keys }) => {
    const values = keys.map(() => String(Math.floor(random() * 10 ** (1 + Math.floor(random() * 10)))));
    const area = Buffer.from(keys.map((key, k) => `${key.toString('latin1')}${values[k]}\n`).join(''), 'latin1');
    const valueLengths = Int32Array.from(values, (v) => v.length);
    const segments = [0];
    let at = 0;
    FAMILIES.forEach((_, f) => {
      for (let k = familyStarts[f]; k < familyStarts[f + 1]; k++) at += keys[k].length + values[k].length + 1;
      segments.push(at);
    });
    return { area, valueLengths, segments };
  });
}

const lineDeflater = new LineDeflater();
function lineWay(data, from, to) {
  const blocks = [];
  for (let f = from; f < to; f++) {
    lineDeflater.literals(heads[f]);
    for (let n = 0; n < NODES; n++) {
      const { area, valueLengths, segments } = data[n];
      lineDeflater.run(area, segments[f], nodes[n].lineKeys, valueLengths, familyStarts[f], familyStarts[f + 1], n > 0 ? nodes[n - 1].lineKeys : undefined, edits[n]);
    }
    blocks.push(lineDeflater.end());
  }
  return blocks;
}

const blockDeflater = BlockDeflater.create();
function streamWay(data, from, to) {
  const blocks = [];
  for (let f = from; f < to; f++) {
    blockDeflater.write(heads[f]);
    for (const { area, segments } of data) blockDeflater.write(area.subarray(segments[f], segments[f + 1]), familyStarts[f + 1] - familyStarts[f]);
    blocks.push(blockDeflater.end());
  }
  return blocks;
}

/** The text of families [from, to). */
const textOf = (data, from, to) => Buffer.concat(FAMILIES.slice(from, to).flatMap((_, i) => [heads[from + i], ...data.map(({ area, segments }) => area.subarray(segments[from + i], segments[from + i + 1]))]));

function wholeWay(data, from, to) {
  const text = textOf(data, from, to);
  return [{ parts: [deflateRawSync(text, { level: 1 })], crc: crc32(text), length: text.length }];
}

const WAYS = [
  ['LineDeflater', lineWay],
  ['zlib level 1, node by node (BlockDeflater)', streamWay],
  ['zlib level 1, whole text (deflateRawSync, crc32)', wholeWay],
];

// Check each way on each group once: its output inflates to the text, its CRC-32 is the text's.
const check = areas();
const sizes = new Map();
for (const [group, from, to] of GROUPS) {
  const text = textOf(check, from, to);
  for (const [name, way] of WAYS) {
    const blocks = way(check, from, to);
    const parts = blocks.flatMap((b) => b.parts);
    if (!inflateRawSync(Buffer.concat(parts), { finishFlush: constants.Z_SYNC_FLUSH }).equals(text)) throw new Error(`${name}, ${group}: does not inflate to the text`);
    if (blocks.length > 1 && !blocks.every((b, i) => b.crc === crc32(textOf(check, from + i, from + i + 1)))) throw new Error(`${name}, ${group}: wrong CRC-32`);
    sizes.set(`${name}/${group}`, { compressed: parts.reduce((sum, p) => sum + p.length, 0), text: text.length, lines: (familyStarts[to] - familyStarts[from]) * NODES });
  }
}

// Rounds of CALLS calls, on fresh values each call; in a call every way compresses every group,
// the ways in turn, each going first as often as the others (the first reads the fresh text from
// memory, the others from the cache).
const keyOf = (name, group) => `${name}/${group}`;
const times = new Map([...sizes.keys()].map((key) => [key, []]));
for (let round = 0; round < ROUNDS + 1; round++) {
  const perRound = new Map([...sizes.keys()].map((key) => [key, []]));
  for (let call = 0; call < CALLS; call++) {
    const data = areas();
    for (const [group, from, to] of GROUPS) {
      for (let i = 0; i < WAYS.length; i++) {
        const [name, way] = WAYS[(call + i) % WAYS.length];
        const started = performance.now();
        way(data, from, to);
        perRound.get(keyOf(name, group)).push(performance.now() - started);
      }
    }
  }
  if (round === 0) continue; // warm-up
  for (const [key, list] of perRound) times.get(key).push(percentile(list, 50));
}

console.log(`${NODES} nodes, ${FAMILIES.length} families, ${familyStarts[FAMILIES.length] * NODES} lines; node ${process.version}`);
console.log(`median call of each of ${ROUNDS} rounds of ${CALLS}, then the median round\n`);
const rows = [];
for (const [group] of GROUPS) {
  for (const [name] of WAYS) {
    const key = keyOf(name, group);
    const list = times.get(key).sort((a, b) => a - b);
    const { compressed, text, lines } = sizes.get(key);
    const ms = percentile(list, 50);
    rows.push([group, name, `${(text / 1024 / 1024).toFixed(2)} MB`, ms.toFixed(2), `${list[0].toFixed(2)}-${list[list.length - 1].toFixed(2)}`, String(Math.round((ms * 1e6) / lines)), `${Math.round(compressed / 1024)} KB`]);
  }
}
console.log(formatTable(['families', 'way', 'text', 'ms', 'rounds', 'ns a line', 'compressed'], rows, 2));
