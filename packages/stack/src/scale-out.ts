/**
 * The installer's scale-out settings (config.sh: STORE_SHARDS, STORE_REPLICAS, STORE_WRITE_URL,
 * STORE_QUERY_URL, LONG_STORE_WRITE_URL, LONG_STORE_QUERY_URL) written into the installed tree's
 * files: the collector's env file, the short-term store's deduplication, the rule evaluator's
 * store URLs and the query proxy's groups. A setting left empty leaves the files as they are.
 * Pure functions from file texts to file texts, and applyScaleOut around them.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isMap, isScalar, isSeq, parseDocument } from 'yaml';
import type { Document, YAMLMap } from 'yaml';

export interface ScaleOutSettings {
  readonly shards?: number;
  readonly replicas?: number;
  /** One remote write URL for every shard, or one per shard. */
  readonly writeUrls?: readonly string[];
  /** Base of the short-term data's Prometheus API (a store, or vmselect's /select/<tenant>/prometheus). */
  readonly queryUrl?: string;
  /** Remote write URL of the long-term store (…/api/v1/write). */
  readonly longWriteUrl?: string;
  readonly longQueryUrl?: string;
}

export class ScaleOutError extends Error {
  override readonly name = 'ScaleOutError';
}

/** The settings' names, as config.sh and the environment give them. */
export const SCALE_OUT_VARIABLES = [
  'STORE_SHARDS',
  'STORE_REPLICAS',
  'STORE_WRITE_URL',
  'STORE_QUERY_URL',
  'LONG_STORE_WRITE_URL',
  'LONG_STORE_QUERY_URL',
] as const;

/** Interval below which two samples of a series are one: the spec's shortest scrape interval. */
export const DEDUP_INTERVAL = '5s';

const WRITE_PATH = '/api/v1/write';
const SHARDS_MAX = 999;

/** An http(s) URL with a host, or the reason it is none. */
function httpUrl(value: string): URL | string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'not a URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'not an http:// or https:// URL';
  if (url.hostname === '') return 'no host';
  if (url.search !== '' || url.hash !== '') return 'a query or fragment, which these URLs cannot carry';
  return url;
}

function count(name: string, value: string, problems: string[]): number | undefined {
  if (!new RegExp(`^[1-9][0-9]{0,${String(SHARDS_MAX).length - 1}}$`).test(value)) {
    problems.push(`${name}=${value}: a whole number from 1 to ${SHARDS_MAX}`);
    return undefined;
  }
  return Number(value);
}

/**
 * The settings from the environment (config.sh's variables); every problem is named, all at once.
 * `current` is what the installed collector.env says, for the checks across settings.
 */
