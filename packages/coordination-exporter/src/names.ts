/**
 * Prometheus names for mntr keys, so that the exposition passes `promtool check metrics`. ZooKeeper
 * prints its summaries as five or nine keys (`zk_avg_X`, `zk_min_X`, `zk_max_X`, `zk_cnt_X`,
 * `zk_sum_X`, `zk_p50_X`...), counters without `_total`, gauges with `_count` and units as `_ms`.
 * Shaped the way ZooKeeper's own Prometheus metrics provider shapes them:
 *
 * - a summary set becomes one summary `zk_X` (`{quantile="0.5"}`..., `_sum`, `_count`) and gauges
 *   `zk_X_min`, `zk_X_max`; avg is dropped (it is sum / count); a summary per top-level znode or
 *   per learner (`zk_cnt_<key>_write_per_namespace`) is one summary with a `key` label;
 * - a counter gets `_total` (`_count` becomes `_total`: `zk_commit_count` -> `zk_commit_total`);
 * - a gauge loses `_count` (well-known ones get a plural: `zk_znode_count` -> `zk_znodes`);
 * - an abbreviated unit becomes the base unit, the value scaled (`_ms` -> `_seconds`, x 1e-3);
 *   counts are not scaled;
 * - keys of the Prometheus provider (`zk_readlatency{quantile="0.5"}`, `zk_readlatency_count`)
 *   join the same shapes.
 *
 * The legacy gauges `zk_avg_latency`, `zk_min_latency`, `zk_max_latency` (milliseconds) keep their
 * names: promtool accepts them and every ZooKeeper dashboard reads them.
 */
import type { MetricType } from '@cachemon/core';
import type { MntrEntry } from './mntr.js';
import { COUNTER_KEYS, COUNTER_SET_NAMES, SUMMARY_NAMES, SUMMARY_SET_NAMES } from './mntr-catalog.js';

/** Gauges ending in `_count` that read better in the plural than with the suffix cut off. */
export const GAUGE_RENAMES: ReadonlyMap<string, string> = new Map([
  ['zk_znode_count', 'zk_znodes'],
  ['zk_watch_count', 'zk_watches'],
  ['zk_ephemerals_count', 'zk_ephemerals'],
  ['zk_open_file_descriptor_count', 'zk_open_file_descriptors'],
  ['zk_max_file_descriptor_count', 'zk_max_file_descriptors'],
]);

/** Kept as they are (milliseconds): promtool takes them, and dashboards read them. */
export const LEGACY_GAUGES: ReadonlySet<string> = new Set(['zk_avg_latency', 'zk_min_latency', 'zk_max_latency']);

/** The quantile of each percentile part of an ADVANCED summary. */
const QUANTILES: Readonly<Record<string, string>> = { p50: '0.5', p95: '0.95', p99: '0.99', p999: '0.999' };
const SUMMARY_PART = /^zk_(avg|min|max|cnt|sum|p50|p95|p99|p999)_(.+)$/;

interface Unit {
  readonly base: 'seconds' | 'bytes';
  readonly mul?: number;
  readonly div?: number;
}

/**
 * Name tokens promtool flags (its abbreviations s ms us ns sec b kb mb gb tb pb m h d, and
 * prefixed units such as `milliseconds`), and how a value in them becomes the base unit. `min`
 * is not here: in ZooKeeper's names it is a minimum.
 */
const UNITS: Readonly<Record<string, Unit>> = {
  s: { base: 'seconds' },
  sec: { base: 'seconds' },
  ms: { base: 'seconds', div: 1e3 },
  milliseconds: { base: 'seconds', div: 1e3 },
  us: { base: 'seconds', div: 1e6 },
  microseconds: { base: 'seconds', div: 1e6 },
  ns: { base: 'seconds', div: 1e9 },
  nanoseconds: { base: 'seconds', div: 1e9 },
  m: { base: 'seconds', mul: 60 },
  minutes: { base: 'seconds', mul: 60 },
  h: { base: 'seconds', mul: 3600 },
  hours: { base: 'seconds', mul: 3600 },
  d: { base: 'seconds', mul: 86400 },
  days: { base: 'seconds', mul: 86400 },
  b: { base: 'bytes' },
  kb: { base: 'bytes', mul: 1024 },
  kilobytes: { base: 'bytes', mul: 1024 },
  mb: { base: 'bytes', mul: 1024 ** 2 },
  megabytes: { base: 'bytes', mul: 1024 ** 2 },
  gb: { base: 'bytes', mul: 1024 ** 3 },
  gigabytes: { base: 'bytes', mul: 1024 ** 3 },
  tb: { base: 'bytes', mul: 1024 ** 4 },
  terabytes: { base: 'bytes', mul: 1024 ** 4 },
  pb: { base: 'bytes', mul: 1024 ** 5 },
  petabytes: { base: 'bytes', mul: 1024 ** 5 },
};

