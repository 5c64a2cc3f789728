import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { freePort, tempDir } from '@cachemon/testkit';
import { REPO_ROOT, runScript, STACK_DIR } from '../../src/index.js';

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/** A release archive like the project's: the program at `entry` (e.g. <dir>/<program>) inside a .tar.gz, built with tar. */
async function releaseArchive(entry: string, body: string): Promise<Buffer> {
  const work = await tempDir('release-');
  mkdirSync(join(work, entry, '..'), { recursive: true });
  writeFileSync(join(work, entry), body, { mode: 0o755 });
  const out = join(work, 'archive.tar.gz');
  const made = spawnSync('tar', ['-czf', out, '-C', work, entry.split('/')[0]!]);
  assert.equal(made.status, 0, String(made.stderr));
  return readFileSync(out);
}

describe('downloads: pinned, verified, and clear when offline (against a local release server)', () => {
  let server: Server;
  let port: number;
  const files = new Map<string, Buffer>();
  const installDir = () => tempDir('cachemon-install-');
  // Run asynchronously: the release server answers from this process.
  const download = (component: string, env: Record<string, string>) =>
    runScript(join(STACK_DIR, component, 'download.sh'), [], env);

  before(async () => {
    const archive = await releaseArchive(
      'node_exporter-1.5.0.linux-amd64/node_exporter',
      '#!/bin/sh\necho node_exporter from the release\n',
    );
    files.set('/ne/node_exporter-1.5.0.linux-amd64.tar.gz', archive);
    files.set(
      '/ne/sha256sums.txt',
      Buffer.from(
        `${'0'.repeat(64)}  node_exporter-1.5.0.darwin-amd64.tar.gz\n${sha256(archive)}  node_exporter-1.5.0.linux-amd64.tar.gz\n`,
      ),
    );
    files.set('/bad/node_exporter-1.5.0.linux-amd64.tar.gz', archive);
    files.set('/bad/sha256sums.txt', Buffer.from(`${'1'.repeat(64)}  node_exporter-1.5.0.linux-amd64.tar.gz\n`));
    const vm = await releaseArchive('victoria-metrics-prod', '#!/bin/sh\necho store\n');
    files.set('/vm/victoria-metrics-linux-amd64-v1.79.5.tar.gz', vm);
    files.set(
      '/vm/victoria-metrics-linux-amd64-v1.79.5_checksums.txt',
      Buffer.from(`${sha256(vm)}  victoria-metrics-linux-amd64-v1.79.5.tar.gz\n`),
    );
    port = await freePort();
    server = createServer((req, res) => {
      const body = files.get(req.url ?? '');
      res.statusCode = body ? 200 : 404;
      res.end(body ?? 'not found');
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  });
  after(() => server?.close());

  test('a release is downloaded, checked against its checksum file and installed into bin/', async () => {
    const dir = await installDir();
    const done = await download('host_exporter', {
      INSTALL_DIR: dir,
      ARCH: 'amd64',
      NODE_EXPORTER_URL: `http://127.0.0.1:${port}/ne`,
    });
    assert.equal(done.status, 0, done.stderr);
    assert.match(done.stdout, /verified node_exporter-1\.5\.0\.linux-amd64\.tar\.gz \(sha256 [0-9a-f]{64}\)/);
    assert.equal(
      spawnSync(join(dir, 'bin', 'node_exporter'), { encoding: 'utf8' }).stdout,
      'node_exporter from the release\n',
    );
    // Pinned in config.sh and matching: fine; differing: refused and removed.
    const pinnedOk = await download('host_exporter', {
      INSTALL_DIR: dir,
      ARCH: 'amd64',
      NODE_EXPORTER_URL: `http://127.0.0.1:${port}/ne`,
      NODE_EXPORTER_SHA256: sha256(files.get('/ne/node_exporter-1.5.0.linux-amd64.tar.gz')!),
    });
    assert.equal(pinnedOk.status, 0, pinnedOk.stderr);
    const pinnedBad = await download('host_exporter', {
      INSTALL_DIR: dir,
      ARCH: 'amd64',
      NODE_EXPORTER_URL: `http://127.0.0.1:${port}/ne`,
      NODE_EXPORTER_SHA256: 'f'.repeat(64),
    });
    assert.equal(pinnedBad.status, 1);
    assert.match(pinnedBad.stderr, /differs from the one pinned in config\.sh/);
    assert.equal(existsSync(join(dir, 'downloads', 'node_exporter-1.5.0.linux-amd64.tar.gz')), false);

    const store = await download('short_term_store', {
      INSTALL_DIR: dir,
      ARCH: 'amd64',
      VICTORIA_METRICS_URL: `http://127.0.0.1:${port}/vm`,
    });
    assert.equal(store.status, 0, store.stderr);
    assert.equal(spawnSync(join(dir, 'bin', 'victoria-metrics'), { encoding: 'utf8' }).stdout, 'store\n');
  });

  test('a checksum mismatch is refused and the file removed', async () => {
    const dir = await installDir();
    const bad = await download('host_exporter', {
      INSTALL_DIR: dir,
      ARCH: 'amd64',
      NODE_EXPORTER_URL: `http://127.0.0.1:${port}/bad`,
    });
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /checksum mismatch \(got [0-9a-f]{64}, the release says 1{64}\); the file was removed/);
    assert.equal(existsSync(join(dir, 'bin', 'node_exporter')), false);
  });

  test('offline: a clear error saying what to do instead', async () => {
    const dir = await installDir();
    const closed = await freePort();
    const offline = await download('alert_router', {
      INSTALL_DIR: dir,
      ARCH: 'amd64',
      ALERTMANAGER_URL: `http://127.0.0.1:${closed}/am`,
    });
    assert.equal(offline.status, 1);
    assert.match(
      offline.stderr,
      new RegExp(
        `cannot download http://127\\.0\\.0\\.1:${closed}/am/alertmanager-0\\.25\\.0\\.linux-amd64\\.tar\\.gz: .*\\n  This machine cannot reach the release site\\. Install the system package instead, or copy`,
      ),
    );
    const missing = await download('alert_router', {
      INSTALL_DIR: dir,
      ARCH: 'amd64',
      ALERTMANAGER_URL: `http://127.0.0.1:${port}/nothing`,
    });
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /cannot download .*: curl: \(22\) The requested URL returned error: 404/);
  });
});

