import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('../../../../../', import.meta.url).pathname;
const run = (...args: string[]) =>
  spawnSync(process.execPath, [join(root, 'bin', 'coordination-exporter'), ...args], {
    encoding: 'utf8',
    timeout: 30_000,
  });

describe('coordination-exporter --help, --version', () => {
  test('--help ends with where its doc is, a file that exists', () => {
    const help = run('--help');
    assert.equal(help.status, 0, help.stderr);
    const last = help.stdout.trimEnd().split('\n').at(-1)!;
    assert.equal(last, `Documentation: ${join(root, 'docs', 'coordination-exporter.md')}`);
    assert.ok(existsSync(last.slice('Documentation: '.length)));
  });

  test('--version prints the version', () => {
    const { version } = JSON.parse(
      readFileSync(join(root, 'packages', 'coordination-exporter', 'package.json'), 'utf8'),
    ) as { version: string };
    const printed = run('--version');
    assert.equal(printed.status, 0, printed.stderr);
    assert.equal(printed.stdout, `coordination-exporter ${version}\n`);
  });
});