export function parseScaleOutSettings(
  env: Readonly<Record<string, string | undefined>>,
  current: { readonly shards?: number } = {},
): ScaleOutSettings {
  const problems: string[] = [];
  const given = (name: (typeof SCALE_OUT_VARIABLES)[number]) => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const shardsText = given('STORE_SHARDS');
  const replicasText = given('STORE_REPLICAS');
  const shards = shardsText === undefined ? undefined : count('STORE_SHARDS', shardsText, problems);
  const replicas = replicasText === undefined ? undefined : count('STORE_REPLICAS', replicasText, problems);
  const effectiveShards = shards ?? current.shards ?? 1;
  if (replicas !== undefined && replicas > effectiveShards)
    problems.push(
      `STORE_REPLICAS=${replicas}: how many shards scrape each target, at most STORE_SHARDS (${effectiveShards})`,
    );

  const writeUrl = (name: string, value: string): string | undefined => {
    const url = httpUrl(value);
    if (typeof url === 'string') problems.push(`${name}: ${value}: ${url}`);
    else if (!url.pathname.replace(/\/+$/, '').endsWith(WRITE_PATH))
      problems.push(
        `${name}: ${value}: not a remote write URL (it ends with ${WRITE_PATH}: http://<store>:8428${WRITE_PATH}, or a cluster's http://<vminsert>:8480/insert/0/prometheus${WRITE_PATH})`,
      );
    else return value.replace(/\/+$/, '');
    return undefined;
  };
  const queryUrl = (name: string, value: string): string | undefined => {
    const url = httpUrl(value);
    if (typeof url === 'string') problems.push(`${name}: ${value}: ${url}`);
    else if (/\/api\/v1(\/.*)?$/.test(url.pathname.replace(/\/+$/, '')))
      problems.push(
        `${name}: ${value}: give the API's base, without /api/v1/... (http://<store>:8428, or a cluster's http://<vmselect>:8481/select/0/prometheus)`,
      );
    else return value.replace(/\/+$/, '');
    return undefined;
  };

  const writeText = given('STORE_WRITE_URL');
  let writeUrls: string[] | undefined;
  if (writeText !== undefined) {
    const words = writeText.split(/\s+/);
    writeUrls = words.flatMap((w) => writeUrl('STORE_WRITE_URL', w) ?? []);
    if (words.length > 1 && words.length !== effectiveShards)
      problems.push(
        `STORE_WRITE_URL has ${words.length} URLs for ${effectiveShards} shards: give one (every shard writes there) or one per shard`,
      );
  }
  const query = given('STORE_QUERY_URL');
  const longWrite = given('LONG_STORE_WRITE_URL');
  const longQuery = given('LONG_STORE_QUERY_URL');
  const settings: ScaleOutSettings = {
    ...(shards !== undefined ? { shards } : {}),
    ...(replicas !== undefined ? { replicas } : {}),
    ...(writeUrls !== undefined ? { writeUrls } : {}),
    ...(query !== undefined ? { queryUrl: queryUrl('STORE_QUERY_URL', query) } : {}),
    ...(longWrite !== undefined ? { longWriteUrl: writeUrl('LONG_STORE_WRITE_URL', longWrite) } : {}),
    ...(longQuery !== undefined ? { longQueryUrl: queryUrl('LONG_STORE_QUERY_URL', longQuery) } : {}),
  };
  if (problems.length > 0) throw new ScaleOutError(`config.sh: ${problems.join('; ')}`);
  return settings;
}

