import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@cachemon/testkit';
import { Change, planEdit, StepError, withTreeLock } from '../../src/change.js';

test('a failing step undoes every step before it, in reverse order, and files come back byte for byte', async () => {
  const dir = await tempDir('cachemon-change-');
  const kept = join(dir, 'kept.yml');
  writeFileSync(kept, '# comment\n- targets: []\n', { mode: 0o640 });
  const created = join(dir, 'new.json');
  const order: string[] = [];
  const change = new Change(() => undefined);
  await change.edit(planEdit(kept, (t) => `${t}- targets: ["a:1"]\n`));
  await change.edit(planEdit(created, () => '{}\n'));
  await change.step('start a', async () => {
    order.push('start a');
    return async () => void order.push('stop a');
  });
  await change.step('reload', async () => {
    order.push('reload');
  });
  const failed = await change
    .step('start b', () => Promise.reject(new Error('port taken')), 'free the port')
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  assert.ok(failed instanceof StepError);
  assert.equal(failed.step, 'start b');
  assert.equal(failed.reason, 'port taken');
  assert.equal(failed.advice, 'free the port');
  assert.deepEqual(failed.rolledBack, ['start a', `write ${created}`, `edit ${kept}`]);
  assert.deepEqual(order, ['start a', 'reload', 'stop a']);
  assert.equal(readFileSync(kept, 'utf8'), '# comment\n- targets: []\n');
  assert.equal(statSync(kept).mode & 0o777, 0o640, 'the mode is kept');
  assert.equal(existsSync(created), false);
});

test('an undo that fails is reported, and the others still run', async () => {
  const change = new Change(() => undefined);
  const undone: string[] = [];
  await change.step('one', async () => async () => void undone.push('one'));
  await change.step('two', async () => () => Promise.reject(new Error('cannot stop')));
  const failed = (await change
    .step('three', () => Promise.reject(new Error('boom')))
    .catch((e: unknown) => e)) as StepError;
  assert.deepEqual(failed.rolledBack, ['one']);
  assert.deepEqual(failed.rollbackFailures, ['two: cannot stop']);
  assert.deepEqual(undone, ['one']);
});

test('two holders of the tree lock take turns', async () => {
  const target = join(await tempDir('cachemon-lock-'), 'run/cachemon');
  const events: string[] = [];
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let entered!: () => void;
  const inside = new Promise<void>((resolve) => (entered = resolve));
  const first = withTreeLock(
    target,
    10,
    () => undefined,
    async () => {
      events.push('first in');
      entered();
      await held;
      events.push('first out');
    },
  );
  await inside;
  // The second waits while the first holds the lock: it is told so, and only then is the first let go.
  const second = withTreeLock(target, 10, release, async () => void events.push('second in'));
  await Promise.all([first, second]);
  assert.deepEqual(events, ['first in', 'first out', 'second in']);
});
