import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { freePort, tempDir } from '@cachemon/testkit';
import { runScript, STACK_DIR } from '../../src/index.js';

const run = promisify(execFile);
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');
const VERSION = '11.2.2';
const TARBALL = `grafana-${VERSION}.linux-amd64.tar.gz`;
const PLUGIN = 'simpod-json-datasource';

/**
 * Grafana 11's bin/grafana, standing in for the real one: `cli [flags] plugins install <id> [<version>]`
 * asks <repo>/<id>/versions, downloads <repo>/<id>/versions/<version>/download (or --pluginUrl, a
 * local zip) and unzips it into --pluginsDir/<id>, as grafana cli does; `server` is fake-server.mjs.
 * Every call is recorded in <home>/calls.jsonl.
 */
const FAKE_GRAFANA = `#!/usr/bin/env bash
set -euo pipefail
home=$(cd "$(dirname "$0")/.." && pwd)
node -e 'require("fs").appendFileSync(process.argv[1], JSON.stringify(process.argv.slice(2)) + "\\n")' "$home/calls.jsonl" "$@"
command=$1
shift
case "$command" in
  cli)
    pluginsDir=/var/lib/grafana/plugins repo=https://grafana.com/api/plugins pluginUrl=
    while [ $# -gt 0 ]; do
      case "$1" in
        --homepath) shift 2 ;;
        --pluginsDir) pluginsDir=$2; shift 2 ;;
        --repo) repo=$2; shift 2 ;;
        --pluginUrl) pluginUrl=$2; shift 2 ;;
        --*) echo "Incorrect Usage: flag provided but not defined: -\${1#--}" >&2; exit 1 ;;
        *) break ;;
      esac
    done
    [ "$1 $2" = "plugins install" ] || { echo "unsupported: $*" >&2; exit 1; }
    id=$3 version=\${4:-}
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    if [ -n "$pluginUrl" ]; then
      cp "$pluginUrl" "$tmp/plugin.zip"
    else
      curl -fsS -o "$tmp/versions.json" "$repo/$id/versions" || { echo "Error: ✗ Failed to get plugin versions" >&2; exit 1; }
      grep -q "\\"version\\":\\"$version\\"" "$tmp/versions.json" || { echo "Error: ✗ $id v$version either does not exist or is not supported on your system" >&2; exit 1; }
      curl -fsS -o "$tmp/plugin.zip" "$repo/$id/versions/$version/download" || { echo "Error: ✗ failed to download plugin archive" >&2; exit 1; }
    fi
    mkdir -p "$pluginsDir"
    unzip -q "$tmp/plugin.zip" -d "$tmp/x"
    rm -rf "\${pluginsDir:?}/$id"
    mv "$tmp/x"/* "$pluginsDir/$id"
    echo "✔ Downloaded and extracted $id v$version zip successfully to $pluginsDir/$id"
    ;;
  server) exec node "$home/bin/fake-server.mjs" "$@" ;;
  *) echo "unknown command $command" >&2; exit 1 ;;
esac
`;

/**
 * `grafana server`: refuses a homepath without conf/defaults.ini (as Grafana does), reads --config
 * with $__env{...} expanded, writes --pidfile, records its arguments, environment and settings in
 * <home>/server-run.json, logs to [paths] logs and answers HTTP on [server] http_addr:http_port.
 */
