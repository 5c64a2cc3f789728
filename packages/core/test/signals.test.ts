import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';

const dir = mkdtempSync(join(tmpdir(), 'cachemon-signals-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const indexUrl = new URL('../src/index.js', import.meta.url).href;
let scriptCount = 0;

interface Daemon {
  /** Resolves once the daemon has printed a line containing text. */
  waitFor(text: string): Promise<void>;
  signal(name: NodeJS.Signals): void;
  exited: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

/** Runs a tiny daemon using installSignalHandlers; it prints "ready" once the handlers are in. */
function startDaemon(options: { reload: string; shutdown: string; extra?: string; logFile?: string }): Daemon {
  const script = join(dir, `daemon-${scriptCount++}.mjs`);
  writeFileSync(
    script,
    `import * as core from ${JSON.stringify(indexUrl)};
const logger = core.createLogger({ ...core.defaultLogBlock, filename: ${JSON.stringify(options.logFile ?? 'stderr')}, level: 'info' });
const say = (text) => process.stdout.write(text + '\\n');
let reloads = 0;
core.installSignalHandlers({
  logger,
  onReload: async () => { ${options.reload} },
  onShutdown: async () => { ${options.shutdown} },
  ${options.extra ?? ''}
});
setInterval(() => {}, 1000);
say('ready');
`,
  );
  const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  const waiters: Array<{ text: string; resolve: () => void }> = [];
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    stdout += chunk;
    for (const waiter of waiters.splice(0)) {
      if (stdout.includes(waiter.text)) waiter.resolve();
      else waiters.push(waiter);
    }
  });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
  return {
    waitFor: (text) =>
      new Promise((resolve) => {
        if (stdout.includes(text)) resolve();
        else waiters.push({ text, resolve });
      }),
    signal: (name) => child.kill(name),
    exited,
  };
}

describe('installSignalHandlers', () => {
  it('reloads on SIGHUP and shuts down with exit 0 on SIGTERM', async () => {
    const daemon = startDaemon({ reload: "reloads++; say('reloaded ' + reloads);", shutdown: "say('shutdown');" });
    await daemon.waitFor('ready');
    daemon.signal('SIGHUP');
    await daemon.waitFor('reloaded 1');
    daemon.signal('SIGHUP');
    await daemon.waitFor('reloaded 2');
    daemon.signal('SIGTERM');
    const { code, stdout } = await daemon.exited;
    assert.equal(code, 0);
    assert.deepEqual(stdout.trim().split('\n'), ['ready', 'reloaded 1', 'reloaded 2', 'shutdown']);
  });

  it("writes the shutdown's last log lines to the log file before it exits", async () => {
    const logFile = join(dir, `shutdown-${scriptCount}.log`);
    const shutdown =
      "await new Promise((r) => setTimeout(r, 20)); for (let i = 0; i < 2000; i++) logger.info({ i, pad: 'x'.repeat(200) }, 'closing'); logger.info('bye');";
    const daemon = startDaemon({ reload: '', shutdown, logFile });
    await daemon.waitFor('ready');
    daemon.signal('SIGTERM');
    assert.equal((await daemon.exited).code, 0);
    const messages = readFileSync(logFile, 'utf8')
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { msg: string }).msg);
    assert.equal(messages[0], 'SIGTERM received; shutting down');
    assert.equal(messages.filter((m) => m === 'closing').length, 2000);
    assert.equal(messages[messages.length - 1], 'bye');
  });

  it('survives a failing reload and shuts down on SIGINT', async () => {
    const daemon = startDaemon({
      reload: "say('reload attempted'); throw new Error('bad config');",
      shutdown: "say('shutdown');",
    });
    await daemon.waitFor('ready');
    daemon.signal('SIGHUP');
    await daemon.waitFor('reload attempted');
    daemon.signal('SIGINT');
    const { code, stdout } = await daemon.exited;
    assert.equal(code, 0);
    assert.match(stdout, /shutdown/);
  });

  it('logs a failed reload once: not again when the daemon has logged it (markReported)', async () => {
    const daemon = startDaemon({
      reload:
        "reloads++; const err = new Error('bad config ' + reloads); " +
        "if (reloads === 1) { logger.error('refused here: ' + err.message); core.markReported(err); } " +
        "say('attempt ' + reloads); throw err;",
      shutdown: "say('shutdown');",
    });
    await daemon.waitFor('ready');
    daemon.signal('SIGHUP');
    await daemon.waitFor('attempt 1');
    daemon.signal('SIGHUP');
    await daemon.waitFor('attempt 2');
    daemon.signal('SIGTERM');
    const { code, stderr } = await daemon.exited;
    assert.equal(code, 0);
    assert.equal(stderr.match(/bad config 1/g)?.length, 1, stderr);
    assert.match(stderr, /refused here: bad config 1/);
    assert.equal(stderr.match(/reload failed: bad config 2/g)?.length, 1, stderr);
  });

  it('runs reloads one at a time', async () => {
    // The first reload lasts until SIGUSR2, sent once the daemon has said it had both SIGHUPs sent
    // during it ('hup', from a listener after the handlers'): during it, however busy the machine.
    const daemon = startDaemon({
      reload:
        "reloads++; say('start ' + reloads); " +
        "if (reloads === 1) { process.on('SIGHUP', () => say('hup')); await new Promise((r) => process.once('SIGUSR2', r)); } " +
        "say('end ' + reloads);",
      shutdown: "say('shutdown');",
    });
    await daemon.waitFor('ready');
    daemon.signal('SIGHUP');
    await daemon.waitFor('start 1');
    // One at a time: two sent at once may arrive as one signal.
    daemon.signal('SIGHUP');
    await daemon.waitFor('hup');
    daemon.signal('SIGHUP');
    await daemon.waitFor('hup\nhup');
    daemon.signal('SIGUSR2');
    await daemon.waitFor('end 2');
    daemon.signal('SIGTERM');
    const { code, stdout } = await daemon.exited;
    assert.equal(code, 0);
    // Two SIGHUPs during the first reload collapse into one more.
    assert.deepEqual(
      stdout
        .trim()
        .split('\n')
        .filter((line) => line !== 'hup'),
      ['ready', 'start 1', 'end 1', 'start 2', 'end 2', 'shutdown'],
    );
  });

  it('exits 1 at once on a second SIGTERM during shutdown', async () => {
    const daemon = startDaemon({ reload: '', shutdown: "say('shutting down'); await new Promise(() => {});" });
    await daemon.waitFor('ready');
    daemon.signal('SIGTERM');
    await daemon.waitFor('shutting down');
    daemon.signal('SIGTERM');
    assert.equal((await daemon.exited).code, 1);
  });

  it('exits 1 when shutdown takes longer than its limit', async () => {
    const daemon = startDaemon({
      reload: '',
      shutdown: "say('shutting down'); await new Promise(() => {});",
      extra: 'shutdownTimeoutMs: 300,',
    });
    await daemon.waitFor('ready');
    const started = performance.now();
    daemon.signal('SIGTERM');
    assert.equal((await daemon.exited).code, 1);
    assert.ok(performance.now() - started >= 250);
  });

  it('exits 1 when shutdown fails', async () => {
    const daemon = startDaemon({ reload: '', shutdown: "throw new Error('cannot close');" });
    await daemon.waitFor('ready');
    daemon.signal('SIGTERM');
    assert.equal((await daemon.exited).code, 1);
  });
});
