import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, tempDir } from '@cachemon/testkit';
import { STACK_DIR } from '../../src/index.js';

/** The off-the-shelf programs, the Debian packages holding them, and where else they might be. */
const PROGRAMS = [
  'victoria-metrics',
  'vmalert',
  'prometheus-alertmanager',
  'alertmanager',
  'prometheus-node-exporter',
  'node_exporter',
];
const APT_LINE = 'DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends';

/**
 * A machine without the off-the-shelf programs' packages, and offline: PATH holds the system's
 * tools minus those programs (links), a fake `apt-get` that records its calls and, when told to
 * succeed, "installs" a package by putting stand-ins of its executables on PATH, a fake
 * `dpkg-query` that knows what it installed, and a fake `id` (the tests' user may be root).
 */
async function sandbox(options: { uid: number; apt: 'ok' | 'fail' }) {
  const dir = await tempDir('cachemon-apt-');
  const links = join(dir, 'links');
  const fakes = join(dir, 'fakes');
  const installed = join(dir, 'installed');
  for (const d of [links, fakes, installed]) mkdirSync(d);
  const skip = new Set([...PROGRAMS, 'apt-get', 'dpkg-query', 'id']);
  for (const from of ['/usr/local/bin', '/usr/bin', '/usr/sbin']) {
    if (!existsSync(from)) continue;
    for (const name of readdirSync(from)) {
      if (skip.has(name) || existsSync(join(links, name))) continue;
      symlinkSync(join(from, name), join(links, name));
    }
  }
  const log = join(dir, 'apt.log');
  writeFileSync(log, '');
  const script = (name: string, body: string) => {
    writeFileSync(join(fakes, name), `#!/bin/sh\n${body}`);
    chmodSync(join(fakes, name), 0o755);
  };
  script(
    'apt-get',
    `echo "DEBIAN_FRONTEND=$DEBIAN_FRONTEND apt-get $*" >> ${log}
[ "$1" = update ] && exit 0
${options.apt === 'fail' ? 'echo "E: Unable to locate package $*" >&2; exit 100' : ''}
for p in "$@"; do
  case "$p" in
    victoria-metrics) exes="victoria-metrics vmalert" ;;
    prometheus-alertmanager) exes=prometheus-alertmanager ;;
    prometheus-node-exporter) exes=prometheus-node-exporter ;;
    *) continue ;;
  esac
  for e in $exes; do printf '#!/bin/sh\\necho %s from the package\\n' "$e" > ${installed}/$e; chmod 755 ${installed}/$e; done
  touch ${installed}/.pkg-$p
done
`,
  );
  script(
    'dpkg-query',
    `for last in "$@"; do :; done
[ -e ${installed}/.pkg-$last ] && printf installed && exit 0
exit 1
`,
  );
  script('id', `[ "$1" = -u ] && echo ${options.uid} && exit 0\nexec /usr/bin/id "$@"\n`);
  const closed = await freePort();
  const offline = `http://127.0.0.1:${closed}`;
  const env = {
    PATH: `${fakes}:${installed}:${links}`,
    HOME: dir,
    ARCH: 'amd64',
    VICTORIA_METRICS_URL: `${offline}/vm`,
    ALERTMANAGER_URL: `${offline}/am`,
    NODE_EXPORTER_URL: `${offline}/ne`,
    DASHBOARD_SERVER_DOWNLOAD: '0',
    INSTALL_DIR: join(dir, 'tree'),
  };
  const run = (script: string, extra: Record<string, string> = {}) =>
    spawnSync('bash', [join(STACK_DIR, script)], { encoding: 'utf8', env: { ...env, ...extra }, timeout: 120_000 });
  return {
    dir,
    path: env.PATH,
    tree: env.INSTALL_DIR,
    offline,
    run,
    aptCalls: () => readFileSync(log, 'utf8').split('\n').filter(Boolean),
  };
}

