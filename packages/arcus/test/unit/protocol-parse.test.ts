import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CachemonError, Errors } from '@cachemon/core';
import {
  errorReplyOf,
  isTooManyPrefixes,
  parseStats,
  scanPrefixLines,
  scanStats,
  type StatsReply,
} from '../../src/protocol/index.js';
import { sample, seededRandom } from '../protocol/fixtures.js';
import { parsePrefixItems, parsePrefixOperations } from '../support/prefix-parse.js';

function get(stats: StatsReply, name: string): string | undefined {
  return stats.find(([n]) => n === name)?.[1];
}

function assertCode(fn: () => unknown, code: string, messageIncludes?: string): CachemonError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof CachemonError, `expected CachemonError, got ${String(err)}`);
    assert.equal(err.code, code);
    if (messageIncludes !== undefined) assert.ok(err.message.includes(messageIncludes), err.message);
    return err;
  }
  assert.fail(`expected ${code}`);
}

const STATS_SAMPLES = ['01-stats.raw', '02-stats-settings.raw', '03-stats-slabs.raw', '04-stats-zookeeper.raw'];
const ITEM_SAMPLES = [
  '05-stats-prefixes-before.raw',
  '37-stats-prefixes-after.raw',
  '38-stats-prefixlist-item-app-user.raw',
];
const OPERATION_SAMPLES = ['36-stats-detail-dump.raw', '39-stats-prefixlist-operation-app.raw'];

describe('parseStats on ARCUS 1.15.0 replies', () => {
  it('stats: every STAT line in server order, values as sent', () => {
    const stats = parseStats(sample('01-stats.raw'));
    assert.equal(stats.length, 152);
    assert.deepEqual(stats[0], ['pid', '24019']);
    assert.deepEqual(stats[stats.length - 1], ['engine_malloced', '1048576']);
    assert.equal(get(stats, 'version'), '1.15.0');
    assert.equal(get(stats, 'libevent'), '2.1.12-stable');
    assert.equal(get(stats, 'rusage_user'), '0.008834');
    assert.equal(get(stats, 'cmd_set'), '10');
    assert.equal(get(stats, 'cmd_bop_smget'), '0');
    assert.equal(get(stats, 'limit_maxbytes'), '67108864');
    assert.equal(get(stats, 'curr_prefixes'), '1');
    assert.equal(get(stats, 'hb_latency'), '6');
  });

  it('stats settings: values with spaces and punctuation are kept whole', () => {
    const stats = parseStats(sample('02-stats-settings.raw'));
    assert.equal(stats.length, 37);
    assert.equal(get(stats, 'logger'), 'standard error');
    assert.equal(get(stats, 'stat_key_prefix'), ':');
    assert.equal(get(stats, 'growth_factor'), '1.25');
    assert.equal(get(stats, 'domain_socket'), 'NULL');
    assert.equal(get(stats, 'max_stats_prefixes'), '50');
    assert.equal(get(stats, 'detail_enabled'), 'no');
    assert.equal(get(stats, 'binding_protocol'), 'auto-negotiate');
    assert.deepEqual(stats[stats.length - 1], ['ascii_extension', 'scrub']);
  });

  it('stats slabs: names with colons', () => {
    const stats = parseStats(sample('03-stats-slabs.raw'));
    assert.equal(stats.length, 27);
    assert.equal(get(stats, 'SM:used_num_classes'), '1');
    assert.equal(get(stats, 'SM:free_bslot_space'), '261920');
    assert.equal(get(stats, '0:chunk_size'), '262144');
    assert.equal(get(stats, 'total_malloced'), '1048576');
  });

  it('stats zookeeper', () => {
    assert.deepEqual(parseStats(sample('04-stats-zookeeper.raw')), [
      ['zk_libversion', '3.5.9-p3'],
      ['zk_timeout', '30000'],
      ['zk_failstop', 'on'],
      ['zk_connected', 'true'],
      ['zk_ready', 'true'],
    ]);
  });

  it('an empty reply and an empty value (the server drops the space)', () => {
    assert.deepEqual(parseStats('END\r\n'), []);
    assert.deepEqual(parseStats('STAT ssl_key\r\nSTAT a  b\r\nEND\r\n'), [
      ['ssl_key', ''],
      ['a', ' b'],
    ]);
  });

  it('accepts bare LF line ends', () => {
    assert.deepEqual(parseStats('STAT pid 1\nEND\n'), [['pid', '1']]);
  });
});

