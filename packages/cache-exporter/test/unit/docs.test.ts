import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { metricsReference } from '../../src/docs.js';
import { allFamilies } from '../../src/index.js';

test('docs/metrics.md is generated from the current catalogue (npm run docs:metrics)', () => {
  const committed = readFileSync(new URL('../../../../../docs/metrics.md', import.meta.url), 'utf8');
  assert.equal(committed, metricsReference(), 'docs/metrics.md is stale: run `npm run docs:metrics`');
});

test('the catalogue has unique, well-formed family names with help text', () => {
  const families = allFamilies();
  const names = families.map((f) => f.name);
  assert.equal(new Set(names).size, names.length);
  for (const family of families) {
    assert.match(family.name, /^arcus_[a-z0-9_]+$/);
    assert.ok(family.help.length > 10, family.name);
    if (family.type === 'counter') assert.match(family.name, /_total$/, `${family.name} is a counter`);
  }
});
