import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import {
  appendFileSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { eventually, freePort, startSshd, tempDir } from '@cachemon/testkit';
import type { Sshd } from '@cachemon/testkit';
import { cachemon, configureTree, freeStackPorts, installStack, STACK_DIR } from '@cachemon/stack';
import type { ScriptResult, StackPorts } from '@cachemon/stack';

const HOST_TARGETS = 'short_term_store/conf/exporter/host_exporter.yml';

/** Whether something accepts connections on 127.0.0.1:port. */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Processes whose program is the node_exporter a batch install put under `dir`. */
function exportersUnder(dir: string): number[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readlinkSync(`/proc/${p}/exe`).startsWith(`${dir}/`);
      } catch {
        return false;
      }
    })
    .map(Number);
}

interface StoreTarget {
  labels: Record<string, string>;
  health: string;
}

async function storeTargets(port: number): Promise<StoreTarget[]> {
  const body = (await (await fetch(`http://127.0.0.1:${port}/api/v1/targets`)).json()) as {
    data: { activeTargets: StoreTarget[] };
  };
  return body.data.activeTargets;
}

/**
 * `cachemon hosts add|remove` against a real OpenSSH server: the "cache machine" is this one,
 * reached through sshd, with its install directory a temp dir of its own (never the tree); the
 * real short-term store scrapes the host exporter the batch install started there.
 */
