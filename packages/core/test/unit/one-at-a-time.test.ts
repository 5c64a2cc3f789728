import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { oneAtATime } from '../../src/index.js';

describe('oneAtATime', () => {
  it('runs the calls one after another, in order, each after the one before has settled (failed or not)', async () => {
    const events: string[] = [];
    let call = 0;
    const run = oneAtATime(async () => {
      const n = ++call;
      events.push(`start ${n}`);
      // The first call takes longest: run at once, the later ones would end before it.
      await new Promise((resolve) => setTimeout(resolve, n === 1 ? 40 : 5));
      events.push(`end ${n}`);
      if (n === 2) throw new Error('second failed');
      return n;
    });
    const results = await Promise.allSettled([run(), run(), run()]);
    assert.deepEqual(events, ['start 1', 'end 1', 'start 2', 'end 2', 'start 3', 'end 3']);
    assert.deepEqual(
      results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
      [1, 'second failed', 3],
    );
    assert.equal(await run(), 4);
  });
});
