import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { Errors, formatHostPort, isCachemonError, listenAddressSchema, parseListenAddress } from '../../src/index.js';

describe('parseListenAddress', () => {
  const valid: Array<[string, string, number]> = [
    ['127.0.0.1:8084', '127.0.0.1', 8084],
    ['0.0.0.0:8084', '0.0.0.0', 8084],
    [':9100', '', 9100],
    ['[::1]:8080', '::1', 8080],
    ['[::]:0', '::', 0],
    ['localhost:65535', 'localhost', 65535],
    ['cache-01.example.com:80', 'cache-01.example.com', 80],
  ];
  for (const [text, host, port] of valid) {
    it(`reads ${text}`, () => assert.deepEqual(parseListenAddress(text), { host, port }));
  }

  const invalid: Array<[string, RegExp]> = [
    ['8084', /expected <host>:<port>/],
    ['host:', /port "" is not a number/],
    ['host:http', /port "http" is not a number/],
    [':65536', /out of range/],
    ['::1:80', /must be in brackets/],
    ['[1.2.3.4]:80', /not a bracketed IPv6/],
    ['[::1:80', /not a bracketed IPv6/],
    ['bad host:80', /not a valid host/],
  ];
  for (const [text, reason] of invalid) {
    it(`refuses ${JSON.stringify(text)}`, () => {
      assert.throws(
        () => parseListenAddress(text),
        (err: unknown) =>
          isCachemonError(err, Errors.CONFIG_INVALID) && err.message.includes(`"${text}"`) && reason.test(err.message),
      );
    });
  }
});

describe('formatHostPort', () => {
  it('brackets IPv6 only', () => {
    assert.equal(formatHostPort('::1', 80), '[::1]:80');
    assert.equal(formatHostPort('127.0.0.1', 80), '127.0.0.1:80');
  });
});

describe('listenAddressSchema', () => {
  it('keeps a valid address and explains an invalid one', () => {
    assert.equal(listenAddressSchema.parse(':8084'), ':8084');
    const result = z.object({ listen: listenAddressSchema }).safeParse({ listen: '8084' });
    assert.equal(result.success, false);
    assert.match(result.error?.issues[0]?.message ?? '', /invalid listen address "8084"/);
  });
});