describe('install.sh: the whole tree into INSTALL_DIR, again without losing edits or data', () => {
  test('installs every component and cachemon; a second run keeps edited configs and data', async () => {
    const dir = await tempDir('cachemon-install-');
    const run = () =>
      spawnSync('bash', [join(STACK_DIR, 'install.sh')], {
        encoding: 'utf8',
        env: { ...process.env, INSTALL_DIR: dir, DASHBOARD_SERVER_DOWNLOAD: '0' },
        timeout: 120_000,
      });
    const first = run();
    assert.equal(first.status, 0, first.stderr);
    for (const component of [
      'cache_exporter',
      'coordination_exporter',
      'topology_provider',
      'query_proxy',
      'short_term_store',
      'rule_evaluator',
      'alert_router',
      'host_exporter',
    ]) {
      assert.ok(existsSync(join(dir, component, 'start.sh')), component);
      assert.ok(existsSync(join(dir, component, 'stop.sh')), component);
    }
    assert.match(first.stdout, /short_term_store: using the system's \/usr\/bin\/victoria-metrics/);
    for (const exe of ['cache-exporter', 'coordination-exporter', 'topology-provider', 'query-proxy']) {
      const version = spawnSync(process.execPath, [join(dir, 'cachemon', 'bin', exe), '--version'], {
        encoding: 'utf8',
      });
      assert.equal(version.status, 0, `${exe}: ${version.stderr}`);
    }
    // The installed query proxy validates the installed promxy.yml.
    const checked = spawnSync(
      process.execPath,
      [
        join(dir, 'cachemon', 'bin', 'query-proxy'),
        `--config=${join(dir, 'query_proxy', 'conf', 'promxy.yml')}`,
        '--check-config',
      ],
      { encoding: 'utf8' },
    );
    assert.equal(checked.status, 0, checked.stderr);

    const edited = join(dir, 'short_term_store', 'conf', 'exporter', 'cache_exporter.yml');
    writeFileSync(edited, '- targets: ["monitor-01:9151"]\n');
    mkdirSync(join(dir, 'short_term_store', 'data', 'short'), { recursive: true });
    writeFileSync(join(dir, 'short_term_store', 'data', 'short', 'keep'), 'stored');
    writeFileSync(join(dir, 'short_term_store', 'start.sh'), '# an old script\n');
    const second = run();
    assert.equal(second.status, 0, second.stderr);
    assert.equal(readFileSync(edited, 'utf8'), '- targets: ["monitor-01:9151"]\n');
    assert.match(
      second.stdout,
      /short_term_store: kept your conf\/exporter\/cache_exporter\.yml \(the shipped version is conf\/exporter\/cache_exporter\.yml\.shipped\)/,
    );
    assert.equal(
      readFileSync(`${edited}.shipped`, 'utf8'),
      readFileSync(join(STACK_DIR, 'short_term_store', 'conf', 'exporter', 'cache_exporter.yml'), 'utf8'),
    );
    assert.equal(readFileSync(join(dir, 'short_term_store', 'data', 'short', 'keep'), 'utf8'), 'stored');
    assert.equal(
      readFileSync(join(dir, 'short_term_store', 'start.sh'), 'utf8'),
      readFileSync(join(STACK_DIR, 'short_term_store', 'start.sh'), 'utf8'),
      'scripts are updated',
    );
    assert.ok(REPO_ROOT.length > 0);
  });
});
