import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, tempDir } from '@cachemon/testkit';
import { startDemo, stopDemo } from '../../src/index.js';
import type { StackPorts } from '../../src/index.js';

interface Finding {
  code: string;
  severity: string;
  component: string;
  instance: string;
  message: string;
}

/**
 * The demo as `npm run demo` starts it (shipped intervals, not shortened), on free ports: a clean
 * stack to `cachemon doctor`, with the demo cluster's deliberately down node reported as a cache
 * node that is down, not as a fault of the stack.
 */
describe('the demo, to cachemon doctor', () => {
  let dir: string;

  before(async () => {
    dir = await tempDir('cachemon-demo-');
    const keys = ['short', 'long', 'ruler', 'router', 'cache', 'coordination', 'host', 'topology', 'proxy'] as const;
    const ports = Object.fromEntries(await Promise.all(keys.map(async (k) => [k, await freePort()]))) as StackPorts;
    const started = await startDemo({ dir, ports, webhookPort: await freePort(), quiet: true, dashboardServer: false });
    assert.ok(started.ok, started.message);
  });

  after(async () => {
    if (dir) await stopDemo(dir, { quiet: true });
  });

  const doctor = (args: readonly string[]) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(
        join(dir, 'install/bin/cachemon'),
        ['doctor', ...args],
        { encoding: 'utf8', timeout: 120_000 },
        (error, stdout, stderr) =>
          resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
      );
    });

  test('exit 0, and the one finding is a notice: the down node, as a cache node that is down', async () => {
    const { down } = JSON.parse(readFileSync(join(dir, 'cluster.json'), 'utf8')) as { down: string[] };
    const result = await doctor(['--json']);
    const report = JSON.parse(result.stdout) as {
      findings: Finding[];
      errors: number;
      warnings: number;
      notices: number;
    };
    const shown = report.findings
      .map((f) => `${f.severity} ${f.code} ${f.component}:${f.instance}: ${f.message}`)
      .join('\n');
    assert.equal(result.status, 0, shown);
    assert.deepEqual([report.errors, report.warnings, report.notices], [0, 0, 1], shown);
    const [node] = report.findings;
    assert.deepEqual(
      [node!.code, node!.severity, node!.component, node!.instance],
      ['CACHEMON_DOCTOR_CACHE_NODE_DOWN', 'notice', 'cache_exporter', 'demo'],
    );
    assert.match(
      node!.message,
      new RegExp(
        `^cache node ${down[0]!.replace(/\./g, '\\.')} of service code demo-b is mapped .* not registered in cache_list`,
      ),
    );

    const text = await doctor([]);
    assert.equal(text.status, 0, text.stdout);
    assert.match(text.stdout, /^NOTICE CACHEMON_DOCTOR_CACHE_NODE_DOWN cache_exporter:demo: /m);
    assert.match(text.stdout, /^doctor: no findings, 1 notice$/m);
  });
});
