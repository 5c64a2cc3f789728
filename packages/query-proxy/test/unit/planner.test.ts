import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { seededRandom } from '@cachemon/testkit';
import {
  combiningProblem,
  matchesForGroup,
  MAX_NESTING_DEPTH,
  nestingDepth,
  parseQuery,
  parseQueryProxyConfig,
  planMatches,
  planQuery,
  PromQLParseError,
  queryForGroup,
  unquote,
} from '../../src/index.js';

const parseSelectors = (query: string) => parseQuery(query).selectors;

const config = parseQueryProxyConfig('promxy.yml', {
  promxy: {
    server_groups: [
      {
        static_configs: [{ targets: ['127.0.0.1:8428'] }],
        label_filter: { static_labels_include: { scrape: ['short'] } },
      },
      {
        static_configs: [{ targets: ['127.0.0.1:8429'] }],
        label_filter: { static_labels_include: { scrape: ['long'] } },
      },
    ],
  },
});
const [short, long] = config.groups as [(typeof config.groups)[0], (typeof config.groups)[0]];
const route = (q: string) => {
  const plan = planQuery(q, config.groups);
  return [plan.decision, ...plan.groups.map((g) => (g === short ? 'short' : g === long ? 'long' : g.name))];
};

describe('parseSelectors', () => {
  it('finds every selector with its matchers, through functions, aggregations, subqueries and offsets', () => {
    const selectors = parseSelectors(
      'sum by (svc) (rate(arcus_commands_total{scrape="short", command=~"get|set"}[5m] offset 1h)) / on() max(up{job!="x"}[1h:1m])',
    );
    assert.deepEqual(
      selectors.map((s) => s.matchers),
      [
        [
          { label: '__name__', op: '=', value: 'arcus_commands_total' },
          { label: 'scrape', op: '=', value: 'short' },
          { label: 'command', op: '=~', value: 'get|set' },
        ],
        [
          { label: '__name__', op: '=', value: 'up' },
          { label: 'job', op: '!=', value: 'x' },
        ],
      ],
    );
  });

  it('reads quoted names and every string literal form', () => {
    const [s] = parseSelectors(`{"metric.with.dots", "odd label"='a\\'b', scrape!~\`lo.*\`}`);
    assert.deepEqual(s!.matchers, [
      { label: '__name__', op: '=', value: 'metric.with.dots' },
      { label: 'odd label', op: '=', value: "a'b" },
      { label: 'scrape', op: '!~', value: 'lo.*' },
    ]);
    assert.equal(unquote('"a\\n\\x41\\u00e9\\101"'), 'a\nAéA');
  });

  it('reports syntax errors with their line and column, as Prometheus does', () => {
    const error = (q: string) => {
      try {
        parseSelectors(q);
      } catch (err) {
        assert.ok(err instanceof PromQLParseError);
        return [err.position, err.message];
      }
      assert.fail(`${q} parsed`);
    };
    assert.deepEqual(error('sum(up'), [6, '1:7: parse error: unexpected end of input']);
    assert.deepEqual(error('up{job="a"'), [10, '1:11: parse error: unexpected end of input']);
    assert.deepEqual(error('up\n  bar'), [5, '2:3: parse error: unexpected "bar"']);
    assert.deepEqual(error('  '), [0, '1:1: parse error: no expression found in input']);
  });

  it('random input: a parse error or selectors, never anything else', () => {
    const random = seededRandom(11);
    const alphabet = 'up{}()[]"\'`=~!,scrape short5m+-*/ sum by rate\n\\';
    for (let i = 0; i < 3000; i++) {
      let q = '';
      const length = Math.floor(random() * 40);
      for (let j = 0; j < length; j++) q += alphabet[Math.floor(random() * alphabet.length)];
      try {
        parseSelectors(q);
      } catch (err) {
        assert.ok(err instanceof PromQLParseError, `${JSON.stringify(q)}: ${String(err)}`);
      }
    }
  });
});

