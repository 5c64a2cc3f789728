import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { eventually, freePort, tempDir } from '@cachemon/testkit';

const root = new URL('../../../../../', import.meta.url).pathname;
const library = join(root, 'stack', 'lib', 'daemon.sh');

interface Run {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `script` in bash with stack/lib/daemon.sh sourced, as a component's start.sh or stop.sh does. */
function lib(script: string, env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', `set -euo pipefail; . "${library}"; ${script}`], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.on('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A daemon that starts listening on `port` only after `delayMs`, and runs until SIGTERM. */
function lateListener(port: number, delayMs: number): string {
  const program = `setTimeout(() => require('net').createServer().listen(${port}, '127.0.0.1'), ${delayMs})`;
  return `node -e "${program}"`;
}

/** stack/lib/daemon.sh: what every component's start.sh and stop.sh do around the process. */
describe('daemon_start / daemon_stop', () => {
  let dir: string;
  const started: number[] = [];

  before(async () => {
    dir = await tempDir('cachemon-daemon-');
  });
  after(() => {
    for (const pid of started) if (alive(pid)) process.kill(pid, 'SIGKILL');
  });

  const pidOf = (name: string): number => {
    const pid = Number(readFileSync(join(dir, 'run', `${name}.pid`), 'utf8'));
    started.push(pid);
    return pid;
  };
  const start = (name: string, listen: string, command: string, env: Record<string, string> = {}) =>
    lib(
      `daemon_start --listen ${listen} "test ${name}" "${dir}/run/${name}.pid" "${dir}/log/${name}.out" ${command}`,
      env,
    );
  const stop = (name: string) => lib(`daemon_stop "test ${name}" "${dir}/run/${name}.pid"`);

  test('with --listen, "started" comes once the address accepts connections, not once the process has lived a second', async () => {
    const port = await freePort();
    const result = await start('late', `127.0.0.1:${port}`, lateListener(port, 2500));
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stdout, new RegExp(`test late: started \\(pid \\d+\\), listening on 127\\.0\\.0\\.1:${port}`));
    assert.ok(await accepts(port), 'the port accepts as soon as start returns');
    const pid = pidOf('late');
    // The daemon holds no descriptor of the lock: stop takes the lock at once, and the daemon goes.
    const held = readdirSync(`/proc/${pid}/fd`).map((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        return '';
      }
    });
    assert.ok(!held.some((target) => target.endsWith('.lock')), held.join(', '));
    const stopped = await stop('late');
    assert.equal(stopped.status, 0, stopped.stderr);
    assert.match(stopped.stdout, /test late: stopped/);
    assert.ok(!alive(pid));
  });

  test('a process that lives but never accepts is reported after DAEMON_START_WAIT, and keeps running for stop to stop', async () => {
    const port = await freePort();
    const result = await start('deaf', `127.0.0.1:${port}`, 'sleep 60', { DAEMON_START_WAIT: '1' });
    assert.equal(result.status, 1);
    assert.match(
      result.stderr,
      new RegExp(
        `test deaf: started \\(pid \\d+\\), but 127\\.0\\.0\\.1:${port} accepts no connections after 1s; it keeps running \\(stop\\.sh stops it; its output: .*deaf\\.out\\)`,
      ),
    );
    const pid = pidOf('deaf');
    assert.ok(alive(pid));
    assert.equal((await stop('deaf')).status, 0);
    assert.ok(!alive(pid));
  });

  test('a process that exits before it accepts is reported with its output, and leaves no pid file', async () => {
    const port = await freePort();
    const result = await start('dies', `127.0.0.1:${port}`, `bash -c 'echo cannot bind; exit 3'`);
    assert.equal(result.status, 1);
    assert.match(result.stderr, /test dies: exited at start; last lines of .*dies\.out:\ncannot bind/);
    assert.ok(!existsSync(join(dir, 'run', 'dies.pid')));
  });

  test('two starts of one instance at once take turns: one starts it, the other finds it running', async () => {
    const port = await freePort();
    const [first, second] = await Promise.all([
      start('twice', `127.0.0.1:${port}`, lateListener(port, 1500)),
      start('twice', `127.0.0.1:${port}`, lateListener(port, 1500)),
    ]);
    const pid = pidOf('twice');
    const outcomes = [first, second].map((r) => `${r.status} ${r.stdout}${r.stderr}`.trim()).sort();
    assert.equal(outcomes.length, 2);
    assert.match(outcomes[0]!, new RegExp(`^0 test twice: started \\(pid ${pid}\\), listening on`));
    assert.match(outcomes[1]!, new RegExp(`^1 test twice: already running \\(pid ${pid}\\)`));
    // One process: the other start spawned nothing.
    const daemons = readdirSync('/proc')
      .filter((entry) => /^\d+$/.test(entry))
      .filter((entry) => {
        try {
          return readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(`listen(${port},`);
        } catch {
          return false;
        }
      });
    assert.deepEqual(daemons, [String(pid)]);

    // A stop while a start of the same instance waits for its port waits for that start, then stops
    // what it started.
    assert.equal((await stop('twice')).status, 0);
    const restartPort = await freePort();
    const restarting = start('twice', `127.0.0.1:${restartPort}`, lateListener(restartPort, 1500));
    await eventually(() => assert.ok(existsSync(join(dir, 'run', 'twice.pid'))));
    const stopped = await stop('twice');
    const restarted = await restarting;
    assert.equal(restarted.status, 0, restarted.stderr);
    assert.match(restarted.stdout, /test twice: started/);
    assert.equal(stopped.status, 0, stopped.stderr);
    const restartedPid = Number(/pid (\d+)/.exec(restarted.stdout)![1]);
    started.push(restartedPid);
    assert.match(stopped.stdout, new RegExp(`test twice: stopped \\(pid ${restartedPid}\\)`));
    assert.ok(!alive(restartedPid));
  });
});
