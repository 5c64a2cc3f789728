import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { helpAndVersionTests, runProgram, tempDir } from '@cachemon/testkit';

const run = (...args: string[]) => runProgram('query-proxy', ...args);

describe('query-proxy --help, --version, --check-config', () => {
  helpAndVersionTests('query-proxy');

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