describe('planQuery', () => {
  it('one group when the scrape label picks it, by equality or regex', () => {
    assert.deepEqual(route('up{scrape="short"}'), ['single', 'short']);
    assert.deepEqual(route('rate(x{scrape=~"lo.*"}[5m])'), ['single', 'long']);
    assert.deepEqual(route('x{scrape!="short"}'), ['single', 'long']);
    assert.deepEqual(route('sum(a{scrape="long"}) / sum(b{scrape="long"})'), ['single', 'long']);
  });

  it('several groups when nothing narrows, none when nothing can match', () => {
    assert.deepEqual(route('up'), ['several', 'short', 'long']);
    assert.deepEqual(route('up{scrape=~"short|long"}'), ['several', 'short', 'long']);
    assert.deepEqual(route('up{scrape="medium"}'), ['none']);
    assert.deepEqual(route('up{scrape=""}'), ['none'], 'every series of a filtered group has the label');
  });

  it('a query whose selectors need different groups and combines their series is spanning, with the reason', () => {
    const plan = planQuery('a{scrape="short"} / on(node) b{scrape="long"}', config.groups);
    assert.equal(plan.decision, 'spanning');
    assert.match(
      plan.reason!,
      /combines series that live in different server groups \(group 0 \(scrape=short\) and group 1 \(scrape=long\)\).*\("on\(node\)" at 1:21\)$/,
    );
  });

  it('selectors no group can answer select nothing anywhere: they do not choose groups', () => {
    assert.deepEqual(route('arcus_up{scrape="short"} or foo{scrape="medium"}'), ['single', 'short']);
    assert.deepEqual(route('x{scrape="long"} / on(node) y{scrape="medium"}'), ['single', 'long']);
    assert.deepEqual(route('sum(x) or y{scrape=""}'), ['several', 'short', 'long']);
    // Only unanswerable selectors, but an answer all the same: any store gives it (the first).
    assert.deepEqual(route('count(foo{scrape="medium"}) or vector(0)'), ['single', 'short']);
    assert.deepEqual(route('absent(foo{scrape="medium"})'), ['single', 'short']);
    assert.deepEqual(route('absent_over_time(foo{scrape="medium"}[5m])'), ['single', 'short']);
    assert.deepEqual(route('scalar(x{scrape="bogus"}) + 1'), ['single', 'short']);
    assert.deepEqual(
      route('hour() - x{scrape="bogus"}'),
      ['single', 'short'],
      'a function without arguments answers vector(time())',
    );
    // Only unanswerable selectors and nothing else: empty, without asking a store.
    assert.deepEqual(route('sum(rate(foo{scrape="medium"}[5m])) / on(node) count(x{scrape=""}) > 1'), ['none']);
    assert.deepEqual(route('histogram_quantile(0.9, rate(b{scrape="x"}[5m]))'), ['none']);
  });

  it("a selector more groups can answer than the others' asks all it needs, unless the query combines their series", () => {
    // `or`, and matching on every label (scrape included), keep each group's part exact.
    assert.deepEqual(route('arcus_up or foo{scrape="short"}'), ['several', 'short', 'long']);
    assert.deepEqual(route('arcus_up{scrape="long"} or foo{scrape="short"}'), ['several', 'short', 'long']);
    assert.deepEqual(route('a{scrape="short"} / b{scrape="long"}'), ['several', 'short', 'long']);
    assert.deepEqual(route('x unless y{scrape="long"}'), ['several', 'short', 'long']);
    // Combined across groups: no number from part of the data.
    const plan = planQuery('sum(arcus_up) + on() group_left count(foo{scrape="short"})', config.groups);
    assert.equal(plan.decision, 'spanning');
    assert.deepEqual(plan.groups, []);
    assert.match(plan.reason!, /\("sum" at 1:1\)$/);
    assert.deepEqual(route('absent(up{scrape="short"}) or x'), ['spanning']);
  });

  it('regular expressions are read as the stores read them (RE2, anchored), also where JavaScript reads them otherwise', () => {
    // RE2 syntax JavaScript lacks or reads otherwise: routed exactly.
    for (const pattern of [
      '(?i)SHORT',
      '\\\\Qshort\\\\E',
      'short\\\\z',
      '\\\\x{73}hort',
      '(?P<s>short)',
      'short\\\\s*',
      '\\\\Ashort',
      's[[:lower:]]+',
    ]) {
      assert.deepEqual(route(`x{scrape=~"${pattern}"}`), ['single', 'short'], pattern);
    }
    for (const pattern of ['[[:alpha:]]+', '\\\\pL+', '\\\\p{L}+']) {
      assert.deepEqual(route(`x{scrape=~"${pattern}"}`), ['several', 'short', 'long'], pattern);
    }
    assert.deepEqual(route('x{scrape!~"(?i)SHORT"}'), ['single', 'long'], 'negated too');
    // Anchored: a pattern matching part of a value does not match it.
    assert.deepEqual(route('x{scrape=~"sho"}'), ['none']);
    assert.deepEqual(route('x{scrape=~"(?:lo)ng|\\\\\\\\s"}'), ['single', 'long']);
    assert.deepEqual(route('x{scrape=~"l\\\\w+"}'), ['single', 'long']);
    assert.deepEqual(route('x{scrape!~"s.*"}'), ['single', 'long']);
  });

  it('a regular expression RE2 refuses matches any value: more groups, never fewer, and the stores answer with their error', () => {
    for (const pattern of ['sho\\\\Crt', 'a(?=b)', '(s)\\\\1', 'sh(ort']) {
      assert.deepEqual(route(`x{scrape=~"${pattern}"}`), ['several', 'short', 'long'], pattern);
    }
  });

  it('a query the proxy cannot read for its depth goes to every group, with a warning', () => {
    // Unary minus nests without brackets: bounded by the length only.
    const deep = `${'-'.repeat(9000)}up`;
    const plan = planQuery(deep, config.groups);
    assert.equal(plan.decision, 'several');
    assert.deepEqual(plan.groups, config.groups);
    assert.match(
      plan.warning!,
      /^the proxy could not read the query \(it is nested too deeply for the proxy to read\); it was sent to every server group/,
    );
    assert.equal(planQuery(deep, [short]).warning, undefined, 'one group: exact');
  });

  it('brackets nested deeper than the limit are refused by a scan, before any parse', () => {
    const deep = `${'('.repeat(131_072)}up${')'.repeat(131_072)}`;
    const started = performance.now();
    assert.throws(
      () => parseQuery(deep),
      (err: unknown) =>
        err instanceof PromQLParseError &&
        err.message ===
          `1:1: parse error: brackets nested more than ${MAX_NESTING_DEPTH} deep; the proxy reads at most ${MAX_NESTING_DEPTH} levels`,
    );
    // The scan stops at the limit: microseconds; 50 ms leaves room for a busy machine.
    assert.ok(performance.now() - started < 50, `${performance.now() - started} ms`);
    const deepest = `${'('.repeat(MAX_NESTING_DEPTH - 1)}up{a="((("}${')'.repeat(MAX_NESTING_DEPTH - 1)}`;
    assert.equal(nestingDepth(deepest), MAX_NESTING_DEPTH, 'brackets in strings do not count');
    assert.equal(parseQuery(deepest).selectors.length, 1);
    assert.equal(nestingDepth('up # ((((\n + x'), 0, 'nor in comments');
  });

  it('a query without selectors goes to the first group', () => {
    assert.deepEqual(route('1 + 1'), ['single', 'short']);
    assert.deepEqual(route('time()'), ['single', 'short']);
  });

  it('exclude filters rule out equality to an excluded value', () => {
    const groups = parseQueryProxyConfig('p', {
      promxy: {
        server_groups: [
          { static_configs: [{ targets: ['a:1'] }], label_filter: { static_labels_exclude: { env: ['dev'] } } },
          { static_configs: [{ targets: ['b:1'] }] },
        ],
      },
    }).groups;
    assert.deepEqual(
      planQuery('x{env="dev"}', groups).groups.map((g) => g.index),
      [1],
    );
    assert.deepEqual(
      planQuery('x{env="prod"}', groups).groups.map((g) => g.index),
      [0, 1],
    );
  });
});

