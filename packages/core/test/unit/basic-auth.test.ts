import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import bcrypt from 'bcryptjs';
import { createBasicAuthVerifier, parseBasicAuthorization } from '../../src/basic-auth.js';

function header(userPass: string): string {
  return `Basic ${Buffer.from(userPass).toString('base64')}`;
}

describe('parseBasicAuthorization', () => {
  it('reads user and password, keeping colons in the password', () => {
    assert.deepEqual(parseBasicAuthorization(header('alice:pa:ss')), { username: 'alice', password: 'pa:ss' });
    assert.deepEqual(parseBasicAuthorization(header('alice:')), { username: 'alice', password: '' });
  });

  it('refuses what is not basic auth', () => {
    for (const value of [undefined, '', 'Bearer abc', 'Basic', 'Basic !!!', header('no-colon')]) {
      assert.equal(parseBasicAuthorization(value), undefined, String(value));
    }
  });
});

describe('createBasicAuthVerifier', () => {
  const hash = bcrypt.hashSync('secret', 4);

  it('accepts the right password and refuses wrong ones and unknown users', async () => {
    const verify = createBasicAuthVerifier(new Map([['alice', hash]]));
    assert.equal(await verify({ username: 'alice', password: 'secret' }), true);
    assert.equal(await verify({ username: 'alice', password: 'wrong' }), false);
    assert.equal(await verify({ username: 'bob', password: 'secret' }), false);
  });

  it('answers a repeated good attempt from its cache without running bcrypt again', async () => {
    const slowHash = bcrypt.hashSync('secret', 10);
    const verify = createBasicAuthVerifier(new Map([['alice', slowHash]]));
    let started = performance.now();
    assert.equal(await verify({ username: 'alice', password: 'secret' }), true);
    const first = performance.now() - started;
    started = performance.now();
    for (let i = 0; i < 20; i++) assert.equal(await verify({ username: 'alice', password: 'secret' }), true);
    const twenty = performance.now() - started;
    assert.ok(twenty < first, `20 cached checks took ${twenty.toFixed(1)} ms, one bcrypt check ${first.toFixed(1)} ms`);
    assert.equal(await verify({ username: 'alice', password: 'other' }), false);
  });
});
