/**
 * Which server groups a PromQL query goes to. The query is parsed with the Prometheus project's
 * own grammar (@prometheus-io/lezer-promql); every vector selector's matchers are checked against
 * each group's label filter. Pure: no I/O.
 *
 * A group can answer a selector when, for every label its filter names, the selector's matchers
 * on that label can all match one of the group's allowed values (a selector without a matcher on
 * the label can match any). A group receives the query when it can answer every selector.
 */
import { parser } from '@prometheus-io/lezer-promql';
import type { SyntaxNode } from '@lezer/common';
import type { ServerGroup } from './config.js';

export type MatchOp = '=' | '!=' | '=~' | '!~';

export interface LabelMatcher {
  readonly label: string;
  readonly op: MatchOp;
  readonly value: string;
}

export interface Selector {
  /** Offsets of the selector in the query text. */
  readonly from: number;
  readonly to: number;
  readonly matchers: readonly LabelMatcher[];
  /** Offsets of each matcher written inside the braces (the metric name before them has none). */
  readonly spans: ReadonlyArray<{ readonly matcher: LabelMatcher; readonly from: number; readonly to: number }>;
  /** Offsets of the `{...}`, when written. */
  readonly braces?: { readonly from: number; readonly to: number };
}

/**
 * A place where the query combines series with each other: an aggregation, or a binary operation
 * whose `on`/`ignoring` clause matches series regardless of some labels. Asked of several groups,
 * each group computes it over its own series only.
 */
export interface CombiningOperation {
  /** `sum`, `topk`, `/ on(...)`, ... as written. */
  readonly operation: string;
  /** 0-based offset. */
  readonly position: number;
  /** Labels the operation keeps apart (`by`), or drops (`without`, `ignoring`). */
  readonly grouping: { readonly kind: 'by' | 'without' | 'on' | 'ignoring'; readonly labels: readonly string[] };
}

export interface ParsedQuery {
  readonly query: string;
  readonly selectors: readonly Selector[];
  readonly combining: readonly CombiningOperation[];
  /** What an instant query of it answers when no group is asked. */
  readonly instantResultType: 'vector' | 'matrix' | 'scalar' | 'string';
}

/** A syntax error at a position of the query (0-based offset), as Prometheus reports it. */
export class PromQLParseError extends Error {
  constructor(
    readonly position: number,
    readonly query: string,
    detail: string,
  ) {
    const { line, column } = lineColumn(query, position);
    super(`${line}:${column}: parse error: ${detail}`);
    this.name = 'PromQLParseError';
  }
}

function lineColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset).split('\n');
  return { line: before.length, column: (before.at(-1)?.length ?? 0) + 1 };
}

const GO_ESCAPES: Readonly<Record<string, string>> = { a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\\': '\\', "'": "'", '"': '"' };

/** The value of a PromQL string literal: "…" and '…' with Go escapes, `…` raw. */
export function unquote(literal: string): string {
  const quote = literal[0];
  const body = literal.slice(1, -1);
  if (quote === '`') return body;
  return body.replace(/\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{3}|.)/g, (_, escape: string) => {
    if (escape.length === 1) return GO_ESCAPES[escape] ?? escape;
    if (escape[0] === 'x' || escape[0] === 'u' || escape[0] === 'U') return String.fromCodePoint(parseInt(escape.slice(1), 16));
    return String.fromCharCode(parseInt(escape, 8));
  });
}

const OPS: Readonly<Record<string, MatchOp>> = { EqlSingle: '=', Neq: '!=', EqlRegex: '=~', NeqRegex: '!~' };