const FAKE_SERVER = `import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
const home = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const flag = (name) => { const i = args.indexOf('--' + name); return i >= 0 ? args[i + 1] : undefined; };
const homepath = flag('homepath');
if (!homepath || !existsSync(join(homepath, 'conf', 'defaults.ini'))) {
  console.error('Grafana-server Init Failed: Could not find config defaults, make sure homepath command line parameter is set or working directory is homepath');
  process.exit(1);
}
const ini = {};
let section = '';
const text = readFileSync(flag('config'), 'utf8').replace(/\\$__env\\{(\\w+)\\}/g, (_, name) => process.env[name] ?? '');
for (const raw of text.split('\\n')) {
  const line = raw.trim();
  if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
  const header = /^\\[(.+)\\]$/.exec(line);
  if (header) { section = header[1]; continue; }
  const eq = line.indexOf('=');
  if (eq > 0) ini[section + '.' + line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
}
writeFileSync(flag('pidfile'), process.pid + '\\n');
writeFileSync(join(home, 'server-run.json'), JSON.stringify({ args, dir: process.env.CACHEMON_DASHBOARD_SERVER_DIR ?? null, ini, pid: process.pid }));
mkdirSync(ini['paths.logs'], { recursive: true });
appendFileSync(join(ini['paths.logs'], 'grafana.log'), 'logger=settings level=info msg="Starting Grafana"\\n');
const server = createServer((req, res) => res.end('{"database":"ok"}'));
server.listen(Number(ini['server.http_port'] ?? 3000), ini['server.http_addr'] || undefined);
process.on('SIGTERM', () => process.exit(0));
`;

/** A minimal INI reader: { 'section.key': value }, comments (# ;) skipped. */
const pluginVersion = (file: string): string =>
  (JSON.parse(readFileSync(file, 'utf8')) as { info: { version: string } }).info.version;

function readIni(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = header[1]!;
      continue;
    }
    const eq = line.indexOf('=');
    assert.ok(eq > 0, `not a key = value line: ${line}`);
    out[`${section}.${line.slice(0, eq).trim()}`] = line.slice(eq + 1).trim();
  }
  return out;
}

/** The Grafana release fixture: grafana-v11.2.2/ with bin/grafana, conf/defaults.ini, public/, as a .tar.gz. */
async function grafanaTarball(): Promise<Buffer> {
  const work = await tempDir('grafana-release-');
  const top = join(work, `grafana-v${VERSION}`);
  mkdirSync(join(top, 'bin'), { recursive: true });
  mkdirSync(join(top, 'conf', 'provisioning'), { recursive: true });
  mkdirSync(join(top, 'public'), { recursive: true });
  writeFileSync(join(top, 'bin', 'grafana'), FAKE_GRAFANA, { mode: 0o755 });
  writeFileSync(join(top, 'bin', 'fake-server.mjs'), FAKE_SERVER);
  writeFileSync(join(top, 'conf', 'defaults.ini'), '[server]\nhttp_port = 3000\n');
  writeFileSync(join(top, 'public', 'index.html'), '<html></html>\n');
  writeFileSync(join(top, 'VERSION'), `${VERSION}\n`);
  await run('tar', ['-czf', join(work, TARBALL), '-C', work, `grafana-v${VERSION}`]);
  return readFileSync(join(work, TARBALL));
}

/** The plugin's zip as grafana.com serves it: simpod-json-datasource/plugin.json, module.js. */
async function pluginZip(version: string): Promise<Buffer> {
  const work = await tempDir('grafana-plugin-');
  mkdirSync(join(work, PLUGIN));
  const pluginJson = {
    type: 'datasource',
    name: 'JSON',
    id: PLUGIN,
    info: { author: { name: 'Šimon Podlipský' }, logos: { small: 'img/logo.svg' }, version },
  };
  writeFileSync(join(work, PLUGIN, 'plugin.json'), JSON.stringify(pluginJson, null, 2));
  writeFileSync(join(work, PLUGIN, 'module.js'), 'define([], function () { return {}; });\n');
  await run('zip', ['-qr', 'plugin.zip', PLUGIN], { cwd: work });
  return readFileSync(join(work, 'plugin.zip'));
}

/** A copy of the checkout's stack/ (config.sh, lib/, install.sh, dashboard_server/) whose dashboards are the given ones. */
async function stackCopy(dashboards: Record<string, string>): Promise<string> {
  const dir = await tempDir('cachemon-stack-');
  for (const entry of ['config.sh', 'install.sh', 'lib', 'dashboard_server'])
    cpSync(join(STACK_DIR, entry), join(dir, entry), { recursive: true });
  rmSync(join(dir, 'dashboard_server', 'dashboards'), { recursive: true, force: true });
  mkdirSync(join(dir, 'dashboard_server', 'dashboards'));
  for (const [name, body] of Object.entries(dashboards))
    writeFileSync(join(dir, 'dashboard_server', 'dashboards', name), body);
  return dir;
}

