import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { createReloadMetrics } from '../src/index.js';

const first = { path: '/etc/cachemon/a.json', sha256: 'a'.repeat(64) };
const second = { path: '/etc/cachemon/a.json', sha256: 'b'.repeat(64) };

describe('reload metrics', () => {
  it('expose one config_info series, replaced by a successful reload and kept by a refused one', async () => {
    const registry = new Registry();
    const reload = createReloadMetrics(registry, first, 1_000_000);
    /** The sample lines of one family. */
    const read = async (name: string) =>
      (await registry.metrics())
        .split('\n')
        .filter((line) => line.startsWith(`${name} `) || line.startsWith(`${name}{`));
    const info = (file: typeof first) => `cachemon_config_info{path="${file.path}",sha256="${file.sha256}"} 1`;
    assert.deepEqual(await read('cachemon_config_info'), [info(first)]);
    assert.deepEqual(await read('cachemon_config_last_reload_success_timestamp_seconds'), [
      'cachemon_config_last_reload_success_timestamp_seconds 1000',
    ]);

    reload.succeeded(second, 2_000_000);
    reload.failed();
    assert.deepEqual(await read('cachemon_config_info'), [info(second)]);
    assert.deepEqual(await read('cachemon_config_last_reload_successful'), [
      'cachemon_config_last_reload_successful 0',
    ]);
    assert.deepEqual(await read('cachemon_config_last_reload_success_timestamp_seconds'), [
      'cachemon_config_last_reload_success_timestamp_seconds 2000',
    ]);

    reload.succeeded(undefined, 3_000_000);
    assert.deepEqual(await read('cachemon_config_info'), [], 'a config from no file names none');
  });

  it('pass promtool check metrics', async () => {
    const registry = new Registry();
    createReloadMetrics(registry, first).failed();
    const result = spawnSync('promtool', ['check', 'metrics'], {
      input: await registry.metrics(),
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.equal(result.error, undefined, 'promtool runs (Debian package prometheus)');
    assert.equal(result.status, 0, `promtool check metrics: ${result.stdout}${result.stderr}`);
  });
});