function matcherOf(node: SyntaxNode, text: (n: SyntaxNode) => string): LabelMatcher | undefined {
  if (node.name === 'QuotedLabelName') {
    // `{"metric.name"}`: the metric name written inside the braces.
    const literal = node.getChild('StringLiteral');
    return literal ? { label: '__name__', op: '=', value: unquote(text(literal)) } : undefined;
  }
  if (node.name !== 'UnquotedLabelMatcher' && node.name !== 'QuotedLabelMatcher') return undefined;
  const nameNode = node.getChild('LabelName') ?? node.getChild('QuotedLabelName')?.getChild('StringLiteral');
  const opNode = node.getChild('MatchOp')?.firstChild;
  const values = node.getChildren('StringLiteral');
  const valueNode = values.at(-1);
  if (!nameNode || !opNode || !valueNode) return undefined;
  const label = nameNode.name === 'StringLiteral' ? unquote(text(nameNode)) : text(nameNode);
  const op = OPS[opNode.name];
  return op === undefined ? undefined : { label, op, value: unquote(text(valueNode)) };
}

const SCALAR_FUNCTIONS = new Set(['scalar', 'time', 'pi', 'minute', 'hour', 'day_of_month', 'day_of_week', 'day_of_year', 'days_in_month', 'month', 'year']);

function groupingOf(node: SyntaxNode, text: (n: SyntaxNode) => string): CombiningOperation['grouping'] | undefined {
  const labels = node.getChild('GroupingLabels')?.getChildren('LabelName').map(text) ?? [];
  for (const kind of ['By', 'Without', 'On', 'Ignoring'] as const) {
    if (node.getChild(kind)) return { kind: kind.toLowerCase() as CombiningOperation['grouping']['kind'], labels };
  }
  return undefined;
}

/** Parses a query; throws PromQLParseError at the first syntax error. */
export function parseQuery(query: string): ParsedQuery {
  if (query.trim() === '') throw new PromQLParseError(0, query, 'no expression found in input');
  const tree = parser.parse(query);
  const text = (n: SyntaxNode) => query.slice(n.from, n.to);
  let error: number | undefined;
  const selectors: Selector[] = [];
  const combining: CombiningOperation[] = [];
  tree.iterate({
    enter(ref) {
      if (ref.type.isError) {
        error ??= ref.from;
        return false;
      }
      const node = ref.node;
      if (ref.name === 'AggregateExpr') {
        const modifier = node.getChild('AggregateModifier');
        const grouping = (modifier && groupingOf(modifier, text)) ?? { kind: 'by' as const, labels: [] };
        combining.push({ operation: text(node.getChild('AggregateOp') ?? node), position: node.from, grouping });
        return undefined;
      }
      if (ref.name === 'BinaryExpr') {
        const clause = node.getChild('MatchingModifierClause');
        const grouping = clause && groupingOf(clause, text);
        if (clause && grouping) combining.push({ operation: text(clause), position: clause.from, grouping });
        return undefined;
      }
      if (ref.name !== 'VectorSelector') return undefined;
      const matchers: LabelMatcher[] = [];
      const spans: Array<{ matcher: LabelMatcher; from: number; to: number }> = [];
      const name = node.getChild('Identifier');
      if (name) matchers.push({ label: '__name__', op: '=', value: text(name) });
      const braces = node.getChild('LabelMatchers');
      for (let child = braces?.firstChild ?? null; child; child = child.nextSibling) {
        const m = matcherOf(child, text);
        if (!m) continue;
        matchers.push(m);
        spans.push({ matcher: m, from: child.from, to: child.to });
      }
      selectors.push({ from: node.from, to: node.to, matchers, spans, ...(braces ? { braces: { from: braces.from, to: braces.to } } : {}) });
      return undefined;
    },
  });
  if (error !== undefined) {
    const found = query.slice(error, error + 20).split('\n')[0];
    throw new PromQLParseError(error, query, found === '' ? 'unexpected end of input' : `unexpected "${found}"`);
  }
  return { query, selectors, combining, instantResultType: resultTypeOf(tree.topNode.firstChild, text) };
}

function resultTypeOf(node: SyntaxNode | null, text: (n: SyntaxNode) => string): ParsedQuery['instantResultType'] {
  while (node?.name === 'ParenExpr') node = node.firstChild;
  switch (node?.name) {
    case 'MatrixSelector':
    case 'SubqueryExpr':
      return 'matrix';
    case 'StringLiteral':
      return 'string';
    case 'NumberDurationLiteral':
    case 'NumberLiteral':
      return 'scalar';
    case 'FunctionCall':
      return SCALAR_FUNCTIONS.has(text(node.getChild('FunctionIdentifier') ?? node)) ? 'scalar' : 'vector';
    case 'UnaryExpr':
      return resultTypeOf(node.lastChild, text);
    default:
      return 'vector';
  }
}

