import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { isTestkitError, TestkitErrors, tempDir } from '../src/index.js';
import { ManagedProcess } from '../src/managed-process.js';

describe('ManagedProcess', () => {
  test('output goes to the log file; a failed readiness names the tail of the log', async () => {
    const dir = await tempDir('cachemon-mp-test-');
    const log = join(dir, 'out.log');
    const proc = new ManagedProcess(
      'talker',
      process.execPath,
      ['-e', 'console.log("hello from the child"); console.error("bad config line 3"); process.exit(3)'],
      log,
    );
    proc.start();
    await assert.rejects(
      proc.waitUntil('ready', async () => false, 5000),
      (err) => {
        assert.ok(isTestkitError(err, TestkitErrors.PROCESS_EXITED));
        assert.match(err.message, /exited \(code 3/);
        assert.match(err.message, /bad config line 3/);
        return true;
      },
    );
    assert.match(readFileSync(log, 'utf8'), /hello from the child/);
  });

  test('a missing binary is a start failure, not a hang', async () => {
    const dir = await tempDir('cachemon-mp-test-');
    const proc = new ManagedProcess('ghost', '/nonexistent/binary', [], join(dir, 'ghost.log'));
    proc.start();
    await proc.waitForExit();
    await assert.rejects(
      proc.waitUntil('ready', async () => true, 1000),
      (err) => isTestkitError(err, TestkitErrors.PROCESS_START_FAILED),
    );
  });

  test('stop() escalates to SIGKILL when SIGTERM is ignored', async () => {
    const dir = await tempDir('cachemon-mp-test-');
    const proc = new ManagedProcess(
      'stubborn',
      process.execPath,
      ['-e', 'process.on("SIGTERM", () => {}); console.log("up"); setInterval(() => {}, 1000)'],
      join(dir, 'stubborn.log'),
    );
    proc.start();
    await proc.waitUntil('up', async () => readFileSync(join(dir, 'stubborn.log'), 'utf8').includes('up'), 5000);
    const started = Date.now();
    await proc.stop(300);
    assert.equal(proc.exitStatus?.signal, 'SIGKILL');
    assert.ok(Date.now() - started >= 250);
    assert.equal(proc.pid, undefined);
  });
});
