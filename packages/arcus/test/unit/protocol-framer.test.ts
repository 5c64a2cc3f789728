import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CachemonError, Errors } from '@cachemon/core';
import { MAX_LINE_BYTES, ReplyFramer, type ReplyKind } from '../../src/protocol/framer.js';
import { sample, sampleNames, seededRandom } from '../protocol/fixtures.js';

/** How each captured reply is framed. */
const KIND_OF: Record<string, ReplyKind> = {
  '01-stats.raw': 'multi',
  '02-stats-settings.raw': 'multi',
  '03-stats-slabs.raw': 'multi',
  '04-stats-zookeeper.raw': 'multi',
  '05-stats-prefixes-before.raw': 'multi',
  '35-type-mismatch-get-on-list.raw': 'value',
  '36-stats-detail-dump.raw': 'multi',
  '37-stats-prefixes-after.raw': 'multi',
  '38-stats-prefixlist-item-app-user.raw': 'multi',
  '39-stats-prefixlist-operation-app.raw': 'multi',
  '41-qos-set-kv.raw': 'line',
  '42-qos-get-kv.raw': 'value',
  '43-qos-lop-insert.raw': 'line',
  '44-qos-lop-get.raw': 'value',
  '45-qos-lop-delete-drop.raw': 'line',
  '46-qos-lop-get-after-drop.raw': 'value',
  '47-qos-sop-insert.raw': 'line',
  '48-qos-sop-exist.raw': 'line',
  '49-qos-sop-delete-drop.raw': 'line',
  '50-qos-bop-insert.raw': 'line',
  '51-qos-bop-get.raw': 'value',
  '52-qos-bop-delete-drop.raw': 'line',
  '53-qos-delete-kv.raw': 'line',
};

const bytes = (text: string): Buffer => Buffer.from(text, 'latin1');

/**
 * Feeds `input` in chunks of the given sizes, collecting replies of `kinds` in order. Like the
 * connection, every chunk goes through one scratch buffer that is scribbled over once appended.
 * Replies are views of the framer's bytes; they are decoded only after the last chunk, so a framer
 * that wrote over bytes it had handed out, or kept a view of its input, would fail here.
 */
function frame(
  input: Buffer,
  kinds: Array<ReplyKind | [ReplyKind, number]>,
  chunkSize: () => number,
  maxReplyBytes = 1 << 24,
): string[] {
  const framer = new ReplyFramer(maxReplyBytes);
  const replies: Buffer[] = [];
  const scratch = Buffer.alloc(input.length);
  let offset = 0;
  while (offset < input.length) {
    const size = Math.min(Math.max(1, chunkSize()), input.length - offset);
    input.copy(scratch, 0, offset, offset + size);
    framer.append(scratch, size);
    scratch.fill(0xee, 0, size);
    offset += size;
    while (replies.length < kinds.length) {
      const spec = kinds[replies.length]!;
      const [kind, echoes] = typeof spec === 'string' ? [spec, 0] : spec;
      const reply = framer.next(kind, echoes);
      if (reply === undefined) break;
      replies.push(reply);
    }
  }
  assert.equal(framer.buffered, 0, 'every byte belongs to a reply');
  return replies.map((reply) => reply.toString('utf8'));
}

function assertProtocolError(fn: () => unknown, messageIncludes: string): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof CachemonError, String(err));
    assert.equal(err.code, Errors.NODE_PROTOCOL.code);
    assert.ok(err.message.includes(messageIncludes), err.message);
    return true;
  });
}

describe('ReplyFramer on the captured replies', () => {
  it('covers every sample file', () => {
    assert.deepEqual(sampleNames(), Object.keys(KIND_OF).sort());
  });

  for (const [name, kind] of Object.entries(KIND_OF)) {
    it(`${name} as '${kind}', fed one byte at a time, comes back byte for byte only at its last byte`, () => {
      const reply = sample(name);
      const framer = new ReplyFramer(1 << 24);
      for (let i = 0; i < reply.length; i++) {
        framer.push(bytes(reply[i]!));
        const framed = framer.next(kind);
        if (i < reply.length - 1) assert.equal(framed, undefined, `complete too early at byte ${i}`);
        else assert.equal(framed?.toString('latin1'), reply);
      }
      assert.equal(framer.buffered, 0);
    });
  }

  it('all samples pipelined back to back, split at random points (seeded, 200 rounds)', () => {
    const names = Object.keys(KIND_OF);
    const input = bytes(names.map(sample).join(''));
    const random = seededRandom(7);
    for (let round = 0; round < 200; round++) {
      const max = 1 + Math.floor(random() * 4000);
      const replies = frame(
        input,
        names.map((name) => KIND_OF[name]!),
        () => Math.floor(random() * max),
      );
      assert.deepEqual(replies, names.map(sample));
    }
  });
});

