import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lossText, readInstallDir } from '../../src/machines.js';

const listing = (lines: readonly string[], count = lines.length, env = 'aa') =>
  `${lines.join('\n')}\ncount ${count}\nenv ${env}\n`;
const INSTALL = ['d bin', 'f bin/node_exporter', 'd lib', 'f lib/daemon.sh', 'f start.sh', 'f stop.sh'];

test("an install directory: only what is not the install's, top-most, and an edited env file", () => {
  const clean = readInstallDir(
    'm1',
    listing([...INSTALL, 'f host_exporter.env', 'd run', 'f run/host_exporter.pid']),
    'aa',
  );
  assert.deepEqual(clean, { machine: 'm1', state: 'seen', extra: [], unlisted: 0, envEdited: false });
  assert.equal(lossText(clean, '/opt/c/host_exporter'), '');

  const mine = readInstallDir(
    'm1',
    listing(
      [...INSTALL, 'd keep', 'd keep/a', 'f keep/a/b', 'f notes.txt', 'f bin/helper', 'f host_exporter.env'],
      300,
      'bb',
    ),
    'aa',
  );
  assert.deepEqual(mine.extra, ['bin/helper', 'keep/', 'notes.txt']);
  assert.equal(mine.unlisted, 300 - 12);
  assert.equal(mine.envEdited, true);
  assert.equal(
    lossText(mine, '/opt/c/host_exporter'),
    'm1:/opt/c/host_exporter holds bin/helper, keep/, notes.txt, 288 more entries not listed, host_exporter.env as edited there (it differs from the one the install copies)',
  );
});

test('no install directory yet: a first install loses nothing', () => {
  const absent = readInstallDir('m2', 'absent\n', 'aa');
  assert.equal(absent.state, 'absent');
  assert.equal(lossText(absent, '/opt/c/host_exporter'), '');
});