describe('what merging several groups would get wrong', () => {
  const problem = (q: string) => combiningProblem(parseQuery(q), config.groups);
  it('aggregations and on/ignoring matches that mix the groups are named with their position', () => {
    assert.match(
      problem('sum(up)')!,
      /^"sum" at 1:1 combines series across the server groups group 0 \(scrape=short\) and group 1 \(scrape=long\)/,
    );
    assert.match(problem('rate(x[5m]) / on(node) group_left y')!, /^"on\(node\) group_left" at 1:15/);
    assert.match(problem('topk(3, x)')!, /"topk"/);
    assert.match(problem('count without (scrape) (up)')!, /"count"/);
    assert.match(problem('x / ignoring(scrape) y')!, /"ignoring\(scrape\)"/);
    assert.match(problem('avg by (service_code) (x)')!, /keep the groups apart with by \(scrape\)/);
  });
  it('operations that keep the groups apart, and plain selections, are fine', () => {
    for (const q of [
      'up',
      'rate(x[5m])',
      'sum by (scrape, node) (x)',
      'max without (node) (x)',
      'x / on(scrape, node) y',
      'x / y',
      'x > 3',
      'histogram_quantile(0.9, rate(b[5m]))',
      'sort_desc(x)',
      'x or y',
    ]) {
      assert.equal(problem(q), undefined, q);
    }
    assert.equal(combiningProblem(parseQuery('sum(up)'), [short]), undefined, 'one group: nothing to mix');
  });
  it('functions over every series at once are named too, whatever the labels', () => {
    assert.match(
      problem('absent(up)')!,
      /^"absent" at 1:1 combines series across the server groups .*; select one group with a scrape matcher$/,
    );
    assert.match(problem('sum by (scrape) (absent_over_time(up[5m]))')!, /^"absent_over_time" at 1:18 /);
    assert.match(problem('x * scalar(y)')!, /^"scalar" at 1:5 /);
    assert.match(
      problem('sort_by_label(x, "node")')!,
      /^"sort_by_label" at 1:1 sorts series, but the server groups .* each sorted their own: the merged series are in group order/,
    );
  });
  it('without a label that tells the groups apart, matching two vectors mixes them too', () => {
    const plain = parseQueryProxyConfig('p', {
      promxy: {
        server_groups: [{ static_configs: [{ targets: ['a:1'] }] }, { static_configs: [{ targets: ['b:1'] }] }],
      },
    }).groups;
    assert.match(combiningProblem(parseQuery('x / y'), plain)!, /^"\/" at 1:3 combines series/);
    assert.match(combiningProblem(parseQuery('x and y'), plain)!, /^"and" at 1:3 /);
    assert.equal(combiningProblem(parseQuery('x / 2 > bool 1'), plain), undefined);
  });
});

