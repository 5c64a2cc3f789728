/**
 * `npm run demo`: a demo ARCUS cluster and the whole stack, installed into ./demo (DEMO_DIR
 * overrides) and started by the stack's own scripts on the shipped ports; prints every URL.
 * `npm run demo:stop` stops all of it. Run again after a stop, it starts from the same tree (data
 * kept).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { addEnsembleToTopologyProvider, configureTree, SHIPPED_PORTS, startOrder } from './configure.js';
import { REPO_ROOT, STACK_DIR } from './index.js';

const ENSEMBLE = 'demo';
const WEBHOOK_PORT = 9095;
const dir = process.env['DEMO_DIR'] ?? join(REPO_ROOT, 'demo');
const tree = join(dir, 'install');

function script(component: string, name: string, ...args: string[]): number {
  const result = spawnSync('bash', [join(tree, component, name), ...args], { stdio: 'inherit' });
  return result.status ?? 1;
}

function clusterPid(): number | undefined {
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

async function start(): Promise<number> {
  mkdirSync(dir, { recursive: true });
  if (clusterPid() !== undefined) {
    process.stderr.write(`demo: already running (stop it with npm run demo:stop)\n`);
    return 1;
  }
  const fresh = !existsSync(join(tree, 'config.sh'));
  const installed = spawnSync('bash', [join(STACK_DIR, 'install.sh')], { stdio: 'inherit', env: { ...process.env, INSTALL_DIR: tree } });
  if (installed.status !== 0) return 1;

  rmSync(join(dir, 'cluster.json'), { force: true });
  const out = openSync(join(dir, 'cluster.out'), 'a');
  const cluster = spawn(process.execPath, [join(REPO_ROOT, 'packages/stack/dist/src/demo-cluster.js'), dir, String(WEBHOOK_PORT)], { detached: true, stdio: ['ignore', out, out] });
  cluster.unref();
  for (let i = 0; i < 300 && !existsSync(join(dir, 'cluster.json')); i++) {
    if (cluster.exitCode !== null) break;
    await sleep(100);
  }
  if (!existsSync(join(dir, 'cluster.json'))) {
    process.stderr.write(`demo: the demo cluster did not start; see ${join(dir, 'cluster.out')}\n`);
    return 1;
  }
  const { zookeeper } = JSON.parse(readFileSync(join(dir, 'cluster.json'), 'utf8')) as { zookeeper: string };
  // Every start: ZooKeeper comes up on a new port, so the ensemble's users are pointed at it again.
  configureTree(tree, { ports: SHIPPED_PORTS, host: '127.0.0.1', ensemble: ENSEMBLE, zkServers: [zookeeper], cacheHostname: 'localhost', webhookUrl: `http://127.0.0.1:${WEBHOOK_PORT}/` });
  addEnsembleToTopologyProvider(tree, ENSEMBLE, [zookeeper]);
  if (fresh) process.stdout.write(`demo: configured ${tree} for the ensemble ${ENSEMBLE}\n`);
  for (const [component, ...args] of startOrder(ENSEMBLE)) {
    if (script(component, 'start.sh', ...args) !== 0) {
      process.stderr.write(`demo: ${component} did not start; stopping what did (npm run demo:stop)\n`);
      await stop();
      return 1;
    }
  }
  const p = SHIPPED_PORTS;
  process.stdout.write(`
cachemon demo is running (installed in ${tree}):
  query proxy UI          http://127.0.0.1:${p.proxy}/
  rule evaluator UI       http://127.0.0.1:${p.ruler}/
  alert router UI         http://127.0.0.1:${p.router}/
  short-term store        http://127.0.0.1:${p.short}/   (vmui: /vmui)
  long-term store         http://127.0.0.1:${p.long}/
  topology provider       http://127.0.0.1:${p.topology}/
  cache exporter          http://127.0.0.1:${p.cache}/metrics
  coordination exporter   http://127.0.0.1:${p.coordination}/metrics
  host exporter           http://127.0.0.1:${p.host}/metrics
  ZooKeeper               ${zookeeper} (ARCUS cluster: ${ENSEMBLE}, service codes demo-a, demo-b)
  alerts received         ${join(dir, 'alerts.log')}
Stop it with: npm run demo:stop
`);
  return 0;
}

async function stop(): Promise<number> {
  if (existsSync(tree)) for (const [component, ...args] of [...startOrder(ENSEMBLE)].reverse()) script(component, 'stop.sh', ...args);
  const pid = clusterPid();
  if (pid !== undefined) {
    process.kill(pid, 'SIGTERM');
    for (let i = 0; i < 100 && clusterPid() !== undefined; i++) await sleep(100);
    process.stdout.write('demo cluster: stopped\n');
  }
  return 0;
}

const command = process.argv[2];
if (command === 'start') process.exitCode = await start();
else if (command === 'stop') process.exitCode = await stop();
else {
  process.stderr.write('usage: demo.js start|stop\n');
  process.exitCode = 2;
}
