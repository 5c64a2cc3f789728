#!/usr/bin/env node
// Top self-time functions of a V8 .cpuprofile (as written by node --cpu-prof).
//   node bench/cache-exporter/profile-summary.mjs <file.cpuprofile> [top=20] [from-s=0] [to-s]
// from-s, to-s: only the samples taken that many seconds after the profile started (leaves the start-up out).
import { readFileSync } from 'node:fs';

export function summarizeProfile(path, top = 20, fromS = 0, toS = Infinity) {
  const profile = JSON.parse(readFileSync(path, 'utf8'));
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map();
  // timeDeltas[i] is the time before sample i; attribute it to the sampled node.
  let total = 0;
  let at = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i] ?? 0;
    at += dt;
    if (at < fromS * 1e6 || at > toS * 1e6) continue;
    total += dt;
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + dt);
  }
  const byFunction = new Map();
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id).callFrame;
    const where = url ? `${url.replace(/^file:\/\/.*?\/(packages|node_modules)\//, '$1/')}:${lineNumber + 1}` : '';
    const key = `${functionName || '(anonymous)'} ${where}`.trim();
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
  }
  const idle = [...byFunction].filter(([k]) => k.startsWith('(idle)')).reduce((a, [, v]) => a + v, 0);
  const busy = total - idle;
  const rows = [...byFunction]
    .filter(([k]) => !k.startsWith('(idle)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top);
  const lines = [
    `${path}: ${(total / 1000).toFixed(0)} ms profiled, ${(busy / 1000).toFixed(0)} ms busy (main thread)`,
  ];
  lines.push('   self ms  % busy  function');
  for (const [key, us] of rows) {
    lines.push(`${(us / 1000).toFixed(1).padStart(10)}  ${((100 * us) / busy).toFixed(1).padStart(6)}  ${key}`);
  }
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [path, top, fromS, toS] = process.argv.slice(2);
  if (!path) {
    process.stderr.write('usage: profile-summary.mjs <file.cpuprofile> [top]\n');
    process.exit(2);
  }
  process.stdout.write(`${summarizeProfile(path, Number(top ?? 20), Number(fromS ?? 0), Number(toS ?? Infinity))}\n`);
}
