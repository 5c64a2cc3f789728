/**
 * Checks of the running processes against the tree: what each loaded, whether it is healthy,
 * whether what the target files list runs and what runs is scraped, whether the topology
 * provider and the exporters name the same ensembles, whether downsampled series arrive, and
 * which cache nodes the cache exporters find down.
 */
import { existsSync, readFileSync } from 'node:fs';
import { readTargets } from '../edits.js';
import type { TargetEntry } from '../edits.js';
import { parseMetrics, processStart, request } from '../probe.js';
import type { Sample } from '../probe.js';
import { readEnv } from '../sh.js';
import { reachable } from '../stack-state.js';
import { treeStatus } from '../status.js';
import type { InstanceStatus } from '../status.js';
import { connectAddress, readJsonc } from '../tree.js';
import type { Instance } from '../tree.js';
import { pooled } from '../machines.js';
import { runningMetrics } from './facts.js';
import { hostOf, ownAddress } from './local.js';
import { finding } from './render.js';
import { wanted } from './types.js';
import type { Check, DoctorContext, Finding } from './types.js';

const EXPORTERS = ['cache_exporter', 'coordination_exporter'];
const instanceOf = (context: DoctorContext, id: string) => context.instances.find((i) => i.id === id);
/** Whether an instance is under the ensembles asked about (every non-exporter one is). */
const wantedInstance = (context: DoctorContext, i: Instance) =>
  !EXPORTERS.includes(i.component) || wanted(context, i.name ?? '');

/** Each instance's status, read once per run for every check that needs it. */
const statuses = new WeakMap<DoctorContext, Promise<Map<Instance, InstanceStatus>>>();
function statusOf(context: DoctorContext): Promise<Map<Instance, InstanceStatus>> {
  let known = statuses.get(context);
  if (!known) {
    const picked = context.instances.filter((i) => wantedInstance(context, i));
    known = treeStatus(context.tree, picked).then((rows) => new Map(picked.map((i, at) => [i, rows[at]!])));
    statuses.set(context, known);
  }
  return known;
}

/** The command that reloads an instance's reloadable files: its reload endpoint, or SIGHUP. */
export function reloadCommand(instance: Instance, pid: number | null): string {
  const path = instance.component === 'topology_provider' ? '/reload/config' : '/-/reload';
  const signal = pid === null ? '' : ` (or kill -HUP ${pid})`;
  return `curl -X POST http://${connectAddress(instance.listen)}${path}${signal}`;
}

/** A running instance's config state, as `cachemon status` shows it, as a finding. */
export function configFinding(instance: Instance, status: InstanceStatus): Finding | undefined {
  const at = (code: string, severity: Finding['severity'], message: string, fix: string) =>
    finding(code, severity, instance.component, instance.name ?? '', message, fix);
  const pid = `pid ${status.pid}`;
  const edited = /^edited, not reloaded: (.*)$/.exec(status.config);
  if (edited)
    return at(
      'CACHEMON_DOCTOR_CONFIG_NOT_RELOADED',
      'warning',
      `edited, not reloaded: ${edited[1]}; the running process (${pid}) still uses what it loaded before`,
      reloadCommand(instance, status.pid),
    );
  const restart = /^restart needed: (.*)$/.exec(status.config);
  if (restart)
    return at(
      'CACHEMON_DOCTOR_RESTART_NEEDED',
      'warning',
      `${restart[1]}, and the running process (${pid}) reads it only when it starts`,
      `cachemon restart ${instance.id}`,
    );
  if (status.config.startsWith('last reload failed'))
    return at(
      'CACHEMON_DOCTOR_RELOAD_FAILED',
      'error',
      `the last reload of ${instance.reloadable.join(', ')} failed: the running process (${pid}) keeps the config it had before, and would not start with the files on disk`,
      `correct the files (the reason is in ${instance.component}/log/), then ${reloadCommand(instance, status.pid)}`,
    );
  return undefined;
}

