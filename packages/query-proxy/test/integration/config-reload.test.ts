import { test } from 'node:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createLoggerOn } from '@cachemon/core';
import { assertConfigReloadExposed, tempDir } from '@cachemon/testkit';
import { loadQueryProxyConfig } from '../../src/config.js';
import { startQueryProxy } from '../../src/server.js';

const groups = (...targets: string[]) =>
  `promxy:\n  server_groups:\n${targets.map((t) => `    - static_configs: [{ targets: ["${t}"] }]\n`).join('')}`;

test('/metrics names promxy.yml and the hash of the content running, replaced on reload, kept when refused', async () => {
  const configFile = join(await tempDir('query-proxy-'), 'promxy.yml');
  writeFileSync(configFile, groups('127.0.0.1:8428'));
  const proxy = await startQueryProxy(loadQueryProxyConfig(configFile), {
    logger: createLoggerOn(new Writable({ write: (_chunk, _encoding, done) => done() }), 'info', {
      name: 'query-proxy',
    }),
    version: 'test',
    listen: '127.0.0.1:0',
    loadConfig: () => loadQueryProxyConfig(configFile),
  });
  try {
    await assertConfigReloadExposed({
      configFile,
      scrape: async () => (await fetch(`${proxy.url}/metrics`)).text(),
      reload: async () => (await fetch(`${proxy.url}/-/reload`, { method: 'POST' })).status,
      changed: groups('127.0.0.1:8428', '127.0.0.1:8429'),
      invalid: `${groups('127.0.0.1:8428')}      timeout: soon\n`,
    });
  } finally {
    await proxy.close();
  }
});
