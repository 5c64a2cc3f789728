import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CachemonError, Errors } from '@cachemon/core';
import {
  DEFAULT_COLLECT_PREFIXES,
  DEFAULT_SIMPLE_QOS,
  DEFAULT_SLAB_CLASSES,
  loadCacheExporterConfig,
  parseCacheExporterConfig,
  prefixSelectionFor,
} from '../../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'cache-exporter-config-'));
after(() => rmSync(dir, { recursive: true, force: true }));
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

function configError(raw: unknown): CachemonError {
  try {
    parseCacheExporterConfig('conf/test.json', raw);
  } catch (err) {
    assert.ok(err instanceof CachemonError, String(err));
    assert.equal(err.code, Errors.CONFIG_INVALID.code);
    return err;
  }
  assert.fail('config was accepted');
}

test('a minimal config gets the documented defaults', () => {
  const config = parseCacheExporterConfig('c.json', { listen: ':9151', ensembleByName: { zk1: ['127.0.0.1:2181'] } });
  assert.deepEqual(config.ensemble, { name: 'zk1', servers: ['127.0.0.1:2181'] });
  assert.equal(config.serviceCodes, undefined);
  assert.equal(config.collectPrefixes, DEFAULT_COLLECT_PREFIXES);
  assert.equal(config.simpleQos, DEFAULT_SIMPLE_QOS);
  assert.equal(config.slabClasses, DEFAULT_SLAB_CLASSES);
  assert.equal(DEFAULT_SLAB_CLASSES, false);
  assert.equal(config.log.level, 'warn');
  assert.equal(config.log.maxSize, 20);
  assert.equal(config.log.maxBackups, 10);
  assert.equal(config.log.maxAge, 30);
  assert.equal(config.log.compress, false);
});

test('the ensemble value may be a domain string or a list; the older ensemble array form works', () => {
  const domain = parseCacheExporterConfig('c.json', { listen: ':1', ensembleByName: { prod: 'zk.example.com:2181' } });
  assert.deepEqual(domain.ensemble, { name: 'prod', servers: ['zk.example.com:2181'] });
  const legacy = parseCacheExporterConfig('c.json', { listen: ':1', ensemble: ['10.0.0.1:2181', '10.0.0.2:2181'] });
  assert.deepEqual(legacy.ensemble, { name: 'default', servers: ['10.0.0.1:2181', '10.0.0.2:2181'] });
});

test('exactly one ensemble: two pairs, none, or both forms are refused with the key path', () => {
  const two = configError({ listen: ':1', ensembleByName: { a: ['h:1'], b: ['h:2'] } });
  assert.match(two.message, /conf\/test\.json: ensembleByName: exactly one ensemble/);
  const none = configError({ listen: ':1' });
  assert.match(none.message, /ensembleByName: missing/);
  const both = configError({ listen: ':1', ensembleByName: { a: ['h:1'] }, ensemble: ['h:1'] });
  assert.match(both.message, /ensemble: use either ensembleByName or ensemble/);
  const empty = configError({ listen: ':1', ensembleByName: {} });
  assert.match(empty.message, /exactly one ensemble/);
});

test('bad values name the key path and the reason', () => {
  assert.match(
    configError({ listen: ':1', ensembleByName: { a: ['nohostport'] } }).message,
    /ensembleByName\.a(\[0\])?: /,
  );
  assert.match(
    configError({ listen: 'nowhere', ensembleByName: { a: ['h:1'] } }).message,
    /listen: invalid listen address "nowhere": expected <host>:<port>/,
  );
  assert.match(configError({ listen: ':1', ensembleByName: { a: ['h:1'] }, surprise: 1 }).message, /unknown key/);
  assert.match(
    configError({ listen: ':1', ensembleByName: { a: ['h:1'] }, log: { level: 'loud' } }).message,
    /log\.level/,
  );
  assert.match(
    configError({ listen: ':1', ensembleByName: { a: ['h:1'] }, serviceCodesToCollectPrefixes: { s: ['*', 'x'] } })
      .message,
    /serviceCodesToCollectPrefixes\.s: "\*" must be alone/,
  );
  assert.match(
    configError({ listen: ':1', ensembleByName: { a: ['h:1'] }, serviceCodesToCollectPrefixes: { s: ['bad prefix'] } })
      .message,
    /serviceCodesToCollectPrefixes\.s\[0\]: a prefix has 1-250 characters and no whitespace, control or format characters/,
  );
  // What the node client refuses to send is refused here, not at the first prefix scrape.
  for (const bad of ['a\u200bb', 'a\u2028b', 'x'.repeat(251), '']) {
    assert.match(
      configError({ listen: ':1', ensembleByName: { a: ['h:1'] }, serviceCodesToCollectPrefixes: { s: ['ok', bad] } })
        .message,
      /serviceCodesToCollectPrefixes\.s\[1\]: a prefix has/,
      JSON.stringify(bad),
    );
  }
  assert.match(
    configError({ listen: ':99999', ensembleByName: { a: ['h:1'] } }).message,
    /listen: .*port 99999 is out of range/,
  );
  assert.match(
    configError({ listen: ':1', ensembleByName: { a: ['h:1'] }, collectPrefixes: 'yes' }).message,
    /collectPrefixes/,
  );
});

