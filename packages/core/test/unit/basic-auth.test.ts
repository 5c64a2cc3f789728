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
    const checked: string[] = [];
    const verify = createBasicAuthVerifier(new Map([['alice', hash]]), async (password, against) => {
      checked.push(password);
      return bcrypt.compare(password, against);
    });
    for (let i = 0; i < 20; i++) assert.equal(await verify({ username: 'alice', password: 'secret' }), true);
    assert.deepEqual(checked, ['secret'], 'bcrypt ran once for 20 good attempts');
    // Neither a wrong password nor an unknown user is cached: each attempt runs bcrypt.
    for (let i = 0; i < 2; i++) assert.equal(await verify({ username: 'alice', password: 'other' }), false);
    for (let i = 0; i < 2; i++) assert.equal(await verify({ username: 'bob', password: 'secret' }), false);
    assert.deepEqual(checked, ['secret', 'other', 'other', 'secret', 'secret']);
  });
});
