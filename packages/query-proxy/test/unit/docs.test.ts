import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { parseQueryProxyConfig } from '../../src/config.js';
import { ProxyMetrics } from '../../src/self-metrics.js';

test('docs/query-proxy.md lists every metric the proxy registers', async () => {
  const doc = readFileSync(new URL('../../../../../docs/query-proxy.md', import.meta.url), 'utf8');
  const registry = new Registry();
  const config = parseQueryProxyConfig('p', {
    promxy: { server_groups: [{ static_configs: [{ targets: ['a:1'] }] }] },
  });
  new ProxyMetrics(registry, () => config, 'test');
  const names = (await registry.getMetricsAsJSON()).map((m) => m.name);
  assert.ok(names.length >= 10);
  const missing = names.filter((name) => !doc.includes(`\`${name}`));
  assert.deepEqual(missing, [], 'metrics missing from docs/query-proxy.md');
});