describe("ReplyFramer 'value' kind", () => {
  it('uses the byte count, not the content: data may hold CRLF, END and VALUE', () => {
    // The byte count is of bytes, not characters: 'é' is two of them.
    const data = 'a\r\nEND\r\nVALUE x 0 3\r\n\u00e9\u0000';
    const reply = `VALUE k 0 ${Buffer.byteLength(data)}\r\n${data}\r\nVALUE k2 5 0\r\n\r\nEND\r\n`;
    assert.deepEqual(
      frame(Buffer.from(`${reply}STORED\r\n`, 'utf8'), ['value', 'line'], () => 1),
      [reply, 'STORED\r\n'],
    );
  });

  it('multi-key get and gets (with cas) from the transcript', () => {
    const get = 'VALUE app:k1 0 5\r\nhello\r\nVALUE user:k2 7 5\r\nworld\r\nVALUE noprefixkey 0 3\r\nabc\r\nEND\r\n';
    const gets = 'VALUE app:k1 0 5 12\r\nhello\r\nEND\r\n';
    assert.deepEqual(
      frame(bytes(get + gets), ['value', 'value'], () => 3),
      [get, gets],
    );
  });

  it('collection gets: element lines, then END / DELETED_DROPPED, and VALUE <flags> 0', () => {
    const lop = 'VALUE 0 3\r\n6 itemhd\r\n5 item0\r\n5 item1\r\nEND\r\n';
    const bop = 'VALUE 0 2\r\n10 6 bval10\r\n2 0x0102 5 bval2\r\nDELETED_DROPPED\r\n';
    const empty = 'VALUE 0 0\r\nEND\r\n';
    assert.deepEqual(
      frame(bytes(lop + bop + empty), ['value', 'value', 'value'], () => 2),
      [lop, bop, empty],
    );
  });

  it('a single non-VALUE line is the whole reply', () => {
    for (const line of ['NOT_FOUND', 'TYPE_MISMATCH', 'UNREADABLE', 'CLIENT_ERROR bad command line format', 'END']) {
      assert.deepEqual(
        frame(bytes(`${line}\r\n`), ['value'], () => 1),
        [`${line}\r\n`],
      );
    }
  });

  it('rejects bad headers and unterminated data blocks', () => {
    const cases: Array<[string, string]> = [
      ['VALUE k 0 x\r\n', 'bad VALUE header'],
      ['VALUE k\r\n', 'bad VALUE header'],
      ['VALUE 0 y\r\n', 'bad VALUE header'],
      ['VALUE k 0 2\r\nabcd\r\n', 'not followed by CRLF'],
      ['VALUE k 0 2\r\nab\r\nSTORED\r\n', 'expected VALUE or END'],
      ['VALUE 0 1\r\n4 DATA\r\nlower\r\n', 'not a reply line'],
    ];
    for (const [input, message] of cases) {
      const framer = new ReplyFramer(1 << 20);
      framer.push(bytes(input));
      assertProtocolError(() => framer.next('value'), message);
    }
  });
});

describe('ReplyFramer echoes of unknown commands with a data block', () => {
  it('plain memcached: ERROR for the command and ERROR for the data line; the text is the first ERROR', () => {
    const input = bytes('ERROR\r\nERROR\r\nERROR\r\nSTORED\r\n');
    assert.deepEqual(
      frame(input, [['line', 1], 'value', 'line'], () => 1),
      ['ERROR\r\n', 'ERROR\r\n', 'STORED\r\n'],
    );
  });

  it('ARCUS words after ERROR, several data lines', () => {
    const input = bytes(
      'ERROR no matching command\r\nERROR no matching command\r\nERROR no matching command\r\nOK\r\n',
    );
    assert.deepEqual(
      frame(input, [['line', 2], 'line'], () => 5),
      ['ERROR no matching command\r\n', 'OK\r\n'],
    );
  });

  it('CLIENT_ERROR means the server swallowed the data: nothing more to skip', () => {
    const input = bytes('CLIENT_ERROR bad data chunk\r\nSTORED\r\n');
    assert.deepEqual(
      frame(input, [['line', 1], 'line'], () => 64),
      ['CLIENT_ERROR bad data chunk\r\n', 'STORED\r\n'],
    );
  });
});