describe('scanStats: the same walk over bytes, without strings', () => {
  it('offsets of every sample name the same lines parseStats returns; bytes and text parse alike', () => {
    for (const name of STATS_SAMPLES) {
      const bytes = Buffer.from(sample(name), 'latin1');
      const seen: StatsReply = [];
      const done = scanStats(bytes, (nameStart, nameEnd, valueStart, valueEnd) => {
        seen.push([bytes.toString('latin1', nameStart, nameEnd), bytes.toString('latin1', valueStart, valueEnd)]);
      });
      assert.equal(done, true, name);
      assert.deepEqual(seen, parseStats(sample(name)), name);
      assert.deepEqual(parseStats(bytes), seen, name);
    }
  });

  it('an empty value is an empty range at the end of the line', () => {
    const bytes = Buffer.from('STAT ssl_key\r\nEND\r\n');
    const ranges: number[][] = [];
    scanStats(bytes, (...range) => void ranges.push(range));
    assert.deepEqual(ranges, [[5, 12, 12, 12]]);
  });

  it('the visitor stops the walk by returning false; the rest is not read', () => {
    const bytes = Buffer.from('STAT a 1\r\nSTAT b 2\r\ngarbage without END\r\n');
    let lines = 0;
    assert.equal(
      scanStats(bytes, () => ++lines < 2),
      false,
    );
    assert.equal(lines, 2);
    assertCode(() => scanStats(bytes, () => true), Errors.NODE_PROTOCOL.code, 'expected STAT or END');
  });

  it('error replies and garbage fail as in parseStats', () => {
    const err = assertCode(
      () => scanStats(Buffer.from('SERVER_ERROR out of memory\r\n'), () => true),
      Errors.NODE_ERROR_REPLY.code,
    );
    assert.equal(err.details?.['reply'], 'SERVER_ERROR out of memory');
    assertCode(
      () => scanStats(Buffer.from('END\r\nSTAT a 1\r\n'), () => true),
      Errors.NODE_PROTOCOL.code,
      'data after END',
    );
    assertCode(() => scanStats(Buffer.from('STAT a 1\r\n'), () => true), Errors.NODE_PROTOCOL.code, 'without END');
  });
});

describe('parseStats on plain memcached 1.6.18 replies', () => {
  it('stats settings with (null) values', () => {
    const reply =
      'STAT maxbytes 67108864\r\nSTAT maxconns 1024\r\nSTAT ssl_chain_cert (null)\r\nSTAT hot_max_factor 0.20\r\n' +
      'STAT ext_item_age 4294967295\r\nSTAT memory_file (null)\r\nEND\r\n';
    const stats = parseStats(reply);
    assert.equal(stats.length, 6);
    assert.equal(get(stats, 'ssl_chain_cert'), '(null)');
    assert.equal(get(stats, 'hot_max_factor'), '0.20');
  });
});

