/**
 * Checks of the installed tree's files against each other and the spec: what an operator breaks
 * by hand. Each reads its files, then a pure function says what is wrong.
 */
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { bash, readEnv } from '../sh.js';
import { seconds } from '../status.js';
import { connectAddress, portOf, readJsonc } from '../tree.js';
import type { Instance } from '../tree.js';
import { hostOf, ownAddress, wildcard } from './local.js';
import { finding } from './render.js';
import { wanted } from './types.js';
import type { Check, DoctorContext, Finding } from './types.js';

const envString = (value: string | string[] | undefined) => (typeof value === 'string' ? value : undefined);
const instanceOf = (context: DoctorContext, id: string) => context.instances.find((i) => i.id === id);
const reloadAt = (instance: Instance, path = '/-/reload') =>
  `curl -X POST http://${connectAddress(instance.listen)}${path}`;

/** Both ZK_DOMAIN and ZK_SERVERS of one coordination exporter's env file, as bash reads them. */
export function zkDomainAndServersFinding(
  name: string,
  file: string,
  domain: string | string[] | undefined,
  servers: string | string[] | undefined,
): Finding | undefined {
  const list = Array.isArray(servers) ? servers : servers ? [servers] : [];
  if (typeof domain !== 'string' || domain === '' || list.length === 0) return undefined;
  return finding(
    'CACHEMON_DOCTOR_ZK_DOMAIN_AND_SERVERS',
    'error',
    'coordination_exporter',
    name,
    `${file} sets both ZK_DOMAIN=${domain} and ZK_SERVERS=(${list.join(' ')}); only one may be set, and start.sh refuses to start the exporter so`,
    `delete the ZK_DOMAIN line from ${file} (ZK_SERVERS names each server; a domain merges their data), then cachemon restart coordination_exporter:${name}`,
  );
}

async function zkDomainAndServers(context: DoctorContext): Promise<Finding[]> {
  const out: Finding[] = [];
  for (const name of context.tree.coordinationExporterNames()) {
    if (!wanted(context, name)) continue;
    const file = context.tree.path('coordination_exporter/conf', `${name}.env`);
    const values = await readEnv(file, ['ZK_DOMAIN', 'ZK_SERVERS']);
    const found = zkDomainAndServersFinding(name, file, values.get('ZK_DOMAIN'), values.get('ZK_SERVERS'));
    if (found) out.push(found);
  }
  return out;
}

/** Where an instance's port is configured: the file and the key. */
export function portSetting(instance: Instance): string {
  const [file, key] = ((): [string | undefined, string] => {
    switch (instance.component) {
      case 'short_term_store':
        return [instance.startFiles[0], 'TS_LISTEN_ADDRESS'];
      case 'host_exporter':
        return [instance.startFiles[0], 'HOST_EXPORTER_LISTEN_ADDRESS'];
      case 'cache_exporter':
        return [instance.reloadable[0], '"listen"'];
      case 'coordination_exporter':
        return [instance.startFiles[0], 'LISTEN_PORT'];
      case 'topology_provider':
        return [instance.reloadable[0], '"listen"'];
      case 'query_proxy':
        return [instance.startFiles[0], 'PROXY_LISTEN_ADDRESS'];
      case 'rule_evaluator':
        return [instance.startFiles[0], 'RULER_LISTEN_ADDRESS'];
      case 'alert_router':
        return [instance.startFiles[0], 'ALERTROUTER_LISTEN_ADDRESS'];
      default:
        return [instance.startFiles[0], '[server] http_port'];
    }
  })();
  return `${key} in ${file ?? instance.component}`;
}

const TARGET_FILE: Record<string, string> = {
  cache_exporter: 'cache_exporter.yml',
  coordination_exporter: 'coordination_exporter.yml',
  host_exporter: 'host_exporter.yml',
};

