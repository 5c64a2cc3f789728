#!/usr/bin/env node
// Micro benchmark (not a test): µs per parse of the captured ARCUS replies, and per framing of a
// stats reply. A scrape of 500 nodes parses 500 `stats` replies.
//   npx tsc -b packages/arcus && node packages/arcus/test/protocol/bench-parse.mjs [iterations]
import { readFileSync } from 'node:fs';
import { ReplyFramer } from '../../dist/src/protocol/framer.js';
import { parseStats } from '../../dist/src/protocol/index.js';
import { parsePrefixItems, parsePrefixOperations } from '../../dist/test/support/prefix-parse.js';

const fixtures = new URL('./fixtures/arcus-1.15.0/', import.meta.url);
const read = (name) => readFileSync(new URL(name, fixtures), 'latin1');
const iterations = Number(process.argv[2] ?? 20000);

function bench(label, fn, input) {
  let sink = 0;
  for (let i = 0; i < Math.min(2000, iterations); i++) sink += fn(input).length; // warm up
  const start = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) sink += fn(input).length;
  const ns = Number(process.hrtime.bigint() - start);
  const us = ns / iterations / 1000;
  console.log(
    `${label.padEnd(44)} ${us.toFixed(2).padStart(8)} µs/op  (${(1e6 / us).toFixed(0)} ops/s, ${input.length} bytes, sink ${sink})`,
  );
  return us;
}

const stats = read('01-stats.raw');
const framer = new ReplyFramer(16 * 1024 * 1024);
const statsBytes = Buffer.from(stats, 'latin1');
const frameStats = () => {
  framer.push(statsBytes);
  return framer.next('multi');
};

const us = bench('parseStats(01-stats.raw)', parseStats, stats);
bench('parseStats(02-stats-settings.raw)', parseStats, read('02-stats-settings.raw'));
bench('parsePrefixItems(37-stats-prefixes-after.raw)', parsePrefixItems, read('37-stats-prefixes-after.raw'));
bench('parsePrefixOperations(36-stats-detail-dump.raw)', parsePrefixOperations, read('36-stats-detail-dump.raw'));
bench('ReplyFramer: frame 01-stats.raw (one chunk)', frameStats, stats);
console.log(
  `=> parseStats of 01-stats.raw: ${us.toFixed(2)} µs per reply, ${((us * 500) / 1000).toFixed(2)} ms for 500 nodes`,
);
