import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CachemonError } from '@cachemon/core';
import { tempDir } from '@cachemon/testkit';
import { loadQueryProxyConfig, mergesReplicas, parseQueryProxyConfig } from '../../src/index.js';

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
      anti_affinity: 30s
      surprise: 1
`,
    );
    const config = loadQueryProxyConfig(file);
    assert.deepEqual(
      config.groups.map((g) => [g.name, g.targets, g.timeoutMs, g.queryParams, g.ignoreError]),
      [
        ['group 0 (scrape=short)', ['http://127.0.0.1:8428'], 5000, { nocache: '1' }, false],
        [
          'group 1 (scrape=long)',
          ['https://127.0.0.1:8429/select/0/prometheus', 'https://127.0.0.2:8429/select/0/prometheus'],
          5000,
          {},
          true,
        ],
      ],
    );
    assert.deepEqual(
      config.groups.map((g) => [g.replicas, g.antiAffinityMs]),
      [
        ['merge', 10_000],
        ['merge', 30_000],
      ],
    );
    assert.deepEqual(config.warnings, ['promxy.server_groups[1].surprise: unknown key; ignored']);
  });

  it("reads replicas (merge by default, as promxy; any) and anti_affinity (promxy's 10s by default)", () => {
    const config = parseQueryProxyConfig('promxy.yml', {
      promxy: {
        server_groups: [
          { static_configs: [{ targets: ['a:1', 'a:2'] }] },
          { static_configs: [{ targets: ['b:1', 'b:2'] }], replicas: 'any', anti_affinity: '0s' },
          { static_configs: [{ targets: ['c:1'] }], replicas: 'merge', anti_affinity: '1m2.5s' },
        ],
      },
    });
    assert.deepEqual(
      config.groups.map((g) => [g.replicas, g.antiAffinityMs, mergesReplicas(g)]),
      [
        ['merge', 10_000, true],
        ['any', 0, false],
        ['merge', 62_500, false],
      ],
    );
    const group = (extra: Record<string, unknown>) => ({
      promxy: { server_groups: [{ static_configs: [{ targets: ['a:1'] }], ...extra }] },
    });
    assert.match(
      refused(group({ replicas: 'one' })),
      /promxy\.server_groups\[0\]\.replicas: expected merge \(every replica asked, their answers merged\) or any/,
    );
    assert.match(refused(group({ anti_affinity: '-1s' })), /server_groups\[0\]\.anti_affinity: .*negative/);
    assert.match(
      refused(group({ anti_affinity: 'soon' })),
      /server_groups\[0\]\.anti_affinity: .*a Go duration such as 10s/,
    );
    assert.match(refused(group({ anti_affinity: 10 })), /server_groups\[0\]\.anti_affinity: /);
  });

  it('reads timeouts as promxy does (Go durations, fractions included) and refuses zero', () => {
    const timeout = (value: string) =>
      parseQueryProxyConfig('promxy.yml', {
        promxy: { server_groups: [{ static_configs: [{ targets: ['a:1'] }], timeout: value }] },
      }).groups[0]!.timeoutMs;
    assert.equal(timeout('1.5s'), 1500);
    assert.equal(timeout('1m30.5s'), 90_500);
    assert.equal(timeout('250ms'), 250);
    assert.equal(timeout('.5h'), 1_800_000);
    assert.equal(timeout('2500000us'), 2500);
    assert.equal(timeout('1d'), 86_400_000, "the units of the stack's other configs too");
    for (const zero of ['0', '0s', '0.0s', '0ms', '100us']) {
      assert.match(
        refused({ promxy: { server_groups: [{ static_configs: [{ targets: ['a:1'] }], timeout: zero }] } }),
        /promxy\.server_groups\[0\]\.timeout: .*shorter than 1ms; a group needs a timeout \(promxy reads 0 as none/,
        zero,
      );
    }
    assert.match(
      refused({ promxy: { server_groups: [{ static_configs: [{ targets: ['a:1'] }], timeout: '1.5' }] } }),
      /server_groups\[0\]\.timeout: .*a Go duration such as 5s, 1\.5s/,
    );
    assert.match(
      refused({ promxy: { server_groups: [{ static_configs: [{ targets: ['a:1'] }], timeout: '-1s' }] } }),
      /server_groups\[0\]\.timeout: /,
    );
  });

  it("reads a group's max_query_length, 16384 by default as VictoriaMetrics' -search.maxQueryLen", () => {
    const config = parseQueryProxyConfig('promxy.yml', {
      promxy: {
        server_groups: [
          { static_configs: [{ targets: ['a:1'] }] },
          { static_configs: [{ targets: ['b:1'] }], max_query_length: 65536 },
        ],
      },
    });
    assert.deepEqual(
      config.groups.map((g) => g.maxQueryLength),
      [16384, 65536],
    );
    for (const bad of [0, 1.5, '16k']) {
      assert.match(
        refused({ promxy: { server_groups: [{ static_configs: [{ targets: ['a:1'] }], max_query_length: bad }] } }),
        /server_groups\[0\]\.max_query_length: /,
        String(bad),
      );
    }
  });

  it('names the promxy settings it does not implement, once per load, and where that work is done here', () => {
    const config = parseQueryProxyConfig('promxy.yml', {
      global: { evaluation_interval: '5s' },
      rule_files: ['rules.yml'],
      alerting: { alertmanagers: [] },
      remote_write: [{ url: 'http://x' }],
      scrape_configs: [],
      promxy: {
        server_groups: [
          {
            static_configs: [{ targets: ['a:1'], labels: { dc: 'x' } }],
            label_filter: {
              static_labels_include: { scrape: ['short'] },
              dynamic_labels: ['job'],
              sync_interval: '5m',
            },
          },
        ],
      },
    });
    assert.deepEqual(config.warnings, [
      "global: a promxy setting this proxy does not implement (its evaluation settings and external labels serve promxy's rule engine; rules belong to the rule evaluator); ignored",
      'rule_files: a promxy setting this proxy does not implement (rules belong to the rule evaluator); ignored',
      'alerting: a promxy setting this proxy does not implement (alerts are sent by the rule evaluator to the alert router); ignored',
      'remote_write: a promxy setting this proxy does not implement (rule results are written to the long-term store by the rule evaluator); ignored',
      'scrape_configs: a promxy setting this proxy does not implement (the stores scrape the exporters, as their scrape.yml says); ignored',
      'promxy.server_groups[0].label_filter.dynamic_labels: a promxy setting this proxy does not implement (the label values are not fetched from the stores; list them under static_labels_include); ignored',
      'promxy.server_groups[0].label_filter.sync_interval: a promxy setting this proxy does not implement (nothing is fetched from the stores to keep in sync); ignored',
      "promxy.server_groups[0].static_configs[0].labels: a promxy setting this proxy does not implement (target labels, which promxy uses only in relabel_configs; the group's own labels are its `labels` key); ignored",
    ]);
  });

  it('refuses invalid values with their key path', async () => {
    assert.match(refused({}), /promxy: /);
    assert.match(refused({ promxy: { server_groups: [] } }), /promxy\.server_groups: at least one server group/);
    assert.match(
      refused({ promxy: { server_groups: [{ static_configs: [{ targets: ['nohost'] }] }] } }),
      /promxy\.server_groups\[0\]\.static_configs\[0\]\.targets\[0\]: expected <host>:<port>/,
    );
    assert.match(
      refused({ promxy: { server_groups: [{ static_configs: [{ targets: ['a:1'] }], timeout: 'soon' }] } }),
      /server_groups\[0\]\.timeout: invalid duration "soon"/,
    );
    assert.match(
      refused({ promxy: { server_groups: [{ static_configs: [{ targets: ['a:1'] }], scheme: 'ftp' }] } }),
      /server_groups\[0\]\.scheme: /,
    );
    assert.match(
      refused({
        promxy: {
          server_groups: [
            { static_configs: [{ targets: ['a:1'] }], label_filter: { static_labels_include: { scrape: 'short' } } },
          ],
        },
      }),
      /label_filter\.static_labels_include\.scrape: /,
    );
    const dir = await tempDir('query-proxy-');
    const file = join(dir, 'promxy.yml');
    writeFileSync(file, 'promxy:\n  server_groups:\n    - static_configs: [\n');
    assert.throws(
      () => loadQueryProxyConfig(file),
      (err: unknown) => err instanceof CachemonError && /promxy\.yml:4:1: Flow sequence/.test(err.message),
    );
  });

  it('names the line and column of a syntax error and of a schema error', async () => {
    const dir = await tempDir('query-proxy-');
    const file = join(dir, 'promxy.yml');
    // Syntax: a nested mapping on one line, at line 3, column 16 (the second ":").
    writeFileSync(file, 'promxy:\n  server_groups:\n    - timeout: a: b\n');
    assert.throws(
      () => loadQueryProxyConfig(file),
      (err: unknown) => {
        assert.ok(err instanceof CachemonError);
        assert.ok(err.message.startsWith(`${file}:3:16: Nested mappings`), err.message);
        return true;
      },
    );
    // Schema: a wrong type on a nested key points at that key; a second group's at its own line.
    writeFileSync(
      file,
      `promxy:
  server_groups:
    - static_configs:
        - targets: [127.0.0.1:8428]
    - static_configs:
        - targets: [127.0.0.1:8429]
      label_filter:
        static_labels_include:
          scrape: short
      ignore_error: "yes"
`,
    );
    assert.throws(
      () => loadQueryProxyConfig(file),
      (err: unknown) => {
        assert.ok(err instanceof CachemonError);
        const lines = err.message.split('\n');
        assert.deepEqual(
          lines.map((l) => l.replace(/:\s.*$/, '').slice(file.length)),
          [':9:11', ':10:7'],
          err.message,
        );
        assert.match(lines[0]!, /:9:11: promxy\.server_groups\[1\]\.label_filter\.static_labels_include\.scrape: /);
        assert.match(lines[1]!, /:10:7: promxy\.server_groups\[1\]\.ignore_error: /);
        return true;
      },
    );
  });
});
