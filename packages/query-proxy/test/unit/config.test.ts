import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CachemonError } from '@cachemon/core';
import { tempDir } from '@cachemon/testkit';
import { loadQueryProxyConfig, parseQueryProxyConfig } from '../../src/index.js';

function refused(raw: unknown): string {
  try {
    parseQueryProxyConfig('promxy.yml', raw);
  } catch (err) {
    assert.ok(err instanceof CachemonError);
    return err.message;
  }
  assert.fail('accepted');
}

describe('promxy.yml', () => {
  it('reads the shipped shape: two groups filtered on scrape, timeout, query params', async () => {
    const dir = await tempDir('query-proxy-');
    const file = join(dir, 'promxy.yml');
    writeFileSync(
      file,
      `promxy:
  server_groups:
    # short-term store
    - static_configs:
        - targets: [127.0.0.1:8428]
      label_filter:
        static_labels_include:
          scrape: [short]
      timeout: 5s
      query_params:
        nocache: 1
    - static_configs:
        - targets: [127.0.0.1:8429, 127.0.0.2:8429]
      scheme: https
      path_prefix: /select/0/prometheus/
      label_filter:
        static_labels_include: { scrape: [long] }
      ignore_error: true
      anti_affinity: 10s
      surprise: 1
`,
    );
    const config = loadQueryProxyConfig(file);
    assert.deepEqual(
      config.groups.map((g) => [g.name, g.targets, g.timeoutMs, g.queryParams, g.ignoreError]),
      [
        ['group 0 (scrape=short)', ['http://127.0.0.1:8428'], 5000, { nocache: '1' }, false],
        ['group 1 (scrape=long)', ['https://127.0.0.1:8429/select/0/prometheus', 'https://127.0.0.2:8429/select/0/prometheus'], 5000, {}, true],
      ],
    );
    assert.deepEqual(config.warnings, [
      'promxy.server_groups[1].anti_affinity: a promxy setting this proxy does not implement; ignored',
      'promxy.server_groups[1].surprise: unknown key; ignored',
    ]);
  });

  it('refuses invalid values with their key path', async () => {
    assert.match(refused({}), /promxy: /);
    assert.match(refused({ promxy: { server_groups: [] } }), /promxy\.server_groups: at least one server group/);
    assert.match(refused({ promxy: { server_groups: [{ static_configs: [{ targets: ['nohost'] }] }] } }), /promxy\.server_groups\[0\]\.static_configs\[0\]\.targets\[0\]: expected <host>:<port>/);
    assert.match(refused({ promxy: { server_groups: [{ static_configs: [{ targets: ['a:1'] }], timeout: 'soon' }] } }), /server_groups\[0\]\.timeout: invalid duration "soon"/);
    assert.match(refused({ promxy: { server_groups: [{ static_configs: [{ targets: ['a:1'] }], scheme: 'ftp' }] } }), /server_groups\[0\]\.scheme: /);
    assert.match(
      refused({ promxy: { server_groups: [{ static_configs: [{ targets: ['a:1'] }], label_filter: { static_labels_include: { scrape: 'short' } } }] } }),
      /label_filter\.static_labels_include\.scrape: /,
    );
    const dir = await tempDir('query-proxy-');
    const file = join(dir, 'promxy.yml');
    writeFileSync(file, 'promxy:\n  server_groups:\n    - static_configs: [\n');
    assert.throws(() => loadQueryProxyConfig(file), (err: unknown) => err instanceof CachemonError && /promxy\.yml:\d+:\d+: /.test(err.message));
  });
});
