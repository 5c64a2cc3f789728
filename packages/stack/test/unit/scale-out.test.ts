import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import {
  collectorEnv,
  envValue,
  parseScaleOutSettings,
  promxyConfig,
  rulerEnv,
  scaleOutNotes,
  ScaleOutError,
  setEnvValue,
  shortStoreEnv,
} from '../../src/scale-out.js';

const STACK_DIR = new URL('../../../../../stack/', import.meta.url).pathname;
const shipped = (file: string) => readFileSync(join(STACK_DIR, file), 'utf8');

interface Group {
  static_configs: Array<{ targets: string[] }>;
  path_prefix?: string;
  scheme?: string;
  replicas?: string;
  label_filter: { static_labels_include: { scrape: string[] } };
}
const groups = (text: string) => (parse(text) as { promxy: { server_groups: Group[] } }).promxy.server_groups;

/** The lines of `after` that `before` lacks, and those it lost: what an operator sees in a diff. */
function lineDiff(before: string, after: string): { added: string[]; removed: string[] } {
  const b = before.split('\n');
  const a = after.split('\n');
  return { added: a.filter((l) => !b.includes(l)), removed: b.filter((l) => !a.includes(l)) };
}

describe('scale-out settings from config.sh', () => {
  test('empty settings are no settings: nothing is changed', () => {
    const settings = parseScaleOutSettings({ STORE_SHARDS: '', STORE_REPLICAS: ' ', STORE_WRITE_URL: '' });
    assert.deepEqual(settings, {});
    for (const file of ['collector/collector.env', 'short_term_store/short.env', 'rule_evaluator/rule_evaluator.env'])
      assert.equal(
        collectorEnv(shortStoreEnv(rulerEnv(shipped(file), settings), settings), settings),
        shipped(file),
        file,
      );
    assert.equal(
      promxyConfig(shipped('query_proxy/conf/promxy.yml'), settings).text,
      shipped('query_proxy/conf/promxy.yml'),
    );
  });

  test('every problem is named at once, with the form each setting takes', () => {
    assert.throws(
      () =>
        parseScaleOutSettings({
          STORE_SHARDS: '0',
          STORE_REPLICAS: 'two',
          STORE_WRITE_URL: 'http://vminsert:8480/insert/0/prometheus',
          STORE_QUERY_URL: 'http://vmselect:8481/select/0/prometheus/api/v1/query',
          LONG_STORE_WRITE_URL: 'ftp://store/api/v1/write',
          LONG_STORE_QUERY_URL: 'http://store:8429?x=1',
        }),
      (error: unknown) => {
        assert.ok(error instanceof ScaleOutError);
        const problems = error.message.replace(/^config\.sh: /, '').split('; ');
        assert.deepEqual(
          problems.map((p) => p.slice(0, p.indexOf(':'))),
          [
            'STORE_SHARDS=0',
            'STORE_REPLICAS=two',
            'STORE_WRITE_URL',
            'STORE_QUERY_URL',
            'LONG_STORE_WRITE_URL',
            'LONG_STORE_QUERY_URL',
          ],
        );
        assert.match(error.message, /STORE_WRITE_URL: \S+: not a remote write URL \(it ends with \/api\/v1\/write/);
        assert.match(error.message, /STORE_QUERY_URL: \S+: give the API's base, without \/api\/v1\/\.\.\./);
        assert.match(
          error.message,
          /LONG_STORE_WRITE_URL: ftp:\/\/store\/api\/v1\/write: not an http:\/\/ or https:\/\/ URL/,
        );
        assert.match(error.message, /LONG_STORE_QUERY_URL: \S+: a query or fragment/);
        return true;
      },
    );
  });

  test('replicas and a URL per shard are checked against the shards given, else those the tree has', () => {
    assert.throws(
      () => parseScaleOutSettings({ STORE_SHARDS: '2', STORE_REPLICAS: '3' }),
      /STORE_REPLICAS=3: .* at most STORE_SHARDS \(2\)/,
    );
    assert.throws(() => parseScaleOutSettings({ STORE_REPLICAS: '2' }, { shards: 1 }), /at most STORE_SHARDS \(1\)/);
    assert.deepEqual(parseScaleOutSettings({ STORE_REPLICAS: '2' }, { shards: 3 }), { replicas: 2 });
    assert.throws(
      () =>
        parseScaleOutSettings({
          STORE_SHARDS: '3',
          STORE_WRITE_URL: 'http://a:8428/api/v1/write http://b:8428/api/v1/write',
        }),
      /STORE_WRITE_URL has 2 URLs for 3 shards: give one \(every shard writes there\) or one per shard/,
    );
  });

  test('collector.env: the shards, replicas and write URLs, a URL list quoted for the start script', () => {
    const settings = parseScaleOutSettings({
      STORE_SHARDS: '2',
      STORE_REPLICAS: '2',
      STORE_WRITE_URL: 'http://a:8428/api/v1/write  http://b:8428/api/v1/write/',
    });
    const text = collectorEnv(shipped('collector/collector.env'), settings);
    assert.equal(envValue(text, 'STORE_SHARDS'), '2');
    assert.equal(envValue(text, 'STORE_REPLICAS'), '2');
    assert.match(text, /^STORE_WRITE_URL="http:\/\/a:8428\/api\/v1\/write http:\/\/b:8428\/api\/v1\/write"$/m);
    assert.deepEqual(lineDiff(shipped('collector/collector.env'), text).added.length, 3);
    assert.equal(collectorEnv(text, settings), text, 'applied again, nothing changes');
  });

  test('short.env: replicas above 1 turn deduplication on, in place of the commented line', () => {
    const text = shortStoreEnv(shipped('short_term_store/short.env'), { replicas: 2 });
    assert.deepEqual(lineDiff(shipped('short_term_store/short.env'), text), {
      added: ['TS_DEDUP_MIN_SCRAPE_INTERVAL=5s'],
      removed: ['# TS_DEDUP_MIN_SCRAPE_INTERVAL=5s'],
    });
    assert.equal(
      shortStoreEnv(shipped('short_term_store/short.env'), { replicas: 1 }),
      shipped('short_term_store/short.env'),
    );
    assert.equal(setEnvValue('A=1\n', 'B', '2'), 'A=1\nB=2\n');
  });

  test("rule_evaluator.env: the cluster's vmselect as the datasource, its vminsert's base for the remote write", () => {
    const text = rulerEnv(
      shipped('rule_evaluator/rule_evaluator.env'),
      parseScaleOutSettings({
        STORE_QUERY_URL: 'http://vmselect:8481/select/0/prometheus/',
        LONG_STORE_WRITE_URL: 'http://vminsert:8480/insert/1/prometheus/api/v1/write',
      }),
    );
    assert.equal(envValue(text, 'RULER_DATASOURCE_URL'), 'http://vmselect:8481/select/0/prometheus');
    assert.equal(envValue(text, 'RULER_REMOTEWRITE_URL'), 'http://vminsert:8480/insert/1/prometheus');
    assert.equal(envValue(text, 'RULER_NOTIFIER_URL'), 'http://127.0.0.1:9093');
  });
});

describe("the query proxy's groups from the settings", () => {
  const promxy = shipped('query_proxy/conf/promxy.yml');

  test("a cluster's vmselect: one logical store at its path, any replica answering; only those lines change", () => {
    const { text, notes } = promxyConfig(
      promxy,
      parseScaleOutSettings({
        STORE_QUERY_URL: 'http://vmselect-1:8481/select/0/prometheus',
        LONG_STORE_QUERY_URL: 'https://vmselect-long/select/1/prometheus',
      }),
    );
    assert.deepEqual(notes, []);
    const [short, long] = groups(text);
    assert.deepEqual(
      [short!.static_configs, short!.path_prefix, short!.replicas, short!.scheme],
      [[{ targets: ['vmselect-1:8481'] }], '/select/0/prometheus', 'any', undefined],
    );
    assert.deepEqual(
      [long!.static_configs, long!.path_prefix, long!.replicas, long!.scheme],
      [[{ targets: ['vmselect-long:443'] }], '/select/1/prometheus', 'any', 'https'],
    );
    const { added, removed } = lineDiff(promxy, text);
    assert.deepEqual(removed, ['        - targets: ["127.0.0.1:8428"]', '        - targets: ["127.0.0.1:8429"]']);
    assert.equal(added.length, 7, added.join('\n'));
    assert.ok(text.includes('# Short-term store: raw data (14d)'), 'comments kept');
  });

  test('a store per shard: the stores merged, as replicas or parts; a note when they hold parts', () => {
    const settings = parseScaleOutSettings({
      STORE_SHARDS: '2',
      STORE_WRITE_URL: 'http://shard-a:8428/api/v1/write http://shard-b:8428/api/v1/write',
    });
    const [short] = groups(promxyConfig(promxy, settings).text);
    assert.deepEqual(short!.static_configs, [{ targets: ['shard-a:8428', 'shard-b:8428'] }]);
    assert.equal(short!.replicas, undefined, 'merge, the default');
    assert.equal(short!.path_prefix, undefined);
    assert.match(scaleOutNotes(settings, {}).join('\n'), /each of the 2 stores .* holds about 1\/2 of the targets/);
    assert.deepEqual(scaleOutNotes({ ...settings, replicas: 2 }, {}), [], 'full copies: nothing to say');
  });

  test('what the proxy cannot use is left as it is, and said', () => {
    const withCredentials = promxyConfig(
      promxy,
      parseScaleOutSettings({ STORE_QUERY_URL: 'http://user:secret@vmauth:8427/select/0/prometheus' }),
    );
    assert.equal(withCredentials.text, promxy);
    assert.match(
      withCredentials.notes.join('\n'),
      /scrape=short group left as it is: STORE_QUERY_URL: it carries credentials/,
    );
    assert.doesNotMatch(withCredentials.notes.join('\n'), /secret/);

    const clusters = parseScaleOutSettings({
      STORE_SHARDS: '2',
      STORE_WRITE_URL:
        'http://c1:8480/insert/0/prometheus/api/v1/write http://c2:8480/insert/0/prometheus/api/v1/write',
    });
    const left = promxyConfig(promxy, clusters);
    assert.equal(left.text, promxy);
    assert.match(
      left.notes.join('\n'),
      /names clusters \(\/insert\/\.\.\.\), whose data is read at their vmselect: set STORE_QUERY_URL/,
    );
  });

  test('shards writing to a cluster without STORE_QUERY_URL: the readers that stay behind are named', () => {
    const settings = parseScaleOutSettings({
      STORE_SHARDS: '2',
      STORE_WRITE_URL: 'http://vminsert:8480/insert/0/prometheus/api/v1/write',
    });
    assert.match(
      scaleOutNotes(settings, { ruler: shipped('rule_evaluator/rule_evaluator.env') }).join('\n'),
      /the shards write to a cluster \(vminsert:8480\/insert\/0\/prometheus\): set STORE_QUERY_URL .* keep reading 127\.0\.0\.1:8428/,
    );
    const elsewhere = parseScaleOutSettings({ STORE_WRITE_URL: 'http://big-store:8428/api/v1/write' });
    assert.match(
      scaleOutNotes(elsewhere, { ruler: shipped('rule_evaluator/rule_evaluator.env') }).join('\n'),
      /the shards write to big-store:8428, the rule evaluator reads 127\.0\.0\.1:8428/,
    );
  });
});
