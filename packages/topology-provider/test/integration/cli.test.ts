import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@cachemon/testkit';

const root = new URL('../../../../../', import.meta.url).pathname;
const run = (...args: string[]) =>
  spawnSync(process.execPath, [join(root, 'bin', 'topology-provider'), ...args], {
    encoding: 'utf8',
    timeout: 30_000,
  });

describe('topology-provider --help, --version, --check-config', () => {
  test('--help ends with where its doc is, a file that exists', () => {
    const help = run('--help');
    assert.equal(help.status, 0, help.stderr);
    const last = help.stdout.trimEnd().split('\n').at(-1)!;
    assert.equal(last, `Documentation: ${join(root, 'docs', 'topology-provider.md')}`);
    assert.ok(existsSync(last.slice('Documentation: '.length)));
  });

  test('--version prints the version', () => {
    const { version } = JSON.parse(
      readFileSync(join(root, 'packages', 'topology-provider', 'package.json'), 'utf8'),
    ) as { version: string };
    const printed = run('--version');
    assert.equal(printed.status, 0, printed.stderr);
    assert.equal(printed.stdout, `topology-provider ${version}\n`);
  });

  test('--check-config: 0 for a valid file; else non-zero, naming the file, the place and the problem', async () => {
    const file = join(await tempDir('topology-provider-'), 'config.json');
    writeFileSync(file, '{\n  "listen": "127.0.0.1:8084",\n  "ensembleByName": { "ens": ["127.0.0.1:2181"] }\n}\n');
    const valid = run(`-config-file=${file}`, '-check-config');
    assert.equal(valid.status, 0, valid.stderr);
    assert.equal(valid.stdout, `${file}: valid (ensembles ens, listen 127.0.0.1:8084)\n`);

    writeFileSync(file, '{\n  "listen": "127.0.0.1:8084",\n  "ensembleByName": {\n    "ens": ["127.0.0.1"]\n  }\n}\n');
    const invalid = run(`-config-file=${file}`, '-check-config');
    assert.notEqual(invalid.status, 0);
    assert.equal(invalid.stdout, '');
    assert.ok(invalid.stderr.startsWith(`topology-provider: ${file}:4:13: ensembleByName.ens[0]: `), invalid.stderr);
  });
});
