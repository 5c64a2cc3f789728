import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { it } from 'node:test';
import { createProcessMetrics } from '../src/index.js';

it('process metrics pass promtool check metrics', async () => {
  const metrics = createProcessMetrics();
  // After the event-loop sampler's first interval, as a daemon's first scrape is.
  await new Promise((resolve) => setTimeout(resolve, 50));
  const text = await metrics.metrics();
  assert.match(text, /^process_cpu_seconds_total /m);
  const result = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 20_000 });
  assert.equal(result.error, undefined, 'promtool runs (Debian package prometheus)');
  assert.equal(result.status, 0, `promtool check metrics: ${result.stdout}${result.stderr}`);
});