describe('parsePrefixItems', () => {
  it('stats prefixes before traffic: the server heartbeat prefix', () => {
    assert.deepEqual(parsePrefixItems(sample('05-stats-prefixes-before.raw')), [
      {
        prefix: 'arcus',
        fields: {
          itm: 1,
          kitm: 1,
          litm: 0,
          sitm: 0,
          mitm: 0,
          bitm: 0,
          tsz: 96,
          ktsz: 96,
          ltsz: 0,
          stsz: 0,
          mtsz: 0,
          btsz: 0,
        },
        created: '20261121133144',
      },
    ]);
  });

  it('stats prefixes after traffic: <null>, app, arcus, user', () => {
    const items = parsePrefixItems(sample('37-stats-prefixes-after.raw'));
    assert.deepEqual(
      items.map((item) => item.prefix),
      ['<null>', 'app', 'arcus', 'user'],
    );
    const [none, app, , user] = items;
    assert.equal(none!.fields['itm'], 1);
    assert.equal(none!.created, '20261121133216');
    assert.equal(app!.fields['tsz'], 912);
    assert.equal(app!.fields['ltsz'], 272);
    assert.equal(app!.fields['btsz'], 544);
    assert.equal(app!.fields['litm'], 1);
    assert.equal(user!.fields['sitm'], 1);
    assert.equal(user!.fields['stsz'], 376);
    assert.equal(Object.keys(app!.fields).length, 12);
    assert.equal('time' in app!.fields, false);
  });

  it('stats prefixlist item app user', () => {
    const items = parsePrefixItems(sample('38-stats-prefixlist-item-app-user.raw'));
    assert.equal(items.length, 2);
    assert.deepEqual(items[1], {
      prefix: 'user',
      fields: {
        itm: 2,
        kitm: 1,
        litm: 0,
        sitm: 1,
        mitm: 0,
        bitm: 0,
        tsz: 472,
        ktsz: 96,
        ltsz: 0,
        stsz: 376,
        mtsz: 0,
        btsz: 0,
      },
      created: '20261121133215',
    });
  });

  it('keeps fields a newer server adds, and lines without time', () => {
    // 2^64 - 1 as a number is 2^64, the nearest double.
    assert.deepEqual(parsePrefixItems('PREFIX a itm 2 chd 3 citm 18446744073709551615\r\nEND\r\n'), [
      { prefix: 'a', fields: { itm: 2, chd: 3, citm: 2 ** 64 } },
    ]);
  });
});

describe('scanPrefixLines: prefix lines as byte ranges and counts', () => {
  it('every item and operation sample: the same names and numbers as the parsers, the text field as NaN', () => {
    for (const [name, textField] of [
      ...ITEM_SAMPLES.map((n) => [n, 'time'] as const),
      ...OPERATION_SAMPLES.map((n) => [n, undefined] as const),
    ]) {
      const bytes = Buffer.from(sample(name), 'latin1');
      const seen: Array<{ prefix: string; numbers: Record<string, number>; text?: string }> = [];
      const done = scanPrefixLines(bytes, textField, (nameStart, nameEnd, ranges, counts, pairs) => {
        const numbers: Record<string, number> = {};
        let text: string | undefined;
        for (let i = 0; i < pairs; i++) {
          const field = bytes.toString('latin1', ranges[i * 4], ranges[i * 4 + 1]);
          if (Number.isNaN(counts[i])) text = bytes.toString('latin1', ranges[i * 4 + 2], ranges[i * 4 + 3]);
          else numbers[field] = counts[i]!;
        }
        seen.push(
          text === undefined
            ? { prefix: bytes.toString('latin1', nameStart, nameEnd), numbers }
            : { prefix: bytes.toString('latin1', nameStart, nameEnd), numbers, text },
        );
      });
      assert.equal(done, true, name);
      const parsed =
        textField === undefined
          ? parsePrefixOperations(bytes).map((op) => ({ prefix: op.prefix, numbers: op.counts }))
          : parsePrefixItems(bytes).map((item) =>
              item.created === undefined
                ? { prefix: item.prefix, numbers: item.fields }
                : { prefix: item.prefix, numbers: item.fields, text: item.created },
            );
      assert.deepEqual(seen, parsed, name);
    }
  });

  it('lines with many fields (more than the scanner starts with) and huge counts', () => {
    const fields = Array.from({ length: 150 }, (_, i) => `f${i} ${i}`).join(' ');
    const bytes = Buffer.from(`PREFIX a ${fields} big 18446744073709551615\r\nEND\r\n`);
    let pairs = 0;
    let last = 0;
    scanPrefixLines(bytes, undefined, (_s, _e, _r, counts, n) => {
      pairs = n;
      last = counts[n - 1]!;
    });
    assert.equal(pairs, 151);
    assert.equal(last, 2 ** 64);
  });

  it('the visitor stops the walk by returning false', () => {
    const bytes = Buffer.from('PREFIX a get 1\r\nPREFIX b get 2\r\nnot a line\r\n');
    let lines = 0;
    assert.equal(
      scanPrefixLines(bytes, undefined, () => ++lines < 2),
      false,
    );
    assert.equal(lines, 2);
  });
});

