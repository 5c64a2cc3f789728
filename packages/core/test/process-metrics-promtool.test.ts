import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { it } from 'node:test';
import { createProcessMetrics } from '../src/index.js';
import { eventually } from './support/eventually.js';

it('process metrics pass promtool check metrics', async () => {
  const metrics = createProcessMetrics();
  // Once the event-loop sampler has a sample, as at a daemon's first scrape (before, its min is a
  // placeholder and its mean NaN). A read resets the sampler: each try waits for a new one.
  const text = await eventually(
    async () => {
      const read = await metrics.metrics();
      const min = Number(/^nodejs_eventloop_lag_min_seconds (\S+)$/m.exec(read)?.[1]);
      assert.ok(min < 1, `nodejs_eventloop_lag_min_seconds ${min}`);
      return read;
    },
    { intervalMs: 20 },
  );
  assert.match(text, /^process_cpu_seconds_total /m);
  const result = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 20_000 });
  assert.equal(result.error, undefined, 'promtool runs (Debian package prometheus)');
  assert.equal(result.status, 0, `promtool check metrics: ${result.stdout}${result.stderr}`);
});
