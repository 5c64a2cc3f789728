import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { helpAndVersionTests, runProgram, tempDir } from '@cachemon/testkit';

const run = (...args: string[]) => runProgram('topology-provider', ...args);

describe('topology-provider --help, --version, --check-config', () => {
  helpAndVersionTests('topology-provider');

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
