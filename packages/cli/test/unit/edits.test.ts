import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { STACK_DIR } from '@cachemon/stack';
import { addTargetEntry, readTargets, removeTargets, setEnvLine, setJsonc, unsetEnvLine } from '../../src/edits.js';
import { readJsonc } from '../../src/tree.js';

const shipped = (file: string) => readFileSync(join(STACK_DIR, file), 'utf8');

test('a shipped target file: the empty [] becomes a list, the comments stay, and removing every entry gives it back', () => {
  const path = 'coordination_exporter.yml';
  const text = shipped('short_term_store/conf/exporter/coordination_exporter.yml');
  const one = addTargetEntry(path, text, { targets: ['127.0.0.1:9142'], labels: { ensemble: 'zk2' } });
  const two = addTargetEntry(path, one, { targets: ['127.0.0.1:9143'], labels: { ensemble: 'zk3' } });
  assert.ok(two.startsWith(text.slice(0, text.indexOf('[]'))), 'the comments come first, unchanged');
  assert.match(
    two,
    /^- targets: \["127\.0\.0\.1:9142"\]\n {2}labels:\n {4}ensemble: zk2\n- targets: \["127\.0\.0\.1:9143"\]/m,
  );
  assert.deepEqual(readTargets(path, two), [
    { targets: ['127.0.0.1:9142'], labels: { ensemble: 'zk2' } },
    { targets: ['127.0.0.1:9143'], labels: { ensemble: 'zk3' } },
  ]);
  const back = removeTargets(
    path,
    removeTargets(path, two, (_t, l) => l['ensemble'] === 'zk2'),
    (t) => t === '127.0.0.1:9143',
  );
  assert.equal(back, text);
});

test('a target file that is not a list of entries is refused, naming the file and the entry', () => {
  assert.throws(() => readTargets('x.yml', '- targets: ["a:1"\n'), /x\.yml: not valid YAML/);
  assert.throws(() => readTargets('x.yml', 'targets: ["a:1"]\n'), /x\.yml: a target file is a list of entries/);
  assert.throws(
    () => readTargets('x.yml', '- targets: ["a:1"]\n- labels: {a: b}\n'),
    /x\.yml: entry 2 has no list of targets/,
  );
});

test('one target of an entry removed: the entry keeps its other targets and its labels', () => {
  const text = '# hosts\n- targets: ["h1:9100", "h2:9100"]\n  labels:\n    group: host\n';
  assert.equal(
    removeTargets('h.yml', text, (t) => t === 'h1:9100'),
    '# hosts\n- targets: ["h2:9100"]\n  labels:\n    group: host\n',
  );
});

test('the JSON configs: values set and removed with their comments and indentation kept', () => {
  const text = shipped('topology_provider/conf/config.json');
  const edited = setJsonc(
    setJsonc(text, ['ensembleByName', 'example'], undefined),
    ['ensembleByName', 'zk2'],
    ['10.0.0.1:2181'],
  );
  assert.deepEqual(readJsonc('config.json', edited)['ensembleByName'], { zk2: ['10.0.0.1:2181'] });
  assert.equal(
    edited.split('\n').filter((l) => l.trimStart().startsWith('//')).length,
    text.split('\n').filter((l) => l.trimStart().startsWith('//')).length,
  );
  assert.match(edited, /\n {2}"ensembleByName": \{\n {4}"zk2": \[/);
});

test('env files: a value set in place, a commented example taken back, an array written as bash reads it', () => {
  const text = shipped('coordination_exporter/conf/example.env');
  const domain = setEnvLine(unsetEnvLine(text, 'ZK_SERVERS'), 'ZK_DOMAIN', 'zk.example.com:2181');
  assert.match(domain, /^#ZK_SERVERS=\(10\.0\.0\.1:2181/m);
  assert.match(domain, /^ZK_DOMAIN=zk\.example\.com:2181$/m);
  assert.equal(domain.split('\n').length, text.split('\n').length, 'no line added or lost');
  assert.match(setEnvLine(text, 'ZK_SERVERS', ['a:1', 'b c:2']), /^ZK_SERVERS=\(a:1 'b c:2'\)$/m);
  assert.match(setEnvLine('A=1\n', 'B', '$(rm -rf /)'), /^B='\$\(rm -rf \/\)'$/m);
});
