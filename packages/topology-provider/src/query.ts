/**
 * The topology query a dashboard writes in a variable or panel target, in two forms. A string
 * `nodes ensemble=prod service_code=(svc-a|svc-b)`: each value a regular expression matched whole,
 * as the dashboard formats variables (`(a|b)`, escaped dots, "All" as an alternation or `.*`).
 * Raw JSON `{"target": "nodes", "service_code": ["svc-a"]}`: exact strings or arrays of them, where
 * `*`, `.*` and `$__all` mean any value. Parsing and matching only; answers.ts answers.
 */
import { CachemonError, Errors } from '@cachemon/core';

export const VARIABLE_QUERIES = [
  'ensembles',
  'service_codes',
  'nodes',
  'hostnames',
  'host_instances',
  'zk_servers',
  'groups',
  'roles',
  'scrape',
  'resolution',
] as const;
export const TABLE_QUERIES = ['overview', 'service_code_summary', 'ensemble_status', 'hostname_problems'] as const;
export const SERIES_QUERIES = ['node_counts'] as const;

export type VariableQueryName = (typeof VARIABLE_QUERIES)[number];
export type TableQueryName = (typeof TABLE_QUERIES)[number];
export type SeriesQueryName = (typeof SERIES_QUERIES)[number];
export type QueryName = VariableQueryName | TableQueryName | SeriesQueryName;

export const FILTER_KEYS = ['ensemble', 'service_code', 'node', 'hostname', 'group', 'role', 'state'] as const;
export type FilterKey = (typeof FILTER_KEYS)[number];

/** Which arguments each query takes; anything else is refused, so a typo is not a silent no-op. */
const NODE_FILTERS: readonly FilterKey[] = FILTER_KEYS;
export const QUERY_ARGUMENTS: Readonly<Record<QueryName, readonly string[]>> = {
  ensembles: ['ensemble'],
  service_codes: ['ensemble', 'service_code'],
  nodes: NODE_FILTERS,
  hostnames: NODE_FILTERS,
  host_instances: [...NODE_FILTERS, 'port'],
  zk_servers: ['ensemble'],
  groups: ['ensemble', 'service_code', 'group'],
  roles: NODE_FILTERS,
  scrape: [],
  resolution: [],
  overview: NODE_FILTERS,
  service_code_summary: ['ensemble', 'service_code'],
  ensemble_status: ['ensemble'],
  hostname_problems: ['ensemble', 'hostname'],
  node_counts: ['ensemble', 'service_code', 'state'],
};

const ALL_QUERIES = new Set<string>([...VARIABLE_QUERIES, ...TABLE_QUERIES, ...SERIES_QUERIES]);

/**
 * Matches one argument's values. `literals` is set when the matcher accepts exactly a known set
 * of strings (a plain value, an escaped address, an alternation of those, a JSON list), so
 * lookups are map reads and an unknown ensemble can be named; undefined means "any of a pattern".
 */
export interface Matcher {
  readonly source: string;
  readonly literals: ReadonlySet<string> | undefined;
  test(value: string): boolean;
}

export interface TopologyQuery {
  readonly name: QueryName;
  readonly filters: Readonly<Partial<Record<FilterKey, Matcher>>>;
  /** `port` of host_instances. */
  readonly port: number | undefined;
}

function badRequest(message: string): CachemonError {
  return new CachemonError(Errors.BAD_REQUEST, message);
}

const ANY: Matcher = { source: '*', literals: undefined, test: () => true };

/** Regex metacharacters; a pattern without unescaped ones is a literal. */
const META = /[\\^$.|?*+()[\]{}]/;
const ESCAPED_LITERAL = /^(?:[^\\^$.|?*+()[\]{}]|\\[\\^$.|?*+()[\]{}/-])*$/;

function unescapeLiteral(pattern: string): string | undefined {
  if (!META.test(pattern)) return pattern;
  if (!ESCAPED_LITERAL.test(pattern)) return undefined;
  return pattern.replace(/\\(.)/g, '$1');
}

