/**
 * Several answers as one. Groups: a series two groups return is shown once, from the first, with a
 * warning. Replicas of one group (two stores scraping the same targets): merged as promxy merges
 * them, each series once, a hole in one filled from another.
 */
import type { ServerGroup } from './config.js';

export interface GroupAnswer {
  readonly group: ServerGroup;
  /** The group's `data`. */
  readonly data: unknown;
  readonly warnings?: readonly string[];
}

/** One replica's answer, within a group that merges its replicas. */
export interface ReplicaAnswer {
  /** The replica's base URL. */
  readonly replica: string;
  /** Its `data`. */
  readonly data: unknown;
}

/** A group's replicas' answers as the group's `data`; `filled` counts samples taken into a replica's holes. */
export interface ReplicasMerged {
  readonly data: unknown;
  readonly filled: number;
}

export interface Merged<T> {
  readonly data: T;
  readonly warnings: string[];
}

type Labels = Record<string, string>;
interface SeriesResult {
  metric: Labels;
  [key: string]: unknown;
}
export interface QueryData {
  resultType: 'vector' | 'matrix' | 'scalar' | 'string';
  result: unknown;
}

/** How many colliding series a warning names before it says "and N more". */
const NAMED_COLLISIONS = 3;

function labelKey(labels: Labels): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)));
}

function formatLabels(labels: Labels): string {
  const name = labels['__name__'] ?? '';
  const rest = Object.keys(labels)
    .filter((k) => k !== '__name__')
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`);
  return `${name}{${rest.join(', ')}}`;
}

/** A group's `labels` added to a series' labels (the series' own value wins, as in promxy). */
function withLabels(labels: Labels, added: Readonly<Labels>): Labels {
  if (Object.keys(added).length === 0) return labels;
  const out: Labels = { ...labels };
  for (const [k, v] of Object.entries(added)) out[k] ??= v;
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export class MergeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MergeError';
  }
}

function collisionWarning(
  collisions: ReadonlyArray<{ labels: Labels; kept: ServerGroup; dropped: ServerGroup }>,
): string | undefined {
  if (collisions.length === 0) return undefined;
  const named = collisions
    .slice(0, NAMED_COLLISIONS)
    .map((c) => formatLabels(c.labels))
    .join(', ');
  const more = collisions.length > NAMED_COLLISIONS ? ` and ${collisions.length - NAMED_COLLISIONS} more` : '';
  const first = collisions[0]!;
  return (
    `${collisions.length} series returned by more than one server group (${named}${more}); ` +
    `each is shown once, from ${first.kept.name}, and the other group's values (${first.dropped.name}) are left out`
  );
}

/** The `data` of /api/v1/query or /query_range answered by several groups. */
export function mergeQueryData(answers: readonly GroupAnswer[]): Merged<QueryData> {
  const warnings: string[] = [];
  const parts = answers.map((a) => {
    if (!isRecord(a.data) || typeof a.data['resultType'] !== 'string')
      throw new MergeError(`${a.group.name} answered without data.resultType`);
    return { group: a.group, resultType: a.data['resultType'] as QueryData['resultType'], result: a.data['result'] };
  });
  const first = parts[0];
  if (first === undefined) return { data: { resultType: 'vector', result: [] }, warnings };
  const types = new Set(parts.map((p) => p.resultType));
  if (types.size > 1)
    throw new MergeError(`the server groups answered different result types (${[...types].join(', ')})`);
  if (first.resultType === 'scalar' || first.resultType === 'string') {
    const differing = parts.filter((p) => JSON.stringify(p.result) !== JSON.stringify(first.result));
    if (differing.length > 0) {
      warnings.push(
        `the server groups answered different ${first.resultType}s; shown is ${first.group.name}'s, not ${differing.map((p) => p.group.name).join(', ')}'s`,
      );
    }
    return { data: { resultType: first.resultType, result: first.result }, warnings };
  }
  const seen = new Map<string, ServerGroup>();
  const collisions: Array<{ labels: Labels; kept: ServerGroup; dropped: ServerGroup }> = [];
  const result: SeriesResult[] = [];
  for (const part of parts) {
    if (!Array.isArray(part.result))
      throw new MergeError(`${part.group.name} answered a ${part.resultType} whose result is not a list`);
    for (const series of part.result as unknown[]) {
      if (!isRecord(series) || !isRecord(series['metric']))
        throw new MergeError(`${part.group.name} answered a series without its metric labels`);
      const labels = withLabels(series['metric'] as Labels, part.group.labels);
      const key = labelKey(labels);
      const earlier = seen.get(key);
      if (earlier !== undefined) {
        collisions.push({ labels, kept: earlier, dropped: part.group });
        continue;
      }
      seen.set(key, part.group);
      result.push(labels === series['metric'] ? (series as SeriesResult) : { ...series, metric: labels });
    }
  }
  const warning = collisionWarning(collisions);
  if (warning !== undefined) warnings.push(warning);
  return { data: { resultType: first.resultType, result }, warnings };
}