/** Parses a query; throws PromQLParseError at the first syntax error. Returns its vector selectors. */
export function parseSelectors(query: string): Selector[] {
  return [...parseQuery(query).selectors];
}

/** A matcher's test, compiled once; an RE2 pattern JavaScript cannot compile is assumed to match. */
function test(matcher: LabelMatcher): (value: string) => boolean {
  switch (matcher.op) {
    case '=':
      return (v) => v === matcher.value;
    case '!=':
      return (v) => v !== matcher.value;
    default: {
      let regex: RegExp | undefined;
      try {
        regex = new RegExp(`^(?:${matcher.value})$`, 's');
      } catch {
        regex = undefined;
      }
      const negate = matcher.op === '!~';
      return (v) => (regex === undefined ? true : regex.test(v) !== negate);
    }
  }
}

/** Whether a group can hold series a selector selects. */
export function groupCanAnswer(group: ServerGroup, selector: Selector): boolean {
  for (const [label, allowed] of Object.entries(group.include)) {
    const tests = selector.matchers.filter((m) => m.label === label).map(test);
    if (tests.length === 0) continue;
    const excluded = group.exclude[label] ?? [];
    if (!allowed.some((v) => !excluded.includes(v) && tests.every((t) => t(v)))) return false;
  }
  for (const [label, excluded] of Object.entries(group.exclude)) {
    if (label in group.include) continue;
    // Only what the label is not is known: an equality to an excluded value is all that rules it out.
    if (selector.matchers.some((m) => m.label === label && m.op === '=' && excluded.includes(m.value))) return false;
  }
  return true;
}

export type RouteDecision = 'none' | 'single' | 'several' | 'spanning';

export interface Plan {
  readonly decision: RouteDecision;
  /** The groups that receive the query. */
  readonly groups: readonly ServerGroup[];
  readonly parsed: ParsedQuery;
  /**
   * For `spanning`: the query's selectors need different groups, so no single store holds all it
   * combines; a number computed from one group's part would be wrong.
   */
  readonly reason?: string;
}

/** Which groups can answer every selector (an empty list of selectors: every group). */
function ableGroups(selectors: readonly Selector[], groups: readonly ServerGroup[]): { all: ServerGroup[]; perSelector: ServerGroup[][] } {
  const perSelector = selectors.map((s) => groups.filter((g) => groupCanAnswer(g, s)));
  return { all: groups.filter((g) => perSelector.every((able) => able.includes(g))), perSelector };
}

/**
 * Routes a query:
 *   single    exactly one group can answer every selector: forward untouched;
 *   several   more than one can: ask each, merge;
 *   none      a selector no group can answer, alone: an empty result;
 *   spanning  every selector has a group, but no group has them all: refused with a warning.
 * A query without selectors (`1+1`, `time()`) goes to the first group.
 */
export function planQuery(query: string | ParsedQuery, groups: readonly ServerGroup[]): Plan {
  const parsed = typeof query === 'string' ? parseQuery(query) : query;
  const { selectors } = parsed;
  if (selectors.length === 0) return { decision: groups.length > 0 ? 'single' : 'none', groups: groups.slice(0, 1), parsed };
  const { all, perSelector } = ableGroups(selectors, groups);
  if (all.length === 1) return { decision: 'single', groups: all, parsed };
  if (all.length > 1) return { decision: 'several', groups: all, parsed };
  if (perSelector.some((able) => able.length === 0)) return { decision: 'none', groups: [], parsed };
  const names = [...new Set(perSelector.flat())].map((g) => g.name).join(' and ');
  return {
    decision: 'spanning',
    groups: [],
    parsed,
    reason: `the query combines series that live in different server groups (${names}); no single group can compute it, so no result is given`,
  };
}

