/** The operator's edits of a freshly installed tree for one ensemble, as docs/operations.md describes them. */
import { copyFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface StackPorts {
  readonly short: number;
  readonly long: number;
  readonly ruler: number;
  readonly router: number;
  readonly cache: number;
  readonly coordination: number;
  readonly host: number;
  readonly topology: number;
  readonly proxy: number;
}

/** The shipped ports. */
export const SHIPPED_PORTS: StackPorts = {
  short: 8428,
  long: 8429,
  ruler: 8430,
  router: 9093,
  cache: 9151,
  coordination: 9141,
  host: 9100,
  topology: 8084,
  proxy: 8082,
};

export interface TreeSettings {
  readonly ports: StackPorts;
  /** Listen host of every component. */
  readonly host: string;
  readonly ensemble: string;
  readonly zkServers: readonly string[];
  /** The name cache machines are scraped by (their registered hostname). */
  readonly cacheHostname: string;
  /** Where the alert router sends notifications. */
  readonly webhookUrl: string;
  /** The alert router's mail server, host:port, spoken to without TLS (default 127.0.0.1:25). */
  readonly mailSmarthost?: string;
  /** Minutes become seconds: scrape, evaluation and notification intervals (tests). */
  readonly fast?: boolean;
}

/** Sets `NAME=value` in an env file's text: the line replaced if there is one, else added. */
function setEnv(text: string, name: string, value: string): string {
  const line = new RegExp(`^${name}=.*$`, 'm');
  return line.test(text) ? text.replace(line, `${name}=${value}`) : `${text.trimEnd()}\n${name}=${value}\n`;
}

/** Rewrites a file; every change is idempotent, so configuring a configured tree again is safe. */
function edit(dir: string, file: string, change: (text: string) => string): void {
  const path = join(dir, file);
  writeFileSync(path, change(readFileSync(path, 'utf8')));
}

/** The first targets list after `job_name: <job>` (or after `<marker>`), set to one target. */
function setTargetsAfter(text: string, marker: string, target: string): string {
  return text.replace(new RegExp(`(${marker}[\\s\\S]*?targets: \\[")[^"]*`), `$1${target}`);
}

export function configureTree(dir: string, s: TreeSettings): void {
  const { ports: p, host } = s;
  const url = (port: number) => `http://127.0.0.1:${port}`;
  writeFileSync(
    join(dir, `cache_exporter/conf/${s.ensemble}.json`),
    JSON.stringify(
      {
        listen: `${host}:${p.cache}`,
        ensembleByName: { [s.ensemble]: s.zkServers },
        log: { level: 'info', filename: `log/${s.ensemble}.log` },
      },
      null,
      2,
    ),
  );
  writeFileSync(
    join(dir, `coordination_exporter/conf/${s.ensemble}.env`),
    `LISTEN_PORT=${p.coordination}\nZK_SERVERS=(${s.zkServers.join(' ')})\nCOORDINATION_EXPORTER_FLAGS="--listen=${host}:${p.coordination}"\n`,
  );
  edit(dir, 'host_exporter/host_exporter.env', (t) =>
    t.replace(/HOST_EXPORTER_LISTEN_ADDRESS=.*/, `HOST_EXPORTER_LISTEN_ADDRESS=${host}:${p.host}`),
  );
  // Fast: queries see samples 1 s old instead of 30 s (the store's -search.latencyOffset), or an
  // alert and the downsampled series would each wait half a minute for data scraped seconds ago.
  const storeFlags = (t: string) => (s.fast ? setEnv(t, 'TS_EXTRA_FLAGS', '-search.latencyOffset=1s') : t);
  edit(dir, 'short_term_store/short.env', (t) =>
    storeFlags(t.replace(/TS_LISTEN_ADDRESS=.*/, `TS_LISTEN_ADDRESS=${host}:${p.short}`)),
  );
  edit(dir, 'short_term_store/long.env', (t) =>
    storeFlags(t.replace(/TS_LISTEN_ADDRESS=.*/, `TS_LISTEN_ADDRESS=${host}:${p.long}`)),
  );
  edit(dir, 'short_term_store/conf/scrape.yml', (t) => {
    const targets = setTargetsAfter(
      setTargetsAfter(t, 'job_name: meta-short', `127.0.0.1:${p.short}`),
      'job_name: meta-long',
      `127.0.0.1:${p.long}`,
    );
    return s.fast
      ? targets
          .replace(/scrape_interval: 1m/g, 'scrape_interval: 5s')
          .replace(/scrape_timeout: 50s/g, 'scrape_timeout: 4s')
      : targets;
  });
  writeFileSync(
    join(dir, 'short_term_store/conf/exporter/cache_exporter.yml'),
    `- targets: ["127.0.0.1:${p.cache}"]\n`,
  );
  writeFileSync(
    join(dir, 'short_term_store/conf/exporter/coordination_exporter.yml'),
    `- targets: ["127.0.0.1:${p.coordination}"]\n  labels:\n    ensemble: ${s.ensemble}\n`,
  );
  writeFileSync(
    join(dir, 'short_term_store/conf/exporter/host_exporter.yml'),
    `- targets: ["${s.cacheHostname}:${p.host}"]\n  labels:\n    group: host\n`,
  );
  edit(dir, 'rule_evaluator/rule_evaluator.env', (t) =>
    t
      .replace(/RULER_DATASOURCE_URL=.*/, `RULER_DATASOURCE_URL=${url(p.short)}`)
      .replace(/RULER_REMOTEWRITE_URL=.*/, `RULER_REMOTEWRITE_URL=${url(p.long)}`)
      .replace(/RULER_NOTIFIER_URL=.*/, `RULER_NOTIFIER_URL=${url(p.router)}`)
      .replace(/RULER_LISTEN_ADDRESS=.*/, `RULER_LISTEN_ADDRESS=${host}:${p.ruler}`),
  );
  if (s.fast) {
    edit(dir, 'rule_evaluator/conf/rules/alerts.yml', (t) =>
      t
        .replace(/interval: (30s|1m)/g, 'interval: 1s')
        .replace('expr: arcus_up == 0\n        for: 1m', 'expr: arcus_up == 0\n        for: 2s'),
    );
    edit(dir, 'rule_evaluator/conf/rules/downsampling.yml', (t) => t.replace(/interval: (5m|1h)/g, 'interval: 5s'));
  }
  edit(dir, 'alert_router/alert_router.env', (t) =>
    t.replace(/ALERTROUTER_LISTEN_ADDRESS=.*/, `ALERTROUTER_LISTEN_ADDRESS=${host}:${p.router}`),
  );
  edit(dir, 'alert_router/alert_router.yml', (t) => {
    // The smarthost and TLS lines are set on every run (not only while unfilled): a mail server
    // on a new port, as the demo's, takes effect on the next start.
    const filled = t
      .replace(/<FILL: chat webhook URL[^>]*>/g, s.webhookUrl)
      .replace(/^( *smtp_smarthost: ).*$/m, `$1"${s.mailSmarthost ?? '127.0.0.1:25'}"`)
      .replace(/^( *smtp_require_tls: ).*$/m, '$1false')
      .replace(/<FILL: sender[^>]*>/, 'cachemon@localhost')
      .replace(/<FILL: on-call[^>]*>/, 'oncall@localhost');
    return s.fast
      ? filled.replace('group_wait: 30s', 'group_wait: 1s').replace('group_interval: 5m', 'group_interval: 1s')
      : filled;
  });
  edit(dir, 'topology_provider/conf/config.json', (t) =>
    t.replace(/"listen": "[^"]*"/, `"listen": "${host}:${p.topology}"`),
  );
  // host_instances answers <hostname>:<port> of the host exporters, as host_exporter.yml lists them.
  edit(dir, 'topology_provider/conf/topology_provider.env', (t) =>
    t.replace(/^TOPOLOGY_PROVIDER_FLAGS=.*/m, `TOPOLOGY_PROVIDER_FLAGS="-host-exporter-port=${p.host}"`),
  );
  // The dashboard server's datasources: the query proxy and the topology provider.
  edit(dir, 'dashboard_server/provisioning/datasources/cachemon.yml', (t) =>
    t
      .replace(/(uid: cachemon-query-proxy[\s\S]*?url: )\S+/, `$1${url(p.proxy)}`)
      .replace(/(uid: cachemon-topology[\s\S]*?url: )\S+/, `$1${url(p.topology)}`),
  );
  edit(dir, 'query_proxy/conf/query_proxy.env', (t) =>
    t.replace(/PROXY_LISTEN_ADDRESS=.*/, `PROXY_LISTEN_ADDRESS=${host}:${p.proxy}`),
  );
  edit(dir, 'query_proxy/conf/promxy.yml', (t) =>
    setTargetsAfter(
      setTargetsAfter(t, 'Short-term store', `127.0.0.1:${p.short}`),
      'Long-term store',
      `127.0.0.1:${p.long}`,
    ),
  );
}

/** The topology provider's ensembleByName with this ensemble in place of the shipped example (or of its earlier servers). */
export function addEnsembleToTopologyProvider(dir: string, ensemble: string, zkServers: readonly string[]): void {
  const entry = new RegExp(`"(example|${ensemble.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')})": \\[[^\\]]*\\]`);
  edit(dir, 'topology_provider/conf/config.json', (t) =>
    t.replace(entry, `${JSON.stringify(ensemble)}: ${JSON.stringify(zkServers)}`),
  );
}

/** Components (with their start.sh arguments) in the order they start: stores before what reads them. Stop in reverse. */
export function startOrder(ensemble: string): ReadonlyArray<readonly [string, ...string[]]> {
  return [
    ['short_term_store'],
    ['alert_router'],
    ['rule_evaluator'],
    ['host_exporter'],
    ['cache_exporter', ensemble],
    ['coordination_exporter', ensemble],
    ['topology_provider'],
    ['query_proxy'],
  ];
}

/** A configured tree with no ensemble: the ensemble's exporter configs gone, the shipped target files back. */
export function withoutEnsemble(dir: string, ensemble: string, stackDir: string): void {
  rmSync(join(dir, `cache_exporter/conf/${ensemble}.json`), { force: true });
  rmSync(join(dir, `coordination_exporter/conf/${ensemble}.env`), { force: true });
  for (const f of ['cache_exporter', 'coordination_exporter', 'host_exporter'])
    copyFileSync(
      join(stackDir, `short_term_store/conf/exporter/${f}.yml`),
      join(dir, `short_term_store/conf/exporter/${f}.yml`),
    );
}