/** Instances configured on one port (hosts that can share it, two specific addresses, left out). */
export function portConflictFindings(instances: readonly Instance[], targetDir: string): Finding[] {
  const byPort = new Map<number, Instance[]>();
  for (const i of instances) {
    const port = portOf(i.listen);
    if (port !== undefined) byPort.set(port, [...(byPort.get(port) ?? []), i]);
  }
  const out: Finding[] = [];
  for (const [port, group] of byPort) {
    const clash = group.filter((i) =>
      group.some(
        (j) =>
          j !== i &&
          (wildcard(hostOf(i.listen)) || wildcard(hostOf(j.listen)) || hostOf(i.listen) === hostOf(j.listen)),
      ),
    );
    if (clash.length < 2) continue;
    const last = clash.at(-1)!;
    const targets = TARGET_FILE[last.component];
    out.push(
      finding(
        'CACHEMON_DOCTOR_PORT_CONFLICT',
        'error',
        last.component,
        last.name ?? '',
        `port ${port} is configured for ${clash.map((i) => `${i.id} (${i.listen}, ${portSetting(i)})`).join(' and ')}: only one of them can listen on it`,
        `give ${last.id} a free port: ${portSetting(last)}${targets ? `, and its target in ${join(targetDir, targets)}` : ''}; then cachemon restart ${last.id}`,
      ),
    );
  }
  return out;
}

async function portConflicts(context: DoctorContext): Promise<Finding[]> {
  return portConflictFindings(context.instances, context.tree.path('short_term_store/conf/exporter'));
}

export const DEFAULT_RAW_RETENTION = '14d';

/** The provider's rawRetention against the short-term store's retention, compared as durations. */
export function retentionFinding(
  providerFile: string,
  rawRetention: string | undefined,
  storeFile: string,
  storeRetention: string,
  reload: string,
): Finding | undefined {
  const raw = rawRetention ?? DEFAULT_RAW_RETENTION;
  const a = seconds(raw);
  const b = seconds(storeRetention);
  if (a === undefined || b === undefined || a === b) return undefined;
  return finding(
    'CACHEMON_DOCTOR_RETENTION_MISMATCH',
    'error',
    'topology_provider',
    '',
    `rawRetention is ${raw}${rawRetention === undefined ? ' (unset: the default)' : ''} in ${providerFile}, but the short-term store keeps ${storeRetention} (TS_RETENTION_PERIOD in ${storeFile}); they must be equal, or dashboard ranges starting between the two read the wrong store`,
    `set "rawRetention": "${storeRetention}" in ${providerFile}, then ${reload}`,
  );
}

async function retention(context: DoctorContext): Promise<Finding[]> {
  const provider = instanceOf(context, 'topology_provider');
  const short = instanceOf(context, 'short_term_store:short');
  if (!provider?.reloadable[0] || !short?.startFiles[0]) return [];
  const raw = readJsonc(provider.reloadable[0])['rawRetention'];
  const values = await readEnv(short.startFiles[0], ['TS_RETENTION_PERIOD']);
  const kept = envString(values.get('TS_RETENTION_PERIOD'));
  if (kept === undefined) return [];
  const found = retentionFinding(
    provider.reloadable[0],
    typeof raw === 'string' ? raw : undefined,
    short.startFiles[0],
    kept,
    reloadAt(provider, '/reload/config'),
  );
  return found ? [found] : [];
}

/** The spec's six scrape jobs: interval, path, where the targets come from, the scrape=short label. */
interface SpecJob {
  readonly job: string;
  readonly interval: string;
  readonly path: string;
  /** A target file under conf/, or the store whose own address is the static target. */
  readonly source: { readonly file: string } | { readonly store: 'short' | 'long' };
  readonly scrapeShort: boolean;
}

export const SPEC_JOBS: readonly SpecJob[] = [
  { job: 'meta-short', interval: '1m', path: '/metrics', source: { store: 'short' }, scrapeShort: false },
  { job: 'meta-long', interval: '1m', path: '/metrics', source: { store: 'long' }, scrapeShort: false },
  {
    job: 'system_resource',
    interval: '5s',
    path: '/metrics',
    source: { file: 'exporter/host_exporter.yml' },
    scrapeShort: true,
  },
  {
    job: 'arcus',
    interval: '5s',
    path: '/metrics',
    source: { file: 'exporter/cache_exporter.yml' },
    scrapeShort: true,
  },
  {
    job: 'arcus_prefixes',
    interval: '1m',
    path: '/metrics/prefixes',
    source: { file: 'exporter/cache_exporter.yml' },
    scrapeShort: true,
  },
  {
    job: 'zookeeper',
    interval: '1m',
    path: '/metrics',
    source: { file: 'exporter/coordination_exporter.yml' },
    scrapeShort: true,
  },
];

