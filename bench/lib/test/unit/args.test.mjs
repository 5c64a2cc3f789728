// The benchmarks' command line.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, usage } from '../../args.mjs';

test('parseArgs: --name=value (an = in the value kept), a bare --flag is true, anything else refused', () => {
  const url = import.meta.url;
  assert.deepEqual(parseArgs(['--nodes=10,100', '--traffic', '--exporter-flags=-qos-interval=0 -x=1', '--out='], url), {
    nodes: '10,100',
    traffic: 'true',
    'exporter-flags': '-qos-interval=0 -x=1',
    out: '',
  });
  assert.throws(
    () => parseArgs(['runs=2'], url),
    /unknown argument runs=2 \(see the header of args\.test\.mjs, or --help\)/,
  );
  assert.throws(() => parseArgs(['-runs=2'], url), /unknown argument -runs=2/);
});

test('--help prints the comment at the top of the script and exits', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'bench-args-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const script = join(dir, 'run.mjs');
  writeFileSync(
    script,
    [
      '#!/usr/bin/env node',
      '// A benchmark.',
      '//',
      '//   node run.mjs [--n=1]',
      'import { parseArgs } from ' + JSON.stringify(new URL('../../args.mjs', import.meta.url).href) + ';',
      'parseArgs(process.argv.slice(2), import.meta.url);',
      "console.log('ran');",
      '',
    ].join('\n'),
  );
  assert.equal(usage(script), 'A benchmark.\n\n  node run.mjs [--n=1]');
  const help = spawnSync(process.execPath, [script, '--help'], { encoding: 'utf8' });
  assert.equal(help.status, 0, help.stderr);
  assert.equal(help.stdout, 'A benchmark.\n\n  node run.mjs [--n=1]\n');
  assert.equal(spawnSync(process.execPath, [script, '--n=2'], { encoding: 'utf8' }).stdout, 'ran\n');
});