type Scale = (value: number) => number;
const identity: Scale = (value) => value;

/** `name` with its unit tokens in the base unit, and how its values are scaled to it. */
export function withBaseUnits(name: string): { name: string; scale: Scale; note: string } {
  const tokens = name.split('_');
  let mul = 1;
  let div = 1;
  const notes: string[] = [];
  for (let i = 1; i < tokens.length; i++) {
    const unit = UNITS[tokens[i]!];
    if (unit === undefined) continue;
    notes.push(`${tokens[i]} as ${unit.base}`);
    tokens[i] = unit.base;
    mul *= unit.mul ?? 1;
    div *= unit.div ?? 1;
  }
  if (notes.length === 0) return { name, scale: identity, note: '' };
  // Divided rather than multiplied by 1e-3: 7 ms gives 0.007, not 0.007000000000000001.
  const scale: Scale = mul === 1 && div === 1 ? identity : (value) => (value * mul) / div;
  return { name: tokens.join('_'), scale, note: `; ${notes.join(', ')}` };
}

/** camelCase to snake_case: promtool wants snake_case names and label names. */
export function snakeCase(name: string): string {
  return /[A-Z]/.test(name) ? name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase() : name;
}

/** One sample an mntr entry becomes. */
export interface ShapedSample {
  /** The family (TYPE line) it belongs to. */
  readonly family: string;
  readonly type: MetricType;
  readonly help: string;
  /** The sample's own name (`<family>_sum` of a summary, ...). */
  readonly name: string;
  /** Labels besides zk_host, in order. */
  readonly labels: ReadonlyArray<readonly [string, string]>;
  readonly value: number;
}

/** The names in one reply, for telling summaries ZooKeeper adds in a later release by their parts. */
export interface ReplyNames {
  readonly names: ReadonlySet<string>;
  /** Names that carry a `quantile` label (the Prometheus provider's summaries). */
  readonly quantiled: ReadonlySet<string>;
}

export function replyNames(entries: readonly MntrEntry[]): ReplyNames {
  const names = new Set<string>();
  const quantiled = new Set<string>();
  for (const entry of entries) {
    const name = snakeCase(entry.name);
    names.add(name);
    if (entry.labels.some(([label]) => label === 'quantile')) quantiled.add(name);
  }
  return { names, quantiled };
}

/**
 * The sample a numeric mntr entry becomes, `undefined` for one that is dropped on purpose (a
 * summary's avg), or a string saying why it cannot be exposed.
 */