/** The value of `NAME=` in an env file's text (unquoted as the files write it), if there is the line. */
export function envValue(text: string, name: string): string | undefined {
  const match = new RegExp(`^${name}=(.*)$`, 'm').exec(text);
  if (!match) return undefined;
  const raw = match[1]!.trim();
  return /^(["']).*\1$/.test(raw) ? raw.slice(1, -1) : raw;
}

/** `NAME=value` set in an env file's text: its line (or its commented-out `# NAME=` line) replaced, else added. */
export function setEnvValue(text: string, name: string, value: string): string {
  const quoted = /[\s"'$`\\]/.test(value) ? `"${value.replace(/(["$`\\])/g, '\\$1')}"` : value;
  for (const line of [new RegExp(`^${name}=.*$`, 'm'), new RegExp(`^# ?${name}=.*$`, 'm')])
    if (line.test(text)) return text.replace(line, () => `${name}=${quoted}`);
  return `${text.replace(/\n*$/, '\n')}${name}=${quoted}\n`;
}

/** collector.env with the shards, replicas and write URLs that are set. */
export function collectorEnv(text: string, s: ScaleOutSettings): string {
  let out = text;
  if (s.shards !== undefined) out = setEnvValue(out, 'STORE_SHARDS', String(s.shards));
  if (s.replicas !== undefined) out = setEnvValue(out, 'STORE_REPLICAS', String(s.replicas));
  if (s.writeUrls !== undefined) out = setEnvValue(out, 'STORE_WRITE_URL', s.writeUrls.join(' '));
  return out;
}

/** short.env deduplicating what several shards write of each target, when STORE_REPLICAS is above 1. */
export function shortStoreEnv(text: string, s: ScaleOutSettings): string {
  return s.replicas !== undefined && s.replicas > 1
    ? setEnvValue(text, 'TS_DEDUP_MIN_SCRAPE_INTERVAL', DEDUP_INTERVAL)
    : text;
}

/** A remote write URL's base: what vmalert's -remoteWrite.url takes (it adds /api/v1/write). */
export function writeBase(url: string): string {
  return url.replace(/\/+$/, '').slice(0, -WRITE_PATH.length);
}

/** rule_evaluator.env reading STORE_QUERY_URL and writing LONG_STORE_WRITE_URL, when set. */
export function rulerEnv(text: string, s: ScaleOutSettings): string {
  let out = text;
  if (s.queryUrl !== undefined) out = setEnvValue(out, 'RULER_DATASOURCE_URL', s.queryUrl);
  if (s.longWriteUrl !== undefined) out = setEnvValue(out, 'RULER_REMOTEWRITE_URL', writeBase(s.longWriteUrl));
  return out;
}

/** What a query proxy group is given for a store: its targets, scheme, path_prefix and how replicas answer. */
export interface GroupStores {
  readonly targets: readonly string[];
  readonly scheme: 'http' | 'https';
  readonly pathPrefix: string;
  /** any: one logical store (a cluster's vmselect, one store); merge: stores holding parts or copies. */
  readonly replicas: 'any' | 'merge';
}

/** The group for query URLs (bases); undefined with the reason when the proxy cannot use them. */
export function groupStores(urls: readonly string[], replicas: 'any' | 'merge'): GroupStores | string {
  const parsed = urls.map((u) => new URL(u));
  const first = parsed[0];
  if (first === undefined) return 'no URL';
  if (parsed.some((u) => u.username !== '' || u.password !== ''))
    return 'it carries credentials, and the query proxy sends none to its groups';
  const prefix = (u: URL) => u.pathname.replace(/\/+$/, '');
  if (parsed.some((u) => u.protocol !== first.protocol || prefix(u) !== prefix(first)))
    return 'the stores differ in scheme or path, and a group has one of each';
  const port = (u: URL) => u.port || (u.protocol === 'https:' ? '443' : '80');
  return {
    // hostname keeps an IPv6 address's brackets.
    targets: parsed.map((u) => `${u.hostname}:${port(u)}`),
    scheme: first.protocol === 'https:' ? 'https' : 'http',
    pathPrefix: prefix(first),
    replicas,
  };
}

/** The server group whose label filter includes scrape=<role>. */
function groupOf(doc: Document, role: 'short' | 'long'): YAMLMap | undefined {
  const groups = doc.getIn(['promxy', 'server_groups']);
  if (!isSeq(groups)) return undefined;
  return groups.items.find((g): g is YAMLMap => {
    if (!isMap(g)) return false;
    const values = g.getIn(['label_filter', 'static_labels_include', 'scrape']);
    return isSeq(values) && values.items.some((v) => String((v as { value?: unknown }).value ?? v) === role);
  });
}

function setGroup(doc: Document, group: YAMLMap, stores: GroupStores): void {
  // As the shipped file writes them: targets: ["host:port"].
  const targets = doc.createNode(stores.targets);
  targets.flow = true;
  for (const t of targets.items) if (isScalar(t)) t.type = 'QUOTE_DOUBLE';
  const configs = doc.createNode([{}]);
  const config = configs.items[0] as YAMLMap;
  config.set('targets', targets);
  group.set('static_configs', configs);
  if (stores.scheme === 'https') group.set('scheme', 'https');
  else group.delete('scheme');
  if (stores.pathPrefix === '') group.delete('path_prefix');
  else group.set('path_prefix', stores.pathPrefix);
  if (stores.replicas === 'any') group.set('replicas', 'any');
  else group.delete('replicas');
}

/**
 * The store URLs that become the short-term group, and how they answer: STORE_QUERY_URL, else the
 * stores of a store per shard (single stores: what they take at /api/v1/write they answer at /api/v1/query).
 */
function shortGroupUrls(s: ScaleOutSettings): { urls: string[]; replicas: 'any' | 'merge' } | undefined {
  if (s.queryUrl !== undefined) return { urls: [s.queryUrl], replicas: 'any' };
  if (s.writeUrls !== undefined && s.writeUrls.length > 1)
    return { urls: s.writeUrls.map(writeBase), replicas: 'merge' };
  return undefined;
}

const clusterInsert = (url: string) => /\/insert\/[^/]+\/prometheus$/.test(new URL(writeBase(url)).pathname);

/** promxy.yml with the short- and long-term groups on the stores the settings name, and notes on what it left. */
export function promxyConfig(text: string, s: ScaleOutSettings): { text: string; notes: string[] } {
  const notes: string[] = [];
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw new ScaleOutError(`promxy.yml: ${doc.errors[0]!.message}`);
  let changed = false;
  const apply = (role: 'short' | 'long', urls: readonly string[], replicas: 'any' | 'merge', setting: string) => {
    const group = groupOf(doc, role);
    if (!group) {
      notes.push(`query_proxy: promxy.yml has no group with scrape: [${role}]; add one for ${setting}`);
      return;
    }
    const stores = groupStores(urls, replicas);
    if (typeof stores === 'string') {
      notes.push(
        `query_proxy: promxy.yml's scrape=${role} group left as it is: ${setting}: ${stores}; point it at the stores by hand (docs/scaling.md)`,
      );
      return;
    }
    setGroup(doc, group, stores);
    changed = true;
  };
  const short = shortGroupUrls(s);
  if (short && s.queryUrl === undefined && s.writeUrls?.some(clusterInsert))
    notes.push(
      'query_proxy: promxy.yml left as it is: STORE_WRITE_URL names clusters (/insert/...), whose data is read at their vmselect: set STORE_QUERY_URL',
    );
  else if (short)
    apply(
      'short',
      short.urls,
      short.replicas,
      s.queryUrl !== undefined ? 'STORE_QUERY_URL' : 'STORE_WRITE_URL (a store per shard)',
    );
  if (s.longQueryUrl !== undefined) apply('long', [s.longQueryUrl], 'any', 'LONG_STORE_QUERY_URL');
  return { text: changed ? doc.toString({ lineWidth: 0, flowCollectionPadding: false }) : text, notes };
}

/** Notes on settings that leave part of the stack reading what the shards do not write. */
export function scaleOutNotes(
  s: ScaleOutSettings,
  files: { readonly ruler?: string; readonly collector?: string },
): string[] {
  const notes: string[] = [];
  const collector = files.collector ?? '';
  const shards = s.shards ?? Number(envValue(collector, 'STORE_SHARDS') ?? 1);
  const replicas = s.replicas ?? Number(envValue(collector, 'STORE_REPLICAS') ?? 1);
  const urls = s.writeUrls ?? (envValue(collector, 'STORE_WRITE_URL') ?? '').split(/\s+/).filter(Boolean);
  if (urls.length > 1 && replicas < shards)
    notes.push(
      `collector: each of the ${shards} stores of STORE_WRITE_URL holds about ${replicas}/${shards} of the targets: the rule evaluator reads one of them (RULER_DATASOURCE_URL), and the query proxy merges series but does not re-aggregate across stores; for alerts, downsampling and aggregated dashboards, write to one logical store (docs/scaling.md)`,
    );
  const datasource = files.ruler !== undefined ? envValue(files.ruler, 'RULER_DATASOURCE_URL') : undefined;
  const only = s.writeUrls?.length === 1 ? s.writeUrls[0] : undefined;
  if (only !== undefined && s.queryUrl === undefined && datasource !== undefined) {
    const written = new URL(writeBase(only));
    const read = new URL(datasource);
    if (clusterInsert(only))
      notes.push(
        `collector: the shards write to a cluster (${written.host}${written.pathname}): set STORE_QUERY_URL to its vmselect (/select/<tenant>/prometheus), or the rule evaluator and the query proxy keep reading ${read.host}`,
      );
    else if (written.host !== read.host)
      notes.push(
        `collector: the shards write to ${written.host}, the rule evaluator reads ${read.host} (RULER_DATASOURCE_URL): set STORE_QUERY_URL to where the written data is read`,
      );
  }
  return notes;
}

/** What changed between two texts of an env file: the names of the variables whose values differ. */
function envChanges(before: string, after: string, names: readonly string[]): string {
  return names.filter((n) => envValue(before, n) !== envValue(after, n)).join(', ');
}

export interface ScaleOutChange {
  /** Relative to the tree. */
  readonly file: string;
  readonly text: string;
  /** What it changes, in words without the values (URLs may carry credentials). */
  readonly what: string;
}

/** Every file the settings change in an installed tree, its new text, and the notes; files missing from the tree are skipped. */
export function planScaleOut(dir: string, s: ScaleOutSettings): { changes: ScaleOutChange[]; notes: string[] } {
  const read = (file: string) => (existsSync(join(dir, file)) ? readFileSync(join(dir, file), 'utf8') : undefined);
  const changes: ScaleOutChange[] = [];
  const notes: string[] = [];
  const change = (file: string, render: (text: string) => string, what: (before: string, after: string) => string) => {
    const before = read(file);
    if (before === undefined) return;
    const after = render(before);
    if (after !== before) changes.push({ file, text: after, what: what(before, after) });
  };
  const env =
    (...names: string[]) =>
    (before: string, after: string) =>
      envChanges(before, after, names);
  change(
    'collector/collector.env',
    (t) => collectorEnv(t, s),
    env('STORE_SHARDS', 'STORE_REPLICAS', 'STORE_WRITE_URL'),
  );
  change('short_term_store/short.env', (t) => shortStoreEnv(t, s), env('TS_DEDUP_MIN_SCRAPE_INTERVAL'));
  change(
    'rule_evaluator/rule_evaluator.env',
    (t) => rulerEnv(t, s),
    env('RULER_DATASOURCE_URL', 'RULER_REMOTEWRITE_URL'),
  );
  change(
    'query_proxy/conf/promxy.yml',
    (t) => {
      const out = promxyConfig(t, s);
      notes.push(...out.notes);
      return out.text;
    },
    () => 'the stores of its groups',
  );
  const ruler = read('rule_evaluator/rule_evaluator.env');
  const collector = read('collector/collector.env');
  notes.push(
    ...scaleOutNotes(s, {
      ...(ruler !== undefined ? { ruler: rulerEnv(ruler, s) } : {}),
      ...(collector !== undefined ? { collector } : {}),
    }),
  );
  return { changes, notes };
}

/** The settings from env, checked against what the tree at dir says now (its collector.env's STORE_SHARDS). */
export function scaleOutSettingsFor(dir: string, env: Readonly<Record<string, string | undefined>>): ScaleOutSettings {
  const collector = join(dir, 'collector/collector.env');
  const current = existsSync(collector) ? envValue(readFileSync(collector, 'utf8'), 'STORE_SHARDS') : undefined;
  return parseScaleOutSettings(env, current !== undefined && /^\d+$/.test(current) ? { shards: Number(current) } : {});
}

/** The settings from env applied to the tree at dir; returns what was changed (one line each) and the notes. */
export function applyScaleOut(dir: string, env: Readonly<Record<string, string | undefined>>): string[] {
  const { changes, notes } = planScaleOut(dir, scaleOutSettingsFor(dir, env));
  for (const { file, text } of changes) writeFileSync(join(dir, file), text);
  return [...changes.map(({ file, what }) => `${file}: ${what} set from config.sh`), ...notes];
}
