import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultLogBlock, logBlockSchema, logLevels } from '../../src/index.js';

describe('logBlockSchema', () => {
  it("fills the spec's defaults", () => {
    assert.deepEqual(defaultLogBlock, {
      level: 'warn',
      filename: 'stdout',
      maxSize: 20,
      maxBackups: 10,
      maxAge: 30,
      compress: false,
    });
    assert.deepEqual(logBlockSchema.parse({}), defaultLogBlock);
  });

  it('accepts every level of the spec', () => {
    for (const level of logLevels) assert.equal(logBlockSchema.parse({ level }).level, level);
    assert.deepEqual([...logLevels], ['debug', 'info', 'warn', 'error', 'fatal', 'panic']);
  });

  it('refuses bad values and unknown keys', () => {
    const bad = [
      { level: 'trace' },
      { maxSize: 0 },
      { maxSize: 1.5 },
      { maxBackups: -1 },
      { maxAge: -1 },
      { compress: 'yes' },
      { filename: '' },
      { size: 1 },
    ];
    for (const block of bad) assert.equal(logBlockSchema.safeParse(block).success, false, JSON.stringify(block));
  });

  it('accepts 0 for maxBackups and maxAge (no limit)', () => {
    const block = logBlockSchema.parse({ maxBackups: 0, maxAge: 0 });
    assert.equal(block.maxBackups, 0);
    assert.equal(block.maxAge, 0);
  });
});
