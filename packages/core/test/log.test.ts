import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import {
  closeLogger,
  createLogger,
  createRotatingFileStream,
  defaultLogBlock,
  Errors,
  isCachemonError,
  setLogLevel,
  type RotatingFileStream,
} from '../src/index.js';
import { eventually } from './support/eventually.js';

const root = mkdtempSync(join(tmpdir(), 'cachemon-log-'));
after(() => rmSync(root, { recursive: true, force: true }));
let dirCount = 0;

function freshDir(): string {
  const dir = join(root, String(dirCount++));
  mkdirSync(dir);
  return dir;
}

const indexUrl = new URL('../src/index.js', import.meta.url).href;
const DAY = 24 * 60 * 60 * 1000;

function readLines(file: string): string[] {
  const data = readFileSync(file);
  const text = file.endsWith('.gz') ? gunzipSync(data).toString('utf8') : data.toString('utf8');
  return text.split('\n').filter((line) => line !== '');
}

function backupsIn(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => name !== 'app.log')
    .sort();
}

/** Every line of the live file and its backups. */
function allLines(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => readLines(join(dir, name)));
}

async function writeNumbered(stream: RotatingFileStream, count: number): Promise<string[]> {
  const lines: string[] = [];
  for (let i = 0; i < count; i++) {
    const line = `line ${String(i).padStart(5, '0')} ${'x'.repeat(40)}`;
    lines.push(line);
    stream.write(`${line}\n`);
  }
  await stream.close();
  return lines;
}