/**
 * Routes the `match[]` selectors of /series, /labels and /label/<name>/values: a group is asked
 * when it can hold series of at least one of them; without any, every group is.
 */
export function planMatches(matches: readonly string[], groups: readonly ServerGroup[]): { decision: RouteDecision; groups: readonly ServerGroup[] } {
  if (matches.length === 0) return { decision: groups.length === 1 ? 'single' : groups.length === 0 ? 'none' : 'several', groups };
  const selectors = matches.map((m, index) => {
    const parsed = parseQuery(m);
    const [only] = parsed.selectors;
    if (parsed.selectors.length !== 1 || !only || only.from !== m.length - m.trimStart().length || only.to !== m.trimEnd().length) {
      throw new PromQLParseError(0, m, `match[] number ${index + 1} must be a single series selector such as up{job="x"}`);
    }
    return only;
  });
  const asked = groups.filter((g) => selectors.some((s) => groupCanAnswer(g, s)));
  return { decision: asked.length === 0 ? 'none' : asked.length === 1 ? 'single' : 'several', groups: asked };
}

/** Labels a group's series all carry with one known value: its `labels`, and single-valued includes. */
function fixedLabels(group: ServerGroup): Map<string, string> {
  const fixed = new Map<string, string>();
  for (const [label, values] of Object.entries(group.include)) if (values.length === 1) fixed.set(label, values[0]!);
  for (const [label, value] of Object.entries(group.labels)) fixed.set(label, value);
  return fixed;
}

/**
 * Why merging the groups' answers may give a wrong number, if it may: each group computed the
 * query's aggregations and `on`/`ignoring` matches over its own series only. An operation that
 * keeps the groups' series apart (`by` a label with a different value in each group, `without`
 * none of those labels) is safe.
 */
export function combiningProblem(parsed: ParsedQuery, groups: readonly ServerGroup[]): string | undefined {
  if (groups.length < 2) return undefined;
  const fixed = groups.map(fixedLabels);
  // Labels whose value tells every asked group's series apart.
  const separating = [...(fixed[0]?.keys() ?? [])].filter((label) => new Set(fixed.map((f) => f.get(label))).size === groups.length && fixed.every((f) => f.has(label)));
  const unsafe = parsed.combining.find(({ grouping }) => {
    if (separating.length === 0) return true;
    const kept = grouping.kind === 'by' || grouping.kind === 'on' ? separating.some((l) => grouping.labels.includes(l)) : separating.some((l) => !grouping.labels.includes(l));
    return !kept;
  });
  if (!unsafe) return undefined;
  const { line, column } = lineColumn(parsed.query, unsafe.position);
  const hint = separating.length > 0 ? `; keep the groups apart with by (${separating[0]}) or select one with a ${separating[0]} matcher` : '';
  return `"${unsafe.operation}" at ${line}:${column} combines series across the server groups ${groups.map((g) => g.name).join(' and ')}, but each group computed it over its own series only, so the merged numbers may be wrong${hint}`;
}

/**
 * The query as a group with `labels` must receive it: matchers on those labels are the proxy's
 * to apply (routing did), the store has no such labels. Unchanged for a group without labels.
 */
export function queryForGroup(parsed: ParsedQuery, group: ServerGroup): string {
  const own = Object.keys(group.labels);
  if (own.length === 0) return parsed.query;
  let out = '';
  let at = 0;
  for (const selector of parsed.selectors) {
    if (!selector.braces || !selector.spans.some((s) => own.includes(s.matcher.label))) continue;
    const kept = selector.spans.filter((s) => !own.includes(s.matcher.label)).map((s) => parsed.query.slice(s.from, s.to));
    // A selector needs one matcher: with nothing left and no metric name before the braces (the
    // one matcher without a span), select every series.
    const named = selector.matchers.length > selector.spans.length;
    out += parsed.query.slice(at, selector.braces.from) + (kept.length === 0 && !named ? '{__name__=~".+"}' : `{${kept.join(', ')}}`);
    at = selector.braces.to;
  }
  return out + parsed.query.slice(at);
}
