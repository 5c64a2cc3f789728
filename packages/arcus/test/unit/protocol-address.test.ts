import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CachemonError, Errors } from '@cachemon/core';
import { AsciiConnection, parseAddress } from '../../src/protocol/index.js';

describe('parseAddress', () => {
  it('host:port and [ipv6]:port', () => {
    assert.deepEqual(parseAddress('127.0.0.1:11211'), { host: '127.0.0.1', port: 11211 });
    assert.deepEqual(parseAddress('cache-1.example.com:1'), { host: 'cache-1.example.com', port: 1 });
    assert.deepEqual(parseAddress('[::1]:65535'), { host: '::1', port: 65535 });
    assert.deepEqual(parseAddress('[fe80::1:2]:21211'), { host: 'fe80::1:2', port: 21211 });
  });

  it('rejects ambiguous or malformed addresses with CONFIG_INVALID', () => {
    for (const address of [
      '',
      '127.0.0.1',
      '::1:11211',
      '[::1]',
      '[::1]11211',
      '[nothost]:1',
      'host:',
      ':11211',
      'host:0',
      'host:65536',
      'host:12a',
      'ho st:1',
      'host:1\r\n',
      'host:123456',
    ]) {
      assert.throws(
        () => parseAddress(address),
        (err: unknown) =>
          err instanceof CachemonError &&
          err.code === Errors.CONFIG_INVALID.code &&
          err.message.includes(JSON.stringify(address)),
        address,
      );
    }
  });

  it('AsciiConnection refuses a malformed address at construction', () => {
    assert.throws(
      () => new AsciiConnection('nope'),
      (err: unknown) => err instanceof CachemonError && err.code === Errors.CONFIG_INVALID.code,
    );
  });
});