function runScript(dir: string, body: string): { status: number | null; stdout: string; stderr: string } {
  const script = join(dir, 'script.mjs');
  writeFileSync(script, `import * as core from ${JSON.stringify(indexUrl)};\n${body}\n`);
  const result = spawnSync(process.execPath, [script], { cwd: dir, encoding: 'utf8', timeout: 20_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('createLogger', () => {
  it('writes JSON lines with ISO time and level names, filtered by level', async () => {
    const dir = freshDir();
    const file = join(dir, 'app.log');
    const logger = createLogger(
      { ...defaultLogBlock, filename: file, level: 'warn' },
      { name: 'cache-exporter', base: { ensemble: 'zk1' } },
    );
    logger.debug('d');
    logger.info('i');
    logger.warn('w');
    logger.error({ node: 'a:1' }, 'e');
    logger.fatal('f');
    logger.panic('p');
    await closeLogger(logger);
    const records = readLines(file).map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.deepEqual(
      records.map((r) => [r['level'], r['msg']]),
      [
        ['warn', 'w'],
        ['error', 'e'],
        ['fatal', 'f'],
        ['panic', 'p'],
      ],
    );
    const first = records[0] ?? {};
    assert.match(String(first['time']), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    assert.equal(first['name'], 'cache-exporter');
    assert.equal(first['ensemble'], 'zk1');
    assert.equal(first['pid'], process.pid);
    assert.equal(typeof first['hostname'], 'string');
    assert.equal(records[1]?.['node'], 'a:1');
  });

  it('rotates as the log block says: maxSize in MB, maxBackups, maxAge in days, compress', async () => {
    const dir = freshDir();
    const file = join(dir, 'app.log');
    // Backups as an earlier run left them: one 40 days old (past maxAge), one 2 days old.
    const stale = 'app-2020-01-01T00-00-00.000.log.gz';
    const recent = 'app-2020-01-02T00-00-00.000.log.gz';
    for (const [name, days] of [
      [stale, 40],
      [recent, 2],
    ] as const) {
      writeFileSync(join(dir, name), gzipSync('old\n'));
      const when = new Date(Date.now() - days * DAY);
      utimesSync(join(dir, name), when, when);
    }
    const logger = createLogger({
      level: 'info',
      filename: file,
      maxSize: 1,
      maxBackups: 2,
      maxAge: 30,
      compress: true,
    });
    // ~3.4 MB of lines: the file is rotated three times, so more backups are made than are kept.
    const pad = 'x'.repeat(1000);
    const count = 3300;
    for (let i = 0; i < count; i++) logger.info({ seq: i, pad }, 'filler');
    await closeLogger(logger);

    assert.equal(existsSync(join(dir, stale)), false, 'a backup older than maxAge days is deleted');
    const backups = backupsIn(dir);
    assert.equal(backups.length, 2, `maxBackups 2: ${backups.join(', ')}`);
    assert.equal(backups.includes(recent), false, 'the newest backups are kept, not the old one');
    const MB = 1024 * 1024;
    const lineBytes = readLines(file)[0]!.length + 1;
    for (const name of backups) {
      assert.match(name, /^app-.*\.log\.gz$/);
      const size = gunzipSync(readFileSync(join(dir, name))).length;
      // Rotation follows the write that reaches maxSize MB, so one line may overshoot it.
      assert.ok(size >= MB && size < MB + lineBytes, `${name}: ${size} bytes`);
    }
    assert.ok(readFileSync(file).length < MB + lineBytes);
    // What is kept is the tail of what was written, in order, nothing lost in between.
    const seqs = allLines(dir)
      .map((line) => (JSON.parse(line) as { seq?: number }).seq)
      .filter((seq) => seq !== undefined)
      .sort((a, b) => a - b);
    assert.equal(seqs[seqs.length - 1], count - 1);
    assert.deepEqual(
      seqs,
      Array.from({ length: seqs.length }, (_, i) => count - seqs.length + i),
    );
  });

  it('ranks panic above fatal', async () => {
    const dir = freshDir();
    const file = join(dir, 'app.log');
    const logger = createLogger({ ...defaultLogBlock, filename: file, level: 'panic' });
    logger.fatal('hidden');
    logger.panic('shown');
    await closeLogger(logger);
    assert.deepEqual(
      readLines(file).map((line) => (JSON.parse(line) as { msg: string }).msg),
      ['shown'],
    );
  });

  it('changes level on reload, for children too', async () => {
    const dir = freshDir();
    const file = join(dir, 'app.log');
    const logger = createLogger({ ...defaultLogBlock, filename: file, level: 'error' });
    const child = logger.child({ component: 'zk' });
    child.info('before');
    setLogLevel(logger, 'debug');
    child.debug('after');
    logger.info('root after');
    setLogLevel(logger, 'error');
    logger.warn('quiet again');
    await closeLogger(logger);
    assert.deepEqual(
      readLines(file).map((line) => (JSON.parse(line) as { msg: string }).msg),
      ['after', 'root after'],
    );
  });

  it('logs to stdout by default', () => {
    const dir = freshDir();
    const result = runScript(
      dir,
      `const log = core.createLogger(core.defaultLogBlock); log.warn('to stdout'); log.info('filtered'); await core.closeLogger(log);`,
    );
    assert.equal(result.status, 0, result.stderr);
    const lines = result.stdout.trim().split('\n');
    assert.equal(lines.length, 1);
    assert.deepEqual(Object.keys(JSON.parse(lines[0] ?? '') as object).sort(), [
      'hostname',
      'level',
      'msg',
      'pid',
      'time',
    ]);
    assert.equal((JSON.parse(lines[0] ?? '') as { msg: string }).msg, 'to stdout');
  });

  it('logs to stderr when asked', () => {
    const dir = freshDir();
    const result = runScript(
      dir,
      `const log = core.createLogger({ ...core.defaultLogBlock, filename: 'stderr' }); log.error('to stderr');`,
    );
    assert.equal(result.status, 0, result.stderr);
    assert.equal(result.stdout, '');
    assert.equal((JSON.parse(result.stderr.trim()) as { msg: string }).msg, 'to stderr');
  });

  it('resolves a relative filename against the working directory and creates its directory', () => {
    const dir = freshDir();
    const result = runScript(
      dir,
      `const log = core.createLogger({ ...core.defaultLogBlock, filename: 'logs/sub/app.log' }); log.error('in file'); await core.closeLogger(log);`,
    );
    assert.equal(result.status, 0, result.stderr);
    assert.equal(result.stdout, '');
    assert.deepEqual(
      readLines(join(dir, 'logs', 'sub', 'app.log')).map((l) => (JSON.parse(l) as { msg: string }).msg),
      ['in file'],
    );
  });

  it('fails at start with a coded error when the log file cannot be opened', () => {
    const dir = freshDir();
    writeFileSync(join(dir, 'not-a-dir'), '');
    assert.throws(
      () => createLogger({ ...defaultLogBlock, filename: join(dir, 'not-a-dir', 'app.log') }),
      (err: unknown) => isCachemonError(err, Errors.LOG_FILE_UNWRITABLE) && err.message.includes('not-a-dir'),
    );
  });
});

describe('createRotatingFileStream', () => {
  it('rotates by size into timestamped backups without losing or repeating a line', async () => {
    const dir = freshDir();
    const file = join(dir, 'app.log');
    const stream = createRotatingFileStream({
      filename: file,
      maxSizeBytes: 2000,
      maxBackups: 0,
      maxAgeDays: 0,
      compress: false,
    });
    const written = await writeNumbered(stream, 500);
    const backups = backupsIn(dir);
    assert.ok(backups.length >= 10, `only ${backups.length} backups`);
    for (const name of backups) assert.match(name, /^app-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d{3}(-\d+)?\.log$/);
    for (const name of [...backups, 'app.log']) {
      const size = readFileSync(join(dir, name)).length;
      // Rotation follows the write that reaches the limit, so one line may overshoot it.
      assert.ok(size < 2000 + 60, `${name} has ${size} bytes`);
    }
    assert.deepEqual(allLines(dir).sort(), written);
  });

  it('keeps at most maxBackups backups, the newest ones', async () => {
    const dir = freshDir();
    const file = join(dir, 'app.log');
    const stream = createRotatingFileStream({
      filename: file,
      maxSizeBytes: 2000,
      maxBackups: 3,
      maxAgeDays: 0,
      compress: false,
    });
    const written = await writeNumbered(stream, 500);
    const backups = backupsIn(dir);
    assert.equal(backups.length, 3, backups.join(', '));
    // The newest lines survive: the live file and the 3 backups hold the tail of what was written.
    const kept = allLines(dir).sort();
    assert.deepEqual(kept, written.slice(written.length - kept.length));
  });

  it('gzips backups when compress is set', async () => {
    const dir = freshDir();
    const file = join(dir, 'app.log');
    const stream = createRotatingFileStream({
      filename: file,
      maxSizeBytes: 2000,
      maxBackups: 0,
      maxAgeDays: 0,
      compress: true,
    });
    const written = await writeNumbered(stream, 200);
    const backups = backupsIn(dir);
    assert.ok(backups.length >= 3, `only ${backups.length} backups`);
    for (const name of backups) {
      assert.match(name, /\.log\.gz$/);
      const text = gunzipSync(readFileSync(join(dir, name))).toString('utf8');
      assert.match(text, /^line \d{5} x+\n/);
    }
    assert.deepEqual(allLines(dir).sort(), written);
  });

  it('deletes backups older than maxAge days, leaving other files alone', async () => {
    const dir = freshDir();
    const file = join(dir, 'app.log');
    const old = ['app-2020-01-01T00-00-00.000.log', 'app-2020-01-02T00-00-00.000.log.gz'];
    const recent = 'app-2020-01-03T00-00-00.000.log';
    const unrelated = 'other-2020-01-01T00-00-00.000.log';
    for (const name of [...old, recent, unrelated]) writeFileSync(join(dir, name), 'old\n');
    const setAge = (name: string, days: number): void => {
      const when = new Date(Date.now() - days * DAY);
      utimesSync(join(dir, name), when, when);
    };
    for (const name of [...old, unrelated]) setAge(name, 40);
    setAge(recent, 2);

    const stream = createRotatingFileStream({
      filename: file,
      maxSizeBytes: 2000,
      maxBackups: 0,
      maxAgeDays: 30,
      compress: false,
    });
    await writeNumbered(stream, 10);
    for (const name of old) assert.equal(existsSync(join(dir, name)), false, `${name} should be gone`);
    assert.equal(existsSync(join(dir, recent)), true);
    assert.equal(existsSync(join(dir, unrelated)), true);
  });

  it('opens the file again when it fails (the live file removed before a rotation), and goes on logging', async () => {
    const dir = freshDir();
    const file = join(dir, 'app.log');
    const errors: string[] = [];
    const stream = createRotatingFileStream({
      filename: file,
      maxSizeBytes: 2000,
      maxBackups: 0,
      maxAgeDays: 0,
      compress: false,
      onError: (err) => errors.push(err.message),
    });
    stream.write('before\n');
    await eventually(() => assert.deepEqual(readLines(file), ['before']));
    unlinkSync(file);
    // Past maxSize: the rotation's rename of the removed file fails.
    for (let i = 0; i < 60; i++) stream.write(`${'y'.repeat(60)}\n`);
    await eventually(() =>
      assert.ok(
        errors.some((m) => m.includes(`log file ${file}: `) && m.includes('ENOENT')),
        errors.join('; '),
      ),
    );
    const after = Array.from({ length: 5 }, (_, i) => `after ${i}`);
    for (const line of after) stream.write(`${line}\n`);
    await stream.close();
    assert.deepEqual(
      readLines(file).filter((line) => line.startsWith('after')),
      after,
    );
    assert.ok(
      errors.every((m) => m.startsWith(`log file ${file}: `)),
      errors.join('; '),
    );
  });

  it('continues an existing file across restarts', async () => {
    const dir = freshDir();
    const file = join(dir, 'app.log');
    writeFileSync(file, 'from before\n');
    const stream = createRotatingFileStream({
      filename: file,
      maxSizeBytes: 2000,
      maxBackups: 0,
      maxAgeDays: 0,
      compress: false,
    });
    stream.write('after restart\n');
    await stream.close();
    assert.deepEqual(readLines(file), ['from before', 'after restart']);
  });
});