describe('dashboard server: Grafana and its plugin downloaded, installed, started and stopped (against a local release server)', () => {
  let server: Server;
  let base: string;
  let tarball: Buffer;
  let zip: Buffer;
  const files = new Map<string, Buffer>();
  const hits = new Map<string, number>();
  const started: string[] = [];
  const hitsOf = (path: string) => hits.get(path) ?? 0;
  const env = (dir: string, extra: Record<string, string> = {}) => ({
    INSTALL_DIR: dir,
    ARCH: 'amd64',
    DASHBOARD_SERVER_URL: `${base}/oss/release`,
    DASHBOARD_SERVER_SHA256: '',
    DASHBOARD_PLUGIN_REPO: `${base}/api/plugins`,
    ...extra,
  });
  const script = (name: string, dir: string, extra: Record<string, string> = {}, stack = STACK_DIR) =>
    runScript(join(stack, 'dashboard_server', name), [], env(dir, extra));
  /** A tree with the folder, Grafana and the plugin installed by install.sh. */
  const installed = async () => {
    const dir = await tempDir('cachemon-install-');
    const done = await script('install.sh', dir);
    assert.equal(done.status, 0, done.stderr);
    return dir;
  };
  /** Sets the installed ini's listen address to 127.0.0.1:<port>. */
  const listenOn = (ini: string, port: number) =>
    writeFileSync(
      ini,
      readFileSync(ini, 'utf8')
        .replace(/^http_addr = .*$/m, 'http_addr = 127.0.0.1')
        .replace(/^http_port = .*$/m, `http_port = ${port}`),
    );

  before(async () => {
    tarball = await grafanaTarball();
    zip = await pluginZip('0.6.5');
    // Grafana publishes <tarball>.sha256 holding the bare hash.
    files.set(`/oss/release/${TARBALL}`, tarball);
    files.set(`/oss/release/${TARBALL}.sha256`, Buffer.from(sha256(tarball)));
    files.set(`/bad/release/${TARBALL}`, tarball);
    files.set(`/bad/release/${TARBALL}.sha256`, Buffer.from(`${'1'.repeat(64)}\n`));
    files.set(
      `/api/plugins/${PLUGIN}/versions`,
      Buffer.from(JSON.stringify({ items: [{ version: '0.6.5' }, { version: '0.6.4' }] })),
    );
    files.set(`/api/plugins/${PLUGIN}/versions/0.6.5/download`, zip);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    server = createServer((req, res) => {
      const path = req.url ?? '';
      hits.set(path, hitsOf(path) + 1);
      const body = files.get(path);
      res.statusCode = body ? 200 : 404;
      res.end(body ?? 'not found');
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  });
  after(async () => {
    for (const dir of started) {
      for (const name of ['dashboard_server', 'second']) {
        await runScript(join(dir, 'dashboard_server', 'stop.sh'), [name], env(dir));
      }
    }
    server?.close();
  });

  test('download.sh: the release is verified against its .sha256 and unpacked into DASHBOARD_INSTALL_DIR', async () => {
    const dir = await tempDir('cachemon-install-');
    const done = await script('download.sh', dir);
    assert.equal(done.status, 0, done.stderr);
    assert.match(done.stdout, new RegExp(`verified ${TARBALL.replace(/\./g, '\\.')} \\(sha256 ${sha256(tarball)}\\)`));
    assert.match(done.stdout, new RegExp(`installed Grafana 11\\.2\\.2 in ${dir}/grafana`));
    for (const file of ['bin/grafana', 'conf/defaults.ini', 'public/index.html'])
      assert.ok(existsSync(join(dir, 'grafana', file)), file);
    assert.deepEqual(readdirSync(dir).sort(), ['downloads', 'grafana'], 'no unpacking leftovers');

    // Pinned and matching: fine, and the Grafana home is replaced whole; differing: refused, removed.
    writeFileSync(join(dir, 'grafana', 'stale'), 'from an older release');
    const pinned = await script('download.sh', dir, { DASHBOARD_SERVER_SHA256: sha256(tarball) });
    assert.equal(pinned.status, 0, pinned.stderr);
    assert.equal(existsSync(join(dir, 'grafana', 'stale')), false);
    const wrongPin = await script('download.sh', dir, { DASHBOARD_SERVER_SHA256: 'f'.repeat(64) });
    assert.equal(wrongPin.status, 1);
    assert.match(wrongPin.stderr, /differs from the one pinned in config\.sh/);
    assert.equal(existsSync(join(dir, 'downloads', TARBALL)), false);
  });

  test('a wrong checksum is refused with a clear error and nothing is installed', async () => {
    const dir = await tempDir('cachemon-install-');
    const bad = await script('download.sh', dir, { DASHBOARD_SERVER_URL: `${base}/bad/release` });
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /checksum mismatch \(got [0-9a-f]{64}, the release says 1{64}\); the file was removed/);
    assert.equal(existsSync(join(dir, 'grafana')), false);
    assert.equal(existsSync(join(dir, 'downloads', TARBALL)), false);
    const viaInstall = await script('install.sh', dir, { DASHBOARD_SERVER_URL: `${base}/bad/release` });
    assert.equal(viaInstall.status, 1, 'a bad checksum is not "offline"');
    assert.equal(existsSync(join(dir, 'grafana')), false);
  });

  test('offline: a clear error naming the URL and what to do; a tarball copied into downloads/ is used without network', async () => {
    const dir = await tempDir('cachemon-install-');
    const closed = await freePort();
    const offlineUrl = `http://127.0.0.1:${closed}/oss/release`;
    const offline = await script('download.sh', dir, { DASHBOARD_SERVER_URL: offlineUrl });
    assert.equal(offline.status, 3);
    assert.ok(
      offline.stderr.includes(
        `cannot download ${offlineUrl}/${TARBALL} (its checksum file ${offlineUrl}/${TARBALL}.sha256: curl: (7)`,
      ),
      offline.stderr,
    );
    assert.ok(
      offline.stderr.includes(`Copy ${TARBALL} and ${TARBALL}.sha256 into ${dir}/downloads/ from a machine that can`),
      offline.stderr,
    );
    assert.equal(existsSync(join(dir, 'grafana')), false);

    const viaInstall = await script('install.sh', dir, { DASHBOARD_SERVER_URL: offlineUrl });
    assert.equal(viaInstall.status, 3);
    assert.ok(
      viaInstall.stderr.includes(`run ${dir}/dashboard_server/install.sh when the release can be had`),
      viaInstall.stderr,
    );
    assert.ok(existsSync(join(dir, 'dashboard_server', 'start.sh')), 'the folder is installed anyway');

    // The tarball and Grafana's .sha256 copied in by hand: verified and installed, still offline.
    writeFileSync(join(dir, 'downloads', TARBALL), tarball);
    writeFileSync(join(dir, 'downloads', `${TARBALL}.sha256`), sha256(tarball));
    const copied = await script('download.sh', dir, { DASHBOARD_SERVER_URL: offlineUrl });
    assert.equal(copied.status, 0, copied.stderr);
    assert.ok(existsSync(join(dir, 'grafana', 'bin', 'grafana')));

    // The tarball alone, with the pin in config.sh.
    const pinOnly = await tempDir('cachemon-install-');
    mkdirSync(join(pinOnly, 'downloads'));
    writeFileSync(join(pinOnly, 'downloads', TARBALL), tarball);
    const pinned = await script('download.sh', pinOnly, {
      DASHBOARD_SERVER_URL: offlineUrl,
      DASHBOARD_SERVER_SHA256: sha256(tarball),
    });
    assert.equal(pinned.status, 0, pinned.stderr);
    assert.ok(existsSync(join(pinOnly, 'grafana', 'bin', 'grafana')));

    // The plugin, offline, from its zip copied into downloads/ (grafana cli --pluginUrl <file>).
    writeFileSync(join(dir, 'downloads', `${PLUGIN}-0.6.5.zip`), zip);
    const before = hitsOf(`/api/plugins/${PLUGIN}/versions/0.6.5/download`);
    const plugin = await script('install.sh', dir, {
      DASHBOARD_SERVER_URL: offlineUrl,
      DASHBOARD_PLUGIN_REPO: `http://127.0.0.1:${closed}/api/plugins`,
    });
    assert.equal(plugin.status, 0, plugin.stderr);
    assert.equal(pluginVersion(join(dir, 'dashboard_server', 'plugins', PLUGIN, 'plugin.json')), '0.6.5');
    assert.equal(hitsOf(`/api/plugins/${PLUGIN}/versions/0.6.5/download`), before);
  });

  test('install.sh: Grafana, then the plugin at 0.6.5 through grafana cli; again: nothing fetched, an edited ini kept, shipped dashboards replaced', async () => {
    const stack = await stackCopy({ 'fleet.json': '{"uid":"fleet","version":1}\n', 'old.json': '{"uid":"old"}\n' });
    const dir = await tempDir('cachemon-install-');
    const tree = join(dir, 'dashboard_server');
    const home = join(dir, 'grafana');
    const downloadPath = `/api/plugins/${PLUGIN}/versions/0.6.5/download`;
    const tarballHits = hitsOf(`/oss/release/${TARBALL}`);
    const pluginHits = hitsOf(downloadPath);

    const first = await script('install.sh', dir, {}, stack);
    assert.equal(first.status, 0, first.stderr);
    assert.equal(hitsOf(`/oss/release/${TARBALL}`), tarballHits + 1);
    assert.equal(hitsOf(downloadPath), pluginHits + 1);
    assert.equal(pluginVersion(join(tree, 'plugins', PLUGIN, 'plugin.json')), '0.6.5');
    const calls = readFileSync(join(home, 'calls.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as string[]);
    assert.deepEqual(calls, [
      [
        'cli',
        '--homepath',
        home,
        '--pluginsDir',
        join(tree, 'plugins'),
        '--repo',
        `${base}/api/plugins`,
        'plugins',
        'install',
        PLUGIN,
        '0.6.5',
      ],
    ]);
    for (const file of [
      'start.sh',
      'stop.sh',
      'install.sh',
      'download.sh',
      'conf/dashboard_server.ini',
      'provisioning/datasources/cachemon.yml',
      'provisioning/dashboards/cachemon.yml',
      'dashboards/fleet.json',
      'dashboards/old.json',
    ]) {
      assert.ok(existsSync(join(tree, file)), file);
    }
    for (const folder of ['provisioning/plugins', 'provisioning/alerting', 'data', 'log', 'plugins'])
      assert.ok(existsSync(join(tree, folder)), folder);
    assert.ok(existsSync(join(dir, 'lib', 'daemon.sh')) && existsSync(join(dir, 'config.sh')));

    // The operator edits the ini and a shipped dashboard and drops one of their own; a new generation ships.
    const ini = join(tree, 'conf', 'dashboard_server.ini');
    writeFileSync(ini, readFileSync(ini, 'utf8').replace('http_port = 3000', 'http_port = 3999'));
    writeFileSync(join(tree, 'dashboards', 'fleet.json'), '{"uid":"fleet","edited":true}\n');
    writeFileSync(join(tree, 'dashboards', 'mine.json'), '{"uid":"mine"}\n');
    writeFileSync(join(stack, 'dashboard_server', 'dashboards', 'fleet.json'), '{"uid":"fleet","version":2}\n');
    rmSync(join(stack, 'dashboard_server', 'dashboards', 'old.json'));

    const second = await script('install.sh', dir, {}, stack);
    assert.equal(second.status, 0, second.stderr);
    assert.match(second.stdout, /dashboard_server: using Grafana 11\.2\.2 in /);
    assert.match(second.stdout, /dashboard_server: using simpod-json-datasource 0\.6\.5 in /);
    assert.equal(hitsOf(`/oss/release/${TARBALL}`), tarballHits + 1, 'Grafana is not fetched again');
    assert.equal(hitsOf(downloadPath), pluginHits + 1, 'the plugin is not fetched again');
    assert.match(readFileSync(ini, 'utf8'), /^http_port = 3999$/m);
    assert.match(
      second.stdout,
      /dashboard_server: kept your conf\/dashboard_server\.ini \(the shipped version is conf\/dashboard_server\.ini\.shipped\)/,
    );
    assert.equal(
      readFileSync(`${ini}.shipped`, 'utf8'),
      readFileSync(join(STACK_DIR, 'dashboard_server', 'conf', 'dashboard_server.ini'), 'utf8'),
    );
    assert.equal(readFileSync(join(tree, 'dashboards', 'fleet.json'), 'utf8'), '{"uid":"fleet","version":2}\n');
    assert.deepEqual(readdirSync(join(tree, 'dashboards')).sort(), ['fleet.json'], 'exactly the shipped dashboards');
    assert.match(second.stdout, /removed dashboards\/old\.json \(no longer shipped\)/);

    // Another version of the plugin is replaced by the pinned one; the installed copy of install.sh
    // finds its tree without INSTALL_DIR.
    const pluginJson = join(tree, 'plugins', PLUGIN, 'plugin.json');
    writeFileSync(pluginJson, readFileSync(pluginJson, 'utf8').replace('"0.6.5"', '"0.6.4"'));
    const { INSTALL_DIR: _, ...noInstallDir } = env(dir);
    const fromTree = await runScript(join(tree, 'install.sh'), [], noInstallDir);
    assert.equal(fromTree.status, 0, fromTree.stderr);
    assert.match(fromTree.stdout, new RegExp(`installed ${PLUGIN} 0\\.6\\.5 in ${tree}/plugins`));
    assert.equal(pluginVersion(pluginJson), '0.6.5');
    assert.equal(hitsOf(downloadPath), pluginHits + 2);
    assert.equal(existsSync(join(tree, 'install.sh')), true);
  });

  test('start.sh: grafana server with exactly --homepath, --config conf/<name>.ini, --pidfile and the folder in the env; a taken port refused; stop.sh stops it', async () => {
    const dir = await installed();
    started.push(dir);
    const tree = join(dir, 'dashboard_server');
    const home = join(dir, 'grafana');
    const port = await freePort();
    listenOn(join(tree, 'conf', 'dashboard_server.ini'), port);

    const start = await runScript(join(tree, 'start.sh'), [], env(dir));
    assert.equal(start.status, 0, start.stderr);
    assert.match(start.stdout, /dashboard_server dashboard_server: started \(pid \d+\)/);
    const record = JSON.parse(readFileSync(join(home, 'server-run.json'), 'utf8')) as {
      args: string[];
      dir: string;
      ini: Record<string, string>;
      pid: number;
    };
    assert.deepEqual(record.args, [
      '--homepath',
      home,
      '--config',
      join(tree, 'conf', 'dashboard_server.ini'),
      '--pidfile',
      join(tree, 'run', 'dashboard_server.pid'),
    ]);
    assert.equal(record.dir, tree);
    // The ini's paths, once Grafana substitutes $__env{...}, are the component's folders.
    assert.equal(record.ini['paths.data'], join(tree, 'data'));
    assert.equal(record.ini['paths.logs'], join(tree, 'log'));
    assert.equal(record.ini['paths.plugins'], join(tree, 'plugins'));
    assert.equal(record.ini['paths.provisioning'], join(tree, 'provisioning'));
    assert.equal(readFileSync(join(tree, 'run', 'dashboard_server.pid'), 'utf8').trim(), String(record.pid));
    const answer = await fetch(`http://127.0.0.1:${port}/api/health`);
    assert.equal(answer.status, 200);
    assert.ok(existsSync(join(tree, 'log', 'grafana.log')));

    const again = await runScript(join(tree, 'start.sh'), [], env(dir));
    assert.equal(again.status, 1);
    assert.match(again.stderr, /dashboard_server dashboard_server: already running \(pid \d+\)/);

    // A second instance on a port another process holds: refused, naming the setting to change.
    const taken = createServer();
    const takenPort = await freePort();
    await new Promise<void>((resolve) => taken.listen(takenPort, '127.0.0.1', resolve));
    try {
      cpSync(join(tree, 'conf', 'dashboard_server.ini'), join(tree, 'conf', 'second.ini'));
      listenOn(join(tree, 'conf', 'second.ini'), takenPort);
      const refused = await runScript(join(tree, 'start.sh'), ['second'], env(dir));
      assert.equal(refused.status, 1);
      assert.ok(
        refused.stderr.includes(
          `dashboard_server second: 127.0.0.1:${takenPort} is already in use by another process; change [server] http_port in ${tree}/conf/second.ini`,
        ),
        refused.stderr,
      );
      assert.equal(existsSync(join(tree, 'run', 'second.pid')), false);
    } finally {
      taken.close();
    }

    const stop = await runScript(join(tree, 'stop.sh'), [], env(dir));
    assert.equal(stop.status, 0, stop.stderr);
    assert.match(stop.stdout, new RegExp(`dashboard_server dashboard_server: stopped \\(pid ${record.pid}\\)`));
    assert.equal(existsSync(join(tree, 'run', 'dashboard_server.pid')), false);
    assert.throws(() => process.kill(record.pid, 0), 'the server process is gone');
    const idle = await runScript(join(tree, 'stop.sh'), [], env(dir));
    assert.match(idle.stdout, /not running/);
  });

  test('start.sh without Grafana, or without the plugin, says which command installs it', async () => {
    const dir = await tempDir('cachemon-install-');
    const tree = join(dir, 'dashboard_server');
    const folderOnly = await script('install.sh', dir, { DASHBOARD_SERVER_DOWNLOAD: '0' });
    assert.equal(folderOnly.status, 0, folderOnly.stderr);
    assert.match(folderOnly.stdout, /Grafana and its plugin skipped \(DASHBOARD_SERVER_DOWNLOAD=0\)/);
    listenOn(join(tree, 'conf', 'dashboard_server.ini'), await freePort());

    const noGrafana = await runScript(join(tree, 'start.sh'), [], env(dir));
    assert.equal(noGrafana.status, 1);
    assert.ok(
      noGrafana.stderr.includes(
        `Grafana is not installed (${dir}/grafana/bin/grafana is missing); install it with ${tree}/install.sh`,
      ),
      noGrafana.stderr,
    );

    const grafana = await script('download.sh', dir);
    assert.equal(grafana.status, 0, grafana.stderr);
    const noPlugin = await runScript(join(tree, 'start.sh'), [], env(dir));
    assert.equal(noPlugin.status, 1);
    assert.ok(
      noPlugin.stderr.includes(
        `the JSON datasource plugin simpod-json-datasource is not installed (${tree}/plugins/simpod-json-datasource/plugin.json is missing); install it with ${tree}/install.sh`,
      ),
      noPlugin.stderr,
    );
    assert.equal(existsSync(join(tree, 'run', 'dashboard_server.pid')), false);
  });

  test('the integrated stack/install.sh offline: exit 0, a warning naming the command to run later, the folder installed', async () => {
    const dir = await tempDir('cachemon-install-');
    const closed = await freePort();
    const done = await runScript(
      join(STACK_DIR, 'install.sh'),
      [],
      env(dir, { DASHBOARD_SERVER_URL: `http://127.0.0.1:${closed}/oss/release` }),
    );
    assert.equal(done.status, 0, done.stderr);
    assert.match(done.stderr, /install: WARNING: the dashboard server's Grafana or plugin could not be downloaded/);
    assert.ok(done.stderr.includes(`Run ${dir}/dashboard_server/install.sh`), done.stderr);
    for (const file of [
      'start.sh',
      'stop.sh',
      'install.sh',
      'conf/dashboard_server.ini',
      'provisioning/datasources/cachemon.yml',
      'provisioning/dashboards/cachemon.yml',
    ]) {
      assert.ok(existsSync(join(dir, 'dashboard_server', file)), file);
    }
    assert.match(done.stdout, /install: done\./);
  });
});

describe('dashboard server: the shipped files', () => {
  const shipped = (...parts: string[]) => readFileSync(join(STACK_DIR, 'dashboard_server', ...parts), 'utf8');

  test('conf/dashboard_server.ini: listen address, paths under the folder through $__env, file logs with rotation, no phoning home', () => {
    const text = shipped('conf', 'dashboard_server.ini');
    const ini = readIni(text);
    const folder = '$__env{CACHEMON_DASHBOARD_SERVER_DIR}';
    assert.deepEqual(ini, {
      'server.http_addr': '0.0.0.0',
      'server.http_port': '3000',
      'paths.data': `${folder}/data`,
      'paths.logs': `${folder}/log`,
      'paths.plugins': `${folder}/plugins`,
      'paths.provisioning': `${folder}/provisioning`,
      'log.mode': 'file',
      'log.level': 'info',
      'log.file.log_rotate': 'true',
      'log.file.max_lines': '1000000',
      'log.file.max_size_shift': '28',
      'log.file.daily_rotate': 'true',
      'log.file.max_days': '7',
      'analytics.reporting_enabled': 'false',
      'analytics.check_for_updates': 'false',
      'analytics.check_for_plugin_updates': 'false',
    });
    assert.match(text, /^\[security\]$/m);
    assert.match(text, /^;admin_password =$/m, 'a commented admin_password for operators to set');
    assert.match(text, /SET admin_password/);
    // Every setting is commented.
    const lines = text.split('\n');
    lines.forEach((line, i) => {
      if (/^\w+ = /.test(line)) assert.match(lines[i - 1] ?? '', /^[#;]/, `no comment above: ${line}`);
    });
  });

  test('provisioning: the two datasources with their fixed uids, and the dashboards provider reading the installed dashboards/', () => {
    const datasources = parse(shipped('provisioning', 'datasources', 'cachemon.yml')) as {
      apiVersion: number;
      datasources: Array<Record<string, unknown>>;
    };
    assert.equal(datasources.apiVersion, 1);
    assert.deepEqual(datasources.datasources, [
      {
        name: 'cachemon',
        uid: 'cachemon-query-proxy',
        type: 'prometheus',
        access: 'proxy',
        url: 'http://127.0.0.1:8082',
        isDefault: true,
        editable: false,
        jsonData: { httpMethod: 'POST', timeInterval: '5s', prometheusType: 'Prometheus' },
      },
      {
        name: 'topology',
        uid: 'cachemon-topology',
        type: 'simpod-json-datasource',
        access: 'proxy',
        url: 'http://127.0.0.1:8084',
        editable: false,
      },
    ]);

    const dashboards = parse(shipped('provisioning', 'dashboards', 'cachemon.yml')) as {
      apiVersion: number;
      providers: Array<Record<string, unknown> & { options: { path: string } }>;
    };
    assert.equal(dashboards.apiVersion, 1);
    assert.equal(dashboards.providers.length, 1);
    const provider = dashboards.providers[0]!;
    assert.deepEqual(
      {
        name: provider['name'],
        folder: provider['folder'],
        type: provider['type'],
        disableDeletion: provider['disableDeletion'],
        allowUiUpdates: provider['allowUiUpdates'],
        updateIntervalSeconds: provider['updateIntervalSeconds'],
      },
      {
        name: 'cachemon',
        folder: 'cachemon',
        type: 'file',
        disableDeletion: true,
        allowUiUpdates: false,
        updateIntervalSeconds: 30,
      },
    );
    // Grafana substitutes $VAR / ${VAR} in provisioning files: start.sh sets the folder.
    const tree = '/opt/cachemon/dashboard_server';
    const path = provider.options.path.replace(
      /\$\{(\w+)\}|\$(\w+)/g,
      (_, a: string | undefined, b: string | undefined) =>
        (a ?? b) === 'CACHEMON_DASHBOARD_SERVER_DIR' ? tree : `<unset ${a ?? b}>`,
    );
    assert.equal(path, `${tree}/dashboards`);
    for (const file of ['datasources/cachemon.yml', 'dashboards/cachemon.yml']) {
      assert.doesNotMatch(
        shipped('provisioning', file).replace(/^\s*#.*$/gm, ''),
        /\s\/\w/,
        `${file} holds no absolute path`,
      );
    }
  });

  test('start.sh exports the variable the ini and the provisioning files use', () => {
    assert.match(shipped('start.sh'), /^export CACHEMON_DASHBOARD_SERVER_DIR="\$DIR"$/m);
  });
});
