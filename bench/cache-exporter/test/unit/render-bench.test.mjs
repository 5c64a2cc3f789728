// The renderer benchmark (render.mjs) runs, against a baseline too, and times bodies that inflate
// to every node's series.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const RENDER = fileURLToPath(new URL('../../render.mjs', import.meta.url));
const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

function run(args) {
  const result = spawnSync(process.execPath, [RENDER, ...args], { encoding: 'utf8' });
  assert.equal(result.status, 0, result.stderr);
  return result.stdout
    .split('\n')
    .filter((line) => /^(this checkout|baseline)/.test(line))
    .map((line) => {
      const [side, ...cells] = line.trim().split(/\s{2,}/);
      return { side, numbers: cells.map(Number) };
    });
}

test('render.mjs: times accept, prepare and render per scrape and its bodies hold every node series, for this checkout and a baseline', () => {
  const few = run(['--nodes=3', '--scrapes=12', '--block=4']);
  assert.equal(few.length, 1);
  const many = run(['--nodes=6', '--scrapes=12', '--block=4', `--baseline=${ROOT}`]);
  assert.deepEqual(
    many.map((row) => row.side.split(' ')[0]),
    ['baseline', 'this'],
  );
  for (const { numbers } of [...few, ...many]) {
    assert.equal(numbers.length, 8);
    const [acceptMean, prepareMean, renderMean, , , sum, bodyKB, series] = numbers;
    assert.ok(acceptMean > 0 && prepareMean > 0 && renderMean > 0, `times: ${numbers}`);
    assert.ok(Math.abs(sum - acceptMean - prepareMean - renderMean) < 0.003, `accept+prepare+render: ${numbers}`);
    assert.ok(bodyKB >= 0 && series > 0, `body: ${numbers}`);
  }
  // The same inputs on both sides: the same series; twice the nodes, twice the node series (less the few of neither).
  assert.equal(many[0].numbers[7], many[1].numbers[7]);
  const perNode = (many[1].numbers[7] - few[0].numbers[7]) / 3;
  assert.ok(perNode > 150, `series per node: ${perNode}`);
  assert.equal(few[0].numbers[7], 3 * perNode);
});
