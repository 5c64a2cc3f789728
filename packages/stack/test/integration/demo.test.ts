import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, parseExposition, tempDir } from '@cachemon/testkit';
import { freeStackPorts, startDemo, stopDemo } from '../../src/index.js';
import type { DemoStarted, StackPorts } from '../../src/index.js';

interface Finding {
  code: string;
  severity: string;
  component: string;
  instance: string;
  message: string;
}

/** The Debian package a system program of the stack comes from, when the tree has none of its own. */
function debianPackage(tree: string, program: string, system: string): string | undefined {
  if (existsSync(join(tree, 'bin', program))) return undefined;
  const path = spawnSync('bash', ['-c', `command -v ${system}`], { encoding: 'utf8' }).stdout.trim();
  if (path === '') return undefined;
  const owner = spawnSync('dpkg-query', ['-S', path], { encoding: 'utf8' });
  return owner.status === 0 ? owner.stdout.split(':')[0] : undefined;
}

/**
 * The demo as `npm run demo` starts it (shipped intervals, not shortened), on free ports: a clean
 * stack to `cachemon doctor`, with the demo cluster's deliberately down node reported as a cache
 * node that is down, not as a fault of the stack.
 */
describe('the demo, to cachemon doctor', () => {
  let dir: string;
  let started: DemoStarted;
  let ports: StackPorts;

  before(async () => {
    dir = await tempDir('cachemon-demo-');
    ports = await freeStackPorts();
    started = await startDemo({ dir, ports, webhookPort: await freePort(), quiet: true, dashboardServer: false });
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
        `^cache node ${down[0]!.replace(/\./g, '\\.')} \\(localhost\\) of service code demo-b is mapped .* not registered in cache_list`,
      ),
    );

    const text = await doctor([]);
    assert.equal(text.status, 0, text.stdout);
    assert.match(text.stdout, /^NOTICE CACHEMON_DOCTOR_CACHE_NODE_DOWN cache_exporter:demo: /m);
    assert.match(text.stdout, /^doctor: no findings, 1 notice$/m);
  });

  test('what it prints: absolute paths, the mail folder, and the UIs Debian leaves out only when Debian builds run', async () => {
    const tree = join(dir, 'install');
    const { message } = started;
    assert.ok(started.mail, message);
    assert.match(message, new RegExp(`^ {2}mails received +${started.mail.dir}/ +\\(\\d+ so far`, 'm'));
    assert.equal(started.mail.dir, join(dir, 'mail'));
    assert.match(message, new RegExp(`run ${join(tree, 'dashboard_server/install.sh')} where it can`));

    const vm = debianPackage(tree, 'victoria-metrics', 'victoria-metrics');
    const vmalert = debianPackage(tree, 'vmalert', 'vmalert');
    const am = debianPackage(tree, 'alertmanager', 'prometheus-alertmanager');
    const lines = (component: string) =>
      message.split('\n').filter((l) => l.endsWith(` ${join(tree, component, 'download.sh')}`));
    assert.equal(lines('short_term_store').length, vm === undefined ? 0 : 1, message);
    assert.equal(lines('rule_evaluator').length, vmalert === undefined ? 0 : 1, message);
    assert.equal(lines('alert_router').length, am === undefined ? 0 : 1, message);
    assert.equal(
      message.includes("Debian's builds leave out"),
      [vm, vmalert, am].some((p) => p !== undefined),
    );
    for (const line of [...lines('short_term_store'), ...lines('rule_evaluator'), ...lines('alert_router')])
      assert.match(line, new RegExp(`INSTALL_DIR=${tree} `));
    // What the lines claim holds for the programs that run: no vmui, no web app.
    const vmui = await fetch(`http://127.0.0.1:${ports.short}/vmui/`);
    assert.equal(vmui.status === 404, vm !== undefined, `vmui answered ${vmui.status}`);
    assert.equal(message.includes('(vmui: /vmui)'), vm === undefined);
    const router = await (await fetch(`http://127.0.0.1:${ports.router}/`)).text();
    assert.equal(/does not include a web\s+application/.test(router), am !== undefined);
    const styles = await fetch(`http://127.0.0.1:${ports.ruler}/vmalert/static/css/bootstrap.min.css`);
    assert.equal(styles.status === 404, vmalert !== undefined, `vmalert's styles answered ${styles.status}`);
  });

  test("promtool check metrics finds nothing on every cachemon daemon's live output", async () => {
    const endpoints: ReadonlyArray<readonly [string, number, string]> = [
      ['cache exporter', ports.cache, '/metrics'],
      ['cache exporter', ports.cache, '/metrics/prefixes'],
      ['coordination exporter', ports.coordination, '/metrics'],
      ['topology provider', ports.topology, '/metrics'],
      ['query proxy', ports.proxy, '/metrics'],
    ];
    for (const [daemon, port, path] of endpoints) {
      const body = await (await fetch(`http://127.0.0.1:${port}${path}`)).text();
      assert.ok(parseExposition(body).length > 0, `${daemon} ${path} served no samples`);
      const lint = spawnSync('promtool', ['check', 'metrics'], { input: body, encoding: 'utf8' });
      assert.deepEqual(
        { status: lint.status, output: `${lint.stdout}${lint.stderr}` },
        { status: 0, output: '' },
        `${daemon} ${path}`,
      );
    }
  });
});