/** A sample as the API writes it: `[seconds, value]` (a native histogram's second element is its buckets). */
type Sample = readonly [number, unknown];

function isSample(value: unknown): value is Sample {
  return Array.isArray(value) && value.length === 2 && typeof value[0] === 'number';
}

/**
 * One series' samples from two replicas, merged as promxy merges them (MergeSampleStream): the
 * side with more samples is the base (`first` when they have as many), and the other side's
 * samples are taken only where the base has none within `windowMs` of them: in its holes, before
 * its first sample, after its last. Two samples closer than that are one scrape that the two
 * replicas made at slightly different times, so the base's stands. `filled` counts the other's.
 */
export function mergeSamples(
  first: readonly Sample[],
  second: readonly Sample[],
  windowMs: number,
): { samples: Sample[]; filled: number } {
  if (second.length === 0) return { samples: [...first], filled: 0 };
  if (first.length === 0) return { samples: [...second], filled: 0 };
  const [base, other] = second.length > first.length ? [second, first] : [first, second];
  const ms = (sample: Sample) => Math.round(sample[0] * 1000);
  const samples: Sample[] = [];
  let filled = 0;
  let next = 0;
  const take = (sample: Sample) => {
    samples.push(sample);
    filled++;
  };
  const baseStart = ms(base[0]!) - windowMs;
  while (next < other.length && ms(other[next]!) < baseStart) take(other[next++]!);
  for (const sample of base) {
    const at = ms(sample);
    const last = samples.length === 0 ? -Infinity : ms(samples[samples.length - 1]!);
    for (; next < other.length && ms(other[next]!) < at; next++) {
      const t = ms(other[next]!);
      if (t > last + windowMs && t < at - windowMs) take(other[next]!);
    }
    samples.push(sample);
  }
  const end = ms(base[base.length - 1]!) + windowMs;
  for (; next < other.length; next++) if (ms(other[next]!) > end) take(other[next]!);
  return { samples, filled };
}

/** A matrix series' lists of samples: floats, and native histograms. */
const SAMPLE_LISTS = ['values', 'histograms'] as const;

function samplesOf(series: Record<string, unknown>, key: 'values' | 'histograms', source: string): Sample[] {
  const list = series[key];
  if (list === undefined) return [];
  if (!Array.isArray(list) || !list.every(isSample))
    throw new MergeError(`${source} answered a series whose ${key} are not [time, value] pairs`);
  return list;
}

/**
 * The `data` of /query or /query_range from a group's replicas (in config order), as promxy merges
 * them: a matrix's series united by label set, each series' samples merged (mergeSamples, within
 * `windowMs`); an instant vector's series united, the first replica's sample where several have
 * one; a scalar or string, the first replica's.
 */
