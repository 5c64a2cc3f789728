import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { register } from 'prom-client';
import { createSelfRegistry, EventLoopLagSampler } from '../../src/index.js';

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

describe('EventLoopLagSampler', () => {
  it('gives exact min, max, mean and standard deviation, and percentiles within 1 %', () => {
    const sampler = new EventLoopLagSampler(0);
    const values = Array.from({ length: 1000 }, (_, i) => 10 + i / 100); // 10.00 .. 19.99 ms
    for (const value of values) sampler.record(value);
    const stats = sampler.statistics();
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    const stddev = Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length);
    assert.equal(sampler.count, 1000);
    assert.equal(stats.min, 10);
    assert.equal(stats.max, values[999]);
    assert.ok(Math.abs(stats.mean - mean) < 1e-9, `mean ${stats.mean}`);
    assert.ok(Math.abs(stats.stddev - stddev) < 1e-6, `stddev ${stats.stddev} vs ${stddev}`);
    for (const [p, exact] of [
      [50, values[499]!],
      [90, values[899]!],
      [99, values[989]!],
    ] as const) {
      const got = stats[`p${p}`];
      assert.ok(Math.abs(got - exact) / exact < 0.01, `p${p} ${got} vs ${exact}`);
    }
    sampler.reset();
    assert.deepEqual(sampler.statistics(), { min: 0, max: 0, mean: 0, stddev: 0, p50: 0, p90: 0, p99: 0 });
  });

  it('a registry reports the nodejs_eventloop_lag_* family once each, from its own timer, read and reset per scrape', async () => {
    const registry = createSelfRegistry();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const text = await registry.metrics();
    const value = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    for (const stat of ['min', 'max', 'mean', 'stddev', 'p50', 'p90', 'p99']) {
      assert.equal(text.match(new RegExp(`^# TYPE nodejs_eventloop_lag_${stat}_seconds gauge$`, 'gm'))?.length, 1, stat);
    }
    assert.equal(text.match(/^# TYPE nodejs_eventloop_lag_seconds gauge$/gm)?.length, 1);
    // An idle loop: the 10 ms timer fires about every 10 ms.
    for (const stat of ['min', 'p50', 'mean', 'p99']) {
      const seconds = value(`nodejs_eventloop_lag_${stat}_seconds`);
      assert.ok(seconds > 0.005 && seconds < 0.1, `${stat} ${seconds}`);
    }
    // A blocked loop shows in the next scrape's max, and only there.
    const until = performance.now() + 60;
    while (performance.now() < until);
    await new Promise((resolve) => setTimeout(resolve, 30));
    const blocked = await registry.metrics();
    assert.ok(Number(/^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(blocked)?.[1]) >= 0.06, 'the 60 ms block is the max');
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.ok(Number(/^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(await registry.metrics())?.[1]) < 0.06, 'reset after the scrape');
  });
});
