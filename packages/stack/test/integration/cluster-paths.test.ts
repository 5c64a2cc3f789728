import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually, freePort, ManagedProcess, tempDir } from '@cachemon/testkit';
import { installTree, REPO_ROOT, runScript } from '../../src/index.js';
import type { InstallTree } from '../../src/index.js';
import { applyScaleOut, promxyConfig } from '../../src/scale-out.js';
import { activeTargets, consecutiveFreePorts, startExporterTargets, targetKeys } from '../scrape-targets.js';
import type { ExporterTargets } from '../scrape-targets.js';

type Series = Array<{ metric: Record<string, string>; value: [number, string] }>;

const USER = 'cachemon';
const PASSWORD = 'cluster-secret';
const AUTH = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;

/**
 * The paths of a VictoriaMetrics cluster, /insert/<tenant>/prometheus and
 * /select/<tenant>/prometheus, with single-node stores behind them, as far as Debian's
 * VictoriaMetrics 1.79.5 goes (its cluster binaries are not packaged):
 *   - the tree's short- and long-term stores answer at /select/0/prometheus and /select/1/prometheus
 *     (-http.pathPrefix): they stand for the cluster's vmselect, tenants 0 and 1;
 *   - a vmauth per tenant, -http.pathPrefix=/insert/<tenant>/prometheus, passes /insert/<t>/prometheus/api/v1/write
 *     on to its store's /api/v1/write: the vminsert;
 *   - one vmauth in front, with basic auth, maps /insert/<t>/prometheus/... and
 *     /select/<t>/prometheus/... onto them by url_map src_paths, as a cluster's vmauth does.
 * (This vmauth has no drop_src_path_prefix_parts, so the prefix is dropped by a second vmauth's
 * -http.pathPrefix.) Against it: the collector's shards write through the insert path, the rule
 * evaluator reads through the select path and remote-writes through the insert path of tenant 1,
 * all set from the installer's settings; queries through the select paths and the query proxy's
 * groups at vmselect's paths answer.
 */
