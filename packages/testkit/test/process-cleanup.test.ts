/**
 * The kit must leave nothing behind when a test process ends without cleaning up: its children
 * are SIGKILLed and its temp dirs removed on exit and on SIGTERM.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { waitGone } from './helpers.js';

const INDEX = fileURLToPath(new URL('../src/index.js', import.meta.url));

/** Runs a child that starts memcached and a temp dir, then ends as `ending` says. */
async function runChild(
  ending: 'exit' | 'sigterm',
  env: NodeJS.ProcessEnv = {},
): Promise<{ pid: number; dir: string; code: number | null; signal: NodeJS.Signals | null }> {
  const script = `
    import { startMemcached, tempDir } from ${JSON.stringify(INDEX)};
    const memcached = await startMemcached();
    const dir = await tempDir('cachemon-cleanup-test-');
    console.log(JSON.stringify({ pid: memcached.pid, dir }));
    if (${JSON.stringify(ending)} === 'exit') process.exit(0);
    setInterval(() => {}, 1000);
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    if (ending === 'sigterm' && out.includes('\n')) child.kill('SIGTERM');
  });
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  const { pid, dir } = JSON.parse(out.trim()) as { pid: number; dir: string };
  return { pid, dir, code, signal };
}

describe('clean-up when the test process ends', () => {
  test('on exit: children SIGKILLed, temp dirs removed', async () => {
    const { pid, dir, code } = await runChild('exit');
    assert.equal(code, 0);
    assert.ok(await waitGone(pid), `memcached ${pid} is gone`);
    assert.equal(existsSync(dir), false);
  });

  test('on SIGTERM: the same, and the process still dies of the signal', async () => {
    const { pid, dir, signal } = await runChild('sigterm');
    assert.equal(signal, 'SIGTERM');
    assert.ok(await waitGone(pid), `memcached ${pid} is gone`);
    assert.equal(existsSync(dir), false);
  });

  test('CACHEMON_KEEP_TEMP=1 keeps the temp dirs', async () => {
    // The child's temp dirs go into a parent of their own, removed here.
    const parent = mkdtempSync(join(tmpdir(), 'cachemon-keep-test-'));
    try {
      const { pid, dir } = await runChild('exit', { CACHEMON_KEEP_TEMP: '1', TMPDIR: parent });
      assert.ok(await waitGone(pid));
      assert.ok(dir.startsWith(parent));
      assert.ok(existsSync(dir));
      assert.equal(readdirSync(parent).length, 2, 'the memcached dir and the test dir');
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });

  test('a daemon detached into a session of its own, with a pid file in a temp dir, dies on exit', async () => {
    // As stack/lib/daemon.sh starts one: setsid, output to a file, the pid in <dir>/run/<name>.pid.
    const script = `
      import { mkdirSync } from 'node:fs';
      import { execFileSync } from 'node:child_process';
      import { tempDir } from ${JSON.stringify(INDEX)};
      const dir = await tempDir('cachemon-pidfile-test-');
      mkdirSync(dir + '/component/run', { recursive: true });
      execFileSync('sh', ['-c', 'setsid sleep 3117 >/dev/null 2>&1 </dev/null & echo $! > "$0"', dir + '/component/run/x.pid']);
      console.log(JSON.stringify({ dir }));
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    assert.equal(code, 0);
    const { dir } = JSON.parse(out.trim()) as { dir: string };
    assert.equal(existsSync(dir), false);
    // The pid file is gone with the dir: find the sleep by its command line, as the child's
    // grandchild with init as its parent.
    const sleepers = readdirSync('/proc')
      .filter((name) => /^\d+$/.test(name))
      .filter((name) => {
        try {
          return readFileSync(`/proc/${name}/cmdline`, 'utf8') === 'sleep\u00003117\u0000';
        } catch {
          return false;
        }
      })
      .map(Number);
    for (const pid of sleepers) assert.ok(await waitGone(pid), `sleep ${pid} is still running`);
  });

  test('a forgotten registration or double does not keep the process alive', async () => {
    // The child leaks a node registration and a registered double, then stops ZooKeeper: the
    // sessions keep reconnecting to a dead server, yet the process must end on its own.
    const script = `
      import { ArcusDouble, ArcusZk, startZooKeeper } from ${JSON.stringify(INDEX)};
      const server = await startZooKeeper();
      const zk = await ArcusZk.connect(server.address);
      await zk.createServiceCode('leak');
      const double = await ArcusDouble.start();
      await zk.mapServer(double.address, 'leak');
      await double.register(zk);
      await zk.registerNode('127.0.0.1:1', 'leak');
      await zk.close();
      await server.stop();
      console.log('leaked');
    `;
    const started = Date.now();
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
    clearTimeout(timer);
    assert.equal(out.trim(), 'leaked');
    assert.equal(signal, null, 'it was not killed by the 20 s guard');
    assert.equal(code, 0);
    assert.ok(Date.now() - started < 20_000);
  });
});