describe('parsePrefixOperations', () => {
  it('stats detail dump: four prefixes, 54 counts each', () => {
    const operations = parsePrefixOperations(sample('36-stats-detail-dump.raw'));
    assert.deepEqual(
      operations.map((op) => op.prefix),
      ['app', 'arcus', 'user', '<null>'],
    );
    for (const op of operations) assert.equal(Object.keys(op.counts).length, 54);
    const [app, arcus, user, none] = operations;
    assert.equal(app!.counts['get'], 5);
    assert.equal(app!.counts['hit'], 3);
    assert.equal(app!.counts['lis'], 3);
    assert.equal(app!.counts['bis'], 4);
    assert.equal(app!.counts['bih'], 3);
    assert.equal(app!.counts['gas'], 1);
    assert.equal(app!.counts['sas'], 0);
    assert.equal(arcus!.counts['set'], 4);
    assert.equal(user!.counts['ses'], 2);
    assert.equal(user!.counts['sgh'], 1);
    assert.equal(none!.counts['get'], 2);
    assert.equal(none!.counts['hit'], 2);
  });

  it('stats prefixlist operation app', () => {
    const operations = parsePrefixOperations(sample('39-stats-prefixlist-operation-app.raw'));
    assert.equal(operations.length, 1);
    assert.deepEqual(operations[0], parsePrefixOperations(sample('36-stats-detail-dump.raw'))[0]);
  });

  it('plain memcached: get hit set del only', () => {
    assert.deepEqual(
      parsePrefixOperations('PREFIX a get 1 hit 1 set 1 del 0\r\nPREFIX b get 7 hit 0 set 0 del 2\r\nEND\r\n'),
      [
        { prefix: 'a', counts: { get: 1, hit: 1, set: 1, del: 0 } },
        { prefix: 'b', counts: { get: 7, hit: 0, set: 0, del: 2 } },
      ],
    );
    assert.deepEqual(parsePrefixOperations('END\r\n'), []);
  });
});