test('prefix selection: serviceCodesToCollectPrefixes overrides collectPrefixes per service code', () => {
  const config = parseCacheExporterConfig('c.json', {
    listen: ':1',
    ensembleByName: { a: ['h:1'] },
    collectPrefixes: false,
    serviceCodesToCollectPrefixes: { all: ['*'], some: ['user', 'app'], none: [] },
  });
  assert.deepEqual(prefixSelectionFor(config, 'all'), { kind: 'all' });
  assert.deepEqual(prefixSelectionFor(config, 'some'), { kind: 'named', names: ['user', 'app'] });
  assert.deepEqual(prefixSelectionFor(config, 'none'), { kind: 'none' });
  assert.deepEqual(prefixSelectionFor(config, 'other'), { kind: 'none' });
  const on = parseCacheExporterConfig('c.json', {
    listen: ':1',
    ensembleByName: { a: ['h:1'] },
    collectPrefixes: true,
  });
  assert.deepEqual(prefixSelectionFor(on, 'other'), { kind: 'all' });
  // Service codes that are names of Object's own methods are service codes like any other.
  for (const code of ['constructor', 'toString', 'valueOf', '__proto__', 'hasOwnProperty']) {
    assert.deepEqual(prefixSelectionFor(on, code), { kind: 'all' }, code);
    assert.deepEqual(prefixSelectionFor(config, code), { kind: 'none' }, code);
  }
  const listed = parseCacheExporterConfig('c.json', {
    listen: ':1',
    ensembleByName: { a: ['h:1'] },
    serviceCodesToCollectPrefixes: JSON.parse('{"constructor": ["app"], "toString": []}') as unknown,
  });
  assert.deepEqual(prefixSelectionFor(listed, 'constructor'), { kind: 'named', names: ['app'] });
  assert.deepEqual(prefixSelectionFor(listed, 'toString'), { kind: 'none' });
});

test('config files: comments allowed, syntax errors and missing files name the file', () => {
  const good = file(
    'good.json',
    '// comment\n{ "listen": ":9151", /* x */ "ensembleByName": { "z": ["127.0.0.1:2181"] }, }\n',
  );
  assert.equal(loadCacheExporterConfig(good).listen, ':9151');
  const broken = file('broken.json', '{ "listen": ":9151",\n  "ensembleByName": { "z": ["127.0.0.1:2181"] \n');
  assert.throws(
    () => loadCacheExporterConfig(broken),
    (err: unknown) => err instanceof CachemonError && err.message.includes('broken.json:'),
  );
  assert.throws(
    () => loadCacheExporterConfig(join(dir, 'absent.json')),
    (err: unknown) =>
      err instanceof CachemonError && err.code === Errors.CONFIG_UNREADABLE.code && err.message.includes('absent.json'),
  );
});

test('slabClasses is a boolean: true switches the per-class series on, anything else is refused by name', () => {
  const on = parseCacheExporterConfig('c.json', { listen: ':1', ensembleByName: { a: ['h:1'] }, slabClasses: true });
  assert.equal(on.slabClasses, true);
  const wrong = configError({ listen: ':1', ensembleByName: { a: ['h:1'] }, slabClasses: 'yes' });
  assert.match(wrong.message, /slabClasses/);
});

test('the shipped example config is valid', () => {
  const example = new URL('../../../../../stack/cache_exporter/conf/example.json', import.meta.url).pathname;
  const config = loadCacheExporterConfig(example);
  assert.equal(config.ensemble.name, 'example');
  assert.equal(config.ensemble.servers.length, 3);
  assert.equal(config.slabClasses, DEFAULT_SLAB_CLASSES);
});
