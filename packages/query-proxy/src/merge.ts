/** Several groups' answers as one. A series two groups return is shown once, from the first, with a warning. */
import type { ServerGroup } from './config.js';

export interface GroupAnswer {
  readonly group: ServerGroup;
  /** The group's `data`. */
  readonly data: unknown;
  readonly warnings?: readonly string[];
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
function withGroupLabels(labels: Labels, group: ServerGroup): Labels {
  if (Object.keys(group.labels).length === 0) return labels;
  const out: Labels = { ...labels };
  for (const [k, v] of Object.entries(group.labels)) out[k] ??= v;
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
      const labels = withGroupLabels(series['metric'] as Labels, part.group);
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

/** /api/v1/series: the union of label sets (a listing, so a set two groups share is no conflict). */
export function mergeSeriesData(answers: readonly GroupAnswer[]): Merged<Labels[]> {
  const seen = new Set<string>();
  const data: Labels[] = [];
  for (const answer of answers) {
    if (!Array.isArray(answer.data))
      throw new MergeError(`${answer.group.name} answered series data that is not a list`);
    for (const item of answer.data as unknown[]) {
      if (!isRecord(item)) throw new MergeError(`${answer.group.name} answered a series that is not a label set`);
      const labels = withGroupLabels(item as Labels, answer.group);
      const key = labelKey(labels);
      if (seen.has(key)) continue;
      seen.add(key);
      data.push(labels);
    }
  }
  return { data, warnings: [] };
}

/** /api/v1/labels and /label/<name>/values: the sorted union of strings. */
export function mergeStringLists(
  answers: readonly GroupAnswer[],
  extra: (group: ServerGroup) => readonly string[] = () => [],
): Merged<string[]> {
  const all = new Set<string>();
  for (const answer of answers) {
    if (answer.data === null) continue; // Prometheus answers null for "none"
    if (!Array.isArray(answer.data))
      throw new MergeError(`${answer.group.name} answered data that is not a list of strings`);
    for (const value of answer.data as unknown[]) {
      if (typeof value !== 'string') throw new MergeError(`${answer.group.name} answered a value that is not a string`);
      all.add(value);
    }
    for (const value of extra(answer.group)) all.add(value);
  }
  return { data: [...all].sort(), warnings: [] };
}

/** /api/v1/metadata: metric -> entries, the union of distinct entries. */
export function mergeMetadata(answers: readonly GroupAnswer[]): Merged<Record<string, unknown[]>> {
  const data: Record<string, unknown[]> = {};
  const seen = new Map<string, Set<string>>();
  for (const answer of answers) {
    if (!isRecord(answer.data)) throw new MergeError(`${answer.group.name} answered metadata that is not an object`);
    for (const [metric, entries] of Object.entries(answer.data)) {
      if (!Array.isArray(entries))
        throw new MergeError(`${answer.group.name} answered metadata of ${metric} that is not a list`);
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
  return { data, warnings: [] };
}

/** Warnings the groups themselves gave, each said once and attributed. */
export function groupWarnings(answers: readonly GroupAnswer[]): string[] {
  const out: string[] = [];
  for (const answer of answers)
    for (const w of answer.warnings ?? []) out.push(answers.length > 1 ? `${answer.group.name}: ${w}` : w);
  return [...new Set(out)];
}