function shipped(job: SpecJob): string {
  const source =
    'file' in job.source
      ? `file_sd_configs: [{files: [${job.source.file}]}]`
      : `static_configs: [{targets: [the ${job.source.store}-term store's own address]}]`;
  const label = job.scrapeShort ? ', relabel_configs: [{target_label: scrape, replacement: short}]' : '';
  return `job_name: ${job.job}, scrape_interval: ${job.interval}, metrics_path: ${job.path}, ${source}${label}`;
}

type Job = Record<string, unknown>;
/** A YAML scalar as written; anything else as JSON, to show what is there. */
const text = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));
const list = (value: unknown): unknown[] => (Array.isArray(value) ? (value as unknown[]) : []);
const field = (value: unknown, key: string): unknown =>
  typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;

/** What differs in one job from the spec's, in the file's words. */
function jobDifferences(job: Job, spec: SpecJob, globalInterval: unknown, confDir: string, stores: Stores): string[] {
  const out: string[] = [];
  const interval = text(job['scrape_interval'] ?? globalInterval ?? '1m');
  if (seconds(interval) !== seconds(spec.interval))
    out.push(`scrape_interval ${interval} (the spec's ${spec.interval})`);
  const path = text(job['metrics_path'] ?? '/metrics');
  if (path !== spec.path) out.push(`metrics_path ${path} (the spec's ${spec.path})`);
  if ('file' in spec.source) {
    const want = resolve(confDir, spec.source.file);
    const files = list(job['file_sd_configs']).flatMap((c) => list(field(c, 'files')));
    if (!files.some((f) => typeof f === 'string' && resolve(confDir, f) === want))
      out.push(`no file_sd_configs with files: [${spec.source.file}]`);
  } else {
    const listen = stores[spec.source.store];
    const targets = list(job['static_configs']).flatMap((c) => list(field(c, 'targets')));
    if (listen !== undefined && !targets.some((t) => typeof t === 'string' && ownAddress(t, listen)))
      out.push(`no static target of the ${spec.source.store}-term store's own address ${connectAddress(listen)}`);
  }
  const scrapeLabel = list(job['relabel_configs']).some(
    (r) =>
      field(r, 'target_label') === 'scrape' &&
      field(r, 'replacement') === 'short' &&
      [undefined, 'replace'].includes(field(r, 'action') as string | undefined),
  );
  if (spec.scrapeShort && !scrapeLabel) out.push('no relabel_configs entry setting scrape=short');
  if (!spec.scrapeShort && scrapeLabel) out.push("a scrape=short label (the spec's meta jobs add none)");
  return out;
}

interface Stores {
  readonly short?: string;
  readonly long?: string;
}

/** The six jobs of a scrape config's text against the spec's. */
export function scrapeJobFindings(file: string, text: string, stores: Stores, reload: string): Finding[] {
  const at = (code: string, message: string, fix: string) =>
    finding(code, 'error', 'short_term_store', 'short', message, `${fix}; then ${reload}`);
  let config: unknown;
  try {
    config = parseYaml(text);
  } catch (error) {
    return [
      at(
        'CACHEMON_DOCTOR_SCRAPE_CONFIG_INVALID',
        `${file} is not valid YAML: ${(error as Error).message.split('\n')[0]}; the store keeps the config it loaded before, and refuses to start`,
        `correct ${file} at the place named`,
      ),
    ];
  }
  const jobs = list(field(config, 'scrape_configs')) as Job[];
  const globalInterval = field(field(config, 'global'), 'scrape_interval');
  const confDir = resolve(file, '..');
  const out: Finding[] = [];
  for (const spec of SPEC_JOBS) {
    const mine = jobs.filter((j) => field(j, 'job_name') === spec.job);
    if (mine.length === 0) {
      out.push(
        at(
          'CACHEMON_DOCTOR_SCRAPE_JOB_MISSING',
          `${file} has no job ${spec.job}, one of the spec's six: its series are not collected`,
          `add the job to scrape_configs as shipped (${shipped(spec)})`,
        ),
      );
      continue;
    }
    const differences = [
      ...(mine.length > 1 ? [`defined ${mine.length} times`] : []),
      ...jobDifferences(mine[0]!, spec, globalInterval, confDir, stores),
    ];
    if (differences.length > 0)
      out.push(
        at(
          'CACHEMON_DOCTOR_SCRAPE_JOB_CHANGED',
          `job ${spec.job} in ${file} is not as the spec has it: ${differences.join('; ')}`,
          `restore the job as shipped (${shipped(spec)})`,
        ),
      );
  }
  return out;
}