async function loadedConfigs(context: DoctorContext): Promise<Finding[]> {
  const out: Finding[] = [];
  for (const [instance, status] of await statusOf(context)) {
    const found = status.pid !== null && status.healthy ? configFinding(instance, status) : undefined;
    if (found) out.push(found);
  }
  return out;
}

/** A process's state letter from /proc (T: stopped by a signal or a debugger). */
function processState(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(') ') + 2, stat.lastIndexOf(') ') + 3);
  } catch {
    return '';
  }
}

export function unhealthyFinding(instance: Instance, status: InstanceStatus, state: string): Finding | undefined {
  if (status.pid === null || status.healthy) return undefined;
  const stopped = state === 'T' || state === 't';
  return finding(
    'CACHEMON_DOCTOR_UNHEALTHY',
    'error',
    instance.component,
    instance.name ?? '',
    `runs (pid ${status.pid}) but is not healthy: ${status.problem}${stopped ? ` (the process is stopped, state ${state}: SIGSTOP or a debugger)` : ''}`,
    stopped
      ? `kill -CONT ${status.pid}`
      : `see why in ${instance.component}/log/, then cachemon restart ${instance.id}`,
  );
}

async function unhealthy(context: DoctorContext): Promise<Finding[]> {
  const out: Finding[] = [];
  for (const [instance, status] of await statusOf(context)) {
    const found = unhealthyFinding(instance, status, status.pid === null ? '' : processState(status.pid));
    if (found) out.push(found);
  }
  return out;
}

const TARGET_FILES = [
  { component: 'cache_exporter', file: 'cache_exporter.yml', jobs: 'arcus and arcus_prefixes' },
  { component: 'coordination_exporter', file: 'coordination_exporter.yml', jobs: 'zookeeper' },
  { component: 'host_exporter', file: 'host_exporter.yml', jobs: 'system_resource' },
] as const;

/** Every target of the target files against what runs, and every running exporter against them. */
async function scrapeTargets(context: DoctorContext): Promise<Finding[]> {
  const short = instanceOf(context, 'short_term_store:short');
  if (!short) return [];
  const reload = `curl -X POST http://${connectAddress(short.listen)}/-/reload`;
  const known = await statusOf(context);
  const out: Finding[] = [];
  for (const { component, file: name, jobs } of TARGET_FILES) {
    const file = context.tree.path('short_term_store/conf/exporter', name);
    if (!existsSync(file)) continue;
    let entries: TargetEntry[];
    try {
      entries = readTargets(file, readFileSync(file, 'utf8'));
    } catch (error) {
      out.push(
        finding(
          'CACHEMON_DOCTOR_TARGET_FILE_INVALID',
          'error',
          'short_term_store',
          'short',
          `${(error as Error).message}: the store keeps the targets it read before`,
          `correct ${file} (a list of entries: - targets: ["<host>:<port>"]); the store reads it again within 5 s`,
        ),
      );
      continue;
    }
    const mine = context.instances.filter((i) => i.component === component);
    const listed = entries.flatMap((e) => e.targets.map((target) => ({ target, ensemble: e.labels?.['ensemble'] })));
    const missing = await pooled(listed, 32, async ({ target, ensemble }) => {
      const instance = mine.find((i) => ownAddress(target, i.listen));
      if (instance) {
        const status = known.get(instance);
        if (!status || status.pid !== null) return undefined;
        return finding(
          'CACHEMON_DOCTOR_TARGET_NOT_ANSWERING',
          'error',
          component,
          instance.name ?? '',
          `${file} lists ${target} (jobs ${jobs}), but ${instance.id} does not run`,
          `cachemon start ${instance.id}`,
        );
      }
      if (ensemble !== undefined && !wanted(context, ensemble)) return undefined;
      if (await reachable(target, 2_000)) return undefined;
      return finding(
        'CACHEMON_DOCTOR_TARGET_NOT_ANSWERING',
        'error',
        component,
        component === 'host_exporter' ? hostOf(target) : (ensemble ?? target),
        `${file} lists ${target} (jobs ${jobs}), but nothing answers there`,
        `start the exporter that listens on ${target}, or remove the entry from ${file} and ${reload}`,
      );
    });
    out.push(...missing.filter((f) => f !== undefined));
    for (const instance of mine) {
      const status = known.get(instance);
      if (!status || status.pid === null || listed.some(({ target }) => ownAddress(target, instance.listen))) continue;
      const entry =
        component === 'coordination_exporter'
          ? `- targets: ["${connectAddress(instance.listen)}"] with labels: {ensemble: ${instance.name}}`
          : `- targets: ["${connectAddress(instance.listen)}"]`;
      out.push(
        finding(
          'CACHEMON_DOCTOR_EXPORTER_NOT_SCRAPED',
          'error',
          component,
          instance.name ?? '',
          `${instance.id} runs (pid ${status.pid}, ${instance.listen}), but ${file} does not list it: the store does not scrape it (jobs ${jobs})`,
          `add ${entry} to ${file}, then ${reload}`,
        ),
      );
    }
  }
  return out;
}

