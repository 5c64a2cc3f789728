import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after } from 'node:test';
import { eventually, freePort, parseExposition, tempDir } from '@cachemon/testkit';
import type { Sample } from '@cachemon/testkit';

export { eventually, parseExposition, select, valueOf } from '@cachemon/testkit';
export type { Sample } from '@cachemon/testkit';

const repoRoot = new URL('../../../../../', import.meta.url).pathname;
export const CACHE_EXPORTER_BIN = join(repoRoot, 'bin', 'cache-exporter');

export interface ScrapeResult {
  readonly status: number;
  readonly text: string;
  readonly samples: Sample[];
  readonly ms: number;
  /** Content-Encoding of the response (fetch asks for gzip unless told otherwise, and inflates). */
  readonly encoding: string | null;
}

export interface RunningExporter {
  readonly url: string;
  readonly dir: string;
  readonly configFile: string;
  readonly outputFile: string;
  readonly process: ChildProcess;
  scrape(path?: string, headers?: Record<string, string>): Promise<ScrapeResult>;
  writeConfig(config: object | string): void;
  output(): string;
  /** SIGTERM, resolves with the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Exporters not stopped yet. A running child holds the test file's process open, so one that a
 * failed test never stopped would keep the file from ending until its timeout: the file's last
 * hook stops them.
 */
const running = new Set<RunningExporter>();
after(async () => {
  await Promise.all([...running].map((exporter) => exporter.stop()));
});

export async function startExporter(
  config: Record<string, unknown>,
  options: { flags?: string[]; waitReady?: boolean } = {},
): Promise<RunningExporter> {
  const dir = await tempDir('cache-exporter-');
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const configFile = join(dir, 'exporter.json');
  const outputFile = join(dir, 'output.log');
  const write = (value: object | string) =>
    writeFileSync(
      configFile,
      typeof value === 'string' ? value : JSON.stringify({ listen: `127.0.0.1:${port}`, ...value }, null, 2),
    );
  write(config);
  const out = openSync(outputFile, 'a');
  const child = spawn(
    process.execPath,
    [CACHE_EXPORTER_BIN, `-config-file=${configFile}`, ...(options.flags ?? ['-qos-interval=500ms'])],
    {
      stdio: ['ignore', out, out],
      cwd: dir,
    },
  );
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  process.once('exit', () => child.kill('SIGKILL'));

  const exporter: RunningExporter = {
    url,
    dir,
    configFile,
    outputFile,
    process: child,
    async scrape(path = '/metrics', headers = {}) {
      const started = performance.now();
      const response = await fetch(url + path, { headers });
      const text = await response.text();
      const ms = performance.now() - started;
      return {
        status: response.status,
        text,
        ms,
        samples: response.ok ? parseExposition(text) : [],
        encoding: response.headers.get('content-encoding'),
      };
    },
    writeConfig: write,
    output: () => readFileSync(outputFile, 'utf8'),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const code = await exited;
      running.delete(exporter);
      return code;
    },
  };
  running.add(exporter);
  if (options.waitReady ?? true) {
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`exporter exited ${child.exitCode}: ${exporter.output()}`);
        const response = await fetch(`${url}/-/ready`);
        if (response.status !== 200) throw new Error(`not ready: ${response.status}`);
      },
      { intervalMs: 100 },
    ).catch((err: unknown) => {
      child.kill('SIGKILL');
      throw err;
    });
  }
  return exporter;
}