describe('error replies', () => {
  const parsers = { parseStats, parsePrefixItems, parsePrefixOperations };
  for (const [name, parse] of Object.entries(parsers)) {
    it(`${name}: a lone error line is NODE_ERROR_REPLY with the server's words`, () => {
      for (const line of [
        'ERROR',
        'ERROR no matching command',
        'CLIENT_ERROR bad command line format',
        'SERVER_ERROR no more memory',
      ]) {
        const err = assertCode(() => parse(`${line}\r\n`), Errors.NODE_ERROR_REPLY.code, line);
        assert.equal(err.details?.['reply'], line);
        assert.equal(isTooManyPrefixes(err), false);
      }
    });
  }

  it('errorReplyOf: a reply that is one error line is the refusal the parsers throw; anything else is not', () => {
    for (const line of [
      'ERROR',
      'ERROR no matching command',
      'CLIENT_ERROR invalid: too many prefixes',
      'SERVER_ERROR out of memory',
    ]) {
      const err = errorReplyOf(Buffer.from(`${line}\r\n`));
      assert.ok(err instanceof CachemonError && err.code === Errors.NODE_ERROR_REPLY.code, line);
      assert.equal(err.details?.['reply'], line);
      assert.equal(isTooManyPrefixes(err), line.includes('too many'));
    }
    for (const reply of [
      'END\r\n',
      'ERRORS\r\n',
      'ERROR\r\nEND\r\n',
      'STAT a 1\r\nEND\r\n',
      'CLIENT_ERROR',
      '',
      'SERVER_ERRORx\r\n',
    ]) {
      assert.equal(errorReplyOf(Buffer.from(reply)), undefined, JSON.stringify(reply));
    }
  });

  it('isTooManyPrefixes recognises the max_stats_prefixes refusal', () => {
    const err = assertCode(
      () => parsePrefixItems('CLIENT_ERROR invalid: too many prefixes\r\n'),
      Errors.NODE_ERROR_REPLY.code,
      'CLIENT_ERROR invalid: too many prefixes',
    );
    assert.equal(isTooManyPrefixes(err), true);
    assert.equal(
      isTooManyPrefixes(
        assertCode(
          () => parsePrefixOperations('CLIENT_ERROR invalid: too many prefixes\r\n'),
          Errors.NODE_ERROR_REPLY.code,
        ),
      ),
      true,
    );
    assert.equal(isTooManyPrefixes(new Error('CLIENT_ERROR invalid: too many prefixes')), false);
    assert.equal(isTooManyPrefixes(undefined), false);
    assert.equal(isTooManyPrefixes(new CachemonError(Errors.NODE_PROTOCOL, 'too many prefixes')), false);
  });

  it('an error line followed by more lines, or words glued to the keyword, is not an error reply', () => {
    assertCode(() => parseStats('ERROR\r\nEND\r\n'), Errors.NODE_PROTOCOL.code);
    assertCode(() => parseStats('ERRORS\r\n'), Errors.NODE_PROTOCOL.code);
    assertCode(() => parseStats('STAT a 1\r\nSERVER_ERROR out of memory\r\n'), Errors.NODE_PROTOCOL.code);
  });
});

describe('malformed replies are NODE_PROTOCOL naming the line', () => {
  const cases: Array<[string, (reply: string) => unknown, string, string]> = [
    ['no END', parseStats, 'STAT a 1\r\n', 'without END'],
    ['empty input', parseStats, '', 'without END'],
    ['cut inside a line', parseStats, 'STAT a 1\r\nST', '"ST"'],
    ['a PREFIX line in stats', parseStats, 'PREFIX a get 1\r\nEND\r\n', '"PREFIX a get 1"'],
    ['STAT without a name', parseStats, 'STAT \r\nEND\r\n', 'without a name'],
    ['data after END', parseStats, 'END\r\nSTAT a 1\r\n', '"STAT a 1"'],
    ['lowercase line', parsePrefixItems, 'prefix a itm 1\r\nEND\r\n', '"prefix a itm 1"'],
    ['non-numeric count', parsePrefixItems, 'PREFIX a itm x\r\nEND\r\n', 'non-numeric value for itm'],
    ['negative count', parsePrefixOperations, 'PREFIX a get -1\r\nEND\r\n', 'non-numeric value for get'],
    ['field without value', parsePrefixOperations, 'PREFIX a get 1 hit\r\nEND\r\n', 'without a value'],
    ['double space', parsePrefixOperations, 'PREFIX a get  1\r\nEND\r\n', 'empty'],
    ['trailing space', parsePrefixOperations, 'PREFIX a get 1 \r\nEND\r\n', 'empty field'],
    ['PREFIX without a name', parsePrefixOperations, 'PREFIX  get 1\r\nEND\r\n', 'without a name'],
    ['__proto__ field', parsePrefixOperations, 'PREFIX a __proto__ 1\r\nEND\r\n', 'invalid field name'],
    ['STAT line in prefixes', parsePrefixOperations, 'STAT a 1\r\nEND\r\n', '"STAT a 1"'],
  ];
  for (const [title, parse, reply, expected] of cases) {
    it(title, () => {
      assertCode(() => parse(reply), Errors.NODE_PROTOCOL.code, expected);
    });
  }

  it('quotes at most 80 characters of a long line', () => {
    const long = `STAT ${'x'.repeat(5000)}`;
    const err = assertCode(() => parsePrefixItems(`${long}\r\nEND\r\n`), Errors.NODE_PROTOCOL.code);
    assert.equal(err.details?.['line'], `${long.slice(0, 80)}...`);
    assert.ok(err.message.length < 200, err.message);
  });
});

