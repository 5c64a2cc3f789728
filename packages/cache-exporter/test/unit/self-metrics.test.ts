import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { parseExposition, select } from '@cachemon/testkit';
import { SelfMetrics } from '../../src/self-metrics.js';

test('every cachemon_* series carries the ensemble; a rename relabels them and restarts the node error counts', async () => {
  const registry = new Registry();
  const self = new SelfMetrics(registry, { version: '1.2.3', ensemble: 'zk1' });
  self.zookeeperConnected.set(1);
  self.nodeErrors.inc({ service_code: 'svc', node: '127.0.0.1:11211', reason: 'timeout' });
  self.topologyNodes.set({ state: 'live' }, 3);

  let samples = parseExposition(await registry.metrics());
  assert.ok(samples.length > 0);
  for (const s of samples) assert.equal(s.labels['ensemble'], 'zk1', `${s.name} ${JSON.stringify(s.labels)}`);
  assert.equal(
    select(samples, 'cachemon_node_errors_total', { node: '127.0.0.1:11211', reason: 'timeout' })[0]?.value,
    1,
  );

  // The same name again changes nothing.
  self.setEnsemble('zk1');
  assert.equal(select(parseExposition(await registry.metrics()), 'cachemon_node_errors_total').length, 1);

  self.setEnsemble('renamed');
  samples = parseExposition(await registry.metrics());
  for (const s of samples) assert.equal(s.labels['ensemble'], 'renamed', `${s.name} ${JSON.stringify(s.labels)}`);
  assert.deepEqual(select(samples, 'cachemon_node_errors_total'), []);
  assert.equal(select(samples, 'cachemon_zookeeper_connected')[0]?.value, 1);
  assert.equal(select(samples, 'cachemon_build_info', { component: 'cache-exporter', version: '1.2.3' }).length, 1);
});