describe('cachemon hosts: host exporters installed and removed over SSH', () => {
  let dir: string;
  let remote: string;
  let sshd: Sshd;
  let shipped: Buffer;
  const port: Record<string, number> = {};

  /** The installed bin/cachemon with the test's sshd as SSH and SCP (stdin not a terminal). */
  const cli = (args: readonly string[], env: Record<string, string> = {}): Promise<ScriptResult> =>
    new Promise((resolve) => {
      execFile(
        join(dir, 'bin/cachemon'),
        args,
        { encoding: 'utf8', timeout: 300_000, env: { ...process.env, SSH: sshd.ssh, SCP: sshd.scp, ...env } },
        (error, stdout, stderr) =>
          resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
      );
    });
  const hosts = (args: readonly string[], env: Record<string, string> = {}) => cli(['hosts', ...args], env);
  /** Doctor's findings about the machines' install directories. */
  const doctorHosts = async (args: readonly string[], env: Record<string, string> = {}) => {
    const result = await cli(['doctor', '--json', ...args], env);
    const report = JSON.parse(result.stdout) as {
      findings: Array<{ code: string; instance: string; message: string; fix: string }>;
    };
    return report.findings.filter((f) => f.code.startsWith('CACHEMON_DOCTOR_HOST_DIR_'));
  };
  const targetFile = () => readFileSync(join(dir, HOST_TARGETS));

  before(async () => {
    dir = await tempDir('cachemon-hosts-');
    remote = await tempDir('cachemon-hosts-machine-');
    installStack(dir);
    Object.assign(port, await freeStackPorts());
    // The host exporter's env (which the batch install copies to each machine) listens on 127.0.0.1:<host>.
    configureTree(dir, {
      ports: port as unknown as StackPorts,
      host: '127.0.0.1',
      ensemble: 'zk1',
      zkServers: ['127.0.0.1:1'],
      cacheHostname: 'localhost',
      webhookUrl: 'http://127.0.0.1:9/',
      fast: true,
    });
    copyFileSync(join(STACK_DIR, HOST_TARGETS), join(dir, HOST_TARGETS));
    shipped = targetFile();
    sshd = await startSshd();
    const started = await cachemon(dir, ['start', 'short_term_store:short']);
    assert.equal(started.status, 0, started.stdout + started.stderr);
  });

  after(async () => {
    if (remote && existsSync(join(remote, 'host_exporter/stop.sh')))
      spawnSync('bash', [join(remote, 'host_exporter/stop.sh')]);
    if (dir) await cachemon(dir, ['stop']);
    await sshd?.stop();
  });

  test('--pattern 127.0.0.%s --seq 1 1 plans what 127.0.0.1 plans; a dry run shows the diff, the actions and the warning and changes nothing', async () => {
    const common = ['--port', String(port['host']), '--remote-dir', remote, '--dry-run'];
    const byName = await hosts(['add', '127.0.0.1', ...common, '--json']);
    const byPattern = await hosts(['add', '--pattern', '127.0.0.%s', '--seq', '1', '1', ...common, '--json']);
    assert.equal(byName.status, 0, byName.stderr);
    assert.equal(byPattern.status, 0, byPattern.stderr);
    assert.deepEqual(JSON.parse(byPattern.stdout), JSON.parse(byName.stdout));
    const text = await hosts(['add', '127.0.0.1', ...common]);
    assert.equal(text.status, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`^\\+- targets: \\["127\\.0\\.0\\.1:${port['host']}"\\]$`, 'm'));
    assert.match(text.stdout, /^\+ {4}group: host$/m);
    assert.match(text.stdout, /^-\[\]$/m, 'the shipped empty list goes');
    assert.match(
      text.stdout,
      new RegExp(
        `WARNING: on each machine a running host exporter is stopped and ${remote}/host_exporter is deleted and recreated; files there are lost`,
      ),
    );
    assert.match(text.stdout, /batch_install\.sh over SSH on 1 machine \(127\.0\.0\.1\)/);
    assert.match(text.stdout, /--dry-run: nothing was changed/);
    assert.deepEqual(targetFile(), shipped);
    assert.deepEqual(readdirSync(remote), []);

    const usage = await hosts(['add', '--pattern', '127.0.0.%s', '--seq', '1', '--dry-run']);
    assert.equal(usage.status, 2);
    assert.match(usage.stderr, /--seq takes two whole numbers/);
    const both = await hosts(['add', '127.0.0.1', '--pattern', '127.0.0.%s', '--seq', '1', '1', '--dry-run']);
    assert.equal(both.status, 2);
    assert.match(both.stderr, /not both/);
  });

  test('without --yes and without a terminal: refused, saying to pass --yes; nothing changed', async () => {
    const refused = await hosts(['add', '127.0.0.1', '--port', String(port['host']), '--remote-dir', remote]);
    assert.equal(refused.status, 1, refused.stderr);
    assert.match(refused.stderr, /refused: on each machine a running host exporter is stopped/);
    assert.match(refused.stderr, /no terminal to confirm it on: pass --yes/);
    assert.deepEqual(targetFile(), shipped);
    assert.deepEqual(readdirSync(remote), []);
  });

  test('the tree itself as the remote dir of this machine: refused before anything runs', async () => {
    const refused = await hosts(['add', '127.0.0.1', '--yes', '--dry-run']);
    assert.equal(refused.status, 1);
    assert.match(
      refused.stderr,
      /127\.0\.0\.1 is this machine: installing into .* would delete this tree's own host exporter/,
    );
  });

  test('an unreachable SSH port: fails, naming the machine and the reason; host_exporter.yml byte for byte', async () => {
    const closed = String(await freePort());
    const result = await hosts(['add', '127.0.0.1', '--yes', '--remote-dir', remote], {
      SSH: sshd.ssh.replace(`-p ${sshd.port}`, `-p ${closed}`),
      SCP: sshd.scp.replace(`-P ${sshd.port}`, `-P ${closed}`),
    });
    assert.equal(result.status, 1, result.stderr);
    assert.match(result.stderr, /failed at step "install and start the host exporter over SSH on 127\.0\.0\.1"/);
    assert.match(
      result.stderr,
      new RegExp(`127\\.0\\.0\\.1: ssh: connect to host 127\\.0\\.0\\.1 port ${closed}: Connection refused`),
    );
    assert.match(result.stderr, /check the name, the port and the key/);
    assert.match(result.stderr, /every file is as it was before/);
    assert.deepEqual(targetFile(), shipped);
    assert.deepEqual(readdirSync(remote), []);
  });

  test('one machine of two does not resolve: the command fails naming it, the exporter started on the other is stopped again', async () => {
    const result = await hosts([
      'add',
      '127.0.0.1',
      'no-such-machine.invalid',
      '--yes',
      '--remote-dir',
      remote,
      '--json',
    ]);
    assert.equal(result.status, 1, result.stderr);
    const outcome = JSON.parse(result.stdout) as { ok: boolean; step: string; error: string };
    assert.equal(outcome.ok, false);
    assert.match(outcome.step, /install and start the host exporter over SSH/);
    assert.match(outcome.error, /not installed on 1 of 2 machines/);
    assert.match(outcome.error, /no-such-machine\.invalid: ssh: Could not resolve hostname no-such-machine\.invalid/);
    assert.match(outcome.error, /stopped again on 127\.0\.0\.1/);
    assert.deepEqual(targetFile(), shipped);
    assert.equal(await answers(port['host']!), false);
    assert.deepEqual(exportersUnder(remote), []);
  });

  test('hosts add: the exporter runs from the remote dir, host_exporter.yml holds it with group host, the store scrapes it', async () => {
    const target = `127.0.0.1:${port['host']}`;
    const added = await hosts([
      'add',
      '127.0.0.1',
      '--port',
      String(port['host']),
      '--yes',
      '--remote-dir',
      remote,
      '--wait',
      '60',
    ]);
    assert.equal(added.status, 0, added.stderr);
    assert.match(added.stdout, /hosts add: done/);
    assert.match(added.stderr, /ok: verify: the store scrapes the host exporters on 127\.0\.0\.1/);
    const [pid] = exportersUnder(remote);
    assert.ok(pid, 'a node_exporter runs from the remote dir');
    assert.equal(readlinkSync(`/proc/${pid}/exe`), join(remote, 'host_exporter/bin/node_exporter'));
    assert.equal(Number(readFileSync(join(remote, 'host_exporter/run/host_exporter.pid'), 'utf8')), pid);
    const file = targetFile().toString('utf8');
    assert.match(
      file,
      new RegExp(`^- targets: \\["127\\.0\\.0\\.1:${port['host']}"\\]\\n {2}labels:\\n {4}group: host\\n`, 'm'),
    );
    assert.match(file, /^# Host exporters on the cache machines/, 'the comments stay');
    const scraped = (await storeTargets(port['short']!)).filter((t) => t.labels['instance'] === target);
    assert.deepEqual(
      scraped.map((t) => [t.labels['job'], t.health]),
      [['system_resource', 'up']],
    );

    const again = await hosts(['add', '127.0.0.1', '--remote-dir', remote, '--dry-run', '--json']);
    assert.equal(again.status, 0, again.stderr);
    assert.deepEqual(
      (JSON.parse(again.stdout) as { files: unknown[] }).files,
      [],
      'a target already there is left out',
    );
  });

  test("files of the operator's in a machine's install directory: doctor warns, hosts add names them before it asks; gone once moved", async () => {
    const exporterDir = join(remote, 'host_exporter');
    const envFile = join(exporterDir, 'host_exporter.env');
    const shippedEnv = readFileSync(envFile);
    assert.deepEqual(await doctorHosts(['--remote-dir', remote]), [], 'a fresh install holds only its own files');

    writeFileSync(join(exporterDir, 'notes.txt'), 'mine\n');
    mkdirSync(join(exporterDir, 'backup/2026'), { recursive: true });
    writeFileSync(join(exporterDir, 'backup/2026/old.env'), 'x\n');
    appendFileSync(envFile, '# tuned on this machine\n');
    const [found, ...more] = await doctorHosts(['--remote-dir', remote]);
    assert.deepEqual(more, []);
    assert.equal(found!.code, 'CACHEMON_DOCTOR_HOST_DIR_NOT_EMPTY');
    assert.equal(found!.instance, '127.0.0.1');
    assert.match(
      found!.message,
      new RegExp(
        `^127\\.0\\.0\\.1:${exporterDir} holds backup/, notes\\.txt, host_exporter\\.env as edited there .*: the next cachemon hosts add`,
      ),
    );
    assert.match(
      found!.fix,
      new RegExp(`^move them out of ${exporterDir} on 127\\.0\\.0\\.1; make the edits to host_exporter\\.env in `),
    );
    assert.deepEqual(await doctorHosts(['--remote-dir', remote, '--no-hosts']), [], '--no-hosts: no SSH');

    const asked = await hosts(['add', '127.0.0.1', '--remote-dir', remote]);
    assert.equal(asked.status, 1);
    assert.match(
      asked.stderr,
      /WARNING: 127\.0\.0\.1:.* holds backup\/, notes\.txt, host_exporter\.env as edited there .*, which the install deletes\./,
    );
    assert.match(asked.stderr, /refused: .*; on 1 of them, files of their own/);
    assert.ok(existsSync(join(exporterDir, 'notes.txt')), 'nothing was deleted');

    const closed = String(await freePort());
    const [unchecked] = await doctorHosts(['--remote-dir', remote], {
      SSH: sshd.ssh.replace(`-p ${sshd.port}`, `-p ${closed}`),
    });
    assert.equal(unchecked?.code, 'CACHEMON_DOCTOR_HOST_DIR_UNCHECKED');
    assert.match(
      unchecked.message,
      new RegExp(
        `on 1 of 1 machines in host_exporter\\.yml: 127\\.0\\.0\\.1 \\(ssh: connect to host 127\\.0\\.0\\.1 port ${closed}: Connection refused\\)`,
      ),
    );

    rmSync(join(exporterDir, 'notes.txt'));
    rmSync(join(exporterDir, 'backup'), { recursive: true });
    writeFileSync(envFile, shippedEnv);
    assert.deepEqual(await doctorHosts(['--remote-dir', remote]), [], 'the fix clears it');
  });

  test('hosts remove with a machine that does not take SSH: fails naming it; the targets are back and still scraped', async () => {
    const before = targetFile();
    const closed = String(await freePort());
    const result = await hosts(['remove', '127.0.0.1', '--remote-dir', remote], {
      SSH: sshd.ssh.replace(`-p ${sshd.port}`, `-p ${closed}`),
    });
    assert.equal(result.status, 1, result.stderr);
    assert.match(result.stderr, /failed at step "stop the host exporter on 127\.0\.0\.1"/);
    assert.match(
      result.stderr,
      new RegExp(`127\\.0\\.0\\.1: ssh: connect to host 127\\.0\\.0\\.1 port ${closed}: Connection refused`),
    );
    assert.match(result.stderr, /rolled back: remove the targets from host_exporter\.yml/);
    assert.deepEqual(targetFile(), before);
    assert.equal(exportersUnder(remote).length, 1, 'the exporter still runs');
    await eventually(async () => {
      const scraped = (await storeTargets(port['short']!)).filter(
        (t) => t.labels['instance'] === `127.0.0.1:${port['host']}`,
      );
      assert.deepEqual(
        scraped.map((t) => t.health),
        ['up'],
      );
    });
  });

  test('hosts remove: the targets gone, the file back to what it was, the exporter stopped, the store no longer scrapes it', async () => {
    const target = `127.0.0.1:${port['host']}`;
    const removed = await hosts([
      'remove',
      '127.0.0.1',
      '--port',
      String(port['host']),
      '--remote-dir',
      remote,
      '--wait',
      '60',
    ]);
    assert.equal(removed.status, 0, removed.stderr);
    assert.match(removed.stderr, /ok: stop the host exporter on 127\.0\.0\.1/);
    assert.deepEqual(targetFile(), shipped);
    assert.deepEqual(exportersUnder(remote), []);
    assert.equal(await answers(port['host']!), false);
    await eventually(async () => {
      const left = (await storeTargets(port['short']!)).filter((t) => t.labels['instance'] === target);
      assert.deepEqual(left, []);
    });
  });
});