describe('robustness: only CachemonError escapes, and nothing hangs', () => {
  const parsers = [parseStats, parsePrefixItems, parsePrefixOperations];
  const allowed = new Set<string>([Errors.NODE_PROTOCOL.code, Errors.NODE_ERROR_REPLY.code]);

  function tryAll(input: string): number {
    let parsed = 0;
    for (const parse of parsers) {
      try {
        parse(input);
        parsed++;
      } catch (err) {
        if (!(err instanceof CachemonError) || !allowed.has(err.code)) {
          assert.fail(`${parse.name}(${JSON.stringify(input.slice(0, 200))}) threw ${String(err)}`);
        }
      }
    }
    return parsed;
  }

  it('every prefix of every stats and prefix sample either parses or throws CachemonError', () => {
    for (const name of [...STATS_SAMPLES, ...ITEM_SAMPLES, ...OPERATION_SAMPLES]) {
      const reply = sample(name);
      const parse = STATS_SAMPLES.includes(name)
        ? parseStats
        : ITEM_SAMPLES.includes(name)
          ? parsePrefixItems
          : parsePrefixOperations;
      let parsedCount = 0;
      for (let cut = 0; cut <= reply.length; cut++) {
        tryAll(reply.slice(0, cut));
        try {
          parse(reply.slice(0, cut));
          parsedCount++;
        } catch (err) {
          assert.ok(
            err instanceof CachemonError && err.code === Errors.NODE_PROTOCOL.code,
            `${name}[0..${cut}]: ${String(err)}`,
          );
        }
      }
      // Only the whole reply parses: every shorter cut lacks the LF that ends END.
      assert.equal(parsedCount, 1, name);
    }
  });

  it('random bytes (seeded, 3000 cases)', () => {
    const random = seededRandom(0xa11ce);
    for (let i = 0; i < 3000; i++) {
      const length = Math.floor(random() * 300);
      let input = '';
      for (let j = 0; j < length; j++) input += String.fromCharCode(Math.floor(random() * 256));
      tryAll(input);
      tryAll(`${input}\r\nEND\r\n`);
    }
  });

  it('line-shaped noise from protocol words (seeded, 5000 cases) sometimes parses', () => {
    const random = seededRandom(42);
    const words = [
      'STAT',
      'PREFIX',
      'END',
      'ERROR',
      'CLIENT_ERROR',
      'SERVER_ERROR',
      'VALUE',
      'itm',
      'time',
      'get',
      '__proto__',
      'constructor',
      '<null>',
      '0',
      '1',
      '18446744073709551615',
      '-1',
      '1.5',
      'x',
      '',
      ' ',
      '\r',
      '\n',
      '\r\n',
      '\t',
      '\u00e9',
      '\ud800',
    ];
    const pick = (): string => words[Math.floor(random() * words.length)]!;
    let parsed = 0;
    for (let i = 0; i < 5000; i++) {
      const lines: string[] = [];
      const lineCount = Math.floor(random() * 6);
      for (let l = 0; l < lineCount; l++) {
        const tokens: string[] = [];
        const tokenCount = Math.floor(random() * 8);
        for (let t = 0; t < tokenCount; t++) tokens.push(pick());
        lines.push(tokens.join(random() < 0.9 ? ' ' : '  '));
      }
      if (random() < 0.7) lines.push('END');
      parsed += tryAll(lines.map((line) => `${line}\r\n`).join(''));
    }
    assert.ok(parsed > 0, 'the generator should produce some valid replies');
  });
});
