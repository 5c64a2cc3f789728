/**
 * The demo as functions: a demo ARCUS cluster (demo-cluster.js, in the background) and the whole
 * stack installed into <dir>/install and started by its own scripts. `npm run demo` uses the
 * shipped ports; tests use free ones and shortened intervals.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { addEnsembleToTopologyProvider, configureTree, SHIPPED_PORTS, startOrder } from './configure.js';
import type { StackPorts } from './configure.js';
import { REPO_ROOT, STACK_DIR } from './index.js';

export const DEMO_ENSEMBLE = 'demo';
export const DEMO_WEBHOOK_PORT = 9095;

export interface DemoOptions {
  /** Holds install/ (the tree), cluster.json, alerts.log, mail/ and the cluster's logs. */
  readonly dir: string;
  readonly ports?: StackPorts;
  readonly webhookPort?: number;
  /** Minutes become seconds (tests). */
  readonly fast?: boolean;
  /** Scripts' output kept out of the terminal (returned on failure instead). */
  readonly quiet?: boolean;
  /** Whether the install tries to download the dashboard server (default true; tests: false). */
  readonly dashboardServer?: boolean;
}

export interface DemoStarted {
  readonly ok: boolean;
  /** What went wrong, or the URL summary. */
  readonly message: string;
  readonly zookeeper?: string;
  /** The demo's mail server (host:port) and the folder its mails are kept in. */
  readonly mail?: { readonly address: string; readonly dir: string };
}

/** What the demo cluster writes to <dir>/cluster.json once it is ready. */
export interface DemoCluster {
  readonly pid: number;
  readonly zookeeper: string;
  readonly nodes: readonly string[];
  readonly down: readonly string[];
  readonly webhook: string;
  readonly mail: string;
  readonly mailDir: string;
}

interface Demo {
  readonly dir: string;
  readonly tree: string;
  readonly quiet: boolean;
  output: string;
}

function script(demo: Demo, component: string, name: string, ...args: string[]): number {
  const result = spawnSync('bash', [join(demo.tree, component, name), ...args], {
    stdio: demo.quiet ? 'pipe' : 'inherit',
    encoding: 'utf8',
  });
  if (demo.quiet) demo.output += `${result.stdout ?? ''}${result.stderr ?? ''}`;
  return result.status ?? 1;
}

