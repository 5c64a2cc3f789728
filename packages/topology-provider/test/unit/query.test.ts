import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CachemonError, Errors } from '@cachemon/core';
import { seededRandom } from '@cachemon/testkit';
import { parseQuery, parseStringQuery, QUERY_ARGUMENTS } from '../../src/index.js';

function badRequest(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof CachemonError, `expected a CachemonError, got ${String(err)}`);
    assert.equal(err.code, Errors.BAD_REQUEST.code);
    assert.match(err.message, pattern);
    return true;
  });
}

describe('string targets', () => {
  it('a bare query name has no filters', () => {
    const q = parseStringQuery('  ensembles ');
    assert.equal(q.name, 'ensembles');
    assert.deepEqual(q.filters, {});
  });

  it('plain values are literal sets', () => {
    const q = parseStringQuery('nodes ensemble=prod service_code=svc-a');
    assert.deepEqual([...q.filters.ensemble!.literals!], ['prod']);
    assert.ok(q.filters.service_code!.test('svc-a'));
    assert.ok(!q.filters.service_code!.test('svc-ab'), 'anchored: a longer value does not match');
  });

  it('regex-formatted variables: escaped addresses and alternations become literal sets', () => {
    const q = parseStringQuery('nodes node=(10\\.0\\.0\\.1:11211|10\\.0\\.0\\.2:11211) service_code=(?:a|b-c)');
    assert.deepEqual([...q.filters.node!.literals!].sort(), ['10.0.0.1:11211', '10.0.0.2:11211']);
    assert.deepEqual([...q.filters.service_code!.literals!].sort(), ['a', 'b-c']);
    assert.ok(!q.filters.node!.test('10x0.0.1:11211'), 'an escaped dot is a dot');
  });

  it('real patterns are anchored regular expressions', () => {
    const q = parseStringQuery('nodes service_code=svc-.* hostname=cache[0-9]+');
    assert.equal(q.filters.service_code!.literals, undefined);
    assert.ok(q.filters.service_code!.test('svc-anything'));
    assert.ok(!q.filters.service_code!.test('xsvc-a'));
    assert.ok(q.filters.hostname!.test('cache12'));
    assert.ok(!q.filters.hostname!.test('cache12.example'));
  });

  it('"All" as .* or $__all matches everything', () => {
    for (const all of ['.*', '$__all']) {
      const q = parseStringQuery(`service_codes ensemble=${all}`);
      assert.ok(q.filters.ensemble!.test('anything'));
      assert.equal(q.filters.ensemble!.literals, undefined);
    }
  });

  it('host_instances takes a port', () => {
    assert.equal(parseStringQuery('host_instances port=9101').port, 9101);
    badRequest(() => parseStringQuery('host_instances port=99999'), /port.*not a port number/);
  });

  it('refuses unknown queries, unknown and repeated arguments, bad patterns, stray words', () => {
    badRequest(() => parseStringQuery('nodez'), /unknown query "nodez"; known: ensembles, service_codes, nodes/);
    badRequest(() => parseStringQuery(''), /empty query/);
    badRequest(
      () => parseStringQuery('zk_servers service_code=a'),
      /query zk_servers: unknown argument "service_code"; it takes ensemble/,
    );
    badRequest(() => parseStringQuery('scrape ensemble=a'), /it takes no arguments/);
    badRequest(() => parseStringQuery('nodes ensemble=a ensemble=b'), /ensemble given twice/);
    badRequest(
      () => parseStringQuery('nodes service_code=(a'),
      /service_code: "\(a" is not a valid regular expression/,
    );
    badRequest(() => parseStringQuery('nodes prod'), /"prod" is not a key=value argument/);
  });

  it('every query names its arguments in QUERY_ARGUMENTS and parses with each of them', () => {
    for (const [name, args] of Object.entries(QUERY_ARGUMENTS)) {
      const target = [name, ...args.map((a) => (a === 'port' ? 'port=9100' : `${a}=x`))].join(' ');
      assert.equal(parseStringQuery(target).name, name);
    }
  });
});

describe('raw JSON payloads', () => {
  it('arrays (multi-value variables) and single strings are exact', () => {
    const q = parseQuery({ target: 'nodes', ensemble: 'prod', service_code: ['a.b', 'c'] });
    assert.ok(q.filters.service_code!.test('a.b'));
    assert.ok(!q.filters.service_code!.test('axb'), 'JSON values are not patterns');
    assert.deepEqual([...q.filters.ensemble!.literals!], ['prod']);
  });

  it('wildcards and arguments inside the target', () => {
    const q = parseQuery({ target: 'nodes state=live', ensemble: ['*'] });
    assert.ok(q.filters.ensemble!.test('x'));
    assert.ok(q.filters.state!.test('live'));
    assert.ok(!q.filters.state!.test('down'));
  });

  it('refuses a payload without target, non-string values and duplicate arguments', () => {
    badRequest(() => parseQuery({ ensemble: 'prod' }), /without a "target" string/);
    badRequest(
      () => parseQuery({ target: 'nodes', ensemble: { a: 1 } }),
      /argument ensemble: expected a string or an array of strings/,
    );
    badRequest(
      () => parseQuery({ target: 'nodes ensemble=a', ensemble: 'b' }),
      /given both in the target and as a key/,
    );
    badRequest(() => parseQuery({ target: 'nodes', bogus: 'b' }), /unknown argument "bogus"/);
    badRequest(() => parseQuery(42), /a query is a string or a JSON object/);
    badRequest(() => parseQuery(['nodes']), /a query is a string or a JSON object/);
  });
});

describe('random input', () => {
  it('never throws anything but a coded bad request', () => {
    const random = seededRandom(7);
    const alphabet = 'nodes ensemble=()[]|\\.*+?{}$^ _-=abc\u0000\u00e9';
    for (let i = 0; i < 3000; i++) {
      const length = Math.floor(random() * 40);
      let text = '';
      for (let j = 0; j < length; j++) text += alphabet[Math.floor(random() * alphabet.length)];
      try {
        const q = parseQuery(random() < 0.5 ? text : `nodes ${text}`);
        for (const matcher of Object.values(q.filters)) matcher.test('x');
      } catch (err) {
        assert.ok(
          err instanceof CachemonError && err.code === Errors.BAD_REQUEST.code,
          `${JSON.stringify(text)}: ${String(err)}`,
        );
      }
    }
  });
});
