// The cache exporter benchmark's floor process (floor.mjs) against ARCUS test doubles: the plain
// round reads every reply, and the compressing floor's output is the body it was given.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startArcusDoubles } from '../../../../packages/testkit/dist/src/index.js';

const FLOOR = fileURLToPath(new URL('../../floor.mjs', import.meta.url));

function startFloor(t) {
  const child = spawn(process.execPath, [FLOOR], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.after(() => child.kill());
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return async (message) => {
    child.stdin.write(`${JSON.stringify(message)}\n`);
    const { value, done } = await lines.next();
    assert.equal(done, false, 'floor.mjs ended without an answer');
    return JSON.parse(value);
  };
}

test('floor.mjs: stats rounds read every reply; compressed rounds compress the given body, node by node, into a stream that inflates to it', async (t) => {
  const doubles = await startArcusDoubles(3);
  t.after(() => Promise.all(doubles.map((d) => d.stop())));
  const dir = mkdtempSync(join(tmpdir(), 'floor-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const call = startFloor(t);

  assert.match((await call({ op: 'body', path: join(dir, 'none') })).error, /before op connect/);
  const connected = await call({ op: 'connect', nodes: doubles.map((d) => d.address) });
  assert.equal(connected.nodes, 3);
  assert.match((await call({ op: 'round', kind: 'compressed' })).error, /before op body/);
  assert.match((await call({ op: 'body', path: join(dir, 'none') })).error, /ENOENT/);

  const stats = await call({ op: 'round', kind: 'stats' });
  assert.equal(stats.op, 'round');
  assert.ok(stats.bytes > 3 * 500, `three stats replies, ${stats.bytes} bytes`);

  // A body shaped like /metrics, not a multiple of the node count, so the slices differ in size.
  const lines = [];
  for (let i = 0; i < 4001; i++)
    lines.push(
      `arcus_commands_total{ensemble="e",node="127.0.0.1:${11211 + (i % 3)}",command="c${i % 60}"} ${i * 7919}\n`,
    );
  const body = lines.join('');
  writeFileSync(join(dir, 'body.txt'), body);
  assert.deepEqual(await call({ op: 'body', path: join(dir, 'body.txt') }), {
    op: 'body',
    bytes: Buffer.byteLength(body),
  });
  for (let i = 0; i < 3; i++) {
    // Each round's output stands alone.
    const round = await call({ op: 'round', kind: 'compressed', check: true });
    assert.equal(round.verified, true, `round ${i}: the output inflates to the body`);
    assert.ok(
      Math.abs(round.bytes - stats.bytes) < 200,
      `the same three stats replies (${round.bytes} bytes, ${stats.bytes} before)`,
    );
    assert.ok(
      round.compressedBytes > 0 && round.compressedBytes < Buffer.byteLength(body) / 4,
      `compressed to ${round.compressedBytes} bytes`,
    );
  }
  assert.equal((await call({ op: 'round', kind: 'compressed' })).verified, undefined, 'checked only when asked');
});