async function scrapeJobs(context: DoctorContext): Promise<Finding[]> {
  const short = instanceOf(context, 'short_term_store:short');
  const file = short?.reloadable[0];
  if (!short || !file || !existsSync(file)) return [];
  const long = instanceOf(context, 'short_term_store:long');
  return scrapeJobFindings(
    file,
    readFileSync(file, 'utf8'),
    { short: short.listen, long: long?.listen },
    reloadAt(short),
  );
}

/** Rule files vmalert's own dry run refuses, run as rule_evaluator/start.sh runs it. */
async function ruleFiles(context: DoctorContext): Promise<Finding[]> {
  const ruler = instanceOf(context, 'rule_evaluator');
  const env = ruler?.startFiles[0];
  if (!ruler || !env || !existsSync(env)) return [];
  const values = await readEnv(env, ['RULER_RULE', 'RULER_BINARY']);
  const rule = envString(values.get('RULER_RULE'));
  if (!rule) return [];
  const rules = isAbsolute(rule) ? rule : context.tree.path('rule_evaluator', rule);
  const override = envString(values.get('RULER_BINARY')) ?? process.env['RULER_BINARY'] ?? '';
  const result = await bash(
    [
      '-c',
      'set -o pipefail; . "$1"; bin=$(system_bin "$2" vmalert "$3") || exit 127; echo "$bin"; "$bin" -rule="$4" -dryRun -loggerLevel=ERROR 2>&1',
      'rules',
      context.tree.path('lib/daemon.sh'),
      context.tree.path('rule_evaluator'),
      override,
      rules,
    ],
    { timeoutMs: 25_000 },
  );
  if (result.status === 127) throw new Error(`no vmalert to check the rule files with: ${result.stderr.trim()}`);
  if (result.status === 0) return [];
  const [bin, ...output] = result.stdout.split('\n').filter((l) => l.trim() !== '');
  return [
    finding(
      'CACHEMON_DOCTOR_RULES_INVALID',
      'error',
      'rule_evaluator',
      '',
      `vmalert's dry run refuses the rule files ${rules}: ${output.slice(-5).join(' | ') || `exit status ${result.status}`}; start.sh refuses to start with them, and a reload keeps the previous rules`,
      `correct the rule named (check with: ${bin} -rule='${rules}' -dryRun), then ${reloadAt(ruler)} (or cachemon start rule_evaluator)`,
    ),
  ];
}

/** Each `<FILL: ...>` left in the alert router's config, by line. */
export function unfilledFindings(file: string, text: string, reload: string): Finding[] {
  const out: Finding[] = [];
  for (const [at, line] of text.split('\n').entries()) {
    if (line.trimStart().startsWith('#')) continue;
    const fill = /<FILL:[^>]*>/.exec(line);
    if (!fill) continue;
    const key = /^\s*(?:-\s*)?([A-Za-z_][A-Za-z0-9_]*)\s*:/.exec(line)?.[1] ?? 'the value';
    out.push(
      finding(
        'CACHEMON_DOCTOR_ALERT_ROUTER_UNFILLED',
        'error',
        'alert_router',
        '',
        `${file} line ${at + 1}: ${key} is still "${fill[0]}"; start.sh refuses to start the alert router until it is filled`,
        `fill in ${key} at line ${at + 1} of ${file}, then ${reload} (or cachemon start alert_router)`,
      ),
    );
  }
  return out;
}

async function alertRouterFields(context: DoctorContext): Promise<Finding[]> {
  const router = instanceOf(context, 'alert_router');
  const file = router?.reloadable[0];
  if (!router || !file || !existsSync(file)) return [];
  return unfilledFindings(file, readFileSync(file, 'utf8'), reloadAt(router));
}

export const TREE_CHECKS: readonly Check[] = [
  zkDomainAndServers,
  portConflicts,
  retention,
  scrapeJobs,
  ruleFiles,
  alertRouterFields,
];