interface ExporterEnsemble {
  /** The exporter's instance name (its config's base name). */
  readonly name: string;
  /** The ensemble it collects (its ensembleByName key). */
  readonly ensemble: string;
  readonly servers: readonly string[];
}

const placeholder = (name: string, servers: readonly string[]) =>
  name === 'example' && servers.length > 0 && servers.every((s) => /\.example\.com:\d+$/.test(s));

/** The provider's ensembleByName against the ensembles the exporters collect. */
export function ensembleFindings(
  providerFile: string,
  byName: Readonly<Record<string, readonly string[]>>,
  cache: readonly ExporterEnsemble[],
  coordination: readonly ExporterEnsemble[],
  reload: string,
  isWanted: (ensemble: string) => boolean,
): Finding[] {
  const out: Finding[] = [];
  for (const [name, servers] of Object.entries(byName)) {
    if (!isWanted(name)) continue;
    if (placeholder(name, servers)) {
      out.push(
        finding(
          'CACHEMON_DOCTOR_PLACEHOLDER_ENSEMBLE',
          'warning',
          'topology_provider',
          '',
          `ensembleByName in ${providerFile} still has the shipped placeholder "example" (${servers.join(', ')}): dashboards list it, unavailable`,
          `remove "example" from ensembleByName in ${providerFile}, then ${reload} (cachemon ensemble add removes it with the first ensemble)`,
        ),
      );
      continue;
    }
    const noCache = !cache.some((c) => c.ensemble === name);
    const noCoordination = !coordination.some((c) => c.ensemble === name);
    if (!noCache && !noCoordination) continue;
    const lacking = [
      ...(noCache ? ['no cache exporter (no config under cache_exporter/conf/ collects it)'] : []),
      ...(noCoordination ? [`no coordination exporter (no coordination_exporter/conf/${name}.env)`] : []),
    ];
    out.push(
      finding(
        'CACHEMON_DOCTOR_ENSEMBLE_WITHOUT_EXPORTER',
        'error',
        noCache ? 'cache_exporter' : 'coordination_exporter',
        name,
        `ensembleByName in ${providerFile} has ${name} (${servers.join(', ')}), but the tree has ${lacking.join(' and ')}: dashboards list it without its metrics`,
        `cachemon ensemble remove ${name} && cachemon ensemble add ${name} --servers ${servers.join(',')}; or, when it is no longer monitored, remove "${name}" from ensembleByName in ${providerFile}, then ${reload}`,
      ),
    );
  }
  for (const [component, exporters] of [
    ['cache_exporter', cache],
    ['coordination_exporter', coordination],
  ] as const)
    for (const e of exporters) {
      if (!isWanted(e.name) || e.ensemble in byName) continue;
      out.push(
        finding(
          'CACHEMON_DOCTOR_ENSEMBLE_NOT_IN_PROVIDER',
          'error',
          component,
          e.name,
          `${component}:${e.name} collects the ensemble ${e.ensemble}, but ensembleByName in ${providerFile} lacks it: dashboards cannot list its clusters`,
          `add "${e.ensemble}": ${JSON.stringify(e.servers)} to ensembleByName in ${providerFile}, then ${reload}`,
        ),
      );
    }
  return out;
}