describe('a VictoriaMetrics cluster: the stack on /insert and /select paths', () => {
  let tree: InstallTree;
  let dir: string;
  let targets: ExporterTargets;
  const vmauths: ManagedProcess[] = [];
  const port = { short: 0, long: 0, front: 0, insert0: 0, insert1: 0, shard0: 0, ruler: 0, notifier: 0, proxy: 0 };
  const front = (path: string, auth = true) =>
    `http://${auth ? `${USER}:${PASSWORD}@` : ''}127.0.0.1:${port.front}${path}`;
  const sh = (component: string, script: string, ...args: string[]) =>
    runScript(tree.path(component, script), args, { CACHEMON_HOME: REPO_ROOT });

  /** An instant query at a Prometheus API base (after a flush of what the store behind it took). */
  const query = async (base: string, expr: string, headers: Record<string, string> = {}): Promise<Series> => {
    await fetch(`${base}/internal/force_flush`, { headers });
    const response = await fetch(`${base}/api/v1/query`, {
      method: 'POST',
      headers,
      body: new URLSearchParams({ query: expr, nocache: '1' }),
    });
    const body = (await response.json()) as { status: string; data: { result: Series } };
    assert.equal(body.status, 'success', JSON.stringify(body));
    return body.data.result;
  };
  const viaFront = (tenant: number, expr: string) =>
    query(`http://127.0.0.1:${port.front}/select/${tenant}/prometheus`, expr, { Authorization: AUTH });

  const startVmauth = async (name: string, listen: number, config: string, args: string[] = []) => {
    const file = join(dir, `${name}.yml`);
    writeFileSync(file, config);
    const vmauth = new ManagedProcess(
      `vmauth ${name}`,
      'vmauth',
      [`-auth.config=${file}`, `-httpListenAddr=127.0.0.1:${listen}`, '-loggerLevel=WARN', ...args],
      join(dir, `${name}.log`),
      dir,
    );
    vmauths.push(vmauth);
    vmauth.start();
    await eventually(async () => assert.ok((await fetch(`http://127.0.0.1:${listen}/-/healthy`)).status > 0), {
      timeoutMs: 20_000,
    });
  };
  const user = (target: string) =>
    `users:\n  - username: ${USER}\n    password: ${PASSWORD}\n    url_prefix: "${target}"\n`;

  before(async () => {
    tree = installTree(await tempDir('cachemon-cluster-'), [
      'short_term_store',
      'collector',
      'rule_evaluator',
      'query_proxy',
    ]);
    dir = await tempDir('cachemon-vmauth-');
    for (const name of ['short', 'long', 'front', 'insert0', 'insert1', 'ruler', 'notifier', 'proxy'] as const)
      port[name] = await freePort();
    port.shard0 = await consecutiveFreePorts(2);

    // The stores: the cluster's storage, answering at its vmselect's paths.
    tree.edit('short_term_store/short.env', '0.0.0.0:8428', `127.0.0.1:${port.short}`);
    tree.edit('short_term_store/long.env', '0.0.0.0:8429', `127.0.0.1:${port.long}`);
    for (const [env, tenant] of [
      ['short', 0],
      ['long', 1],
    ] as const)
      writeFileSync(
        tree.path(`short_term_store/${env}.env`),
        `${readFileSync(tree.path(`short_term_store/${env}.env`), 'utf8')}TS_EXTRA_FLAGS="-http.pathPrefix=/select/${tenant}/prometheus -search.latencyOffset=1s"\n`,
      );
    // The cluster's vminsert per tenant, and the vmauth in front of it all.
    await startVmauth('insert0', port.insert0, user(`http://127.0.0.1:${port.short}/select/0/prometheus`), [
      '-http.pathPrefix=/insert/0/prometheus',
    ]);
    await startVmauth('insert1', port.insert1, user(`http://127.0.0.1:${port.long}/select/1/prometheus`), [
      '-http.pathPrefix=/insert/1/prometheus',
    ]);
    await startVmauth(
      'front',
      port.front,
      `users:
  - username: ${USER}
    password: ${PASSWORD}
    url_map:
      - src_paths: ["/insert/0/prometheus/.*"]
        url_prefix: "http://127.0.0.1:${port.insert0}"
      - src_paths: ["/insert/1/prometheus/.*"]
        url_prefix: "http://127.0.0.1:${port.insert1}"
      - src_paths: ["/select/0/prometheus/.*"]
        url_prefix: "http://127.0.0.1:${port.short}"
      - src_paths: ["/select/1/prometheus/.*"]
        url_prefix: "http://127.0.0.1:${port.long}"
`,
    );

    // Scrape jobs as shipped, the 1m ones every 5 s so the test sees them within seconds.
    tree.edit(
      'short_term_store/conf/scrape.yml',
      /scrape_interval: 1m\n( {4}scrape_timeout: 50s\n)?/g,
      'scrape_interval: 5s\n    scrape_timeout: 4s\n',
    );
    tree.edit('short_term_store/conf/scrape.yml', '127.0.0.1:8428', `127.0.0.1:${port.short}`);
    tree.edit('short_term_store/conf/scrape.yml', '127.0.0.1:8429', `127.0.0.1:${port.long}`);
    tree.edit('collector/collector.env', '0.0.0.0:8440', `127.0.0.1:${port.shard0}`);
    targets = await startExporterTargets({ cache: 4, coordination: 1, host: 2 });
    targets.writeTargetFiles(tree.dir);

    // The rule evaluator: one downsampling rule, every 2 s; an alert router nobody listens on.
    for (const file of ['alerts.yml', 'downsampling.yml']) rmSync(tree.path('rule_evaluator/conf/rules', file));
    writeFileSync(
      tree.path('rule_evaluator/conf/rules/cluster.yml'),
      `groups:
  - name: downsample_5m
    interval: 2s
    rules:
      - record: service_code:arcus_nodes:count
        expr: count by (service_code) (arcus_up)
        labels:
          scrape: long
          resolution: 5m
`,
    );
    tree.edit('rule_evaluator/rule_evaluator.env', 'http://127.0.0.1:9093', `http://127.0.0.1:${port.notifier}`);
    tree.edit(
      'rule_evaluator/rule_evaluator.env',
      'RULER_LISTEN_ADDRESS=:8430',
      `RULER_LISTEN_ADDRESS=127.0.0.1:${port.ruler}`,
    );
    tree.edit(
      'query_proxy/conf/query_proxy.env',
      'PROXY_LISTEN_ADDRESS=:8082',
      `PROXY_LISTEN_ADDRESS=127.0.0.1:${port.proxy}`,
    );
  });

  after(async () => {
    if (tree)
      for (const component of ['query_proxy', 'rule_evaluator', 'collector', 'short_term_store'])
        await sh(component, 'stop.sh');
    for (const vmauth of vmauths) await vmauth.stop();
    await targets?.close();
  });

  test("the installer's settings point the shards and the rule evaluator at the cluster's paths", () => {
    const applied = applyScaleOut(tree.dir, {
      STORE_SHARDS: '2',
      STORE_WRITE_URL: front('/insert/0/prometheus/api/v1/write'),
      STORE_QUERY_URL: front('/select/0/prometheus'),
      LONG_STORE_WRITE_URL: front('/insert/1/prometheus/api/v1/write'),
      LONG_STORE_QUERY_URL: front('/select/1/prometheus'),
    });
    assert.deepEqual(applied.slice(0, 2), [
      'collector/collector.env: STORE_SHARDS, STORE_WRITE_URL set from config.sh',
      'rule_evaluator/rule_evaluator.env: RULER_DATASOURCE_URL, RULER_REMOTEWRITE_URL set from config.sh',
    ]);
    // The query proxy sends no credentials: its groups are left for vmselect nodes that take none.
    assert.match(applied[2]!, /scrape=short group left as it is: STORE_QUERY_URL: it carries credentials/);
    assert.match(applied[3]!, /scrape=long group left as it is: LONG_STORE_QUERY_URL: it carries credentials/);
    assert.equal(applied.length, 4);
    assert.ok(
      applied.every((line) => !line.includes(PASSWORD)),
      'no password printed',
    );
    const ruler = readFileSync(tree.path('rule_evaluator/rule_evaluator.env'), 'utf8');
    assert.match(ruler, new RegExp(`^RULER_DATASOURCE_URL=${front('/select/0/prometheus')}$`, 'm'));
    assert.match(ruler, new RegExp(`^RULER_REMOTEWRITE_URL=${front('/insert/1/prometheus')}$`, 'm'));
  });

  test("the shards write through the insert path; a query through the select path answers with every target's series", async () => {
    const stores = await sh('short_term_store', 'start.sh');
    assert.equal(stores.status, 0, stores.stderr);
    assert.match(stores.stdout, /store short: the collector's shards scrape conf\/scrape\.yml/);
    const started = await sh('collector', 'start.sh');
    assert.equal(started.status, 0, started.stderr);
    const every = [
      ...targets.expected,
      `meta-long 127.0.0.1:${port.long}`,
      `meta-short 127.0.0.1:${port.short}`,
    ].sort();
    await eventually(async () => {
      const parts = [
        await activeTargets(`127.0.0.1:${port.shard0}`),
        await activeTargets(`127.0.0.1:${port.shard0 + 1}`),
      ];
      assert.deepEqual([...targetKeys(parts[0]!), ...targetKeys(parts[1]!)].sort(), every);
    });
    const exporters = targets.expected.filter((t) => !t.startsWith('meta-'));
    await eventually(
      async () =>
        assert.deepEqual(
          (await viaFront(0, 'up{scrape="short"} == 1'))
            .map((s) => `${s.metric['job']} ${s.metric['instance']}`)
            .sort(),
          exporters,
        ),
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    const sent = await (await fetch(`http://127.0.0.1:${port.insert0}/insert/0/prometheus/metrics`)).text();
    assert.match(
      sent,
      /^vmauth_user_requests_total\{username="cachemon"\} [1-9]\d*$/m,
      "writes came through tenant 0's vminsert",
    );
    // The select path takes only what a cluster's vmauth lets through.
    const anonymous = await fetch(`http://127.0.0.1:${port.front}/select/0/prometheus/api/v1/query?query=up`);
    assert.equal(anonymous.status, 401);
  });

  test('the rule evaluator reads through the select path and writes its series through the insert path of tenant 1', async () => {
    const started = await sh('rule_evaluator', 'start.sh');
    assert.equal(started.status, 0, started.stderr);
    await eventually(
      async () => {
        const downsampled = await viaFront(1, 'service_code:arcus_nodes:count');
        assert.deepEqual(
          downsampled.map((s) => [s.metric['service_code'], s.metric['scrape'], s.metric['resolution'], s.value[1]]),
          [['svc', 'long', '5m', String(targets.cache.length)]],
        );
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    const sent = await (await fetch(`http://127.0.0.1:${port.insert1}/insert/1/prometheus/metrics`)).text();
    assert.match(
      sent,
      /^vmauth_user_requests_total\{username="cachemon"\} [1-9]\d*$/m,
      "writes came through tenant 1's vminsert",
    );
    assert.deepEqual(
      await query(`http://127.0.0.1:${port.short}/select/0/prometheus`, 'service_code:arcus_nodes:count'),
      [],
      'tenant 0 has none',
    );
  });

  test("the query proxy's groups at vmselect's paths answer both terms", async () => {
    // By hand, as docs/scaling.md says for vmselect nodes: the stores' select paths, any one answering.
    const file = tree.path('query_proxy/conf/promxy.yml');
    const { text, notes } = promxyConfig(readFileSync(file, 'utf8'), {
      queryUrl: `http://127.0.0.1:${port.short}/select/0/prometheus`,
      longQueryUrl: `http://127.0.0.1:${port.long}/select/1/prometheus`,
    });
    assert.deepEqual(notes, []);
    writeFileSync(file, text);
    const started = await sh('query_proxy', 'start.sh');
    assert.equal(started.status, 0, started.stderr);
    const proxy = `http://127.0.0.1:${port.proxy}`;
    assert.deepEqual(
      (await query(proxy, 'arcus_up{scrape="short"}')).map((s) => s.metric['instance']).sort(),
      [...targets.cache].sort(),
    );
    assert.deepEqual(
      (await query(proxy, 'service_code:arcus_nodes:count{scrape="long"}')).map((s) => s.value[1]),
      [String(targets.cache.length)],
    );
  });

  test('a rule evaluator URL given with the API path is refused, naming the base to give', async () => {
    const env = tree.path('rule_evaluator/rule_evaluator.env');
    const before = readFileSync(env, 'utf8');
    try {
      writeFileSync(
        env,
        before.replace(
          /^RULER_REMOTEWRITE_URL=.*$/m,
          'RULER_REMOTEWRITE_URL=http://vminsert:8480/insert/1/prometheus/api/v1/write',
        ),
      );
      assert.equal((await sh('rule_evaluator', 'stop.sh')).status, 0);
      const refused = await sh('rule_evaluator', 'start.sh');
      assert.equal(refused.status, 1);
      assert.match(
        refused.stderr,
        /RULER_REMOTEWRITE_URL=\S+: give the store's base, without \/api\/v1\/write \(vmalert adds the API path itself\): RULER_REMOTEWRITE_URL=http:\/\/vminsert:8480\/insert\/1\/prometheus$/m,
      );
    } finally {
      writeFileSync(env, before);
    }
  });
});