/** Splits `a|b|c` at top-level bars (none inside groups or classes, none escaped). */
function splitAlternation(pattern: string): string[] | undefined {
  const parts: string[] = [];
  let start = 0;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') i++;
    else if (c === '(' || c === '[' || c === ')' || c === ']') return undefined;
    else if (c === '|') {
      parts.push(pattern.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(pattern.slice(start));
  return parts;
}

/** `x`, `1\.2\.3\.4:11211`, `(a|b)`, `(?:a|b)`, `{a,b}`... into their literal set, when they are literals. */
function literalSet(pattern: string): Set<string> | undefined {
  const single = unescapeLiteral(pattern);
  if (single !== undefined) return new Set([single]);
  let inner: string | undefined;
  if (pattern.startsWith('(?:') && pattern.endsWith(')')) inner = pattern.slice(3, -1);
  else if (pattern.startsWith('(') && pattern.endsWith(')')) inner = pattern.slice(1, -1);
  else inner = pattern;
  const parts = splitAlternation(inner);
  if (parts === undefined) return undefined;
  const out = new Set<string>();
  for (const part of parts) {
    const literal = unescapeLiteral(part);
    if (literal === undefined) return undefined;
    out.add(literal);
  }
  return out;
}

function literalMatcher(source: string, literals: ReadonlySet<string>): Matcher {
  return { source, literals, test: (value) => literals.has(value) };
}

/** A string-target argument: an anchored regular expression, read as a literal set when it is one. */
export function patternMatcher(key: string, source: string): Matcher {
  if (source === '.*' || source === '$__all') return ANY;
  const literals = literalSet(source);
  if (literals !== undefined) return literalMatcher(source, literals);
  let regex: RegExp;
  try {
    regex = new RegExp(`^(?:${source})$`, 'u');
  } catch (err) {
    throw badRequest(`argument ${key}: "${source}" is not a valid regular expression (${(err as Error).message})`);
  }
  return { source, literals: undefined, test: (value) => regex.test(value) };
}

const JSON_WILDCARDS = new Set(['*', '.*', '$__all']);

/** A raw-JSON argument: exact strings, a list of them, or a wildcard. */
export function exactMatcher(key: string, value: unknown): Matcher {
  const values = Array.isArray(value) ? value : [value];
  const literals = new Set<string>();
  for (const item of values) {
    if (typeof item === 'number' || typeof item === 'boolean') {
      literals.add(String(item));
    } else if (typeof item === 'string') {
      if (JSON_WILDCARDS.has(item)) return ANY;
      literals.add(item);
    } else {
      throw badRequest(`argument ${key}: expected a string or an array of strings, got ${JSON.stringify(item)}`);
    }
  }
  return literalMatcher(JSON.stringify(value), literals);
}

/**
 * A value from the query builder: the plugin formats each payload value (and each item of a
 * multi-select) as a regular expression, so every item is a pattern and a list is any of them.
 */
export function builderMatcher(key: string, value: unknown): Matcher {
  const items = Array.isArray(value) ? value : [value];
  const matchers = items.map((item) => {
    if (typeof item !== 'string' && typeof item !== 'number') {
      throw badRequest(`argument ${key}: expected a string or an array of strings, got ${JSON.stringify(item)}`);
    }
    return patternMatcher(key, String(item));
  });
  if (matchers.length === 1) return matchers[0]!;
  if (matchers.some((m) => m === ANY)) return ANY;
  const literals = matchers.every((m) => m.literals !== undefined)
    ? new Set(matchers.flatMap((m) => [...m.literals!]))
    : undefined;
  return { source: JSON.stringify(value), literals, test: (v) => matchers.some((m) => m.test(v)) };
}

/** Both must match (a query argument and an ad-hoc filter on the same key). */
export function bothMatchers(a: Matcher, b: Matcher): Matcher {
  if (a === ANY) return b;
  if (b === ANY) return a;
  const literals =
    a.literals !== undefined
      ? new Set([...a.literals].filter((v) => b.test(v)))
      : b.literals !== undefined
        ? new Set([...b.literals].filter((v) => a.test(v)))
        : undefined;
  return { source: `${a.source} and ${b.source}`, literals, test: (v) => a.test(v) && b.test(v) };
}

function negated(m: Matcher): Matcher {
  return { source: `not ${m.source}`, literals: undefined, test: (v) => !m.test(v) };
}

/** An ad-hoc filter of the dashboard (`{key, operator, value}`), as the dashboard server sends it in /query. */
export interface AdHocFilter {
  readonly key: string;
  readonly operator: string;
  readonly value?: string;
  readonly values?: readonly string[];
}

/** What the dashboard's ad-hoc filters did to one query. */
export interface AdHocResult {
  readonly query: TopologyQuery;
  /** Filters on keys that are not arguments of the query: for the answer's columns (plugin.ts). */
  readonly rest: readonly AdHocFilter[];
  /** Filters that could not apply and were left out, each saying why (the panel shows them). */
  readonly notices: readonly string[];
}

/** `key op value` as the dashboard shows the filter. */
export function describeFilter(filter: AdHocFilter): string {
  const value = filter.values ? filter.values.join('|') : (filter.value ?? '');
  return `${filter.key} ${filter.operator} ${value}`;
}

/** The operators of the dashboard's ad-hoc filter UI (with the multi-value `=|`, `!=|`). */
export const AD_HOC_OPERATORS = ['=', '!=', '<', '>', '=~', '!~', '=|', '!=|'] as const;

/**
 * An ad-hoc filter as a matcher on a text value, or why it cannot be one: `<` and `>` compare
 * numbers, and a value of text has no order the filter could mean.
 */
export function textFilterMatcher(filter: AdHocFilter): Matcher | string {
  const values = filter.values ?? (filter.value === undefined ? [] : [filter.value]);
  const pattern = () => {
    try {
      return patternMatcher(filter.key, values[0] ?? '');
    } catch (err) {
      return err instanceof CachemonError ? err.message : String(err);
    }
  };
  switch (filter.operator) {
    case '=':
    case '=|':
      return exactMatcher(filter.key, values);
    case '!=':
    case '!=|':
      return negated(exactMatcher(filter.key, values));
    case '=~':
      return pattern();
    case '!~': {
      const m = pattern();
      return typeof m === 'string' ? m : negated(m);
    }
    case '<':
    case '>':
      return `${filter.key} is text; ${filter.operator} compares numbers`;
    default:
      return `operator "${filter.operator}" is not one of ${AD_HOC_OPERATORS.join(', ')}`;
  }
}

/**
 * Narrows a query by the dashboard's ad-hoc filters. An ad-hoc filter applies to every panel of
 * the dashboard: one on a key the query does not take is handed back in `rest` (it may name a
 * column of the answer), and one that cannot apply is left out with a notice, never a failed panel.
 */
export function withAdHocFilters(query: TopologyQuery, filters: readonly AdHocFilter[]): AdHocResult {
  if (filters.length === 0) return { query, rest: [], notices: [] };
  const allowed = QUERY_ARGUMENTS[query.name];
  const next: Partial<Record<FilterKey, Matcher>> = { ...query.filters };
  const rest: AdHocFilter[] = [];
  const notices: string[] = [];
  for (const filter of filters) {
    if (!allowed.includes(filter.key) || filter.key === 'port') {
      rest.push(filter);
      continue;
    }
    const key = filter.key as FilterKey;
    const matcher = textFilterMatcher(filter);
    if (typeof matcher === 'string') {
      notices.push(`ad-hoc filter "${describeFilter(filter)}" ignored: ${matcher}`);
      continue;
    }
    const existing = next[key];
    next[key] = existing === undefined ? matcher : bothMatchers(existing, matcher);
  }
  return { query: { ...query, filters: next }, rest, notices };
}

function checkName(name: string): QueryName {
  if (!ALL_QUERIES.has(name)) {
    throw badRequest(`unknown query "${name}"; known: ${[...ALL_QUERIES].join(', ')}`);
  }
  return name as QueryName;
}

function parsePort(value: string): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) < 1 || Number(value) > 65535) {
    throw badRequest(`argument port: "${value}" is not a port number (1-65535)`);
  }
  return Number(value);
}

