#!/usr/bin/env node
// What a query's parse costs the event loop, by shape and length: why the query proxy parses a
// query over INLINE_PARSE_CHARS in a worker thread. Prints, for each shape, the warm parse time
// on the event loop and the longest event-loop delay while the same parses run in the pool.
//   node bench/query-proxy/parse.mjs [--rounds=50]
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { INLINE_PARSE_CHARS, ParsePool } from '../../packages/query-proxy/dist/src/parse-pool.js';
import { parseQuery } from '../../packages/query-proxy/dist/src/planner.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '50' } } });
const rounds = Number(values.rounds);
const node = (i) => `10\\\\.1\\\\.${i >> 8}\\\\.${i & 255}:11211`;
const alternation = (n) =>
  `sum by (node) (rate(arcus_command_hits_total{scrape="short", node=~"${Array.from({ length: n }, (_, i) => node(i)).join('|')}"}[1m]))`;
const shapes = [
  ['one node, a dashboard query', alternation(1)],
  ['45 nodes chosen', alternation(45)],
  ['700 nodes chosen (16 KiB)', alternation(700)],
  ['2,800 nodes chosen (64 KiB)', alternation(2800)],
  ['256 levels of parentheses', `${'('.repeat(256)}up${')'.repeat(256)}`],
  ['800 selectors added up (11 KB)', Array.from({ length: 800 }, (_, i) => `up{a="${i}"}`).join(' + ')],
];
const pool = new ParsePool();
console.log(
  `| query | characters | inline parse ms (warm, mean of ${rounds}) | event-loop delay max ms, in the pool |`,
);
console.log('|---|---:|---:|---:|');
for (const [name, query] of shapes) {
  for (let i = 0; i < 10; i++) parseQuery(query);
  const started = performance.now();
  for (let i = 0; i < rounds; i++) parseQuery(query);
  const inline = (performance.now() - started) / rounds;
  await pool.parse(`${query} `.padEnd(INLINE_PARSE_CHARS + 1));
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  for (let i = 0; i < rounds; i++)
    await pool.parse(query.length > INLINE_PARSE_CHARS ? query : query.padEnd(INLINE_PARSE_CHARS + 1));
  delay.disable();
  console.log(`| ${name} | ${query.length} | ${inline.toFixed(2)} | ${(delay.max / 1e6).toFixed(1)} |`);
}
await pool.close();