export function shapeEntry(entry: MntrEntry, reply: ReplyNames): ShapedSample | undefined | string {
  const value = entry.value!;
  const name = snakeCase(entry.name);
  const labels: Array<readonly [string, string]> = [];
  for (const [label, text] of entry.labels) {
    if (label === 'zk_host') continue;
    // Only histograms may have `le`; ZooKeeper prints none.
    if (label === 'le') return `${entry.key}: an le label outside a histogram`;
    labels.push([snakeCase(label), text]);
  }
  const plain = (family: string, type: MetricType, help: string, v: number = value): ShapedSample => ({
    family,
    type,
    help,
    name: family,
    labels,
    value: v,
  });
  if (LEGACY_GAUGES.has(name)) return plain(name, 'gauge', `ZooKeeper mntr ${name} (milliseconds).`);

  const part = SUMMARY_PART.exec(name);
  if (part !== null) {
    const [, stat, rest] = part as unknown as [string, string, string];
    const summary = summaryOf(stat, rest, entry, reply);
    if (summary !== undefined) {
      if (stat === 'avg') return undefined;
      if (summary.member !== undefined) labels.unshift(['key', summary.member]);
      const { name: family, scale, note: unitNote } = withBaseUnits(`zk_${summary.base}`);
      const keys = summary.member === undefined ? summary.base : `<key>_${summary.base}`;
      if (stat === 'min' || stat === 'max') {
        const help = `ZooKeeper mntr zk_${stat}_${keys}${unitNote.replace(/^; /, ' (')}${unitNote ? ')' : ''}.`;
        return plain(`${family}_${stat}`, 'gauge', help, scale(value));
      }
      const help = `ZooKeeper summary ${summary.base} (mntr zk_cnt_${keys}, zk_sum_${keys}, zk_pNN_${keys}${unitNote}).`;
      if (stat === 'cnt') return { ...plain(family, 'summary', help), name: `${family}_count` };
      if (stat === 'sum') return { ...plain(family, 'summary', help, scale(value)), name: `${family}_sum` };
      labels.push(['quantile', QUANTILES[stat]!]);
      return plain(family, 'summary', help, scale(value));
    }
  }

  // The Prometheus metrics provider's summaries: `X{quantile=...}`, `X_count`, `X_sum`.
  if (reply.quantiled.has(name)) {
    const { name: family, scale, note } = withBaseUnits(name);
    const at = labels.findIndex(([label]) => label === 'quantile');
    if (at !== -1) labels.push(...labels.splice(at, 1)); // quantile last, as client libraries print it
    return plain(family, 'summary', `ZooKeeper summary ${name} (mntr${note}).`, scale(value));
  }
  for (const suffix of ['_count', '_sum'] as const) {
    if (!name.endsWith(suffix)) continue;
    const base = name.slice(0, -suffix.length);
    const rest = base.slice(3);
    const isSummary =
      SUMMARY_NAMES.has(rest) ||
      SUMMARY_SET_NAMES.has(rest) ||
      reply.quantiled.has(base) ||
      (reply.names.has(`${base}_count`) && reply.names.has(`${base}_sum`));
    if (!isSummary) continue;
    const { name: family, scale, note } = withBaseUnits(base);
    const help = `ZooKeeper summary ${base} (mntr${note}).`;
    return { ...plain(family, 'summary', help, suffix === '_sum' ? scale(value) : value), name: family + suffix };
  }

  // Counters, and counter sets (`zk_<key>_quota_exceeded_error_per_namespace`).
  if (COUNTER_KEYS.has(name) || name.endsWith('_total')) {
    const { name: family, scale, note } = counterName(name);
    return plain(family, 'counter', `ZooKeeper mntr ${entry.name} (a counter${note}).`, scale(value));
  }
  const rest = name.slice(3);
  for (const set of COUNTER_SET_NAMES) {
    if (!(rest.length > set.length + 1 && rest.endsWith(`_${set}`))) continue;
    labels.unshift(['key', member(entry.rawName, 3, set)]);
    const { name: family, scale, note } = counterName(`zk_${set}`);
    return plain(family, 'counter', `ZooKeeper mntr zk_<key>_${set} (a counter${note}).`, scale(value));
  }

  // Gauges.
  const renamed = GAUGE_RENAMES.get(name);
  if (renamed !== undefined) return plain(renamed, 'gauge', `ZooKeeper mntr ${name}.`);
  const { name: unitName, scale, note } = withBaseUnits(name);
  const family = unitName.replace(/_(count|sum|bucket)$/, '');
  return plain(
    family,
    'gauge',
    `ZooKeeper mntr ${entry.name}${note.replace(/^; /, ' (')}${note ? ')' : ''}.`,
    scale(value),
  );
}

/** A counter's name: `_count` becomes `_total`, `_total` stays, anything else gets it. */
export function counterName(name: string): { name: string; scale: Scale; note: string } {
  const bare = name.endsWith('_total') ? name.slice(0, -'_total'.length) : name;
  const { name: unitName, scale, note } = withBaseUnits(bare);
  const total = `${unitName.endsWith('_count') ? unitName.slice(0, -'_count'.length) : unitName}_total`;
  return { name: total, scale, note };
}

/**
 * The summary that `zk_<stat>_<rest>` is a part of: a known summary, a member of a known set, or
 * one the reply has the count and sum of (a summary added by a later release). Undefined for the
 * legacy gauges that look like parts (`zk_max_file_descriptor_count`).
 */
function summaryOf(
  stat: string,
  rest: string,
  entry: MntrEntry,
  reply: ReplyNames,
): { base: string; member?: string } | undefined {
  if (SUMMARY_NAMES.has(rest)) return { base: rest };
  for (const set of SUMMARY_SET_NAMES) {
    if (rest.length > set.length + 1 && rest.endsWith(`_${set}`))
      return { base: set, member: member(entry.rawName, `zk_${stat}_`.length, set) };
  }
  if (reply.names.has(`zk_cnt_${rest}`) && reply.names.has(`zk_sum_${rest}`)) return { base: rest };
  return undefined;
}

/** The member of a set as the server printed it (`my-app` of `zk_cnt_my-app_write_per_namespace`). */
function member(rawName: string, prefixLength: number, set: string): string {
  return rawName.slice(prefixLength, rawName.length - set.length - 1);
}
