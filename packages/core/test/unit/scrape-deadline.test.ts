import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { scrapeDeadline } from '../../src/index.js';

/** Milliseconds from now the deadline leaves (within the few ms the call takes). */
function leaves(header: string | string[] | undefined, defaultMs: number): number {
  const before = Date.now();
  const deadline = scrapeDeadline(header, defaultMs);
  const left = deadline - before;
  assert.ok(deadline - Date.now() <= left);
  return Math.round(left / 10) * 10;
}

describe('scrapeDeadline', () => {
  it('the scraper timeout less 10 %, the margin at most 0.5 s', () => {
    assert.equal(leaves('5', 4000), 4500);
    assert.equal(leaves('1', 4000), 900);
    assert.equal(leaves('0.5', 4000), 450);
    assert.equal(leaves(['2', '9'], 4000), 1800);
  });

  it('at most ten times the default', () => {
    assert.equal(leaves('600', 3000), 30_000);
  });

  it('the default without a usable header; never less than 50 ms', () => {
    for (const header of [undefined, '', ' ', 'soon', '0', '-1', 'NaN', 'Infinity'])
      assert.equal(leaves(header, 3000), 3000, String(header));
    assert.equal(leaves('0.01', 3000), 50);
    assert.equal(leaves(undefined, 0), 50);
  });
});
