import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { seededRandom } from '@cachemon/testkit';
import { combiningProblem, parseQuery, parseQueryProxyConfig, parseSelectors, planMatches, planQuery, PromQLParseError, queryForGroup, unquote } from '../../src/index.js';

const config = parseQueryProxyConfig('promxy.yml', {
  promxy: {
    server_groups: [
      { static_configs: [{ targets: ['127.0.0.1:8428'] }], label_filter: { static_labels_include: { scrape: ['short'] } } },
      { static_configs: [{ targets: ['127.0.0.1:8429'] }], label_filter: { static_labels_include: { scrape: ['long'] } } },
    ],
  },
});
const [short, long] = config.groups as [typeof config.groups[0], typeof config.groups[0]];
const route = (q: string) => {
  const plan = planQuery(q, config.groups);
  return [plan.decision, ...plan.groups.map((g) => (g === short ? 'short' : g === long ? 'long' : g.name))];
};

describe('parseSelectors', () => {
  it('finds every selector with its matchers, through functions, aggregations, subqueries and offsets', () => {
    const selectors = parseSelectors('sum by (svc) (rate(arcus_commands_total{scrape="short", command=~"get|set"}[5m] offset 1h)) / on() max(up{job!="x"}[1h:1m])');
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

  it('a query whose selectors need different groups is spanning, with the reason', () => {
    const plan = planQuery('a{scrape="short"} / b{scrape="long"}', config.groups);
    assert.equal(plan.decision, 'spanning');
    assert.match(plan.reason!, /combines series that live in different server groups \(group 0 \(scrape=short\) and group 1 \(scrape=long\)\)/);
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
    assert.deepEqual(planQuery('x{env="dev"}', groups).groups.map((g) => g.index), [1]);
    assert.deepEqual(planQuery('x{env="prod"}', groups).groups.map((g) => g.index), [0, 1]);
  });
});

describe('what merging several groups would get wrong', () => {
  const problem = (q: string) => combiningProblem(parseQuery(q), config.groups);
  it('aggregations and on/ignoring matches that mix the groups are named with their position', () => {
    assert.match(problem('sum(up)')!, /^"sum" at 1:1 combines series across the server groups group 0 \(scrape=short\) and group 1 \(scrape=long\)/);
    assert.match(problem('rate(x[5m]) / on(node) group_left y')!, /^"on\(node\) group_left" at 1:15/);
    assert.match(problem('topk(3, x)')!, /"topk"/);
    assert.match(problem('count without (scrape) (up)')!, /"count"/);
    assert.match(problem('x / ignoring(scrape) y')!, /"ignoring\(scrape\)"/);
    assert.match(problem('avg by (service_code) (x)')!, /keep the groups apart with by \(scrape\)/);
  });
  it('operations that keep the groups apart, and plain selections, are fine', () => {
    for (const q of ['up', 'rate(x[5m])', 'sum by (scrape, node) (x)', 'max without (node) (x)', 'x / on(scrape, node) y', 'x / y', 'x > 3', 'histogram_quantile(0.9, rate(b[5m]))']) {
      assert.equal(problem(q), undefined, q);
    }
    assert.equal(combiningProblem(parseQuery('sum(up)'), [short]), undefined, 'one group: nothing to mix');
  });
});

describe('the result type of an instant query', () => {
  it('follows the expression', () => {
    const type = (q: string) => parseQuery(q).instantResultType;
    assert.equal(type('up'), 'vector');
    assert.equal(type('(up[5m])'), 'matrix');
    assert.equal(type('rate(x[5m])[1h:1m]'), 'matrix');
    assert.equal(type('1 + 1'), 'vector', 'binary expressions are not inspected: vector');
    assert.equal(type('-1'), 'scalar');
    assert.equal(type('scalar(up)'), 'scalar');
    assert.equal(type('"text"'), 'string');
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
    promxy: { server_groups: [{ static_configs: [{ targets: ['a:1'] }], labels: { sg: 'a' } }, { static_configs: [{ targets: ['b:1'] }], labels: { sg: 'b' } }] },
  }).groups;
  it('routes on its labels, and the matchers on them are removed from what the store receives', () => {
    const plan = planQuery('sum(rate(x{sg="b", job="j"}[5m])) / y{sg="b"} + {sg="b"}', labelled);
    assert.equal(plan.decision, 'single');
    assert.equal(plan.groups[0]!.index, 1);
    assert.equal(queryForGroup(plan.parsed, plan.groups[0]!), 'sum(rate(x{job="j"}[5m])) / y{} + {__name__=~".+"}');
    assert.equal(queryForGroup(parseQuery('x{a="1"}'), short), 'x{a="1"}', 'a group without labels gets the query unchanged');
  });
});
