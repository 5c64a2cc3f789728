/** `cachemon status`: every instance of the tree, whether it runs and is healthy, and what it loaded. */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { parse as parseYaml } from 'yaml';
import { parseMetrics, processStart, request } from './probe.js';
import type { Sample } from './probe.js';
import { daemonPid } from './sh.js';
import { connectAddress } from './tree.js';
import type { Instance, Kind, Tree } from './tree.js';

export interface TargetCount {
  readonly job: string;
  readonly up: number;
  readonly down: number;
  /** The down targets with their last error. */
  readonly failing: ReadonlyArray<{ readonly target: string; readonly error: string }>;
}

export interface InstanceStatus {
  readonly id: string;
  readonly component: string;
  readonly instance: string;
  readonly pid: number | null;
  readonly address: string;
  readonly healthy: boolean;
  /** Why not healthy ("" when healthy). */
  readonly problem: string;
  readonly version: string;
  /** `loaded`, `unknown`, or what differs ("edited, not reloaded: <file>", "restart needed: <file>"). */
  readonly config: string;
  readonly configCurrent: boolean;
  readonly targets?: readonly TargetCount[];
}

const VERSION_METRIC: Record<Kind, string | undefined> = {
  cachemon: 'cachemon_build_info',
  store: 'vm_app_version',
  vmagent: 'vm_app_version',
  vmalert: 'vm_app_version',
  alertmanager: 'alertmanager_build_info',
  node_exporter: 'node_exporter_build_info',
  grafana: undefined,
};

/** The reload state metrics of the off-the-shelf programs: success flag and time of the last success. */
const RELOAD_METRICS: Partial<Record<Kind, readonly [string, string]>> = {
  vmalert: ['vmalert_config_last_reload_successful', 'vmalert_config_last_reload_success_timestamp_seconds'],
  alertmanager: [
    'alertmanager_config_last_reload_successful',
    'alertmanager_config_last_reload_success_timestamp_seconds',
  ],
};

const samePath = (a: string | undefined, b: string) => {
  try {
    return a !== undefined && realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
};
const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
const mtime = (path: string) => (existsSync(path) ? Math.floor(statSync(path).mtimeMs / 1000) : 0);

/** A duration as the store writes it back ("1m0s") and as operators write it ("1m"), in seconds. */
export function seconds(value: string): number | undefined {
  const parts = [...value.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== value) return undefined;
  const unit: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000 };
  return parts.reduce((sum, p) => sum + Number(p[1]) * unit[p[2]!]!, 0);
}

/** Whether everything the file says is in what the store loaded (which adds its defaults). */
function within(disk: unknown, loaded: unknown): boolean {
  if (typeof disk === 'string' && typeof loaded === 'string') {
    const a = seconds(disk);
    return disk === loaded || (a !== undefined && a === seconds(loaded));
  }
  if (Array.isArray(disk))
    return Array.isArray(loaded) && disk.length === loaded.length && disk.every((d, i) => within(d, loaded[i]));
  if (typeof disk === 'object' && disk !== null)
    return (
      typeof loaded === 'object' &&
      loaded !== null &&
      Object.entries(disk).every(([k, v]) => v === null || within(v, (loaded as Record<string, unknown>)[k]))
    );
  return disk === loaded || String(disk) === String(loaded);
}

/** The store's scrape config as loaded (its /config) against the file. */
async function storeConfigState(address: string, file: string): Promise<string> {
  const loaded = await request(address, '/config', { timeoutMs: 10_000 });
  if (loaded.status !== 200) return 'unknown';
  const disk: unknown = parseYaml(readFileSync(file, 'utf8'));
  return within(disk, parseYaml(loaded.text)) ? 'loaded' : `edited, not reloaded: ${file}`;
}