describe("ReplyFramer 'multi' kind", () => {
  it('a lone error line ends the reply', () => {
    const input = bytes('CLIENT_ERROR invalid: too many prefixes\r\nERROR\r\nEND\r\n');
    assert.deepEqual(
      frame(input, ['multi', 'multi', 'multi'], () => 7),
      ['CLIENT_ERROR invalid: too many prefixes\r\n', 'ERROR\r\n', 'END\r\n'],
    );
  });

  it('decodes UTF-8 prefix names split across chunks', () => {
    const reply = 'PREFIX \uD55C\uAE00 get 1 hit 0 set 0 del 0\r\nEND\r\n';
    assert.deepEqual(
      frame(Buffer.from(reply, 'utf8'), ['multi'], () => 1),
      [reply],
    );
  });

  it('fails fast on lines that are not protocol (binary, lowercase, empty)', () => {
    for (const input of ['\u0000\u0001garbage\r\n', 'STAT a 1\r\nhttp/1.1 400\r\n', 'STAT a 1\r\n\r\n']) {
      const framer = new ReplyFramer(1 << 20);
      framer.push(bytes(input));
      assertProtocolError(() => framer.next('multi'), 'not a reply line');
    }
  });

  it('fails on the first byte of a line that cannot begin a reply line, without waiting for its end', () => {
    for (const [input, kind] of [
      ['\u0000\u00ff\u001b[?GARBAGE', 'multi'],
      ['STAT a 1\r\nx', 'multi'],
      ['VALUE 0 0\r\n\u0000', 'value'],
    ] as const) {
      const framer = new ReplyFramer(1 << 20);
      framer.push(bytes(input));
      assertProtocolError(() => framer.next(kind), 'not a reply line');
    }
    // Where any byte may begin a line (a 'line' reply such as an incr result, element lines), a
    // partial line is waited for.
    for (const [input, kind] of [
      ['12', 'line'],
      ['VALUE 0 1\r\n\u0000', 'value'],
      ['STAT a 1\r\nST', 'multi'],
    ] as const) {
      const framer = new ReplyFramer(1 << 20);
      framer.push(bytes(input));
      assert.equal(framer.next(kind), undefined, JSON.stringify(input));
    }
  });

  it(`fails on a line longer than ${MAX_LINE_BYTES} bytes without waiting for its end`, () => {
    const framer = new ReplyFramer(1 << 24);
    framer.push(bytes(`STAT ${'x'.repeat(MAX_LINE_BYTES)}`));
    assertProtocolError(() => framer.next('multi'), 'line too long');
  });

  it('fails once a reply outgrows maxReplyBytes, complete or not', () => {
    const stats = sample('01-stats.raw');
    const partial = new ReplyFramer(1024);
    let error: unknown;
    try {
      for (let i = 0; i < stats.length; i += 100) {
        partial.push(bytes(stats.slice(i, i + 100)));
        assert.equal(partial.next('multi'), undefined);
      }
    } catch (err) {
      error = err;
    }
    assert.ok(error instanceof CachemonError && error.code === Errors.NODE_PROTOCOL.code, String(error));
    assert.ok(error.message.includes('larger than 1024 bytes'));

    const whole = new ReplyFramer(1024);
    whole.push(bytes(stats));
    assertProtocolError(() => whole.next('multi'), 'larger than 1024 bytes');
  });
});

describe('ReplyFramer robustness', () => {
  it('random bytes with random kinds (seeded, 2000 cases): replies or NODE_PROTOCOL, nothing else', () => {
    const random = seededRandom(99);
    const kinds: ReplyKind[] = ['multi', 'line', 'value'];
    const words = [
      'VALUE ',
      'END',
      'STAT x 1',
      'ERROR',
      '0',
      '4',
      ' ',
      '\r\n',
      '\n',
      'DATA',
      'VALUE 0 2',
      'VALUE k 0 4',
    ];
    let framed = 0;
    for (let i = 0; i < 2000; i++) {
      let input = '';
      const parts = Math.floor(random() * 40);
      for (let p = 0; p < parts; p++) {
        input +=
          random() < 0.5 ? words[Math.floor(random() * words.length)] : String.fromCharCode(Math.floor(random() * 256));
      }
      const framer = new ReplyFramer(512);
      const data = bytes(input);
      try {
        for (let offset = 0; offset < data.length; offset += 7) {
          framer.push(data.subarray(offset, offset + 7));
          for (
            let reply = framer.next(kinds[i % 3]!, i % 2);
            reply !== undefined;
            reply = framer.next(kinds[i % 3]!, i % 2)
          )
            framed++;
        }
      } catch (err) {
        assert.ok(err instanceof CachemonError && err.code === Errors.NODE_PROTOCOL.code, String(err));
      }
    }
    assert.ok(framed > 0);
  });
});

describe('ReplyFramer buffer reuse', () => {
  const stats = (n: number): Buffer =>
    bytes(`${Array.from({ length: n }, (_, i) => `STAT field_${i} ${i * 7}\r\n`).join('')}END\r\n`);

  it('rewind() lets the next replies reuse the buffer, and never drops bytes still pending', () => {
    const framer = new ReplyFramer(1 << 24);
    for (let round = 0; round < 50; round++) {
      const reply = stats(5 + (round % 7));
      const cut = 1 + (round % (reply.length - 1));
      framer.rewind();
      framer.push(reply.subarray(0, cut));
      assert.equal(framer.next('multi'), undefined);
      framer.rewind(); // a reply is half in: this must not move or lose it
      framer.push(reply.subarray(cut));
      assert.deepEqual(framer.next('multi'), reply, `round ${round}`);
      assert.equal(framer.buffered, 0);
    }
  });

  it('replies handed out stay intact across later appends until rewind(), even when the buffer grows', () => {
    const framer = new ReplyFramer(1 << 24);
    const sent = [stats(3), stats(40), stats(2), stats(400), stats(1)];
    const got: Buffer[] = [];
    for (const reply of sent) {
      framer.push(reply);
      got.push(framer.next('multi')!);
    }
    assert.deepEqual(got, sent);
  });
});
