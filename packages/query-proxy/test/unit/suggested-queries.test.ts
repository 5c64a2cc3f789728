import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { loadQueryProxyConfig } from '../../src/config.js';
import { combiningProblem, parseQuery, planQuery } from '../../src/planner.js';

const root = new URL('../../../../../', import.meta.url);
const shipped = loadQueryProxyConfig(new URL('stack/query_proxy/conf/promxy.yml', root).pathname);
/** What a newcomer sees first: the plan and the warning the shipped promxy.yml gives a query. */
const outcome = (query: string) => {
  const plan = planQuery(query, shipped.groups);
  return { decision: plan.decision, warning: combiningProblem(parseQuery(query), plan.groups) };
};

test("the README's and the UI's suggested queries are answered right, without a warning", () => {
  const readme = readFileSync(new URL('README.md', root), 'utf8');
  const suggested = [...readme.matchAll(/--data-urlencode 'query=([^']+)'/g)].map((m) => m[1]!);
  const ui = readFileSync(new URL('packages/query-proxy/ui/index.html', root), 'utf8');
  suggested.push(/placeholder='([^']+)'/.exec(ui)![1]!);
  assert.ok(suggested.length >= 3, suggested.join(', '));
  for (const query of suggested) {
    const { decision, warning } = outcome(query);
    assert.equal(warning, undefined, query);
    assert.notEqual(decision, 'spanning', query);
    assert.notEqual(decision, 'none', query);
  }
  // The first one reads one store; the aggregated one reads both and keeps them apart.
  assert.equal(outcome(suggested[0]!).decision, 'single');
  assert.ok(suggested.some((q) => outcome(q).decision === 'several'));
});

test('an aggregation over both stores is warned about: each adds up its own copy of the series', () => {
  // The long-term store holds downsampled copies (scrape="long") of the same series.
  assert.match(outcome('sum(arcus_up)').warning ?? '', /"sum" at 1:1 combines series .* by \(scrape\)/);
  assert.match(outcome('sum by (ensemble) (arcus_up)').warning ?? '', /may be wrong/);
  assert.equal(outcome('sum by (scrape, ensemble) (arcus_up)').warning, undefined);
  assert.equal(outcome('sum by (ensemble) (arcus_up{scrape="short"})').decision, 'single');
});