function clusterPid(dir: string): number | undefined {
  const file = join(dir, 'cluster.json');
  if (!existsSync(file)) return undefined;
  const pid = (JSON.parse(readFileSync(file, 'utf8')) as { pid: number }).pid;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

/** The mails the demo's mail server has kept (one .eml file each). */
export function demoMails(dir: string): string[] {
  const mailDir = join(resolve(dir), 'mail');
  if (!existsSync(mailDir)) return [];
  return readdirSync(mailDir)
    .filter((f) => f.endsWith('.eml'))
    .sort()
    .map((f) => join(mailDir, f));
}

/**
 * The installer's note on the UIs Debian's builds leave out (lib/debian-uis.sh of the tree): the
 * same check and wording as at the end of an install; empty when no Debian build runs.
 */
function debianUisNote(tree: string): string {
  const note = spawnSync(
    'bash',
    ['-c', '. "$1/lib/download.sh" && . "$1/lib/debian-uis.sh" && debian_uis_note "$1"', 'bash', tree],
    { encoding: 'utf8' },
  );
  return note.status === 0 ? note.stdout : '';
}

export async function startDemo(options: DemoOptions): Promise<DemoStarted> {
  // Absolute: every path the demo prints works from wherever the command was run.
  const absolute = resolve(options.dir);
  const demo: Demo = {
    dir: absolute,
    tree: join(absolute, 'install'),
    quiet: options.quiet ?? false,
    output: '',
  };
  const p = options.ports ?? SHIPPED_PORTS;
  const webhookPort = options.webhookPort ?? DEMO_WEBHOOK_PORT;
  const { dir, tree } = demo;
  mkdirSync(dir, { recursive: true });
  if (clusterPid(dir) !== undefined)
    return { ok: false, message: 'demo: already running (stop it with npm run demo:stop)' };
  const fresh = !existsSync(join(tree, 'config.sh'));
  const installed = spawnSync('bash', [join(STACK_DIR, 'install.sh')], {
    stdio: demo.quiet ? 'pipe' : 'inherit',
    encoding: 'utf8',
    env: {
      ...process.env,
      INSTALL_DIR: tree,
      ...(options.dashboardServer === false ? { DASHBOARD_SERVER_DOWNLOAD: '0' } : {}),
    },
  });
  if (installed.status !== 0)
    return { ok: false, message: `demo: the install failed\n${installed.stdout ?? ''}${installed.stderr ?? ''}` };

  rmSync(join(dir, 'cluster.json'), { force: true });
  const out = openSync(join(dir, 'cluster.out'), 'a');
  const cluster = spawn(
    process.execPath,
    [join(REPO_ROOT, 'packages/stack/dist/src/demo-cluster.js'), dir, String(webhookPort)],
    { detached: true, stdio: ['ignore', out, out] },
  );
  cluster.unref();
  for (let i = 0; i < 300 && !existsSync(join(dir, 'cluster.json')); i++) {
    if (cluster.exitCode !== null) break;
    await sleep(100);
  }
  if (!existsSync(join(dir, 'cluster.json')))
    return { ok: false, message: `demo: the demo cluster did not start; see ${join(dir, 'cluster.out')}` };
  const { zookeeper, mail, mailDir } = JSON.parse(readFileSync(join(dir, 'cluster.json'), 'utf8')) as DemoCluster;
  // Every start: ZooKeeper comes up on a new port, so the ensemble's users are pointed at it again.
  configureTree(tree, {
    ports: p,
    host: '127.0.0.1',
    ensemble: DEMO_ENSEMBLE,
    zkServers: [zookeeper],
    cacheHostname: 'localhost',
    webhookUrl: `http://127.0.0.1:${webhookPort}/`,
    mailSmarthost: mail,
    fast: options.fast ?? false,
  });
  addEnsembleToTopologyProvider(tree, DEMO_ENSEMBLE, [zookeeper]);
  if (fresh && !demo.quiet) process.stdout.write(`demo: configured ${tree} for the ensemble ${DEMO_ENSEMBLE}\n`);
  for (const [component, ...args] of startOrder(DEMO_ENSEMBLE)) {
    if (script(demo, component, 'start.sh', ...args) !== 0) {
      const failed = `demo: ${component} did not start; stopping what did\n${demo.output}`;
      await stopDemo(dir, { quiet: demo.quiet });
      return { ok: false, message: failed };
    }
  }
  // The dashboard server runs where Grafana could be downloaded at install (not offline).
  const grafana = existsSync(join(tree, 'grafana/bin/grafana'));
  if (grafana && script(demo, 'dashboard_server', 'start.sh') !== 0) {
    const failed = `demo: dashboard_server did not start; stopping what did\n${demo.output}`;
    await stopDemo(dir, { quiet: demo.quiet });
    return { ok: false, message: failed };
  }
  const dashboards = grafana
    ? 'dashboard server        http://127.0.0.1:3000/   (dashboards in the folder "cachemon")'
    : `dashboard server        not installed (Grafana could not be downloaded); run ${join(tree, 'dashboard_server/install.sh')} where it can`;
  const debian = debianUisNote(tree);
  const vmui = debian.includes('/vmui') ? '' : '   (vmui: /vmui)';
  const mails = demoMails(dir).length;
  return {
    ok: true,
    zookeeper,
    mail: { address: mail, dir: mailDir },
    message: `
cachemon demo is running (installed in ${tree}):
  ${dashboards}
  query proxy UI          http://127.0.0.1:${p.proxy}/
  rule evaluator UI       http://127.0.0.1:${p.ruler}/
  alert router UI         http://127.0.0.1:${p.router}/
  short-term store        http://127.0.0.1:${p.short}/${vmui}
  long-term store         http://127.0.0.1:${p.long}/
  topology provider       http://127.0.0.1:${p.topology}/
  cache exporter          http://127.0.0.1:${p.cache}/metrics
  coordination exporter   http://127.0.0.1:${p.coordination}/metrics
  host exporter           http://127.0.0.1:${p.host}/metrics
  ZooKeeper               ${zookeeper} (ARCUS cluster: ${DEMO_ENSEMBLE}, service codes demo-a, demo-b; one demo-b node mapped but down)
  alerts received         ${join(dir, 'alerts.log')}   (the chat webhook's)
  mails received          ${mailDir}/   (${mails} so far, one .eml file each; mail server ${mail})
${debian}Stop it with: npm run demo:stop
`,
  };
}

export async function stopDemo(given: string, options: { quiet?: boolean } = {}): Promise<void> {
  const dir = resolve(given);
  const demo: Demo = { dir, tree: join(dir, 'install'), quiet: options.quiet ?? false, output: '' };
  if (existsSync(join(demo.tree, 'dashboard_server/stop.sh'))) script(demo, 'dashboard_server', 'stop.sh');
  if (existsSync(demo.tree))
    for (const [component, ...args] of [...startOrder(DEMO_ENSEMBLE)].reverse())
      script(demo, component, 'stop.sh', ...args);
  const pid = clusterPid(dir);
  if (pid !== undefined) {
    process.kill(pid, 'SIGTERM');
    for (let i = 0; i < 100 && clusterPid(dir) !== undefined; i++) await sleep(100);
    if (!demo.quiet)
      process.stdout.write(
        `demo cluster: stopped (mail server too; ${demoMails(dir).length} mails kept in ${join(dir, 'mail')}/)\n`,
      );
  }
}
