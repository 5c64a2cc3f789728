import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, tempDir } from '@cachemon/testkit';

const repoRoot = new URL('../../../../../', import.meta.url).pathname;
export const CACHE_EXPORTER_BIN = join(repoRoot, 'bin', 'cache-exporter');

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** Parses exposition text (enough for assertions on our own output). */
export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    const body = match[2] ?? '';
    const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
    for (let m = re.exec(body); m; m = re.exec(body)) {
      labels[m[1]!] = m[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    }
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

export function select(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** The single value of a series, or undefined when absent. */
export function valueOf(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = select(samples, name, labels);
  if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${found.length} series`);
  return found[0]?.value;
}

/** Retries an assertion until it passes or the time is up (then throws its last error). */
export async function eventually<T>(check: () => Promise<T> | T, options: { timeoutMs?: number; intervalMs?: number } = {}): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, options.intervalMs ?? 200));
    }
  }
}

export interface ScrapeResult {
  readonly status: number;
  readonly text: string;
  readonly samples: Sample[];
  readonly ms: number;
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
    writeFileSync(configFile, typeof value === 'string' ? value : JSON.stringify({ listen: `127.0.0.1:${port}`, ...value }, null, 2));
  write(config);
  const out = openSync(outputFile, 'a');
  const child = spawn(process.execPath, [CACHE_EXPORTER_BIN, `-config-file=${configFile}`, ...(options.flags ?? ['-qos-interval=500ms'])], {
    stdio: ['ignore', out, out],
    cwd: dir,
  });
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
      return { status: response.status, text, ms, samples: response.ok ? parseExposition(text) : [] };
    },
    writeConfig: write,
    output: () => readFileSync(outputFile, 'utf8'),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
  if (options.waitReady ?? true) {
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`exporter exited ${child.exitCode}: ${exporter.output()}`);
        const response = await fetch(`${url}/-/ready`);
        if (response.status !== 200) throw new Error(`not ready: ${response.status}`);
      },
      { timeoutMs: 20_000, intervalMs: 100 },
    ).catch((err: unknown) => {
      child.kill('SIGKILL');
      throw err;
    });
  }
  return exporter;
}
