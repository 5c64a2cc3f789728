import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually, freePort, parseExposition, tempDir } from '@cachemon/testkit';
import { installTree } from '../../src/index.js';
import type { InstallTree } from '../../src/index.js';

const COLLECTORS = [
  'cpu',
  'meminfo',
  'stat',
  'vmstat',
  'diskstats',
  'netstat',
  'netdev',
  'loadavg',
  'filefd',
  'processes',
];

async function scrapeCollectors(port: number): Promise<Map<string, number>> {
  const samples = parseExposition(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
  const success = new Map<string, number>();
  for (const s of samples) if (s.name === 'node_scrape_collector_success') success.set(s.labels['collector']!, s.value);
  return success;
}

describe('host exporter: the shipped start command and the batch install', () => {
  let tree: InstallTree;
  let port: number;

  before(async () => {
    tree = installTree(await tempDir('cachemon-install-'), ['host_exporter']);
    port = await freePort();
    tree.edit('host_exporter/host_exporter.env', '0.0.0.0:9100', `127.0.0.1:${port}`);
  });
  after(() => {
    tree?.run('host_exporter', 'stop.sh');
  });

  test('start.sh runs node_exporter with GOMAXPROCS=1 and exactly the shipped collectors', async () => {
    const started = tree.run('host_exporter', 'start.sh');
    assert.equal(started.status, 0, started.stderr);
    const pid = Number(readFileSync(tree.path('host_exporter/run/host_exporter.pid'), 'utf8'));
    const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    assert.ok(environ.includes('GOMAXPROCS=1'));
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      .split('\0')
      .filter((a) => a !== '')
      .slice(1);
    assert.deepEqual(args, [
      '--collector.disable-defaults',
      ...COLLECTORS.map((c) => `--collector.${c}`),
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=error',
    ]);
    const collectors = await eventually(() => scrapeCollectors(port));
    assert.deepEqual([...collectors.keys()].sort(), [...COLLECTORS].sort());
    const again = tree.run('host_exporter', 'start.sh');
    assert.equal(again.status, 1);
    assert.match(again.stderr, /already running/);
    assert.equal(tree.run('host_exporter', 'stop.sh').status, 0);
    // One per machine: a taken port is said plainly.
    const blocker = tree.run('host_exporter', 'start.sh');
    assert.equal(blocker.status, 0);
    const second = installTree(await tempDir('cachemon-install-'), ['host_exporter']);
    second.edit('host_exporter/host_exporter.env', '0.0.0.0:9100', `127.0.0.1:${port}`);
    const refused = second.run('host_exporter', 'start.sh');
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /is already in use \(another host exporter\?\); one host exporter per machine/);
    tree.run('host_exporter', 'stop.sh');
  });

  test('batch_install.sh: refuses bad settings; a dry run changes nothing; a run installs and starts on every machine', async () => {
    const bad = tree.run('host_exporter', 'batch_install.sh', ['--dry-run'], {
      INSTALL_DIR: '/x',
      HOST_PATTERN: 'cache',
      SEQ_START: '1',
      SEQ_END: '2',
    });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /HOST_PATTERN=cache has no %s/);
    assert.match(
      tree.run('host_exporter', 'batch_install.sh', [], {}).stderr,
      /set INSTALL_DIR HOST_PATTERN SEQ_START SEQ_END/,
    );

    // "Machines" are directories of this one: ssh and scp stand-ins run locally, the host part
    // of a path choosing the directory.
    const fleet = await tempDir('cachemon-fleet-');
    const sshStandIn = join(fleet, 'ssh');
    const scpStandIn = join(fleet, 'scp');
    writeFileSync(sshStandIn, `#!/usr/bin/env bash\nhost=$1; shift\nexport FLEET_HOST=$host\nbash -c "$*"\n`);
    writeFileSync(
      scpStandIn,
      `#!/usr/bin/env bash\nargs=("$@"); dest=\${args[-1]}; unset 'args[-1]'\ncp "\${args[@]}" "\${dest#*:}"\n`,
    );
    chmodSync(sshStandIn, 0o755);
    chmodSync(scpStandIn, 0o755);
    const machine = join(fleet, 'machines');
    const env = {
      INSTALL_DIR: machine,
      HOST_PATTERN: 'cache-%02d',
      SEQ_START: '1',
      SEQ_END: '1',
      SSH: sshStandIn,
      SCP: scpStandIn,
    };

    const dry = tree.run('host_exporter', 'batch_install.sh', ['--dry-run'], env);
    assert.equal(dry.status, 0, dry.stderr);
    assert.match(
      dry.stdout,
      /WARNING: on each machine a running host exporter is stopped and .*host_exporter is deleted and recreated; files there are lost\./,
    );
    assert.match(dry.stdout, /== cache-01\n {2}.*ssh cache-01 .*rm -rf/);
    assert.match(dry.stdout, /dry run; nothing was changed/);
    assert.equal(spawnSync('test', ['-e', join(machine, 'host_exporter')]).status, 1, 'the dry run created nothing');

    const unanswered = spawnSync('bash', [tree.path('host_exporter', 'batch_install.sh')], {
      encoding: 'utf8',
      env: { ...process.env, ...env },
      input: 'n\n',
    });
    assert.equal(unanswered.status, 1);
    assert.match(unanswered.stdout, /nothing done/);

    // The installed exporter reads its own env file: give the "machine" a free port first.
    const machinePort = await freePort();
    const envFile = tree.path('host_exporter', 'host_exporter.env');
    const shipped = readFileSync(envFile, 'utf8');
    writeFileSync(
      envFile,
      shipped.replace(/HOST_EXPORTER_LISTEN_ADDRESS=.*/, `HOST_EXPORTER_LISTEN_ADDRESS=127.0.0.1:${machinePort}`),
    );
    const installed = tree.run('host_exporter', 'batch_install.sh', ['--yes'], env);
    assert.equal(installed.status, 0, installed.stderr + installed.stdout);
    assert.match(installed.stdout, /host_exporter: started \(pid \d+\)/);
    assert.match(installed.stdout, /done on 1 machines/);
    try {
      const collectors = await eventually(() => scrapeCollectors(machinePort));
      assert.equal(collectors.size, COLLECTORS.length);
    } finally {
      spawnSync('bash', [join(machine, 'host_exporter', 'stop.sh')]);
      writeFileSync(envFile, shipped);
    }
  });

  test('the unit files: a socket on 9100 and a service with the same collectors, on that socket', () => {
    const socket = readFileSync(tree.path('host_exporter/systemd/host_exporter.socket'), 'utf8');
    const service = readFileSync(tree.path('host_exporter/systemd/host_exporter.service'), 'utf8');
    assert.match(socket, /^ListenStream=9100$/m);
    assert.match(service, /^Environment=GOMAXPROCS=1$/m);
    assert.match(service, /--web\.systemd-socket/);
    for (const c of COLLECTORS) assert.match(service, new RegExp(`--collector\\.${c}\\b`));
    const check = spawnSync('prometheus-node-exporter', ['--help'], { encoding: 'utf8' });
    assert.match(check.stdout + check.stderr, /--web\.systemd-socket/, 'the flag exists in the shipped node_exporter');
  });
});