describe('the result type of an instant query', () => {
  it('follows the expression', () => {
    const type = (q: string) => parseQuery(q).instantResultType;
    assert.equal(type('up'), 'vector');
    assert.equal(type('(up[5m])'), 'matrix');
    assert.equal(type('rate(x[5m])[1h:1m]'), 'matrix');
    assert.equal(type('1 + 1'), 'scalar', 'scalar operands: a scalar');
    assert.equal(type('-1'), 'scalar');
    assert.equal(type('scalar(up)'), 'scalar');
    assert.equal(type('scalar(x{scrape="bogus"}) + 1'), 'scalar');
    assert.equal(type('(time() - scalar(x)) * -(2 ^ 3)'), 'scalar');
    assert.equal(type('1 + up'), 'vector');
    assert.equal(type('1 > bool vector(1)'), 'vector');
    assert.equal(type('hour()'), 'vector', 'date functions answer vectors');
    assert.equal(type('"text"'), 'string');
    assert.equal(
      type(Array.from({ length: 30_000 }, () => '1').join(' + ')),
      'scalar',
      'a long chain, without recursion',
    );
  });
});

describe('the order of a sorted query', () => {
  it('is known when the whole query is sort() or sort_desc()', () => {
    assert.equal(parseQuery('sort(x)').sortedBy, 'value');
    assert.equal(parseQuery('((sort_desc(rate(x[5m]))))').sortedBy, 'value descending');
    assert.equal(parseQuery('sort(x) + 1').sortedBy, undefined, 'a sort inside an expression orders nothing');
  });
});

