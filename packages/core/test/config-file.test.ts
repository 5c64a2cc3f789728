import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, describe, it } from 'node:test';
import { z } from 'zod';
import { Errors, isCachemonError, loadJsonConfig, logBlockSchema, readConfigFile } from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'cachemon-config-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const schema = z.strictObject({
  listen: z.string(),
  ensembleByName: z.record(z.string(), z.array(z.string())),
  log: logBlockSchema.optional(),
});

function write(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

describe('loadJsonConfig', () => {
  it('reads a commented config with trailing commas', () => {
    const file = write(
      'ok.json',
      `{
  // Address the store scrapes.
  "listen": "0.0.0.0:8084",
  /* one ensemble per exporter */
  "ensembleByName": { "zk1": ["10.0.0.1:2181", "10.0.0.2:2181",], },
  "log": { "level": "info", "filename": "/var/log/cachemon/exporter.log" },
}
`,
    );
    const config = loadJsonConfig(file, schema);
    assert.deepEqual(config.ensembleByName, { zk1: ['10.0.0.1:2181', '10.0.0.2:2181'] });
    assert.equal(config.log?.level, 'info');
    assert.equal(config.log?.maxSize, 20);
  });

  it('names the file and the reason when it cannot be read', () => {
    const file = join(dir, 'missing.json');
    assert.throws(
      () => loadJsonConfig(file, schema),
      (err: unknown) =>
        isCachemonError(err, Errors.CONFIG_UNREADABLE) &&
        err.message === `${file}: cannot read config file: ENOENT: no such file or directory`,
    );
    assert.throws(
      () => loadJsonConfig(dir, schema),
      (err: unknown) => isCachemonError(err, Errors.CONFIG_UNREADABLE) && /EISDIR/.test(err.message),
    );
  });

  it('points at the line and column of a syntax error', () => {
    const file = write('syntax.json', '{\n  "listen": ":8084"\n  "ensembleByName": {}\n}\n');
    assert.throws(
      () => loadJsonConfig(file, schema),
      (err: unknown) =>
        isCachemonError(err, Errors.CONFIG_INVALID) && err.message === `${file}:3:3: expected "," between entries`,
    );
  });

  it('lists every schema problem with the file, the line and column of its key, and the key path', () => {
    const file = write(
      'schema.json',
      '{ "listen": 8084, "ensembleByName": { "zk1": ["a:1", 2] }, "log": { "maxSize": -1, "compres": true } }',
    );
    assert.throws(
      () => loadJsonConfig(file, schema),
      (err: unknown) => {
        assert.ok(isCachemonError(err, Errors.CONFIG_INVALID));
        assert.deepEqual(err.message.split('\n').sort(), [
          `${file}:1:3: listen: Invalid input: expected string, received number`,
          `${file}:1:54: ensembleByName.zk1[1]: Invalid input: expected string, received number`,
          `${file}:1:69: log.maxSize: Too small: expected number to be >0`,
          `${file}:1:84: log.compres: unknown key`,
        ]);
        return true;
      },
    );
  });

  it('names the file it loaded by absolute path and the SHA-256 of the bytes it parsed', () => {
    // A non-ASCII comment: the hash is of the bytes, not of the decoded text.
    const bytes = Buffer.from('{ "listen": ":1", /* é */ "ensembleByName": {} }\n', 'utf8');
    const file = join(dir, 'hashed.json');
    writeFileSync(file, bytes);
    const config = loadJsonConfig(relative(process.cwd(), file), z.looseObject({}));
    assert.deepEqual(config.file, { path: file, sha256: createHash('sha256').update(bytes).digest('hex') });
    assert.equal(readConfigFile(file).text, bytes.toString('utf8'));
  });
});
