import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ArcusDouble, ArcusZk, eventually, freePort, startZooKeeper, tempDir } from '@cachemon/testkit';
import type { ZooKeeperServer } from '@cachemon/testkit';
import { cachemon, configureTree, freeStackPorts, installStack, STACK_DIR, withoutEnsemble } from '@cachemon/stack';
import type { StackPorts } from '@cachemon/stack';
import type { DoctorReport, Finding } from '../../src/doctor/index.js';
import { setJsonc } from '../../src/edits.js';

interface Run extends DoctorReport {
  readonly status: number | null;
}

/**
 * Each condition doctor names, induced for real on one installed tree (the short-term store, the
 * topology provider and one ensemble added with `cachemon ensemble add`; the long-term store and
 * the rule evaluator only where they are needed): the finding comes with its code and fix, and the
 * fix, applied, makes it go.
 */
describe('cachemon doctor: each condition found with its code, and gone after the fix it names', () => {
  let dir: string;
  let zk: ZooKeeperServer;
  let arcus: ArcusZk;
  let node: ArcusDouble;
  const port: Record<string, number> = {};
  const path = (...parts: string[]) => join(dir, ...parts);

  const doctor = async (...args: string[]): Promise<Run> => {
    const result = await cachemon(dir, ['doctor', '--json', ...args]);
    try {
      return { status: result.status, ...(JSON.parse(result.stdout) as DoctorReport) };
    } catch {
      throw new Error(`doctor printed no JSON (exit ${result.status}): ${result.stdout}${result.stderr}`);
    }
  };
  const found = (run: Run, code: string): Finding[] => run.findings.filter((f) => f.code === code);
  const one = (run: Run, code: string): Finding => {
    const mine = found(run, code);
    assert.equal(mine.length, 1, `one ${code} in ${JSON.stringify(run.findings, null, 2)}`);
    return mine[0]!;
  };
  const absent = (run: Run, ...codes: string[]) =>
    assert.deepEqual(
      run.findings.filter((f) => codes.includes(f.code)),
      [],
    );
  /** The reload a fix names (`curl -X POST <url>`), sent. */
  const postFrom = async (fix: string) => {
    const url = /curl -X POST (\S+)/.exec(fix)?.[1];
    assert.ok(url, fix);
    assert.ok((await fetch(url, { method: 'POST' })).ok, `POST ${url}`);
  };
  /** Files a test changed, with their text before: put back after it, whatever it left. */
  const pending = new Map<string, string>();
  const edit = (file: string, change: (text: string) => string) => {
    const before = readFileSync(path(file), 'utf8');
    const after = change(before);
    assert.notEqual(after, before, `${file} changed`);
    if (!pending.has(file)) pending.set(file, before);
    writeFileSync(path(file), after);
    return before;
  };
  const run = async (...args: string[]) => {
    const result = await cachemon(dir, args);
    assert.equal(result.status, 0, result.stdout + result.stderr);
  };

  before(async () => {
    dir = await tempDir('cachemon-doctor-');
    installStack(dir);
    Object.assign(port, await freeStackPorts());
    zk = await startZooKeeper();
    arcus = await ArcusZk.connect(zk.address);
    await arcus.createServiceCode('svc-x');
    node = await ArcusDouble.start();
    await arcus.mapServer(node.address, 'svc-x');
    await node.register(arcus, { hostname: 'localhost' });
    const settings = {
      ports: port as unknown as StackPorts,
      host: '127.0.0.1',
      ensemble: 'zk1',
      zkServers: [zk.address],
      cacheHostname: 'localhost',
      webhookUrl: 'http://127.0.0.1:9/',
    };
    // The scrape jobs as the spec has them, which doctor checks, put back once the ensemble is
    // added: its verification would wait a minute for the first 1m scrape.
    configureTree(dir, settings);
    const specScrape = readFileSync(path('short_term_store/conf/scrape.yml'), 'utf8');
    // Shortened intervals: downsampled series within seconds.
    configureTree(dir, { ...settings, fast: true });
    // The ensemble comes from `cachemon ensemble add`, onto the shipped target files.
    withoutEnsemble(dir, 'zk1', STACK_DIR);
    await run('start', 'short_term_store:short', 'topology_provider');
    port['zk1cache'] = await freePort();
    port['zk1coordination'] = await freePort();
    await run(
      'ensemble',
      'add',
      'zk1',
      '--servers',
      zk.address,
      '--listen-host',
      '127.0.0.1',
      '--cache-port',
      String(port['zk1cache']),
      '--coordination-port',
      String(port['zk1coordination']),
      '--wait',
      '60',
    );
    writeFileSync(path('short_term_store/conf/scrape.yml'), specScrape);
    assert.ok((await fetch(`http://127.0.0.1:${port['short']}/-/reload`, { method: 'POST' })).ok);
  });

  afterEach(async () => {
    for (const [file, text] of pending) if (readFileSync(path(file), 'utf8') !== text) writeFileSync(path(file), text);
    pending.clear();
    await fetch(`http://127.0.0.1:${port['short']}/-/reload`, { method: 'POST' });
    await fetch(`http://127.0.0.1:${port['topology']}/reload/config`, { method: 'POST' });
  });

  after(async () => {
    if (dir) await cachemon(dir, ['stop']);
    await node?.stop();
    await arcus?.close();
    await zk?.stop();
  });

  test('a clean tree: no finding, exit 0; status ends with the count', async () => {
    const text = await cachemon(dir, ['doctor']);
    assert.equal(text.stdout, 'doctor: no findings\n', text.stderr);
    assert.equal(text.status, 0);
    const json = await doctor();
    assert.deepEqual(json, { status: 0, findings: [], errors: 0, warnings: 0, notices: 0 });
    const status = await cachemon(dir, ['status']);
    assert.match(status.stdout, /\n\ndoctor: no findings \(cachemon doctor\)\n$/);
    const unknown = await cachemon(dir, ['doctor', 'zk7']);
    assert.equal(unknown.status, 2);
    assert.match(unknown.stderr, /no ensemble zk7 in .* \(there are: zk1\)/);
  });

  test('both ZK_DOMAIN and ZK_SERVERS: an error; the fix (one line deleted, a restart) clears it', async () => {
    const file = 'coordination_exporter/conf/zk1.env';
    const before = edit(file, (t) => `${t}ZK_DOMAIN=${zk.address}\n`);
    const induced = await doctor('zk1');
    assert.equal(induced.status, 2);
    const both = one(induced, 'CACHEMON_DOCTOR_ZK_DOMAIN_AND_SERVERS');
    assert.deepEqual([both.severity, both.component, both.instance], ['error', 'coordination_exporter', 'zk1']);
    assert.match(both.message, new RegExp(`sets both ZK_DOMAIN=${zk.address} and ZK_SERVERS=\\(${zk.address}\\)`));
    assert.match(
      both.fix,
      /delete the ZK_DOMAIN line from .*zk1\.env.*then cachemon restart coordination_exporter:zk1$/,
    );
    assert.equal(one(induced, 'CACHEMON_DOCTOR_RESTART_NEEDED').fix, 'cachemon restart coordination_exporter:zk1');

    writeFileSync(path(file), before);
    await run('restart', 'coordination_exporter:zk1');
    absent(await doctor('zk1'), 'CACHEMON_DOCTOR_ZK_DOMAIN_AND_SERVERS', 'CACHEMON_DOCTOR_RESTART_NEEDED');
  });

  test('a config edited and not reloaded: a warning (exit 1) with the reload command, gone after it', async () => {
    edit('topology_provider/conf/config.json', (t) => `${t}// edited by hand\n`);
    const induced = await doctor();
    assert.equal(induced.status, 1);
    const edited = one(induced, 'CACHEMON_DOCTOR_CONFIG_NOT_RELOADED');
    assert.equal(edited.component, 'topology_provider');
    assert.match(edited.message, /^edited, not reloaded: .*topology_provider\/conf\/config\.json/);
    assert.match(edited.fix, new RegExp(`^curl -X POST http://127\\.0\\.0\\.1:${port['topology']}/reload/config`));
    await postFrom(edited.fix);
    assert.equal((await doctor()).status, 0);
  });

  test('target files against what runs: a target nothing answers, an exporter not scraped', async () => {
    const closed = await freePort();
    const coordination = 'short_term_store/conf/exporter/coordination_exporter.yml';
    const cache = 'short_term_store/conf/exporter/cache_exporter.yml';
    const coordinationBefore = edit(
      coordination,
      (t) => `${t}- targets: ["127.0.0.1:${closed}"]\n  labels:\n    ensemble: zk9\n`,
    );
    const cacheBefore = edit(cache, () => '[]\n');
    const induced = await doctor();
    assert.equal(induced.status, 2);
    const silent = one(induced, 'CACHEMON_DOCTOR_TARGET_NOT_ANSWERING');
    assert.deepEqual([silent.component, silent.instance], ['coordination_exporter', 'zk9']);
    assert.match(
      silent.message,
      new RegExp(`lists 127\\.0\\.0\\.1:${closed} \\(jobs zookeeper\\), but nothing answers`),
    );
    assert.match(silent.fix, /remove the entry from .*coordination_exporter\.yml and curl -X POST/);
    const unscraped = one(induced, 'CACHEMON_DOCTOR_EXPORTER_NOT_SCRAPED');
    assert.deepEqual([unscraped.component, unscraped.instance], ['cache_exporter', 'zk1']);
    assert.match(
      unscraped.fix,
      new RegExp(`^add - targets: \\["127\\.0\\.0\\.1:${port['zk1cache']}"\\] to .*cache_exporter\\.yml`),
    );

    writeFileSync(path(coordination), coordinationBefore);
    writeFileSync(path(cache), cacheBefore);
    await postFrom(silent.fix);
    absent(await doctor(), 'CACHEMON_DOCTOR_TARGET_NOT_ANSWERING', 'CACHEMON_DOCTOR_EXPORTER_NOT_SCRAPED');
  });

  test('an exporter that does not run and one that runs unhealthy (stopped): named, and fixed as said', async () => {
    await run('stop', 'cache_exporter:zk1');
    const pid = Number(readFileSync(path('coordination_exporter/run/zk1.pid'), 'utf8').trim());
    process.kill(pid, 'SIGSTOP');
    try {
      const induced = await doctor('zk1');
      const down = one(induced, 'CACHEMON_DOCTOR_TARGET_NOT_ANSWERING');
      assert.deepEqual(
        [down.component, down.instance, down.fix],
        ['cache_exporter', 'zk1', 'cachemon start cache_exporter:zk1'],
      );
      const stopped = one(induced, 'CACHEMON_DOCTOR_UNHEALTHY');
      assert.equal(stopped.component, 'coordination_exporter');
      assert.match(stopped.message, new RegExp(`^runs \\(pid ${pid}\\) but is not healthy: .*the process is stopped`));
      assert.equal(stopped.fix, `kill -CONT ${pid}`);
      await run('start', 'cache_exporter:zk1');
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    absent(await doctor('zk1'), 'CACHEMON_DOCTOR_TARGET_NOT_ANSWERING', 'CACHEMON_DOCTOR_UNHEALTHY');
  });

  test("the provider's ensembles against the exporters': each way, and the shipped placeholder", async () => {
    const file = 'topology_provider/conf/config.json';
    edit(file, (t) =>
      setJsonc(
        setJsonc(setJsonc(t, ['ensembleByName', 'zk1'], undefined), ['ensembleByName', 'zk8'], ['127.0.0.1:1']),
        ['ensembleByName', 'example'],
        ['zk1.example.com:2181', 'zk2.example.com:2181'],
      ),
    );
    const induced = await doctor();
    const without = one(induced, 'CACHEMON_DOCTOR_ENSEMBLE_WITHOUT_EXPORTER');
    assert.deepEqual([without.severity, without.component, without.instance], ['error', 'cache_exporter', 'zk8']);
    assert.match(
      without.message,
      /has zk8 \(127\.0\.0\.1:1\), but the tree has no cache exporter .* and no coordination exporter/,
    );
    const placeholder = one(induced, 'CACHEMON_DOCTOR_PLACEHOLDER_ENSEMBLE');
    assert.equal(placeholder.severity, 'warning');
    const missing = found(induced, 'CACHEMON_DOCTOR_ENSEMBLE_NOT_IN_PROVIDER');
    assert.deepEqual(
      missing.map((f) => `${f.component}:${f.instance}`),
      ['cache_exporter:zk1', 'coordination_exporter:zk1'],
    );

    // The fixes: zk8 and the placeholder removed, zk1 added with the servers the fix names.
    const servers = JSON.parse(/add "zk1": (\[[^\]]*\])/.exec(missing[0]!.fix)![1]!) as string[];
    assert.deepEqual(servers, [zk.address]);
    edit(file, (t) =>
      setJsonc(
        setJsonc(setJsonc(t, ['ensembleByName', 'zk8'], undefined), ['ensembleByName', 'example'], undefined),
        ['ensembleByName', 'zk1'],
        servers,
      ),
    );
    await postFrom(missing[0]!.fix);
    assert.deepEqual((await doctor()).findings, []);
  });

  test('two components on one port: an error naming both and the key to change', async () => {
    const file = 'query_proxy/conf/query_proxy.env';
    const before = edit(file, (t) =>
      t.replace(/^PROXY_LISTEN_ADDRESS=.*$/m, `PROXY_LISTEN_ADDRESS=127.0.0.1:${port['short']}`),
    );
    const clash = one(await doctor(), 'CACHEMON_DOCTOR_PORT_CONFLICT');
    assert.equal(clash.component, 'query_proxy');
    assert.match(
      clash.message,
      new RegExp(`^port ${port['short']} is configured for short_term_store:short .* and query_proxy`),
    );
    assert.match(clash.fix, /^give query_proxy a free port: PROXY_LISTEN_ADDRESS in .*query_proxy\.env/);
    writeFileSync(path(file), before);
    absent(await doctor(), 'CACHEMON_DOCTOR_PORT_CONFLICT');
  });

  test('rawRetention against TS_RETENTION_PERIOD, as durations: 2w is 14d, 7d is not', async () => {
    const file = 'topology_provider/conf/config.json';
    const before = edit(file, (t) => t.replace('"rawRetention": "14d"', '"rawRetention": "2w"'));
    try {
      absent(await doctor(), 'CACHEMON_DOCTOR_RETENTION_MISMATCH');
      writeFileSync(path(file), before.replace('"rawRetention": "14d"', '"rawRetention": "7d"'));
      const mismatch = one(await doctor(), 'CACHEMON_DOCTOR_RETENTION_MISMATCH');
      assert.match(
        mismatch.message,
        /^rawRetention is 7d in .*, but the short-term store keeps 14d \(TS_RETENTION_PERIOD in .*short\.env\)/,
      );
      assert.match(mismatch.fix, /^set "rawRetention": "14d" in .*config\.json, then curl -X POST/);
    } finally {
      writeFileSync(path(file), before);
    }
    absent(await doctor(), 'CACHEMON_DOCTOR_RETENTION_MISMATCH', 'CACHEMON_DOCTOR_CONFIG_NOT_RELOADED');
  });

  test("a scrape job of the spec's six changed, another missing: each named", async () => {
    const file = 'short_term_store/conf/scrape.yml';
    const before = edit(file, (t) =>
      t
        .replace(/(job_name: zookeeper\n\s+scrape_interval:) 1m/, '$1 30s')
        .replace(/ {2}- job_name: meta-long\n(?: {4}.*\n| {6}.*\n)+/, ''),
    );
    const induced = await doctor();
    assert.match(
      one(induced, 'CACHEMON_DOCTOR_SCRAPE_JOB_CHANGED').message,
      /job zookeeper .*: scrape_interval 30s \(the spec's 1m\)$/,
    );
    assert.match(one(induced, 'CACHEMON_DOCTOR_SCRAPE_JOB_MISSING').message, /has no job meta-long/);
    writeFileSync(path(file), before);
    absent(await doctor(), 'CACHEMON_DOCTOR_SCRAPE_JOB_CHANGED', 'CACHEMON_DOCTOR_SCRAPE_JOB_MISSING');
  });

  test('rule files vmalert refuses, and an alert router field left to fill: named by file and line', async () => {
    const rules = 'rule_evaluator/conf/rules/alerts.yml';
    const router = 'alert_router/alert_router.yml';
    const rulesBefore = edit(
      rules,
      (t) => `${t}  - name: broken\n    rules:\n      - alert: Broken\n        expr: sum(up\n`,
    );
    const routerBefore = edit(router, (t) => t.replace('"oncall@localhost"', '"<FILL: on-call mail address>"'));
    const induced = await doctor();
    assert.match(
      one(induced, 'CACHEMON_DOCTOR_RULES_INVALID').message,
      /^vmalert's dry run refuses the rule files .*rules\/\*\.yml: /,
    );
    const line = routerBefore.split('\n').findIndex((l) => l.includes('oncall@localhost')) + 1;
    assert.match(
      one(induced, 'CACHEMON_DOCTOR_ALERT_ROUTER_UNFILLED').message,
      new RegExp(`line ${line}: to is still "<FILL: on-call mail address>"`),
    );
    writeFileSync(path(rules), rulesBefore);
    writeFileSync(path(router), routerBefore);
    absent(await doctor(), 'CACHEMON_DOCTOR_RULES_INVALID', 'CACHEMON_DOCTOR_ALERT_ROUTER_UNFILLED');
  });

  test('the long-term store receiving no downsampled series: a warning naming the wrong URL, gone once it is set', async () => {
    const env = 'rule_evaluator/rule_evaluator.env';
    const closed = await freePort();
    edit(env, (t) => t.replace(/^RULER_REMOTEWRITE_URL=.*$/m, `RULER_REMOTEWRITE_URL=http://127.0.0.1:${closed}`));
    await run('start', 'short_term_store:long', 'rule_evaluator');
    try {
      const none = one(await doctor(), 'CACHEMON_DOCTOR_NO_DOWNSAMPLED_SERIES');
      assert.equal(none.severity, 'warning');
      assert.match(
        none.message,
        new RegExp(`RULER_REMOTEWRITE_URL=http://127\\.0\\.0\\.1:${closed} in .* is not the long-term store`),
      );
      const wanted = `RULER_REMOTEWRITE_URL=http://127.0.0.1:${port['long']}`;
      assert.match(
        none.fix,
        new RegExp(`^set ${wanted} in .*rule_evaluator\\.env, then cachemon restart rule_evaluator$`),
      );
      edit(env, (t) => t.replace(/^RULER_REMOTEWRITE_URL=.*$/m, wanted));
      await run('restart', 'rule_evaluator');
      // Gone because the series arrive (a young rule evaluator alone would also silence it).
      await eventually(
        async () => {
          await fetch(`http://127.0.0.1:${port['long']}/internal/force_flush`);
          const query = encodeURIComponent('count({resolution=~"5m|1h"})');
          const body = (await (
            await fetch(`http://127.0.0.1:${port['long']}/api/v1/query?nocache=1&query=${query}`)
          ).json()) as {
            data: { result: Array<{ value: [number, string] }> };
          };
          assert.ok(Number(body.data.result[0]?.value[1] ?? 0) > 0, 'downsampled series in the long-term store');
          absent(await doctor(), 'CACHEMON_DOCTOR_NO_DOWNSAMPLED_SERIES');
        },
        { timeoutMs: 90_000, intervalMs: 2_000 },
      );
    } finally {
      await run('stop', 'rule_evaluator', 'short_term_store:long');
    }
  });

  test('after every fix: clean again', async () => {
    const result = await cachemon(dir, ['doctor']);
    assert.equal(result.stdout, 'doctor: no findings\n');
    assert.equal(result.status, 0);
  });
});