describe('long queries', () => {
  it('a flat chain of hundreds of terms parses, as Prometheus parses it', () => {
    const terms = Array.from(
      { length: 400 },
      (_, i) => `arcus_up{scrape="short",node="10.0.${i >> 8}.${i & 255}:11211"}`,
    );
    const parsed = parseQuery(terms.join(' or '));
    assert.equal(parsed.unread, undefined);
    assert.equal(parsed.selectors.length, 400);
    assert.deepEqual(route(terms.join(' or ')), ['single', 'short']);
    assert.throws(
      () => parseQuery(`${terms.join(' or ')} or`),
      /parse error: unexpected end of input/,
      'an error in it is still one',
    );
  });
});

describe('match[] routing', () => {
  it('asks the groups that can hold any of the selectors; every group without match[]', () => {
    const names = (m: string[]) => planMatches(m, config.groups).groups.map((g) => (g === short ? 'short' : 'long'));
    assert.deepEqual(names([]), ['short', 'long']);
    assert.deepEqual(names(['up{scrape="long"}']), ['long']);
    assert.deepEqual(names(['up{scrape="long"}', 'x{scrape="short"}']), ['short', 'long']);
    assert.deepEqual(names(['up{scrape="mid"}']), []);
    assert.equal(planMatches(['up{scrape="mid"}'], config.groups).decision, 'none');
  });
  it('refuses what is not one series selector', () => {
    assert.throws(() => planMatches(['sum(up)'], config.groups), /match\[\] number 1 must be a single series selector/);
    assert.throws(() => planMatches(['up', 'up{'], config.groups), PromQLParseError);
  });
});

describe('a group with labels', () => {
  const labelled = parseQueryProxyConfig('p', {
    promxy: {
      server_groups: [
        { static_configs: [{ targets: ['a:1'] }], labels: { sg: 'a' } },
        { static_configs: [{ targets: ['b:1'] }], labels: { sg: 'b' } },
      ],
    },
  }).groups;
  it('routes on its labels, and the matchers on them are removed from what the store receives', () => {
    const plan = planQuery('sum(rate(x{sg="b", job="j"}[5m])) / y{sg="b"} + {sg="b"}', labelled);
    assert.equal(plan.decision, 'single');
    assert.equal(plan.groups[0]!.index, 1);
    assert.equal(queryForGroup(plan.parsed, plan.groups[0]!), 'sum(rate(x{job="j"}[5m])) / y{} + {__name__=~".+"}');
    assert.equal(
      queryForGroup(parseQuery('x{a="1"}'), short),
      'x{a="1"}',
      'a group without labels gets the query unchanged',
    );
  });
  it('a selector the group cannot answer selects nothing there', () => {
    const [a, b] = labelled as [(typeof labelled)[0], (typeof labelled)[0]];
    const parsed = parseQuery('x{sg="a", job="j"} or {sg!="b"} or rate(y{sg="a"}[5m]) or z');
    assert.equal(
      queryForGroup(parsed, b),
      '{__name__="x", sg="a", job="j", __name__=""} or {sg!="b", __name__=""} or rate({__name__="y", sg="a", __name__=""}[5m]) or z',
    );
    assert.equal(
      queryForGroup(parsed, a),
      'x{job="j"} or {sg!="b"} or rate(y{}[5m]) or z'.replace('{sg!="b"}', '{__name__=~".+"}'),
    );
  });
  it('match[] are given to each group it can answer, written for it', () => {
    const [a, b] = labelled as [(typeof labelled)[0], (typeof labelled)[0]];
    const plan = planMatches(['up{sg="a"}', 'x{job="j"}', '{sg="b", job="k"}'], labelled);
    assert.equal(plan.decision, 'several');
    assert.deepEqual(matchesForGroup(plan, a), ['up{}', 'x{job="j"}']);
    assert.deepEqual(matchesForGroup(plan, b), ['x{job="j"}', '{job="k"}']);
  });
});
