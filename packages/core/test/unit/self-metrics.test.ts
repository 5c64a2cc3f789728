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