function build(name: QueryName, args: Iterable<[string, (key: string) => Matcher, () => string]>): TopologyQuery {
  const allowed = QUERY_ARGUMENTS[name];
  const filters: Partial<Record<FilterKey, Matcher>> = {};
  let port: number | undefined;
  for (const [key, matcher, text] of args) {
    if (!allowed.includes(key)) {
      const hint = allowed.length === 0 ? 'it takes no arguments' : `it takes ${allowed.join(', ')}`;
      throw badRequest(`query ${name}: unknown argument "${key}"; ${hint}`);
    }
    if (key === 'port') port = parsePort(text());
    else filters[key as FilterKey] = matcher(key);
  }
  return { name, filters, port };
}

const STRING_ARGUMENT = /^([a-z_]+)=(.*)$/s;

/** Parses a string target: `<query> [key=value ...]`. */
export function parseStringQuery(target: string): TopologyQuery {
  const words = target.trim().split(/\s+/);
  const head = words.shift() ?? '';
  if (head === '') throw badRequest('empty query; give a query name, e.g. "ensembles"');
  const name = checkName(head);
  const seen = new Set<string>();
  const args: Array<[string, (key: string) => Matcher, () => string]> = [];
  for (const word of words) {
    const match = STRING_ARGUMENT.exec(word);
    if (!match) throw badRequest(`query ${name}: "${word}" is not a key=value argument`);
    const [, key, value] = match as unknown as [string, string, string];
    if (seen.has(key)) throw badRequest(`query ${name}: argument ${key} given twice`);
    seen.add(key);
    args.push([key, (k) => patternMatcher(k, value), () => value]);
  }
  return build(name, args);
}

