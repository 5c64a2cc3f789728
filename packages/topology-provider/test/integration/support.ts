import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createLoggerOn } from '@cachemon/core';
import type { WebConfig } from '@cachemon/core';
import type { Resolver } from '@cachemon/arcus';
import { freePort, tempDir } from '@cachemon/testkit';
import { loadTopologyProviderConfig, startProviderServer } from '../../src/index.js';
import type { ProviderServer } from '../../src/index.js';

export interface Harness {
  readonly server: ProviderServer;
  readonly url: string;
  readonly configFile: string;
  /** Log lines written so far, parsed. */
  logs(): Array<Record<string, unknown>>;
  writeConfig(config: Record<string, unknown> | string): void;
  post(
    path: string,
    body: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: unknown; headers: Headers }>;
  /** POST /variable the way the JSON datasource sends it; the answer's values. */
  variable(payload: unknown, range?: { from: number; to: number }): Promise<string[]>;
  close(): Promise<void>;
}

/** The plugin's time range: ISO strings with the raw expression beside them. */
export function pluginRange(from: number, to: number): Record<string, unknown> {
  return { from: new Date(from).toISOString(), to: new Date(to).toISOString(), raw: { from: 'now-6h', to: 'now' } };
}

/** A provider in this process, on a config file in a temp dir, with an injected resolver and clock. */
export async function startHarness(
  config: Record<string, unknown>,
  options: {
    resolver?: Resolver;
    now?: () => number;
    resolveIntervalMs?: number;
    /** Default 4 s. */
    zkSessionTimeoutMs?: number;
    webConfig?: WebConfig;
    webConfigFile?: string;
  } = {},
): Promise<Harness> {
  const dir = await tempDir('topology-provider-');
  const configFile = join(dir, 'config.json');
  const port = await freePort();
  const write = (value: Record<string, unknown> | string) =>
    writeFileSync(
      configFile,
      typeof value === 'string' ? value : JSON.stringify({ listen: `127.0.0.1:${port}`, ...value }, null, 2),
    );
  write(config);
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((l) => l !== ''),
      );
      done();
    },
  });
  const logger = createLoggerOn(stream, 'info', { name: 'topology-provider' });
  const server = await startProviderServer(loadTopologyProviderConfig(configFile), {
    logger,
    version: 'test',
    loadConfig: () => loadTopologyProviderConfig(configFile),
    debounceMs: 20,
    readyTimeoutMs: 100,
    zkSessionTimeoutMs: 4000,
    ...options,
  });
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(server.url + path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: kept as text
    }
    return { status: response.status, body: parsed, headers: response.headers };
  };
  return {
    server,
    url: server.url,
    configFile,
    logs: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
    writeConfig: write,
    post,
    async variable(payload, range) {
      const { status, body } = await post('/variable', {
        payload,
        ...(range ? { range: pluginRange(range.from, range.to) } : {}),
      });
      if (status !== 200) throw new Error(`/variable ${JSON.stringify(payload)}: ${status} ${JSON.stringify(body)}`);
      return (body as Array<{ __value: string }>).map((v) => v.__value);
    },
    close: () => server.close(),
  };
}

/** A resolver answering from a table, like a hosts file; other names fail like an unknown host. */
export function tableResolver(table: Record<string, string[]>): Resolver & { lookups: string[] } {
  const lookups: string[] = [];
  const resolve = async (hostname: string) => {
    lookups.push(hostname);
    const found = table[hostname];
    if (found === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return found;
  };
  return Object.assign(resolve, { lookups });
}
