import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ArcusZk,
  eventually,
  runBash,
  freePort,
  parseExposition,
  startZooKeeper,
  tempDir,
  valueOf,
} from '@cachemon/testkit';
import type { NodeRegistration, ZooKeeperServer } from '@cachemon/testkit';

const root = new URL('../../../../../', import.meta.url).pathname;

/** stack/topology_provider/start.sh and stop.sh as an operator runs them, SIGHUP reload, the binary's exit codes. */
describe('topology_provider start.sh / stop.sh and the binary', () => {
  let zk: ZooKeeperServer;
  let arcus: ArcusZk;
  let registration: NodeRegistration;
  let componentDir: string;
  let port: number;
  // Asynchronous: the registered node's ZooKeeper session lives in this process and must keep heartbeating.
  const sh = (script: string, ...args: string[]) =>
    runBash(join(componentDir, script), args, { CACHEMON_HOME: root }, 30_000);
  const writeConfig = (config: Record<string, unknown>) =>
    writeFileSync(
      join(componentDir, 'conf', 'config.json'),
      `// written by the test\n${JSON.stringify({ listen: `127.0.0.1:${port}`, log: { level: 'info', filename: 'log/topology_provider.log' }, ...config })}`,
    );
  const variable = async (target: string) => {
    const response = await fetch(`http://127.0.0.1:${port}/variable`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ payload: { target } }),
    });
    assert.equal(response.status, 200);
    return ((await response.json()) as Array<{ __value: string }>).map((v) => v.__value);
  };

  before(async () => {
    zk = await startZooKeeper();
    arcus = await ArcusZk.connect(zk.address);
    await arcus.createServiceCode('svc-a');
    await arcus.createServiceCode('svc-b');
    registration = await arcus.registerNode('127.0.0.1:11211', 'svc-a', { hostname: 'localhost' });
    const installDir = await tempDir('cachemon-install-');
    componentDir = join(installDir, 'topology_provider');
    cpSync(join(root, 'stack', 'topology_provider'), componentDir, { recursive: true });
    mkdirSync(join(installDir, 'lib'));
    cpSync(join(root, 'stack', 'lib'), join(installDir, 'lib'), { recursive: true });
    port = await freePort();
  });

  after(async () => {
    await sh('stop.sh');
    await registration?.unregister();
    await arcus?.close();
    await zk?.stop();
  });

  test('the shipped config.json is valid and listens on 0.0.0.0:8084', () => {
    const checked = spawnSync(
      process.execPath,
      [
        join(root, 'bin', 'topology-provider'),
        `-config-file=${join(root, 'stack', 'topology_provider', 'conf', 'config.json')}`,
        '-check-config',
      ],
      { encoding: 'utf8' },
    );
    assert.equal(checked.status, 0, checked.stderr);
    assert.match(checked.stdout, /valid \(ensembles example, listen 0\.0\.0\.0:8084\)/);
  });

  test('start.sh runs conf/config.json in the background; SIGHUP reloads it; stop.sh stops it', async () => {
    writeConfig({ ensembleByName: { ens1: [zk.address] }, serviceCodesByEnsembleName: { ens1: ['svc-a'] } });
    const started = await sh('start.sh');
    assert.equal(started.status, 0, started.stderr);
    const pidFile = join(componentDir, 'run', 'topology_provider.pid');
    const pid = Number(readFileSync(pidFile, 'utf8'));
    assert.match((await sh('start.sh')).stderr, /already running/);

    await eventually(async () => assert.deepEqual(await variable('service_codes ensemble=ens1'), ['svc-a']));
    assert.deepEqual(await variable('nodes ensemble=ens1'), ['127.0.0.1:11211']);

    writeConfig({ ensembleByName: { ens1: [zk.address] } });
    process.kill(pid, 'SIGHUP');
    await eventually(async () => assert.deepEqual(await variable('service_codes ensemble=ens1'), ['svc-a', 'svc-b']));

    // An invalid file on SIGHUP: refused, logged, the running config stays.
    writeConfig({ ensembleByName: { ens1: [zk.address] }, rawRetention: 'soon' });
    process.kill(pid, 'SIGHUP');
    await eventually(async () => {
      const samples = parseExposition(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
      assert.equal(valueOf(samples, 'cachemon_config_last_reload_successful'), 0);
      assert.ok((valueOf(samples, 'process_resident_memory_bytes') ?? 0) > 0, 'process metrics are served too');
    });
    assert.deepEqual(await variable('service_codes ensemble=ens1'), ['svc-a', 'svc-b']);
    await eventually(() =>
      assert.match(
        readFileSync(join(componentDir, 'log', 'topology_provider.log'), 'utf8'),
        /configuration reload refused/,
      ),
    );

    const stopped = await sh('stop.sh');
    assert.equal(stopped.status, 0, stopped.stderr);
    assert.ok(!existsSync(pidFile));
    assert.throws(() => process.kill(pid, 0), /ESRCH/);
    assert.match((await sh('stop.sh')).stdout, /not running/);
  });

  test('start.sh refuses an invalid config and starts nothing; the binary names file, key and reason', async () => {
    writeConfig({ ensembleByName: { ens1: ['zk1'] } });
    const broken = await sh('start.sh');
    assert.notEqual(broken.status, 0);
    assert.match(
      broken.stderr,
      /config\.json:\d+:\d+: ensembleByName\.ens1\[0\]: expected <host>:<port> \[CACHEMON_CONFIG_INVALID\]/,
    );
    assert.ok(!existsSync(join(componentDir, 'run', 'topology_provider.pid')));
    assert.equal((await sh('start.sh', 'extra')).status, 2);

    const noFlag = spawnSync(process.execPath, [join(root, 'bin', 'topology-provider')], { encoding: 'utf8' });
    assert.equal(noFlag.status, 2);
    assert.match(noFlag.stderr, /-config-file=<path> is required/);
  });
});