async function ensembles(context: DoctorContext): Promise<Finding[]> {
  const provider = instanceOf(context, 'topology_provider');
  const file = provider?.reloadable[0];
  if (!provider || !file) return [];
  const byName = (readJsonc(file)['ensembleByName'] ?? {}) as Record<string, string[]>;
  const cache = context.tree.cacheExporterNames().map((name) => {
    const conf = readJsonc(context.tree.path('cache_exporter/conf', `${name}.json`));
    const servers = conf['ensembleByName'] as Record<string, string[]> | undefined;
    const ensemble = servers ? (Object.keys(servers)[0] ?? name) : name;
    return { name, ensemble, servers: servers?.[ensemble] ?? (conf['ensemble'] as string[] | undefined) ?? [] };
  });
  const coordination = await Promise.all(
    context.tree.coordinationExporterNames().map(async (name) => {
      const env = await readEnv(context.tree.path('coordination_exporter/conf', `${name}.env`), [
        'ZK_SERVERS',
        'ZK_DOMAIN',
      ]);
      const servers = env.get('ZK_SERVERS') ?? env.get('ZK_DOMAIN') ?? [];
      return { name, ensemble: name, servers: Array.isArray(servers) ? servers : [servers] };
    }),
  );
  return ensembleFindings(file, byName, cache, coordination, reloadCommand(provider, null), (e) => wanted(context, e));
}

const DOWNSAMPLED = 'count(last_over_time({resolution=~"5m|1h"}[2h]))';

/** Whether the long-term store holds downsampled series, when it and the rule evaluator run. */
async function downsampledSeries(context: DoctorContext): Promise<Finding[]> {
  const long = instanceOf(context, 'short_term_store:long');
  const ruler = instanceOf(context, 'rule_evaluator');
  if (!long || !ruler) return [];
  const known = await statusOf(context);
  const [longStatus, rulerStatus] = [known.get(long), known.get(ruler)];
  if (!longStatus?.pid || !rulerStatus?.pid || !longStatus.healthy || !rulerStatus.healthy) return [];
  const store = connectAddress(long.listen);
  const answer = await request(store, `/api/v1/query?nocache=1&query=${encodeURIComponent(DOWNSAMPLED)}`, {
    timeoutMs: 10_000,
  });
  if (answer.status !== 200) throw new Error(`the long-term store's query answers ${answer.status}`);
  const result = (JSON.parse(answer.text) as { data?: { result?: Array<{ value?: [number, string] }> } }).data?.result;
  if (Number(result?.[0]?.value?.[1] ?? 0) > 0) return [];

  const env = ruler.startFiles[0];
  const url = env ? (await readEnv(env, ['RULER_REMOTEWRITE_URL'])).get('RULER_REMOTEWRITE_URL') : undefined;
  let written: string | undefined;
  try {
    written = typeof url === 'string' ? new URL(url).host : undefined;
  } catch {
    written = url as string | undefined;
  }
  const started = processStart(rulerStatus.pid);
  const age = started === undefined ? '' : `, started ${Math.round(Date.now() / 1000 - started)} s ago`;
  let errors = 0;
  try {
    const samples = parseMetrics((await request(connectAddress(ruler.listen), '/metrics', { timeoutMs: 10_000 })).text);
    errors = samples.filter((s) => s.name === 'vmalert_remotewrite_errors_total').reduce((n, s) => n + s.value, 0);
  } catch {
    // Its metrics only add detail to the finding.
  }
  const elsewhere = written !== undefined && !ownAddress(written, long.listen);
  // A rule evaluator in its first ten minutes, writing where it should without errors, has simply
  // not reached its first 5-minute evaluation: a freshly started stack is no finding.
  if (!elsewhere && errors === 0 && started !== undefined && Date.now() / 1000 - started < 600) return [];
  return [
    finding(
      'CACHEMON_DOCTOR_NO_DOWNSAMPLED_SERIES',
      'warning',
      'short_term_store',
      'long',
      `the long-term store (${store}) holds no downsampled series (resolution 5m or 1h) from the rule evaluator (pid ${rulerStatus.pid}${age}; ${errors} remote write errors)` +
        (elsewhere ? `: RULER_REMOTEWRITE_URL=${String(url)} in ${env} is not the long-term store` : ''),
      elsewhere
        ? `set RULER_REMOTEWRITE_URL=http://${store} in ${env}, then cachemon restart rule_evaluator`
        : `the first 5-minute downsampling rules write 5 minutes after the rule evaluator starts: run cachemon doctor again then; if still none, see ${context.tree.path('rule_evaluator/log/rule_evaluator.log')} for remote write errors`,
    ),
  ];
}

