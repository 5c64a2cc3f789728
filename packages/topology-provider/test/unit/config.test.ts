import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CachemonError } from '@cachemon/core';
import { parseTopologyProviderConfig } from '../../src/index.js';

const DAY = 24 * 3600 * 1000;

function refused(raw: unknown): string {
  try {
    parseTopologyProviderConfig('config.json', raw);
  } catch (err) {
    assert.ok(err instanceof CachemonError);
    assert.equal(err.code, 'CACHEMON_CONFIG_INVALID');
    return err.message;
  }
  assert.fail('config accepted');
}

describe('topology provider config', () => {
  it('defaults: listen 0.0.0.0:8084, rawRetention 14d, warn to stdout, all service codes', () => {
    const config = parseTopologyProviderConfig('config.json', {
      ensembleByName: { a: ['zk1:2181'], b: 'zk.example.com:2181' },
    });
    assert.equal(config.listen, '0.0.0.0:8084');
    assert.equal(config.rawRetentionMs, 14 * DAY);
    assert.equal(config.log.level, 'warn');
    assert.equal(config.log.filename, 'stdout');
    assert.deepEqual(config.ensembles, [
      { name: 'a', servers: ['zk1:2181'], serviceCodes: undefined },
      { name: 'b', servers: ['zk.example.com:2181'], serviceCodes: undefined },
    ]);
  });

  it('several ensembles, service codes per ensemble, retention in the spec units', () => {
    const config = parseTopologyProviderConfig('config.json', {
      listen: ':8084',
      ensembleByName: { prod: ['10.0.0.1:2181', '10.0.0.2:2181'], dev: ['127.0.0.1:2181'] },
      serviceCodesByEnsembleName: { prod: ['svc-a'] },
      rawRetention: '2w',
    });
    assert.deepEqual(
      config.ensembles.map((e) => [e.name, e.serviceCodes]),
      [
        ['prod', ['svc-a']],
        ['dev', undefined],
      ],
    );
    assert.equal(config.rawRetentionMs, 14 * DAY);
    assert.equal(
      parseTopologyProviderConfig('c', { ensembleByName: {}, rawRetention: '1y' }).rawRetentionMs,
      365 * DAY,
    );
  });

  it('refuses, naming the key path and the reason', () => {
    assert.match(refused({}), /^config\.json: ensembleByName: /);
    assert.match(refused({ ensembleByName: { a: [] } }), /ensembleByName\.a: empty server list/);
    assert.match(refused({ ensembleByName: { a: ['zk1'] } }), /ensembleByName\.a\[0\]: expected <host>:<port>/);
    assert.match(
      refused({ ensembleByName: { 'bad name': ['zk1:2181'] } }),
      /ensembleByName\["bad name"\]: invalid key: an ensemble name is letters/,
    );
    assert.match(
      refused({ ensembleByName: { a: ['zk1:2181'] }, serviceCodesByEnsembleName: { b: ['x'] } }),
      /serviceCodesByEnsembleName\.b: no ensemble "b" in ensembleByName \(known: a\)/,
    );
    assert.match(
      refused({ ensembleByName: { a: ['zk1:2181'] }, serviceCodesByEnsembleName: { a: [''] } }),
      /serviceCodesByEnsembleName\.a\[0\]: empty service code/,
    );
    assert.match(refused({ ensembleByName: {}, rawRetention: '14x' }), /rawRetention: invalid duration "14x"/);
    assert.match(refused({ ensembleByName: {}, rawRetention: '0h' }), /rawRetention: must be longer than zero/);
    assert.match(refused({ ensembleByName: {}, listen: 'everywhere' }), /listen: invalid listen address/);
    assert.match(refused({ ensembleByName: {}, ensemble: ['zk1:2181'] }), /ensemble: unknown key/);
    assert.match(refused({ ensembleByName: {}, log: { level: 'loud' } }), /log\.level: /);
  });
});
