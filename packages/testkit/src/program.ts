import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import type { SpawnSyncReturns } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The checkout the test kit is built in (packages/testkit/dist/src/). */
const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** Runs one of the checkout's programs (`bin/<program>`) to its end. */
export function runProgram(program: string, ...args: string[]): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [join(ROOT, 'bin', program), ...args], { encoding: 'utf8', timeout: 30_000 });
}

/**
 * The tests every daemon shares: `--help` ends with where its doc is (a file that exists), and
 * `--version` prints its package's version. Call inside the daemon's describe.
 */
export function helpAndVersionTests(program: string): void {
  test('--help ends with where its doc is, a file that exists', () => {
    const help = runProgram(program, '--help');
    assert.equal(help.status, 0, help.stderr);
    const last = help.stdout.trimEnd().split('\n').at(-1)!;
    assert.equal(last, `Documentation: ${join(ROOT, 'docs', `${program}.md`)}`);
    assert.ok(existsSync(last.slice('Documentation: '.length)));
  });

  test('--version prints the version', () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'packages', program, 'package.json'), 'utf8')) as {
      version: string;
    };
    const printed = runProgram(program, '--version');
    assert.equal(printed.status, 0, printed.stderr);
    assert.equal(printed.stdout, `${program} ${version}\n`);
  });
}
