/**
 * Replays every request of the captured ARCUS 1.15.0 session (samples/transcript.txt) against a
 * fresh double and compares each reply byte for byte. Only values that cannot be equal are
 * normalised (see VOLATILE_STATS and the PREFIX `time` field).
 *
 * What the capture's state needs that a request cannot give:
 * - Heartbeats. The real server wrote `set arcus:zk-ping` every 3 s while the capture ran, and
 *   that shows in cmd_set, total_items, hb_count, the prefix `arcus` and in CAS ids. The counts
 *   in the samples fix the schedule exactly: 10 before the first `stats` (cmd_set 10, hb_count 10,
 *   two alternating 96-byte slots in `stats slabs`); exactly 1 between `stats detail on` and
 *   `set app:k1` (`gets app:k1` shows CAS 12 = 10 + 1 heartbeats + itself); 3 more before the first
 *   detail dump (arcus set 4); 2 before the second (arcus set 6); 1 before the final `stats`
 *   (hb_count 17, cmd_set 21). The test calls double.heartbeat() at those points; the timer is off.
 * - Time. The QoS keys live 3 s. The capture had waited before `delete arcus-ping:qos_kv`: it
 *   answers NOT_FOUND and the final stats show reclaimed 1. The double runs on a test clock that
 *   moves 4 s forward there.
 * - ZooKeeper. `stats zookeeper` says connected, so the double is registered in a real ZooKeeper.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { ArcusDouble, ArcusZk, startZooKeeper, type ZooKeeperServer } from '../src/index.js';
import { RawClient, readTranscript, SAMPLES_DIR, type TranscriptExchange } from './helpers.js';

/** `stats` values owned by the process and the wire, not by the server's state. */
const VOLATILE_STATS = new Set([
  'pid',
  'uptime',
  'time',
  'rusage_user',
  'rusage_system',
  'hb_latency',
  'bytes_read',
  'bytes_written',
  'total_connections',
  'connection_structures',
  // `stats settings`: the double listens on a free port, not on the capture's 21211 (asserted separately).
  'tcpport',
]);

function normalise(reply: string): string {
  return reply
    .replace(/^STAT (\S+) (.*)$/gm, (whole, name: string) =>
      VOLATILE_STATS.has(name) ? `STAT ${name} <volatile>` : whole,
    )
    .replace(/^(PREFIX \S+ itm .*) time \d{14}$/gm, '$1 time <volatile>');
}

const transcript = readTranscript();
const byCommand = (command: string): TranscriptExchange => {
  const found = transcript.find((e) => e.request[0] === command);
  assert.ok(found, `transcript has ${command}`);
  return found;
};
/** Heartbeats before the exchange with that index (see the header). */
const HEARTBEATS_BEFORE = new Map<number, number>([
  [1, 10],
  [byCommand('set app:k1 0 0 5').index, 1],
  [transcript.filter((e) => e.request[0] === 'stats detail dump')[0]?.index ?? -1, 3],
  [transcript.filter((e) => e.request[0] === 'stats detail dump')[1]?.index ?? -1, 2],
  [transcript[transcript.length - 1]?.index ?? -1, 1],
]);
const CLOCK_JUMP_BEFORE = byCommand('delete arcus-ping:qos_kv').index;

describe('ArcusDouble replays the captured ARCUS 1.15.0 session', () => {
  let zookeeper: ZooKeeperServer;
  let arcusZk: ArcusZk;
  let double: ArcusDouble;
  let client: RawClient;
  let now = Date.now();
  const replies = new Map<number, string>();

  before(async () => {
    zookeeper = await startZooKeeper();
    arcusZk = await ArcusZk.connect(zookeeper.address);
    double = await ArcusDouble.start({ clock: () => now, heartbeatIntervalMs: 0 });
    await arcusZk.createServiceCode('test');
    await arcusZk.mapServer(double.address, 'test');
    await double.register(arcusZk);
    client = await RawClient.connect(double.address);
    for (const exchange of transcript) {
      for (let i = 0; i < (HEARTBEATS_BEFORE.get(exchange.index) ?? 0); i++) double.heartbeat();
      if (exchange.index === CLOCK_JUMP_BEFORE) now += 4000;
      const lastLine = exchange.reply.slice(exchange.reply.lastIndexOf('\r\n', exchange.reply.length - 3) + 2);
      replies.set(exchange.index, await client.send(`${exchange.request.join('\r\n')}\r\n`, lastLine));
    }
  });

  after(async () => {
    client?.close();
    await double?.stop();
    await arcusZk?.close();
    await zookeeper?.stop();
  });

  test('the transcript has all 56 exchanges', () => {
    assert.equal(transcript.length, 56);
    assert.equal(transcript[0]?.request[0], 'stats');
    assert.deepEqual(transcript[CLOCK_JUMP_BEFORE - 1]?.request, ['delete arcus-ping:qos_kv']);
  });

  for (const exchange of transcript) {
    test(`#${exchange.index} ${exchange.request[0]}`, () => {
      const reply = replies.get(exchange.index);
      assert.equal(normalise(reply ?? '(no reply)'), normalise(exchange.reply));
    });
  }

  test('every sample file equals the double’s answer to its request', () => {
    const files = readdirSync(SAMPLES_DIR).filter((f) => /^\d\d-.*\.raw$/.test(f));
    assert.equal(files.length, 23);
    for (const file of files) {
      const index = Number(file.slice(0, 2));
      const sample = readFileSync(`${SAMPLES_DIR}/${file}`, 'latin1');
      const exchange = transcript[index - 1];
      assert.ok(exchange, file);
      // The sample is the transcript's reply to the same request...
      assert.equal(sample, exchange.reply, `${file} is the reply to #${index} ${exchange.request[0]}`);
      // ...and the double gives it too.
      assert.equal(normalise(replies.get(index) ?? ''), normalise(sample), file);
    }
  });

  test('samples without volatile values match without any normalisation', () => {
    for (const file of [
      '03-stats-slabs.raw',
      '04-stats-zookeeper.raw',
      '36-stats-detail-dump.raw',
      '39-stats-prefixlist-operation-app.raw',
      '42-qos-get-kv.raw',
      '51-qos-bop-get.raw',
    ]) {
      const index = Number(file.slice(0, 2));
      assert.equal(replies.get(index), readFileSync(`${SAMPLES_DIR}/${file}`, 'latin1'), file);
    }
  });

  test('the normalised values are real: own port, own pid, test clock', () => {
    const settings = replies.get(2) ?? '';
    assert.match(settings, new RegExp(`^STAT tcpport ${double.port}\\r$`, 'm'));
    const stats = replies.get(1) ?? '';
    assert.match(stats, new RegExp(`^STAT pid ${process.pid}\\r$`, 'm'));
    const finalStats = replies.get(56) ?? '';
    assert.match(finalStats, new RegExp(`^STAT time ${Math.floor(now / 1000)}\\r$`, 'm'));
    assert.match(finalStats, /^STAT uptime 4\r$/m);
    assert.match(finalStats, /^STAT total_connections 18\r$/m, '17 heartbeats and the test client');
  });
});