/** The Debian package version of a process's program, for builds that report none themselves. */
function packageVersion(pid: number): string {
  try {
    const exe = readlinkSync(`/proc/${pid}/exe`);
    const owner = execFileSync('dpkg-query', ['-S', exe], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const pkg = owner.split(':')[0]!.trim();
    return execFileSync('dpkg-query', ['-W', '-f', '${Version}', pkg], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    return '';
  }
}

/** Loaded vs. on disk, from the process's own metrics and the files' content and times. */
function configState(instance: Instance, samples: readonly Sample[], started: number | undefined): string {
  for (const file of instance.startFiles)
    if (started !== undefined && mtime(file) > started) return `restart needed: ${file} changed since the start`;
  if (instance.reloadable.length === 0) return 'loaded';
  if (instance.kind === 'cachemon') {
    const info = samples.filter((s) => s.name === 'cachemon_config_info');
    if (info.length === 0) return 'unknown (no cachemon_config_info)';
    for (const file of instance.reloadable) {
      const loaded = info.find((s) => s.labels['path'] === file || samePath(s.labels['path'], file));
      if (!loaded) return `unknown (${file} not among the loaded files)`;
      if (!existsSync(file)) return `edited, not reloaded: ${file} is gone`;
      if (loaded.labels['sha256'] !== sha256(file)) return `edited, not reloaded: ${file}`;
    }
    return 'loaded';
  }
  const names = RELOAD_METRICS[instance.kind];
  if (!names) return 'loaded';
  const ok = samples.find((s) => s.name === names[0]);
  const at = samples.find((s) => s.name === names[1]);
  if (ok?.value === 0) return 'last reload failed (the previous config is in use)';
  if (!at) return 'unknown';
  const newer = instance.reloadable.filter((f) => mtime(f) > at.value);
  return newer.length > 0 ? `edited, not reloaded: ${newer.join(', ')}` : 'loaded';
}

/** What scrapes: a store with a scrape config, a collector shard; both answer /config and /api/v1/targets. */
const scrapes = (instance: Instance) =>
  (instance.kind === 'store' || instance.kind === 'vmagent') && instance.reloadable.length > 0;

/** Scrape targets of a store per job, from its /api/v1/targets. */
async function storeTargets(address: string): Promise<TargetCount[]> {
  const answer = await request(address, '/api/v1/targets', { timeoutMs: 10_000 });
  const body = JSON.parse(answer.text) as {
    data?: {
      activeTargets?: Array<{
        labels?: Record<string, string>;
        health?: string;
        scrapeUrl?: string;
        lastError?: string;
      }>;
    };
  };
  const jobs = new Map<string, { up: number; down: number; failing: Array<{ target: string; error: string }> }>();
  for (const t of body.data?.activeTargets ?? []) {
    const job = t.labels?.['job'] ?? '';
    const entry = jobs.get(job) ?? { up: 0, down: 0, failing: [] };
    if (t.health === 'up') entry.up++;
    else {
      entry.down++;
      entry.failing.push({ target: t.scrapeUrl ?? '', error: t.lastError || t.health || 'not scraped yet' });
    }
    jobs.set(job, entry);
  }
  return [...jobs.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([job, c]) => ({ job, ...c }));
}

export async function instanceStatus(tree: Tree, instance: Instance): Promise<InstanceStatus> {
  const pid = (await daemonPid(tree.dir, instance.pidfile)) ?? null;
  const address = connectAddress(instance.listen);
  const base = { id: instance.id, component: instance.component, instance: instance.name ?? '', pid, address };
  if (pid === null)
    return { ...base, healthy: false, problem: 'not running', version: '', config: '', configCurrent: true };
  let problem = '';
  try {
    const health = await request(address, instance.healthPath);
    if (health.status !== 200) problem = `${instance.healthPath} answers ${health.status}`;
  } catch (error) {
    problem = (error as Error).message;
  }
  let samples: Sample[] = [];
  let version = '';
  if (problem === '') {
    try {
      if (instance.kind === 'grafana') {
        version = String(
          (JSON.parse((await request(address, '/api/health')).text) as { version?: string }).version ?? '',
        );
      } else {
        samples = parseMetrics((await request(address, '/metrics', { timeoutMs: 10_000 })).text);
        const build = samples.find((s) => s.name === VERSION_METRIC[instance.kind]);
        version = (build?.labels['short_version'] || build?.labels['version'] || '').replace(
          /^victoria-metrics-|^vmalert-|^vmagent-/,
          '',
        );
        if (version === '') version = packageVersion(pid);
      }
    } catch (error) {
      problem = `metrics: ${(error as Error).message}`;
    }
  }
  let config = problem === '' ? configState(instance, samples, processStart(pid)) : '';
  if (config === 'loaded' && scrapes(instance) && instance.reloadable[0])
    config = await storeConfigState(address, instance.reloadable[0]).catch(
      (error: Error) => `unknown (${error.message})`,
    );
  let targets: TargetCount[] | undefined;
  if (problem === '' && scrapes(instance)) {
    try {
      targets = await storeTargets(address);
    } catch (error) {
      problem = `targets: ${(error as Error).message}`;
    }
  }
  return {
    ...base,
    healthy: problem === '',
    problem,
    version,
    config,
    configCurrent: config === 'loaded' || config === '' || config.startsWith('unknown'),
    ...(targets ? { targets } : {}),
  };
}

export async function treeStatus(tree: Tree, instances: readonly Instance[]): Promise<InstanceStatus[]> {
  return Promise.all(instances.map((i) => instanceStatus(tree, i)));
}

/** The status as an aligned table, then each store's targets per job. */
export function renderStatus(rows: readonly InstanceStatus[]): string {
  const header = ['COMPONENT', 'INSTANCE', 'PID', 'ADDRESS', 'HEALTH', 'VERSION', 'CONFIG'];
  const cells = rows.map((r) => [
    r.component,
    r.instance || '-',
    r.pid === null ? '-' : String(r.pid),
    r.address,
    r.healthy ? 'healthy' : r.problem,
    r.version || '-',
    r.config || '-',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: readonly string[]) =>
    c
      .map((v, i) => (i === c.length - 1 ? v : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const out = [line(header), ...cells.map(line)];
  for (const r of rows) {
    if (!r.targets) continue;
    out.push('', `${r.id} scrape targets:`);
    if (r.targets.length === 0) out.push('  none');
    for (const t of r.targets) {
      out.push(`  ${t.job.padEnd(16)} ${t.up} up, ${t.down} down`);
      for (const f of t.failing) out.push(`    down: ${f.target}: ${f.error}`);
    }
  }
  return out.join('\n');
}

/** Whether everything is well: running, healthy, every target up, every config loaded. */
export function allWell(rows: readonly InstanceStatus[]): boolean {
  return rows.every((r) => r.healthy && r.configCurrent && (r.targets ?? []).every((t) => t.down === 0));
}
