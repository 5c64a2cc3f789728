// The servers the cache exporter benchmark measures against: one ZooKeeper that takes every
// double's session, and the command that starts the doubles.
import { appendFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { startZooKeeper } from '../../packages/testkit/dist/src/index.js';

const HERE = dirname(new URL(import.meta.url).pathname);

/**
 * A test-kit ZooKeeper without a limit on connections per client address. ZooKeeper allows 60
 * per client IP by default; every double has a session of its own (like real servers on their own
 * machines), all from 127.0.0.1. Lift the limit and restart.
 */
export async function startBenchZooKeeper() {
  const server = await startZooKeeper();
  await server.stop();
  appendFileSync(join(dirname(server.dataDir), 'conf', 'zoo.cfg'), 'maxClientCnxns=0\n');
  await server.start();
  return server;
}

/**
 * The command that starts `nodes` doubles (doubles.mjs) registered in ZooKeeper `zk` (service codes
 * from bench<firstCode> on), as
 * `{ command, args }` for spawn; under `taskset --cpu-list cpus` when `cpus` is given (--pin:
 * taskset execs node, so the child's pid is the doubles').
 */
export function doublesCommand({
  zk,
  nodes,
  prefixes = 0,
  perCode = 100,
  traffic = false,
  trafficMs,
  firstCode = 0,
  cpus,
}) {
  const args = [
    join(HERE, 'doubles.mjs'),
    `--zk=${zk}`,
    `--nodes=${nodes}`,
    `--prefixes=${prefixes}`,
    `--per-code=${perCode}`,
    ...(traffic ? ['--traffic'] : []),
    ...(trafficMs === undefined ? [] : [`--traffic-ms=${trafficMs}`]),
    ...(firstCode === 0 ? [] : [`--first-code=${firstCode}`]),
  ];
  return cpus === undefined
    ? { command: process.execPath, args }
    : { command: 'taskset', args: ['--cpu-list', cpus, process.execPath, ...args] };
}
