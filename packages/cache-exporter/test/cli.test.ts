import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { helpAndVersionTests, runProgram, tempDir } from '@cachemon/testkit';

const run = (...args: string[]) => runProgram('cache-exporter', ...args);

describe('cache-exporter --help, --version, --check-config', () => {
  helpAndVersionTests('cache-exporter');

  test('--check-config: 0 for a valid file; else non-zero, naming the file, the place and the problem', async () => {
    const file = join(await tempDir('cache-exporter-'), 'ens.json');
    writeFileSync(file, '{\n  "listen": "127.0.0.1:9151",\n  "ensembleByName": { "ens": ["127.0.0.1:2181"] }\n}\n');
    const valid = run(`-config-file=${file}`, '-check-config');
    assert.equal(valid.status, 0, valid.stderr);
    assert.equal(valid.stdout, `${file}: valid (ensemble ens, listen 127.0.0.1:9151)\n`);

    writeFileSync(
      file,
      '{\n  // where it listens\n  "listen": 9151,\n  "ensembleByName": { "ens": ["127.0.0.1:2181"] }\n}\n',
    );
    const invalid = run(`-config-file=${file}`, '-check-config');
    assert.notEqual(invalid.status, 0);
    assert.equal(invalid.stdout, '');
    assert.ok(invalid.stderr.startsWith(`cache-exporter: ${file}:3:3: listen: `), invalid.stderr);
    assert.match(invalid.stderr, /expected string, received number/);
  });
});
