/**
 * QoS probes against a fake ARCUS that answers each command with the live server's captured reply
 * (samples 41..53, matched to the commands of transcript.txt).
 */
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { Errors } from '@cachemon/core';
import { AsciiConnection, COLLECTION_PROBES, KV_PROBES, runQosProbes } from '../../src/protocol/index.js';
import { fakeServer, onLines, sample, transcriptCommands, type FakeServer } from './fixtures.js';

/** Commands followed by one data line. */
const WITH_DATA = /^(set|lop insert|sop insert|sop exist|sop delete|bop insert) /;

/**
 * The transcript's QoS session, from the first probe `set` on, paired with samples 41..53 in order.
 * A command seen twice (`lop get` before and after the drop) gets its replies in turn.
 */
function capturedReplies(): Map<string, string[]> {
  const commands = transcriptCommands();
  const first = commands.indexOf('set arcus-ping:qos_kv 0 3 4\r\nDATA');
  assert.ok(first > 0);
  const files = [
    '41-qos-set-kv.raw',
    '42-qos-get-kv.raw',
    '43-qos-lop-insert.raw',
    '44-qos-lop-get.raw',
    '45-qos-lop-delete-drop.raw',
    '46-qos-lop-get-after-drop.raw',
    '47-qos-sop-insert.raw',
    '48-qos-sop-exist.raw',
    '49-qos-sop-delete-drop.raw',
    '50-qos-bop-insert.raw',
    '51-qos-bop-get.raw',
    '52-qos-bop-delete-drop.raw',
    '53-qos-delete-kv.raw',
  ];
  const replies = new Map<string, string[]>();
  files.forEach((file, i) => {
    const command = commands[first + i]!;
    replies.set(command, [...(replies.get(command) ?? []), sample(file)]);
  });
  return replies;
}

type Answer = (command: string, socket: Socket) => string | undefined;

/** Reads commands (joining data lines) and answers each with `answer`, `ERROR` when it has none. */
async function fakeArcus(answer: Answer): Promise<FakeServer & { received: string[] }> {
  const received: string[] = [];
  const server = await fakeServer((socket) => {
    let pending: string | undefined;
    onLines(socket, (line) => {
      let command: string;
      if (pending !== undefined) {
        command = `${pending}\r\n${line}`;
        pending = undefined;
      } else if (WITH_DATA.test(line)) {
        pending = line;
        return;
      } else {
        command = line;
      }
      received.push(command);
      if (socket.destroyed) return;
      const reply = answer(command, socket);
      if (reply !== undefined) socket.write(reply, 'latin1');
    });
  });
  cleanups.push(() => server.close());
  return Object.assign(server, { received });
}

function replayCaptured(): Answer {
  const replies = capturedReplies();
  return (command) => replies.get(command)?.shift() ?? 'ERROR\r\n';
}

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

function connect(address: string): AsciiConnection {
  const conn = new AsciiConnection(address);
  cleanups.push(() => conn.close());
  return conn;
}

const ALL_NAMES = [...KV_PROBES, ...COLLECTION_PROBES].map((probe) => probe.name);

describe('runQosProbes against the captured ARCUS replies', () => {
  it('every probe succeeds, in order, each timed', async () => {
    const server = await fakeArcus(replayCaptured());
    const results = await runQosProbes(connect(server.address), { simple: false, deadline: Date.now() + 5000 });
    assert.deepEqual(
      results.map(({ probe, ok, error }) => ({ probe, ok, error })),
      ALL_NAMES.map((probe) => ({ probe, ok: true, error: undefined })),
    );
    for (const result of results)
      assert.ok(result.seconds > 0 && result.seconds < 1, `${result.probe}: ${result.seconds}`);
    assert.deepEqual(
      server.received,
      [...KV_PROBES, ...COLLECTION_PROBES].map((probe) => probe.command),
    );
  });

  it('simple: only the kv probes run', async () => {
    const server = await fakeArcus(replayCaptured());
    const results = await runQosProbes(connect(server.address), { simple: true, deadline: Date.now() + 5000 });
    assert.deepEqual(
      results.map((r) => [r.probe, r.ok]),
      [
        ['kv_set', true],
        ['kv_get', true],
      ],
    );
    assert.equal(server.received.length, 2);
  });

  it('seconds come from the injected monotonic clock, per probe', async () => {
    const server = await fakeArcus(replayCaptured());
    let ns = 0n;
    const now = (): bigint => (ns += 2_500_000n); // every reading 2.5 ms later
    const results = await runQosProbes(connect(server.address), { simple: false, deadline: Date.now() + 5000, now });
    for (const result of results) assert.equal(result.seconds, 0.0025, result.probe);
  });

  it('an unexpected reply fails that probe alone', async () => {
    const captured = replayCaptured();
    const server = await fakeArcus((command, socket) => {
      if (command.startsWith('lop insert')) {
        captured(command, socket); // keep the replay in step
        return 'NOT_SUPPORTED\r\n';
      }
      return captured(command, socket);
    });
    const results = await runQosProbes(connect(server.address), { simple: false, deadline: Date.now() + 5000 });
    const failed = results.filter((r) => !r.ok);
    assert.deepEqual(
      failed.map(({ probe, error }) => ({ probe, error })),
      [{ probe: 'lop_insert', error: 'unexpected reply: NOT_SUPPORTED' }],
    );
    assert.equal(results.length, 11);
  });

  it('a broken connection fails the probe with its code and reports the rest unsent', async () => {
    const captured = replayCaptured();
    const server = await fakeArcus((command, socket) => {
      if (command.startsWith('sop insert')) {
        socket.destroy();
        return undefined;
      }
      return captured(command, socket);
    });
    const results = await runQosProbes(connect(server.address), { simple: false, deadline: Date.now() + 5000 });
    const byName = new Map(results.map((r) => [r.probe, r]));
    for (const name of ['kv_set', 'kv_get', 'lop_insert', 'lop_get', 'lop_delete'])
      assert.equal(byName.get(name)?.ok, true, name);
    assert.equal(byName.get('sop_insert')?.error, Errors.NODE_CLOSED.code);
    for (const name of ['sop_exist', 'sop_delete', 'bop_insert', 'bop_get', 'bop_delete']) {
      assert.deepEqual(byName.get(name), { probe: name, ok: false, seconds: 0, error: Errors.NODE_CLOSED.code });
    }
    assert.equal(server.received.length, 6, 'nothing sent after the break');
    assert.equal(server.sockets.length, 1, 'no reconnect during the probe run');
  });

  it('a node that stops answering: NODE_TIMEOUT at the deadline for the waiting probe and the rest', async () => {
    const captured = replayCaptured();
    const server = await fakeArcus((command, socket) =>
      command.startsWith('bop get') ? undefined : captured(command, socket),
    );
    const deadline = Date.now() + 300;
    const results = await runQosProbes(connect(server.address), { simple: false, deadline });
    const late = Date.now() - deadline;
    assert.ok(late < 1000, `answered ${late} ms after the deadline`);
    assert.deepEqual(
      results.filter((r) => !r.ok).map(({ probe, error }) => [probe, error]),
      [
        ['bop_get', Errors.NODE_TIMEOUT.code],
        ['bop_delete', Errors.NODE_TIMEOUT.code],
      ],
    );
    assert.ok(results.find((r) => r.probe === 'bop_get')!.seconds > 0.1);
  });
});