/** Per cache exporter, the nodes named one by one; the rest are counted in one more line. */
const DOWN_NODES_NAMED = 20;

const DOWN_REASON: Record<string, string> = {
  not_registered:
    'is mapped to its service code in cache_server_mapping but not registered in cache_list: the node is down or was never started',
  timeout: 'is registered but did not answer stats in time',
  unreachable: 'is registered but refuses connections',
  protocol: 'is registered but answers what is not the ARCUS protocol',
  error_reply: 'is registered but answers stats with an error',
  closed: 'is registered but closed the connection',
};

/**
 * The cache nodes each running cache exporter reports down (`arcus_up 0`), with its reason. A node
 * down is the fleet's state, which the CacheNodeDown alert covers, not a fault of the stack: a
 * notice, which leaves the exit status alone.
 */
export function downNodeFindings(exporter: string, samples: readonly Sample[]): Finding[] {
  const reasons = new Map<string, string>();
  for (const s of samples)
    if (s.name === 'arcus_node_last_error_info' && s.value === 1)
      reasons.set(s.labels['node'] ?? '', s.labels['reason'] ?? '');
  const down = samples.filter((s) => s.name === 'arcus_up' && s.value === 0);
  const out = down.slice(0, DOWN_NODES_NAMED).map((s) => {
    const { node = '', service_code: code = '', hostname = '' } = s.labels;
    const reason = reasons.get(node) ?? '';
    const what = DOWN_REASON[reason] ?? `does not answer${reason ? ` (${reason})` : ''}`;
    return finding(
      'CACHEMON_DOCTOR_CACHE_NODE_DOWN',
      'notice',
      'cache_exporter',
      exporter,
      `cache node ${node}${hostname ? ` (${hostname})` : ''} of service code ${code} ${what}; the CacheNodeDown alert fires for it. The stack collects it as it should`,
      reason === 'not_registered'
        ? `start the cache node at ${node}; when it is retired, delete its entry under /arcus/cache_server_mapping in ZooKeeper`
        : `see why on the node at ${node} (its log, its load); arcus_node_last_error_info says the exporter's reason`,
    );
  });
  if (down.length > DOWN_NODES_NAMED)
    out.push(
      finding(
        'CACHEMON_DOCTOR_CACHE_NODE_DOWN',
        'notice',
        'cache_exporter',
        exporter,
        `${down.length - DOWN_NODES_NAMED} more cache nodes are down (${down.length} in all)`,
        `list them with the query arcus_up{ensemble="${exporter}"} == 0`,
      ),
    );
  return out;
}

async function cacheNodesDown(context: DoctorContext): Promise<Finding[]> {
  const out: Finding[] = [];
  for (const instance of context.instances) {
    if (instance.component !== 'cache_exporter' || !instance.name || !wanted(context, instance.name)) continue;
    const running = await runningMetrics(context, instance);
    if (running) out.push(...downNodeFindings(instance.name, running.samples));
  }
  return out;
}

export const RUNNING_CHECKS: readonly Check[] = [
  loadedConfigs,
  unhealthy,
  scrapeTargets,
  ensembles,
  downsampledSeries,
  cacheNodesDown,
];
