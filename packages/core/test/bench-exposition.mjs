#!/usr/bin/env node
// Micro benchmark of the exposition writer: 20,000 samples (200 nodes x 100 families), label sets
// rendered once as the exporters cache them. Prints milliseconds per render; not a test.
// Run after building: node packages/core/test/bench-exposition.mjs
import { ExpositionWriter, renderLabels } from '../dist/src/index.js';

const NODES = 200;
const FAMILIES = 100;
const ROUNDS = 50;

const labels = Array.from({ length: NODES }, (_, i) =>
  renderLabels({ service_code: 'test-sc', node: `10.0.${i >> 8}.${i & 255}:11211`, ensemble: 'zk1' }),
);
const names = Array.from({ length: FAMILIES }, (_, f) => `arcus_stat_metric_${f}`);

function render(round) {
  const writer = new ExpositionWriter();
  for (let f = 0; f < FAMILIES; f++) {
    writer.family(names[f], f % 2 === 0 ? 'counter' : 'gauge', 'A metric of the cache node.');
    for (let n = 0; n < NODES; n++) writer.sample(labels[n], (round + 1) * n * 1.25 + f);
  }
  return writer.toString();
}

for (let i = 0; i < 5; i++) render(i); // warm-up: let the JIT settle before measuring
const times = [];
let bytes = 0;
for (let round = 0; round < ROUNDS; round++) {
  const started = process.hrtime.bigint();
  bytes = render(round).length;
  times.push(Number(process.hrtime.bigint() - started) / 1e6);
}
times.sort((a, b) => a - b);
const pick = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))].toFixed(2);
console.log(`exposition: ${NODES * FAMILIES} samples, ${(bytes / 1024).toFixed(0)} KiB`);
console.log(`  median ${pick(0.5)} ms, p90 ${pick(0.9)} ms, min ${pick(0)} ms over ${ROUNDS} renders`);
