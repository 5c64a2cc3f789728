import assert from 'node:assert/strict';
import { describe, it, test } from 'node:test';
import { z } from 'zod';
import {
  durationSchema,
  Errors,
  formatDuration,
  isCachemonError,
  parseDuration,
  parseGoDuration,
} from '../../src/index.js';

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;

describe('parseDuration', () => {
  const valid: Array<[string, number]> = [
    ['0', 0],
    ['0s', 0],
    ['500ms', 500],
    ['5s', 5 * S],
    ['1m', M],
    ['1h30m', H + 30 * M],
    ['2w3d', 17 * D],
    ['14d', 14 * D],
    ['2y', 730 * D],
    ['1y2w3d4h5m6s7ms', 365 * D + 17 * D + 4 * H + 5 * M + 6 * S + 7],
    [' 5m ', 5 * M],
  ];
  for (const [text, ms] of valid) {
    it(`reads ${JSON.stringify(text)} as ${ms} ms`, () => assert.equal(parseDuration(text), ms));
  }

  const invalid: Array<[string, RegExp]> = [
    ['', /empty/],
    ['   ', /empty/],
    ['-5s', /negative/],
    ['5', /has no unit/],
    ['1h30', /"30" has no unit/],
    ['5x', /unknown unit "x"/],
    ['5mins', /unknown unit "mins"/],
    ['5M', /unknown unit "M"/],
    ['1.5h', /fractions/],
    ['30m1h', /largest first/],
    ['1h1h', /largest first/],
    ['h', /expected a number/],
    ['5 m', /has no unit/],
    ['99999999999y', /too large/],
  ];
  for (const [text, reason] of invalid) {
    it(`refuses ${JSON.stringify(text)} naming the text and the reason`, () => {
      assert.throws(
        () => parseDuration(text),
        (err: unknown) => {
          assert.ok(isCachemonError(err, Errors.DURATION_INVALID));
          assert.ok(err.message.includes(`"${text}"`), err.message);
          assert.match(err.message, reason);
          return true;
        },
      );
    });
  }
});

describe('formatDuration', () => {
  const table: Array<[number, string]> = [
    [0, '0s'],
    [500, '500ms'],
    [5 * S, '5s'],
    [90 * M, '1h30m'],
    [14 * D, '14d'],
    [30 * D, '30d'],
    [365 * D, '1y'],
    [730 * D, '2y'],
    [366 * D, '366d'],
    [D + 1, '1d1ms'],
  ];
  for (const [ms, text] of table) {
    it(`writes ${ms} ms as ${text}`, () => assert.equal(formatDuration(ms), text));
  }

  it('round-trips through parseDuration', () => {
    for (const ms of [0, 1, 999, 61 * S, 25 * H, 14 * D, 400 * D + 3 * H]) {
      assert.equal(parseDuration(formatDuration(ms)), ms);
    }
  });

  it('refuses negative and non-finite values', () => {
    assert.throws(
      () => formatDuration(-1),
      (err: unknown) => isCachemonError(err, Errors.DURATION_INVALID),
    );
    assert.throws(
      () => formatDuration(Number.NaN),
      (err: unknown) => isCachemonError(err, Errors.DURATION_INVALID),
    );
  });
});

describe('durationSchema', () => {
  it('turns a duration string into milliseconds', () => {
    assert.equal(durationSchema.parse('1h30m'), 90 * M);
  });

  it("fails with parseDuration's message", () => {
    const result = z.object({ timeout: durationSchema }).safeParse({ timeout: '5x' });
    assert.equal(result.success, false);
    assert.deepEqual(
      result.error?.issues.map((i) => [i.path, i.message]),
      [[['timeout'], 'invalid duration "5x": unknown unit "x" (units: y, w, d, h, m, s, ms)']],
    );
  });
});

test('parseGoDuration reads Go durations, fractions included, and else the Prometheus syntax', () => {
  assert.equal(parseGoDuration('1.5s'), 1500);
  assert.equal(parseGoDuration('1m30s'), 90_000);
  assert.equal(parseGoDuration('500ms'), 500);
  assert.equal(parseGoDuration('250us'), 0.25);
  assert.equal(parseGoDuration('1d'), 86_400_000);
  assert.equal(parseGoDuration('0'), 0);
  assert.throws(() => parseGoDuration('1.5'), /invalid duration "1.5"/);
  assert.throws(() => parseGoDuration('fast'), /invalid duration "fast"/);
});