export function mergeReplicaQueryData(answers: readonly ReplicaAnswer[], windowMs: number): ReplicasMerged {
  const parts = answers.map((a) => {
    if (!isRecord(a.data) || typeof a.data['resultType'] !== 'string' || !('result' in a.data))
      throw new MergeError(`replica ${a.replica} answered without data.resultType and data.result`);
    return { source: `replica ${a.replica}`, resultType: a.data['resultType'], result: a.data['result'] };
  });
  const first = parts[0];
  if (first === undefined) throw new MergeError('no replica answered');
  const types = new Set(parts.map((p) => p.resultType));
  if (types.size > 1) throw new MergeError(`the replicas answered different result types (${[...types].join(', ')})`);
  if (first.resultType !== 'vector' && first.resultType !== 'matrix') return { data: answers[0]!.data, filled: 0 };
  const byKey = new Map<string, Record<string, unknown>>();
  let filled = 0;
  for (const part of parts) {
    if (!Array.isArray(part.result))
      throw new MergeError(`${part.source} answered a ${part.resultType} whose result is not a list`);
    for (const series of part.result as unknown[]) {
      if (!isRecord(series) || !isRecord(series['metric']))
        throw new MergeError(`${part.source} answered a series without its metric labels`);
      const key = labelKey(series['metric'] as Labels);
      const earlier = byKey.get(key);
      if (part.resultType === 'matrix') for (const list of SAMPLE_LISTS) samplesOf(series, list, part.source);
      if (earlier === undefined) {
        byKey.set(key, series);
        continue;
      }
      if (part.resultType === 'vector') continue;
      const merged: Record<string, unknown> = { ...earlier };
      for (const list of SAMPLE_LISTS) {
        const theirs = samplesOf(series, list, part.source);
        if (theirs.length === 0) continue;
        const both = mergeSamples(samplesOf(earlier, list, part.source), theirs, windowMs);
        merged[list] = both.samples;
        filled += both.filled;
      }
      byKey.set(key, merged);
    }
  }
  return { data: { resultType: first.resultType, result: [...byKey.values()] }, filled };
}

/** A sample's value as the API writes it (`"1.5"`, `"NaN"`, `"+Inf"`, `"-Inf"`). */
function sampleValue(series: unknown): number {
  const value = isRecord(series) && Array.isArray(series['value']) ? (series['value'] as unknown[])[1] : undefined;
  if (value === '+Inf' || value === 'Inf') return Infinity;
  if (value === '-Inf') return -Infinity;
  return typeof value === 'string' ? Number(value) : NaN;
}

/**
 * A merged vector ordered as `sort(...)` (ascending) or `sort_desc(...)` orders one store's: by
 * value, NaN last either way, series of equal value kept in the order they came.
 */
export function sortByValue(data: QueryData, descending: boolean): QueryData {
  if (data.resultType !== 'vector' || !Array.isArray(data.result)) return data;
  const keyed = (data.result as unknown[]).map((series) => ({ series, value: sampleValue(series) }));
  keyed.sort((a, b) => {
    if (Number.isNaN(a.value) || Number.isNaN(b.value))
      return Number(Number.isNaN(a.value)) - Number(Number.isNaN(b.value));
    return descending ? b.value - a.value || 0 : a.value - b.value || 0;
  });
  return { resultType: data.resultType, result: keyed.map((k) => k.series) };
}

/** What a listing merge reads from each answer: who gave it (named in errors), its data, labels to add. */
interface Listing {
  readonly source: string;
  readonly data: unknown;
  readonly labels: Readonly<Record<string, string>>;
}
const groupListing = (a: GroupAnswer): Listing => ({ source: a.group.name, data: a.data, labels: a.group.labels });
const replicaListing = (a: ReplicaAnswer): Listing => ({ source: `replica ${a.replica}`, data: a.data, labels: {} });

