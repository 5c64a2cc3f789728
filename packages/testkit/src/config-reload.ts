/** The check every daemon with a config file passes: its /metrics says which file content it runs on. */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { eventually, parseExposition, select, valueOf } from './assertions.js';

export interface ConfigReloadSubject {
  /** The file the daemon was started on. */
  readonly configFile: string;
  /** GET /metrics: the exposition text. */
  scrape(): Promise<string>;
  /** POSTs to the reload endpoint: the HTTP status. */
  reload(): Promise<number>;
  /** A valid config, different from the one the daemon started on. */
  readonly changed: string;
  /** Content the daemon must refuse. */
  readonly invalid: string;
}

interface ConfigLoad {
  readonly path: string;
  readonly sha256: string;
  readonly successful: number | undefined;
  readonly timestamp: number;
}

async function configLoad(subject: ConfigReloadSubject): Promise<ConfigLoad> {
  const samples = parseExposition(await subject.scrape());
  const info = select(samples, 'cachemon_config_info');
  assert.equal(info.length, 1, `one cachemon_config_info series: ${JSON.stringify(info)}`);
  assert.equal(info[0]!.value, 1);
  const timestamp = valueOf(samples, 'cachemon_config_last_reload_success_timestamp_seconds');
  assert.ok(timestamp !== undefined && timestamp > 0, `a load timestamp: ${timestamp}`);
  return {
    path: info[0]!.labels['path']!,
    sha256: info[0]!.labels['sha256']!,
    successful: valueOf(samples, 'cachemon_config_last_reload_successful'),
    timestamp,
  };
}

const sha256Of = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

/**
 * Started file, then a valid edit reloaded (new hash, newer load time), then an invalid one
 * (refused: the hash stays that of the file still running, and the failure shows).
 */
export async function assertConfigReloadExposed(subject: ConfigReloadSubject): Promise<void> {
  const started = await configLoad(subject);
  assert.equal(started.path, resolve(subject.configFile));
  assert.equal(started.sha256, sha256Of(readFileSync(subject.configFile)));
  assert.equal(started.successful, 1);

  // The clock must have moved past the first load for "newer" to be observable.
  await eventually(() => assert.ok(Date.now() > started.timestamp * 1000), { intervalMs: 5 });
  writeFileSync(subject.configFile, subject.changed);
  assert.equal(await subject.reload(), 200);
  const reloaded = await configLoad(subject);
  assert.equal(reloaded.path, started.path);
  assert.equal(reloaded.sha256, sha256Of(subject.changed));
  assert.notEqual(reloaded.sha256, started.sha256);
  assert.ok(reloaded.timestamp > started.timestamp, `${reloaded.timestamp} after ${started.timestamp}`);
  assert.equal(reloaded.successful, 1);

  writeFileSync(subject.configFile, subject.invalid);
  assert.equal(await subject.reload(), 400);
  const refused = await configLoad(subject);
  assert.equal(refused.sha256, reloaded.sha256, 'the hash of the config still running');
  assert.equal(refused.timestamp, reloaded.timestamp);
  assert.equal(refused.successful, 0);
}
