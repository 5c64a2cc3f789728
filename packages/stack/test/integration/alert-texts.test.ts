import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually, freePort, parseExposition, startZooKeeper, tempDir } from '@cachemon/testkit';
import type { ZooKeeperServer } from '@cachemon/testkit';
import { DEMO_ENSEMBLE, freeStackPorts, startDemo, stopDemo } from '../../src/index.js';
import { demoMails } from '../../src/demo-stack.js';
import type { DemoCluster } from '../../src/demo-stack.js';
import type { StackPorts } from '../../src/index.js';
import { annotationTemplates, assertRendered, mailTexts, webhookAlerts } from '../alert-notifications.js';

/**
 * The demo with minutes shortened to seconds, and every alert its real exporters can raise cheaply
 * fired: a threshold lowered in this tree only, a coordination server without mntr, one that is not
 * there, a host exporter target that is not there, the long-term store stopped. Each alert's text
 * arrives at the webhook (and, when critical, by mail) with the labels its template names.
 * First the demo's own down node: its CacheNodeDown, with the hostname it ran under.
 */
describe('alert texts of the demo, by webhook and mail', () => {
  let dir: string;
  let ports: StackPorts;
  let noMntr: ZooKeeperServer | undefined;
  let cluster: DemoCluster;
  const tree = () => join(dir, 'install');

  before(async () => {
    dir = await tempDir('cachemon-alert-texts-');
    ports = await freeStackPorts();
    const started = await startDemo({
      dir,
      ports,
      webhookPort: await freePort(),
      fast: true,
      quiet: true,
      dashboardServer: false,
    });
    assert.ok(started.ok, started.message);
    cluster = JSON.parse(readFileSync(join(dir, 'cluster.json'), 'utf8')) as DemoCluster;
  });

  after(async () => {
    if (dir) await stopDemo(dir, { quiet: true });
    await noMntr?.stop();
  });

  test("the down node's CacheNodeDown arrives at the webhook and by mail, with its hostname", async () => {
    const down = cluster.down[0]!;
    // The hostname the demo cluster's node ran under, as the cache exporter serves it.
    const metrics = parseExposition(await (await fetch(`http://127.0.0.1:${ports.cache}/metrics`)).text());
    const upOfDown = metrics.find((m) => m.name === 'arcus_up' && m.labels['node'] === down);
    assert.ok(upOfDown, `no arcus_up for ${down}`);
    const hostname = upOfDown.labels['hostname'];
    assert.equal(hostname, 'localhost');
    const summary = `cache node ${down} on ${hostname} (demo-b, ${DEMO_ENSEMBLE}) does not answer`;

    const fired = await eventually(
      () => {
        const found = webhookAlerts(dir).find(
          (a) => a.labels['alertname'] === 'CacheNodeDown' && a.labels['node'] === down && a.status === 'firing',
        );
        assert.ok(found, 'no CacheNodeDown at the webhook yet');
        return found;
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    assert.equal(fired.labels['hostname'], hostname);
    assertRendered(fired, annotationTemplates(tree()).get('CacheNodeDown')!);
    assert.equal(fired.annotations['summary'], summary);
    assert.match(fired.annotations['description']!, new RegExp(`\\(hostname ${hostname}\\)`));

    const mail = await eventually(
      () => {
        const found = mailTexts(dir).find((m) => m.includes(summary));
        assert.ok(found, `${demoMails(dir).length} mails, none with "${summary}"`);
        return found;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    assert.match(mail, /^Subject: .*CacheNodeDown/m);
    assert.match(mail, new RegExp(`hostname ${hostname}\\)`));
    assert.ok(!mail.includes('<no value>'), mail);
  });

  test('every alert the demo can raise cheaply arrives with its labels in its text', async () => {
    // Coordination: a real server without mntr whitelisted, and one that is not there.
    noMntr = await startZooKeeper({ fourLetterWords: ['ruok'] });
    const gone = `127.0.0.1:${await freePort()}`;
    const env = join(tree(), 'coordination_exporter/conf/demo.env');
    writeFileSync(
      env,
      readFileSync(env, 'utf8').replace(/^ZK_SERVERS=\((.*)\)$/m, `ZK_SERVERS=($1 ${noMntr.address} ${gone})`),
    );
    for (const script of ['stop.sh', 'start.sh']) {
      const run = spawnSync('bash', [join(tree(), 'coordination_exporter', script), 'demo'], { encoding: 'utf8' });
      assert.equal(run.status, 0, run.stderr);
    }
    // A host exporter target that is not there.
    const hostTargets = join(tree(), 'short_term_store/conf/exporter/host_exporter.yml');
    const deadHost = `localhost:${await freePort()}`;
    writeFileSync(hostTargets, `${readFileSync(hostTargets, 'utf8')}- targets: ["${deadHost}"]\n`);
    // The long-term store goes away.
    const stopped = spawnSync('bash', [join(tree(), 'short_term_store/stop.sh'), 'long'], { encoding: 'utf8' });
    assert.equal(stopped.status, 0, stopped.stderr);

    // Thresholds every healthy demo crosses, in this tree only, and no waiting (for: 1s).
    const lowered: Record<string, readonly [string, string] | readonly [string, string, string, string]> = {
      // Hit ratio below 2 (always), with more than 0 gets/s (the demo's traffic is a few per second).
      CacheHitRatioLow: [') < 0.5', ') < 2', '> 10', '> 0'],
      CacheEvictions: ['> 100', '>= 0'],
      CacheMemoryNearLimit: ['>= 10', '>= 0'],
      CacheConnectionsNearLimit: ['> 0.8', '>= 0'],
      CacheQosLatencyHigh: ['> 0.05', '>= 0'],
      HostCpuBusy: ['> 0.9', '>= 0'],
      HostMemoryLow: ['< 0.1', '<= 1'],
      HostNetworkErrors: ['> 1', '>= 0'],
      HostTcpRetransmits: ['> 0.05', '>= 0'],
      HostFileDescriptorsNearLimit: ['> 0.8', '>= 0'],
      StoreDiskLow: ['< 10 * 1024 * 1024 * 1024', '>= 0'],
      StoreScrapeErrors: ['> 0.5', '>= 0'],
    };
    const rulesFile = join(tree(), 'rule_evaluator/conf/rules/alerts.yml');
    let rules = readFileSync(rulesFile, 'utf8').replace(/for: \d+[sm]/g, 'for: 1s');
    for (const [alert, edits] of Object.entries(lowered)) {
      const start = rules.indexOf(`- alert: ${alert}\n`);
      assert.ok(start >= 0, alert);
      const end = rules.indexOf('annotations:', start);
      let expr = rules.slice(start, end);
      for (let i = 0; i < edits.length; i += 2) {
        const [from, to] = [edits[i]!, edits[i + 1]!];
        assert.ok(expr.includes(from), `${alert}: its expr no longer has "${from}": ${expr}`);
        expr = expr.replace(from, to);
      }
      rules = rules.slice(0, start) + expr + rules.slice(end);
    }
    writeFileSync(rulesFile, rules);
    assert.equal((await fetch(`http://127.0.0.1:${ports.ruler}/-/reload`, { method: 'POST' })).status, 200);

    const expected = [
      'CacheServiceCodeDegraded',
      ...Object.keys(lowered),
      'CoordinationServerDown',
      'CoordinationMntrNotWhitelisted',
      'ExporterDown',
      'StoreDown',
    ];
    const templates = annotationTemplates(tree());
    const firing = await eventually(
      () => {
        const heard = webhookAlerts(dir).filter((a) => a.status === 'firing');
        const missing = expected.filter((name) => !heard.some((a) => a.labels['alertname'] === name));
        assert.deepEqual(missing, [], `not at the webhook yet: ${missing.join(', ')}`);
        return heard;
      },
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
    for (const alert of firing) assertRendered(alert, templates.get(alert.labels['alertname']!)!);

    const find = (name: string, labels: Record<string, string>) =>
      firing.find((a) => a.labels['alertname'] === name && Object.entries(labels).every(([k, v]) => a.labels[k] === v));
    assert.ok(
      find('CoordinationServerDown', { zk_host: gone, ensemble: 'demo' }),
      'CoordinationServerDown of the gone server',
    );
    assert.ok(find('CoordinationMntrNotWhitelisted', { zk_host: noMntr.address, ensemble: 'demo' }));
    assert.ok(find('ExporterDown', { job: 'system_resource', instance: deadHost }));
    assert.ok(find('StoreDown', { job: 'meta-long', instance: `127.0.0.1:${ports.long}` }));
    assert.ok(find('CacheServiceCodeDegraded', { ensemble: 'demo', service_code: 'demo-b' }));

    // Critical ones go by mail too, with the same text.
    const critical = firing.filter((a) => a.labels['severity'] === 'critical');
    assert.ok(critical.length >= 4);
    await eventually(
      () => {
        const mails = mailTexts(dir);
        const unmailed = critical.filter((a) => !mails.some((m) => m.includes(a.annotations['summary']!)));
        assert.deepEqual(
          unmailed.map((a) => a.annotations['summary']),
          [],
        );
        for (const mail of mails) assert.ok(!mail.includes('<no value>'), mail);
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
  });
});