function uniteLabelSets(parts: readonly Listing[]): Labels[] {
  const seen = new Set<string>();
  const data: Labels[] = [];
  for (const part of parts) {
    if (!Array.isArray(part.data)) throw new MergeError(`${part.source} answered series data that is not a list`);
    for (const item of part.data as unknown[]) {
      if (!isRecord(item)) throw new MergeError(`${part.source} answered a series that is not a label set`);
      const labels = withLabels(item as Labels, part.labels);
      const key = labelKey(labels);
      if (seen.has(key)) continue;
      seen.add(key);
      data.push(labels);
    }
  }
  return data;
}

/** /api/v1/series: the union of label sets (a listing, so a set two groups share is no conflict). */
export function mergeSeriesData(answers: readonly GroupAnswer[]): Merged<Labels[]> {
  return { data: uniteLabelSets(answers.map(groupListing)), warnings: [] };
}

function uniteStrings(parts: readonly Listing[], extra: (index: number) => readonly string[]): string[] {
  const all = new Set<string>();
  parts.forEach((part, index) => {
    if (part.data === null) return; // Prometheus answers null for "none"
    if (!Array.isArray(part.data)) throw new MergeError(`${part.source} answered data that is not a list of strings`);
    for (const value of part.data as unknown[]) {
      if (typeof value !== 'string') throw new MergeError(`${part.source} answered a value that is not a string`);
      all.add(value);
    }
    for (const value of extra(index)) all.add(value);
  });
  return [...all].sort();
}

/** /api/v1/labels and /label/<name>/values: the sorted union of strings. */
export function mergeStringLists(
  answers: readonly GroupAnswer[],
  extra: (group: ServerGroup) => readonly string[] = () => [],
): Merged<string[]> {
  return { data: uniteStrings(answers.map(groupListing), (i) => extra(answers[i]!.group)), warnings: [] };
}

function uniteMetadata(parts: readonly Listing[]): Record<string, unknown[]> {
  const data: Record<string, unknown[]> = {};
  const seen = new Map<string, Set<string>>();
  for (const part of parts) {
    if (!isRecord(part.data)) throw new MergeError(`${part.source} answered metadata that is not an object`);
    for (const [metric, entries] of Object.entries(part.data)) {
      if (!Array.isArray(entries))
        throw new MergeError(`${part.source} answered metadata of ${metric} that is not a list`);
      const keys = seen.get(metric) ?? new Set<string>();
      seen.set(metric, keys);
      const list = (data[metric] ??= []);
      for (const entry of entries as unknown[]) {
        const key = JSON.stringify(entry);
        if (keys.has(key)) continue;
        keys.add(key);
        list.push(entry);
      }
    }
  }
  return data;
}

/** /api/v1/metadata: metric -> entries, the union of distinct entries. */
export function mergeMetadata(answers: readonly GroupAnswer[]): Merged<Record<string, unknown[]>> {
  return { data: uniteMetadata(answers.map(groupListing)), warnings: [] };
}

/** A group's replicas' /series: the union of their label sets. */
export function mergeReplicaSeries(answers: readonly ReplicaAnswer[]): ReplicasMerged {
  return { data: uniteLabelSets(answers.map(replicaListing)), filled: 0 };
}

/** A group's replicas' /labels or /label/<name>/values: the sorted union. */
export function mergeReplicaStrings(answers: readonly ReplicaAnswer[]): ReplicasMerged {
  return { data: uniteStrings(answers.map(replicaListing), () => []), filled: 0 };
}

/** A group's replicas' /metadata: the union of distinct entries. */
export function mergeReplicaMetadata(answers: readonly ReplicaAnswer[]): ReplicasMerged {
  return { data: uniteMetadata(answers.map(replicaListing)), filled: 0 };
}

/** Warnings the groups themselves gave, each said once and attributed. */
export function groupWarnings(answers: readonly GroupAnswer[]): string[] {
  const out: string[] = [];
  for (const answer of answers)
    for (const w of answer.warnings ?? []) out.push(answers.length > 1 ? `${answer.group.name}: ${w}` : w);
  return [...new Set(out)];
}