describe('install.sh without the Debian packages, offline', () => {
  test('as root with apt-get: the missing packages in one apt-get line, then the Debian builds and their UI note', async () => {
    const box = await sandbox({ uid: 0, apt: 'ok' });
    const done = box.run('install.sh');
    assert.equal(done.status, 0, `${done.stdout}\n${done.stderr}`);
    const packages = 'victoria-metrics prometheus-alertmanager prometheus-node-exporter';
    assert.deepEqual(box.aptCalls(), [
      `DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${packages}`,
    ]);
    assert.match(
      done.stdout,
      new RegExp(
        `^install: installing the Debian packages ${packages} \\(${APT_LINE} ${packages}; APT_INSTALL=0 in config\\.sh turns this off\\)$`,
        'm',
      ),
    );
    for (const [component, exe] of [
      ['short_term_store', 'victoria-metrics'],
      ['rule_evaluator', 'vmalert'],
      ['alert_router', 'prometheus-alertmanager'],
      ['host_exporter', 'prometheus-node-exporter'],
    ]) {
      assert.match(
        done.stdout,
        new RegExp(`^${component}: using the system's ${join(box.dir, 'installed', exe!)}$`, 'm'),
      );
    }
    assert.doesNotMatch(`${done.stdout}${done.stderr}`, /cannot download/);
    // Once, at the end: the UIs Debian's builds leave out, and how to get them.
    const note = done.stdout.slice(done.stdout.indexOf("install: Debian's builds leave out these web UIs"));
    assert.ok(note.length < done.stdout.length, done.stdout);
    assert.equal(done.stdout.split("Debian's builds leave out").length, 2);
    for (const line of [
      /vmui, the query UI at \/vmui/,
      /rule evaluator \(Debian's vmalert\): its web UI's static files/,
      /alert router \(Debian's prometheus-alertmanager\): no web app/,
      new RegExp(`INSTALL_DIR=${box.tree} ${box.tree}/short_term_store/download\\.sh`),
      new RegExp(`INSTALL_DIR=${box.tree} ${box.tree}/alert_router/download\\.sh`),
      /cachemon restart short_term_store rule_evaluator alert_router/,
      /CACHEMON_FORCE_DOWNLOAD=1 INSTALL_DIR=.* stack\/install\.sh/,
    ])
      assert.match(note, line);
    assert.match(note, /\ninstall: done\./);
  });

  test('not root: no apt-get; the error names the apt-get line to run and the download alternative', async () => {
    const box = await sandbox({ uid: 1000, apt: 'ok' });
    const failed = box.run('host_exporter/install.sh');
    assert.notEqual(failed.status, 0);
    assert.deepEqual(box.aptCalls(), []);
    assert.match(
      failed.stdout,
      new RegExp(
        `^host_exporter: not root, so not installing the Debian packages prometheus-node-exporter \\(as root: ${APT_LINE} prometheus-node-exporter\\)$`,
        'm',
      ),
    );
    assert.match(
      failed.stderr,
      new RegExp(
        `cannot download ${box.offline}/ne/node_exporter-1\\.5\\.0\\.linux-amd64\\.tar\\.gz: .*\\n` +
          '  This machine cannot reach the release site\\. Install the system package instead, or copy\\n' +
          `  the file into ${box.tree}/downloads/ from a machine that can and run this again\\.\\n` +
          `  The system package, as root: ${APT_LINE} prometheus-node-exporter\\n`,
      ),
    );
  });

  test('as root, apt-get failing (after an update): said, then the download, whose error names the line', async () => {
    const box = await sandbox({ uid: 0, apt: 'fail' });
    const failed = box.run('alert_router/install.sh');
    assert.notEqual(failed.status, 0);
    assert.deepEqual(box.aptCalls(), [
      `${APT_LINE} prometheus-alertmanager`,
      'DEBIAN_FRONTEND= apt-get update -qq',
      `${APT_LINE} prometheus-alertmanager`,
    ]);
    assert.match(failed.stderr, /E: Unable to locate package/);
    assert.match(
      failed.stderr,
      /alert_router: apt-get could not install prometheus-alertmanager; the pinned releases are downloaded instead/,
    );
    assert.match(failed.stderr, /cannot download .*alertmanager-0\.25\.0\.linux-amd64\.tar\.gz/);
    assert.match(failed.stderr, new RegExp(`The system package, as root: ${APT_LINE} prometheus-alertmanager`));
  });

  test('APT_INSTALL=0: apt-get is never run, the releases are downloaded', async () => {
    const box = await sandbox({ uid: 0, apt: 'ok' });
    const failed = box.run('short_term_store/install.sh', { APT_INSTALL: '0' });
    assert.notEqual(failed.status, 0);
    assert.deepEqual(box.aptCalls(), []);
    assert.match(failed.stderr, /cannot download .*victoria-metrics-linux-amd64-v1\.79\.5\.tar\.gz/);
    assert.match(failed.stderr, new RegExp(`The system package, as root: ${APT_LINE} victoria-metrics`));
  });

  test('the UI note names only the components still on a Debian build', async () => {
    const box = await sandbox({ uid: 0, apt: 'ok' });
    const installedAll = box.run('install.sh');
    assert.equal(installedAll.status, 0, installedAll.stderr);
    // The store's release program in the tree's bin/: the start script prefers it.
    writeFileSync(join(box.tree, 'bin', 'victoria-metrics'), '#!/bin/sh\n', { mode: 0o755 });
    // As another program (the demo) prints it: the installed tree's own lib/.
    const debianUisNote = () =>
      spawnSync(
        'bash',
        ['-c', '. "$1/lib/download.sh"; . "$1/lib/debian-uis.sh"; debian_uis_note "$1"', '_', box.tree],
        {
          encoding: 'utf8',
          env: { PATH: box.path },
        },
      );
    const note = debianUisNote();
    assert.equal(note.status, 0, note.stderr);
    assert.doesNotMatch(note.stdout, /vmui/);
    assert.match(note.stdout, /rule evaluator/);
    assert.match(note.stdout, /cachemon restart rule_evaluator alert_router\n/);
    // No Debian build in use: nothing.
    writeFileSync(join(box.tree, 'bin', 'vmalert'), '#!/bin/sh\n', { mode: 0o755 });
    writeFileSync(join(box.tree, 'bin', 'alertmanager'), '#!/bin/sh\n', { mode: 0o755 });
    const none = debianUisNote();
    assert.equal(none.stdout, '');
  });
});
