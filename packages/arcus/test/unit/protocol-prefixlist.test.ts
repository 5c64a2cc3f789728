import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CachemonError, Errors } from '@cachemon/core';
import {
  PREFIXLIST_MAX_LINE_BYTES,
  PREFIXLIST_MAX_NAMES,
  prefixListCommands,
  validatePrefixName,
} from '../../src/protocol/index.js';

function isConfigInvalid(err: unknown): boolean {
  return err instanceof CachemonError && err.code === Errors.CONFIG_INVALID.code;
}

describe('prefixListCommands', () => {
  it('one command for a few names, in order (the transcript form)', () => {
    assert.deepEqual(prefixListCommands('item', ['app', 'user']), ['stats prefixlist item app user']);
    assert.deepEqual(prefixListCommands('operation', ['app']), ['stats prefixlist operation app']);
    assert.deepEqual(prefixListCommands('item', ['<null>', '한글']), ['stats prefixlist item <null> 한글']);
    assert.deepEqual(prefixListCommands('item', []), []);
  });

  it(`at most ${PREFIXLIST_MAX_NAMES} names per command (the server ignores tokens past 29)`, () => {
    const names = Array.from({ length: 60 }, (_, i) => `p${i}`);
    const commands = prefixListCommands('item', names);
    assert.equal(commands.length, 3);
    const sent = commands.flatMap((command) => command.split(' ').slice(3));
    assert.deepEqual(sent, names);
    for (const command of commands) assert.ok(command.split(' ').length <= 29, command);
  });

  it(`every command line plus CRLF stays under ${PREFIXLIST_MAX_LINE_BYTES} bytes, counting UTF-8 bytes`, () => {
    const names = Array.from({ length: 40 }, (_, i) => `${'가'.repeat(60)}${i}`); // ~181 bytes each
    const commands = prefixListCommands('operation', names);
    assert.ok(commands.length > 2);
    for (const command of commands)
      assert.ok(Buffer.byteLength(`${command}\r\n`) < PREFIXLIST_MAX_LINE_BYTES, String(Buffer.byteLength(command)));
    assert.deepEqual(
      commands.flatMap((command) => command.split(' ').slice(3)),
      names,
    );
  });

  it('refuses a name that cannot fit one command by itself', () => {
    assert.throws(() => prefixListCommands('item', ['x'.repeat(PREFIXLIST_MAX_LINE_BYTES)]), isConfigInvalid);
  });

  it('refuses the whole list, before building anything, when one name could inject a command', () => {
    for (const bad of [
      '',
      'a b',
      'a\r\nflush_all',
      'a\nstats',
      'a\tb',
      'a\u0000',
      'a\u007f',
      'a\u0085b',
      'a\u00a0b',
      'a\u2028b',
      'a\u3000b',
      'a\ufeffb',
      'a\ud800b',
    ]) {
      assert.throws(() => prefixListCommands('item', ['good', bad]), isConfigInvalid, JSON.stringify(bad));
      assert.throws(() => validatePrefixName(bad), isConfigInvalid, JSON.stringify(bad));
    }
  });

  it('accepts ordinary names', () => {
    for (const good of ['app', 'arcus-ping', 'a.b_c', '<null>', '사용자', 'emoji😀']) validatePrefixName(good);
    assert.equal(prefixListCommands('item', ['app', 'arcus-ping']).length, 1);
  });
});
