import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { register } from 'prom-client';
import { createSelfRegistry } from '../../src/index.js';

describe('createSelfRegistry', () => {
  it('exposes process and nodejs metrics on its own registry, not the global one', async () => {
    const registry = createSelfRegistry();
    const text = await registry.metrics();
    assert.match(text, /^process_cpu_user_seconds_total \d/m);
    assert.match(text, /^process_resident_memory_bytes \d/m);
    assert.match(text, /^nodejs_heap_size_total_bytes \d/m);
    assert.doesNotMatch(await register.metrics(), /process_|nodejs_/);
  });

  it('gives independent registries', async () => {
    const a = createSelfRegistry();
    const b = createSelfRegistry();
    assert.notEqual(a, b);
    assert.match(await b.metrics(), /nodejs_eventloop_lag_seconds/);
  });
});

describe('the event loop lag family', () => {
  it('is reported once per statistic, without the standard deviation, from a 10 ms sampler read and reset per scrape', async () => {
    const registry = createSelfRegistry();
    const value = (text: string, name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    const first = await registry.metrics();
    for (const stat of ['min', 'max', 'mean', 'p50', 'p90', 'p99']) {
      assert.equal(first.match(new RegExp(`^# TYPE nodejs_eventloop_lag_${stat}_seconds gauge$`, 'gm'))?.length, 1, stat);
    }
    assert.equal(first.match(/^# TYPE nodejs_eventloop_lag_seconds gauge$/gm)?.length, 1);
    assert.doesNotMatch(first, /nodejs_eventloop_lag_stddev_seconds/);
    assert.ok(value(first, 'nodejs_eventloop_lag_min_seconds') < 1, 'no placeholder before the first sample');

    await new Promise((resolve) => setTimeout(resolve, 300));
    const idle = await registry.metrics();
    // An idle loop: the 10 ms timer fires about every 10 ms.
    for (const stat of ['min', 'p50', 'mean', 'p99']) {
      const seconds = value(idle, `nodejs_eventloop_lag_${stat}_seconds`);
      assert.ok(seconds > 0.005 && seconds < 0.1, `${stat} ${seconds}`);
    }
    // A blocked loop shows in the next scrape's max, and only there. (Not right after a scrape: the
    // first interval after a reset only starts the next one, in Node's histogram as in prom-client.)
    await new Promise((resolve) => setTimeout(resolve, 50));
    const until = performance.now() + 80;
    while (performance.now() < until);
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.ok(value(await registry.metrics(), 'nodejs_eventloop_lag_max_seconds') >= 0.08, 'the 80 ms block is the max');
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.ok(value(await registry.metrics(), 'nodejs_eventloop_lag_max_seconds') < 0.08, 'reset after the scrape');
  });
});
