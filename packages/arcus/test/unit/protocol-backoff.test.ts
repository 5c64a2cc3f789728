import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Backoff } from '../../src/protocol/index.js';
import { seededRandom } from '../protocol/fixtures.js';

describe('Backoff', () => {
  it('doubles from 100 ms and stops at 30 s (no jitter at the midpoint)', () => {
    const backoff = new Backoff({ random: () => 0.5 });
    const delays = Array.from({ length: 12 }, () => backoff.next());
    assert.deepEqual(delays, [100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000]);
    assert.equal(backoff.attempts, 12);
  });

  it('reset() starts over', () => {
    const backoff = new Backoff({ random: () => 0.5 });
    backoff.next();
    backoff.next();
    backoff.reset();
    assert.equal(backoff.attempts, 0);
    assert.equal(backoff.next(), 100);
  });

  it('jitter spreads each delay by at most 20% and never leaves 100 ms .. 30 s', () => {
    const random = seededRandom(1);
    const seen = new Set<number>();
    for (let run = 0; run < 200; run++) {
      const backoff = new Backoff({ random });
      let base = 100;
      for (let i = 0; i < 12; i++) {
        const delay = backoff.next();
        assert.ok(
          delay >= Math.max(100, base * 0.8) - 0.5 && delay <= Math.min(30_000, base * 1.2) + 0.5,
          `${delay} vs ${base}`,
        );
        seen.add(delay);
        base = Math.min(30_000, base * 2);
      }
    }
    assert.ok(seen.size > 100, 'jitter actually varies the delays');
  });

  it('extreme random values stay within bounds', () => {
    assert.equal(new Backoff({ random: () => 0 }).next(), 100);
    assert.equal(new Backoff({ random: () => 0.999999 }).next(), 120);
    const high = new Backoff({ random: () => 0.999999 });
    for (let i = 0; i < 20; i++) high.next();
    assert.equal(high.next(), 30_000);
  });
});
