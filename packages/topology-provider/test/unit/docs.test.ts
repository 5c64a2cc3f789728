import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { ProviderMetrics } from '../../src/self-metrics.js';
import type { TopologyProvider } from '../../src/provider.js';

test('docs/topology-provider.md lists every metric the provider registers', async () => {
  const doc = readFileSync(new URL('../../../../../docs/topology-provider.md', import.meta.url), 'utf8');
  const registry = new Registry();
  const provider = {
    ensembleStates: () => [],
    fleet: { ensembles: [], byName: new Map(), hostnameProblems: [] },
    hostnameLookups: { ok: 0, failed: 0 },
  } as unknown as TopologyProvider;
  new ProviderMetrics(registry, () => provider, { version: 'test' });
  const names = (await registry.getMetricsAsJSON()).map((m) => m.name);
  assert.ok(names.length >= 15);
  const missing = names.filter((name) => !doc.includes(`\`${name}`));
  assert.deepEqual(missing, [], 'metrics missing from docs/topology-provider.md');
});
