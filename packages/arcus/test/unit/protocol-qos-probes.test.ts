import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { COLLECTION_PROBES, KV_PROBES, QOS_KEY_PREFIX } from '../../src/protocol/index.js';
import { sample, transcriptCommands } from '../protocol/fixtures.js';

/** The reply the live server gave to each probe (samples 41..52). */
const REPLY_SAMPLE: Record<string, string> = {
  kv_set: '41-qos-set-kv.raw',
  kv_get: '42-qos-get-kv.raw',
  lop_insert: '43-qos-lop-insert.raw',
  lop_get: '44-qos-lop-get.raw',
  lop_delete: '45-qos-lop-delete-drop.raw',
  sop_insert: '47-qos-sop-insert.raw',
  sop_exist: '48-qos-sop-exist.raw',
  sop_delete: '49-qos-sop-delete-drop.raw',
  bop_insert: '50-qos-bop-insert.raw',
  bop_get: '51-qos-bop-get.raw',
  bop_delete: '52-qos-bop-delete-drop.raw',
};

const ALL = [...KV_PROBES, ...COLLECTION_PROBES];

describe('QoS probe definitions', () => {
  it('names, in run order', () => {
    assert.deepEqual(
      KV_PROBES.map((p) => p.name),
      ['kv_set', 'kv_get'],
    );
    assert.deepEqual(
      COLLECTION_PROBES.map((p) => p.name),
      [
        'lop_insert',
        'lop_get',
        'lop_delete',
        'sop_insert',
        'sop_exist',
        'sop_delete',
        'bop_insert',
        'bop_get',
        'bop_delete',
      ],
    );
  });

  it('every command is one the live ARCUS server accepted, in the order of the transcript', () => {
    const transcript = transcriptCommands();
    let from = 0;
    for (const probe of ALL) {
      const at = transcript.indexOf(probe.command, from);
      assert.ok(at >= 0, `${probe.name}: ${JSON.stringify(probe.command)} is not in the transcript after #${from}`);
      from = at + 1;
    }
    assert.ok(transcript.includes('bop get arcus-ping:qos_bop 1..10'));
    assert.ok(transcript.includes('bop delete arcus-ping:qos_bop 1..10 10 drop'));
  });

  it('keys use the arcus-ping: prefix and a 3 s expiry on create', () => {
    for (const probe of ALL) {
      assert.ok(
        probe.command.split(' ')[probe.name.startsWith('kv_') ? 1 : 2]!.startsWith(QOS_KEY_PREFIX),
        probe.command,
      );
      if (probe.name.endsWith('_insert')) assert.match(probe.command, / create 0 3 10\r\nDATA$/);
    }
    assert.match(KV_PROBES[0]!.command, /^set arcus-ping:qos_kv 0 3 4\r\nDATA$/);
  });

  it("each probe expects exactly the live server's reply", () => {
    for (const probe of ALL) {
      assert.equal(probe.expect(sample(REPLY_SAMPLE[probe.name]!)), true, probe.name);
    }
  });

  it('and nothing else: misses, errors, other probes replies', () => {
    const others = ['46-qos-lop-get-after-drop.raw', '53-qos-delete-kv.raw', '35-type-mismatch-get-on-list.raw'].map(
      sample,
    );
    for (const probe of ALL) {
      for (const reply of [...others, 'ERROR\r\n', 'NOT_SUPPORTED\r\n', 'STORED', '']) {
        assert.equal(probe.expect(reply), false, `${probe.name} accepted ${JSON.stringify(reply)}`);
      }
      for (const [name, file] of Object.entries(REPLY_SAMPLE)) {
        const same = sample(file) === sample(REPLY_SAMPLE[probe.name]!);
        if (name !== probe.name && !same)
          assert.equal(probe.expect(sample(file)), false, `${probe.name} accepted ${file}`);
      }
    }
  });
});
