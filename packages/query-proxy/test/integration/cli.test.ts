import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@cachemon/testkit';

const root = new URL('../../../../../', import.meta.url).pathname;
const run = (...args: string[]) =>
  spawnSync(process.execPath, [join(root, 'bin', 'query-proxy'), ...args], { encoding: 'utf8', timeout: 30_000 });

describe('query-proxy --help, --version, --check-config', () => {
  test('--help ends with where its doc is, a file that exists', () => {
    const help = run('--help');
    assert.equal(help.status, 0, help.stderr);
    const last = help.stdout.trimEnd().split('\n').at(-1)!;
    assert.equal(last, `Documentation: ${join(root, 'docs', 'query-proxy.md')}`);
    assert.ok(existsSync(last.slice('Documentation: '.length)));
  });

  test('--version prints the version', () => {
    const { version } = JSON.parse(readFileSync(join(root, 'packages', 'query-proxy', 'package.json'), 'utf8')) as {
      version: string;
    };
    const printed = run('--version');
    assert.equal(printed.status, 0, printed.stderr);
    assert.equal(printed.stdout, `query-proxy ${version}\n`);
  });

  test('--check-config: 0 for a valid file; else non-zero, naming the file, the place and the problem', async () => {
    const file = join(await tempDir('query-proxy-'), 'promxy.yml');
    writeFileSync(file, 'promxy:\n  server_groups:\n    - static_configs:\n        - targets: [127.0.0.1:8428]\n');
    const valid = run(`--config=${file}`, '--check-config');
    assert.equal(valid.status, 0, valid.stderr);
    assert.equal(valid.stdout, `${file}: valid (group 0: http://127.0.0.1:8428)\n`);

    writeFileSync(
      file,
      'promxy:\n  server_groups:\n    - static_configs:\n        - targets: [127.0.0.1:8428]\n      timeout: soon\n',
    );
    const invalid = run(`--config=${file}`, '--check-config');
    assert.notEqual(invalid.status, 0);
    assert.equal(invalid.stdout, '');
    assert.match(invalid.stderr, /^query-proxy: .*promxy\.yml:5:7: promxy\.server_groups\[0\]\.timeout: .*"soon"/);
    assert.ok(invalid.stderr.includes(`${file}:5:7:`), invalid.stderr);
  });
});
