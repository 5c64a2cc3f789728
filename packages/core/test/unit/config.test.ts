import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import {
  durationSchema,
  Errors,
  formatKeyPath,
  isCachemonError,
  jsonLocator,
  logBlockSchema,
  parseJsonWithComments,
  validateConfig,
  yamlLocator,
  type CachemonError,
} from '../../src/index.js';
import { LineCounter, parseDocument } from 'yaml';

const schema = z.strictObject({
  listen: z.string(),
  ensembleByName: z.record(z.string(), z.array(z.string())),
  timeout: durationSchema.optional(),
  log: logBlockSchema.optional(),
});

function configError(fn: () => unknown): CachemonError {
  try {
    fn();
  } catch (err) {
    assert.ok(isCachemonError(err, Errors.CONFIG_INVALID), String(err));
    return err;
  }
  assert.fail('expected a CONFIG_INVALID error');
}

describe('formatKeyPath', () => {
  const table: Array<[PropertyKey[], string]> = [
    [[], '(root)'],
    [['log', 'maxSize'], 'log.maxSize'],
    [['ensembleByName', 'zk1', 0], 'ensembleByName.zk1[0]'],
    [[0, 'a'], '[0].a'],
    [['headers', 'a.b'], 'headers["a.b"]'],
    [['serviceCodesToCollectPrefixes', 'test-sc'], 'serviceCodesToCollectPrefixes.test-sc'],
    [['x', ''], 'x[""]'],
  ];
  for (const [path, text] of table) {
    it(`writes ${JSON.stringify(path)} as ${text}`, () => assert.equal(formatKeyPath(path), text));
  }
});

describe('parseJsonWithComments', () => {
  it('accepts line and block comments and trailing commas', () => {
    const text = '{\n  // where to listen\n  "listen": ":8084", /* block */\n  "list": [1, 2,],\n}\n';
    assert.deepEqual(parseJsonWithComments('c.json', text), { listen: ':8084', list: [1, 2] });
  });

  it('reports a syntax error as file:line:col', () => {
    const err = configError(() => parseJsonWithComments('c.json', '{\n  "a": 1\n  "b": 2\n}'));
    assert.equal(err.message, 'c.json:3:3: expected "," between entries');
  });

  it('reports an empty file', () => {
    const err = configError(() => parseJsonWithComments('c.json', '  \n'));
    assert.match(err.message, /^c\.json:1:1: .*empty/);
  });
});

describe('validateConfig', () => {
  it('returns the parsed value with defaults filled in', () => {
    const config = validateConfig(
      'c.json',
      { listen: ':1', ensembleByName: { zk: ['a:1'] }, timeout: '5s', log: {} },
      schema,
    );
    assert.equal(config.timeout, 5000);
    assert.equal(config.log?.level, 'warn');
  });

  it('names every problem with file, key path and reason, one per line', () => {
    const raw = {
      ensembleByName: { zk1: [42] },
      timeout: '5parsecs',
      log: { maxSize: 0, levle: 'info' },
      extra: true,
    };
    const err = configError(() => validateConfig('/etc/cachemon.json', raw, schema));
    const lines = err.message.split('\n');
    assert.deepEqual(
      lines.sort(),
      [
        '/etc/cachemon.json: extra: unknown key',
        '/etc/cachemon.json: ensembleByName.zk1[0]: Invalid input: expected string, received number',
        '/etc/cachemon.json: listen: missing (expected string)',
        '/etc/cachemon.json: log.levle: unknown key',
        '/etc/cachemon.json: log.maxSize: Too small: expected number to be >0',
        '/etc/cachemon.json: timeout: invalid duration "5parsecs": unknown unit "parsecs" (units: y, w, d, h, m, s, ms)',
      ].sort(),
    );
    const issues = err.details?.['issues'] as Array<{ path: string; message: string }>;
    assert.equal(issues.length, 6);
    assert.ok(issues.some((i) => i.path === 'log.levle' && i.message === 'unknown key'));
  });

  it('reports a wrong top-level type against (root)', () => {
    const err = configError(() => validateConfig('c.json', [1, 2], schema));
    assert.match(err.message, /^c\.json: \(root\): /);
  });

  it('raises the error definition it is given', () => {
    assert.throws(
      () => validateConfig('web.yml', { nope: 1 }, z.strictObject({}), { error: Errors.WEB_CONFIG_INVALID }),
      (err: unknown) => isCachemonError(err, Errors.WEB_CONFIG_INVALID) && err.message === 'web.yml: nope: unknown key',
    );
  });

  it('puts the line and column of each key after the file, given the text (JSON and YAML)', () => {
    const json = `{
  // where it listens
  "listen": 9151,
  "ensembleByName": {
    "zk1": ["a:1", 42]
  },
  "extra": true
}`;
    const err = configError(() =>
      validateConfig('c.json', parseJsonWithComments('c.json', json), schema, { locate: jsonLocator(json) }),
    );
    assert.deepEqual(
      err.message.split('\n').sort(),
      [
        'c.json:3:3: listen: Invalid input: expected string, received number',
        'c.json:5:20: ensembleByName.zk1[1]: Invalid input: expected string, received number',
        'c.json:7:3: extra: unknown key',
      ].sort(),
    );
    const issues = err.details?.['issues'] as Array<{ path: string; line?: number; column?: number }>;
    assert.ok(issues.some((i) => i.path === 'extra' && i.line === 7 && i.column === 3));

    // A missing key points at the object that lacks it.
    const yaml = 'ensembleByName:\n  zk1:\n    - a:1\n    - [b]\n';
    const lineCounter = new LineCounter();
    const document = parseDocument(yaml, { lineCounter });
    const yamlErr = configError(() =>
      validateConfig('c.yml', document.toJS(), schema, { locate: yamlLocator(document, lineCounter) }),
    );
    assert.deepEqual(
      yamlErr.message.split('\n').sort(),
      [
        'c.yml:1:1: listen: missing (expected string)',
        'c.yml:4:7: ensembleByName.zk1[1]: Invalid input: expected string, received array',
      ].sort(),
    );
  });
});