/** A raw-JSON payload: exact values, or regular expressions when from the query builder (`values: 'patterns'`). */
export function parseJsonQuery(
  payload: Readonly<Record<string, unknown>>,
  values: 'exact' | 'patterns' = 'exact',
): TopologyQuery {
  const target = payload['target'];
  if (typeof target !== 'string') {
    throw badRequest(
      'raw JSON query without a "target" string naming the query, e.g. {"target": "nodes", "ensemble": "prod"}',
    );
  }
  // A string target may carry its own arguments; JSON keys add to them.
  const base = parseStringQuery(target);
  const args: Array<[string, (key: string) => Matcher, () => string]> = [];
  for (const [key, value] of Object.entries(payload)) {
    if (key === 'target') continue;
    if (Object.hasOwn(base.filters, key) || (key === 'port' && base.port !== undefined)) {
      throw badRequest(`query ${base.name}: argument ${key} given both in the target and as a key`);
    }
    const matcher = values === 'exact' ? exactMatcher : builderMatcher;
    args.push([key, (k) => matcher(k, value), () => String(Array.isArray(value) ? value[0] : value)]);
  }
  const extra = build(base.name, args);
  return { name: base.name, filters: { ...base.filters, ...extra.filters }, port: extra.port ?? base.port };
}

/** A variable or panel target in either form. */
export function parseQuery(query: unknown): TopologyQuery {
  if (typeof query === 'string') return parseStringQuery(query);
  if (query !== null && typeof query === 'object' && !Array.isArray(query)) {
    return parseJsonQuery(query as Record<string, unknown>);
  }
  throw badRequest(`a query is a string or a JSON object with "target", got ${JSON.stringify(query)}`);
}
