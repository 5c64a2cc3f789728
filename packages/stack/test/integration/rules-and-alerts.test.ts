import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { eventually, freePort, startSmtpSink, tempDir } from '@cachemon/testkit';
import type { SmtpSink } from '@cachemon/testkit';
import { installTree, queryStore, STACK_DIR } from '../../src/index.js';
import type { InstallTree } from '../../src/index.js';
import { renderDownsamplingRules } from '../../src/downsampling.js';

const RULES_DIR = join(STACK_DIR, 'rule_evaluator', 'conf', 'rules');

describe('rules and the alert router as shipped', () => {
  test("every rule file passes the rule evaluator's own validation", () => {
    const files = readdirSync(RULES_DIR).filter((f) => f.endsWith('.yml'));
    assert.deepEqual(files.sort(), ['alerts.yml', 'downsampling.yml']);
    for (const file of files) {
      const checked = spawnSync('vmalert', [`-rule=${join(RULES_DIR, file)}`, '-dryRun', '-loggerLevel=ERROR'], {
        encoding: 'utf8',
      });
      assert.equal(checked.status, 0, `${file}: ${checked.stderr}`);
    }
    // And a broken rule is caught by the same check.
    const dir = join(STACK_DIR, '..', 'packages', 'stack', 'dist');
    writeFileSync(
      join(dir, 'broken-rule.yml'),
      'groups:\n  - name: x\n    rules:\n      - alert: A\n        expr: sum(up\n',
    );
    assert.notEqual(
      spawnSync('vmalert', [`-rule=${join(dir, 'broken-rule.yml')}`, '-dryRun', '-loggerLevel=ERROR']).status,
      0,
    );
  });

  test('downsampling.yml is what the code generates (npm run rules:generate)', () => {
    assert.equal(readFileSync(join(RULES_DIR, 'downsampling.yml'), 'utf8'), renderDownsamplingRules());
  });

  test('the alert rules cover what operators page on', () => {
    const names = [...readFileSync(join(RULES_DIR, 'alerts.yml'), 'utf8').matchAll(/- alert: (\w+)/g)].map((m) => m[1]);
    for (const name of [
      'CacheNodeDown',
      'CacheServiceCodeDegraded',
      'CacheHitRatioLow',
      'CacheEvictions',
      'CacheMemoryNearLimit',
      'CacheConnectionsNearLimit',
      'CacheQosLatencyHigh',
      'CoordinationServerDown',
      'CoordinationServerNotServing',
      'CoordinationNoLeader',
      'CoordinationMntrNotWhitelisted',
      'ExporterDown',
      'HostCpuBusy',
      'HostMemoryLow',
      'HostDiskBusy',
      'HostNetworkErrors',
      'StoreDown',
    ]) {
      assert.ok(names.includes(name), name);
    }
  });

  test('the alert router refuses to start while fields are unfilled, naming each', async () => {
    const tree = installTree(await tempDir('cachemon-install-'), ['alert_router']);
    const refused = tree.run('alert_router', 'start.sh');
    assert.equal(refused.status, 1);
    assert.match(
      refused.stderr,
      /alert_router\.yml has fields to fill before it can start:\n {2}line 7: smtp_smarthost \(mail server host:port/,
    );
    assert.equal(refused.stderr.match(/^ {2}line \d+: /gm)?.length, 5);
    assert.match(
      readFileSync(join(STACK_DIR, 'alert_router', 'alert_router.env'), 'utf8'),
      /^ALERTROUTER_LISTEN_ADDRESS=0\.0\.0\.0:9093$/m,
    );
    assert.match(
      readFileSync(join(STACK_DIR, 'rule_evaluator', 'rule_evaluator.env'), 'utf8'),
      /^RULER_LISTEN_ADDRESS=:8430$/m,
    );
  });
});

/**
 * Stores, rule evaluator and alert router started by their own scripts: downsampled series land in
 * the long-term store; a cache node going down raises CacheNodeDown through vmalert and
 * Alertmanager to a local webhook, which hears it resolve when the node returns.
 */
describe('rule evaluator and alert router on the real stores', () => {
  let tree: InstallTree;
  let ports: { short: number; long: number; ruler: number; router: number; hook: number };
  let hook: Server;
  let mail: SmtpSink;
  const notifications: Array<{
    status: string;
    alerts: Array<{ status: string; labels: Record<string, string>; annotations: Record<string, string> }>;
  }> = [];
  const short = () => `http://127.0.0.1:${ports.short}`;
  /** The newest sample time imported so far: each import's samples are newer than the last's. */
  let lastImportAt = 0;
  const importNow = async (up: number) => {
    const now = Math.max(Date.now(), lastImportAt + 1);
    lastImportAt = now;
    const lines = [0, 15_000, 30_000].flatMap((ago) => [
      `arcus_up{ensemble="zk1",service_code="svc-a",node="10.0.0.1:11211",hostname="cache-01",scrape="short"} ${up} ${now - ago}`,
      `arcus_up{ensemble="zk1",service_code="svc-a",node="10.0.0.2:11211",hostname="cache-02",scrape="short"} 1 ${now - ago}`,
      `arcus_commands_total{ensemble="zk1",service_code="svc-a",node="10.0.0.2:11211",hostname="cache-02",command="get",scrape="short"} ${1000 + (30_000 - ago)} ${now - ago}`,
    ]);
    await fetch(`${short()}/api/v1/import/prometheus`, { method: 'POST', body: lines.join('\n') });
    await fetch(`${short()}/internal/force_flush`);
  };

  before(async () => {
    tree = installTree(await tempDir('cachemon-install-'), ['short_term_store', 'rule_evaluator', 'alert_router']);
    ports = {
      short: await freePort(),
      long: await freePort(),
      ruler: await freePort(),
      router: await freePort(),
      hook: await freePort(),
    };
    tree.edit('short_term_store/short.env', '0.0.0.0:8428', `127.0.0.1:${ports.short}`);
    tree.edit('short_term_store/short.env', 'TS_PROMSCRAPE_CONFIG=conf/scrape.yml', 'TS_PROMSCRAPE_CONFIG=');
    tree.edit('short_term_store/long.env', '0.0.0.0:8429', `127.0.0.1:${ports.long}`);
    tree.edit('rule_evaluator/rule_evaluator.env', 'http://127.0.0.1:8428', short());
    tree.edit('rule_evaluator/rule_evaluator.env', 'http://127.0.0.1:8429', `http://127.0.0.1:${ports.long}`);
    tree.edit('rule_evaluator/rule_evaluator.env', 'http://127.0.0.1:9093', `http://127.0.0.1:${ports.router}`);
    tree.edit(
      'rule_evaluator/rule_evaluator.env',
      'RULER_LISTEN_ADDRESS=:8430',
      `RULER_LISTEN_ADDRESS=127.0.0.1:${ports.ruler}`,
    );
    // Seconds instead of minutes, so the test sees evaluations, firing and resolving in time.
    tree.edit('rule_evaluator/conf/rules/alerts.yml', /interval: (30s|1m)/g, 'interval: 1s');
    tree.edit(
      'rule_evaluator/conf/rules/alerts.yml',
      'expr: arcus_up == 0\n        for: 1m',
      'expr: arcus_up == 0\n        for: 2s',
    );
    tree.edit('rule_evaluator/conf/rules/downsampling.yml', /interval: (5m|1h)/g, 'interval: 2s');
    tree.edit('alert_router/alert_router.env', '0.0.0.0:9093', `127.0.0.1:${ports.router}`);
    mail = await startSmtpSink();
    const config = readFileSync(tree.path('alert_router/alert_router.yml'), 'utf8')
      .replace(/<FILL: chat webhook URL[^>]*>/g, `http://127.0.0.1:${ports.hook}/hook`)
      .replace(/<FILL: mail server[^>]*>/, mail.address)
      .replace('smtp_require_tls: true', 'smtp_require_tls: false')
      .replace(/<FILL: sender[^>]*>/, 'cachemon@localhost')
      .replace(/<FILL: on-call[^>]*>/, 'oncall@localhost')
      .replace(/group_wait: 30s/, 'group_wait: 1s')
      .replace(/group_interval: 5m/, 'group_interval: 1s');
    writeFileSync(tree.path('alert_router/alert_router.yml'), config);
    hook = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        notifications.push(JSON.parse(body) as (typeof notifications)[number]);
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => hook.listen(ports.hook, '127.0.0.1', resolve));
    for (const [component, script] of [
      ['short_term_store', 'start.sh'],
      ['alert_router', 'start.sh'],
    ] as const) {
      const started = tree.run(component, script);
      assert.equal(started.status, 0, `${component}: ${started.stderr}`);
    }
    await eventually(async () => assert.equal((await fetch(`${short()}/health`)).status, 200));
    await eventually(async () => assert.equal((await fetch(`http://127.0.0.1:${ports.router}/-/ready`)).status, 200));
    await importNow(1);
    const ruler = tree.run('rule_evaluator', 'start.sh');
    assert.equal(ruler.status, 0, ruler.stderr);
  });

  after(async () => {
    tree?.run('rule_evaluator', 'stop.sh');
    tree?.run('alert_router', 'stop.sh');
    tree?.run('short_term_store', 'stop.sh');
    hook?.close();
    await mail?.stop();
  });

  test('downsampled series are written to the long-term store labelled scrape="long"', async () => {
    await eventually(
      async () => {
        const nodes = await queryStore(ports.long, 'service_code:arcus_nodes:count');
        assert.deepEqual(
          nodes
            .map((s) => [
              s.metric['ensemble'],
              s.metric['service_code'],
              s.metric['scrape'],
              s.metric['resolution'],
              s.value[1],
            ])
            .sort(),
          [
            ['zk1', 'svc-a', 'long', '1h', '2'],
            ['zk1', 'svc-a', 'long', '5m', '2'],
          ],
        );
        const perNode = await queryStore(ports.long, 'node:arcus_up:avg');
        assert.equal(perNode.length, 4, 'two nodes at two resolutions');
        assert.ok(perNode.every((s) => s.metric['scrape'] === 'long' && s.metric['hostname'] !== undefined));
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
  });

  test('a cache node going down fires CacheNodeDown to the webhook, and it resolves when the node returns', async () => {
    await importNow(0);
    const firing = await eventually(
      () => {
        const found = notifications
          .flatMap((n) => n.alerts)
          .find((a) => a.labels['alertname'] === 'CacheNodeDown' && a.status === 'firing');
        assert.ok(
          found,
          `notifications so far: ${JSON.stringify(notifications.map((n) => n.alerts.map((a) => `${a.labels['alertname']}:${a.status}`)))}`,
        );
        return found;
      },
      { timeoutMs: 40_000, intervalMs: 250 },
    );
    assert.equal(firing.labels['node'], '10.0.0.1:11211');
    assert.equal(firing.labels['severity'], 'critical');
    const summary = 'cache node 10.0.0.1:11211 on cache-01 (svc-a, zk1) does not answer';
    assert.equal(firing.annotations['summary'], summary);
    assert.match(firing.annotations['description']!, /\(hostname cache-01\)/);
    // Critical: by mail too, with the same text (the mail is HTML, quoted-printable).
    await eventually(
      () =>
        assert.ok(
          mail.mails.some((m) => m.text.includes(summary)),
          `${mail.mails.length} mails`,
        ),
      {
        timeoutMs: 30_000,
        intervalMs: 250,
      },
    );
    const rules = (await (await fetch(`http://127.0.0.1:${ports.ruler}/api/v1/alerts`)).json()) as {
      data: { alerts: Array<{ name: string; state: string }> };
    };
    assert.ok(rules.data.alerts.some((a) => a.name === 'CacheNodeDown' && a.state === 'firing'));

    // The node answers again: samples of 1 newer than the 0s.
    await importNow(1);
    await eventually(
      () =>
        assert.ok(
          notifications
            .flatMap((n) => n.alerts)
            .some((a) => a.labels['alertname'] === 'CacheNodeDown' && a.status === 'resolved'),
        ),
      { timeoutMs: 40_000, intervalMs: 250 },
    );
  });
});
