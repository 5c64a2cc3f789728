/** Which groups a query goes to: parsed with Prometheus' grammar, its selectors matched to the label filters. */
import { parser } from '@prometheus-io/lezer-promql';
import { RE2JS } from 're2js';
import type { PartialParse, SyntaxNode, Tree } from '@lezer/common';
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

/** Where the query combines series (an aggregation, a vector match, a function over all series). */
export interface CombiningOperation {
  /** `sum`, `topk`, `/ on(...)`, `absent`, ... as written. */
  readonly operation: string;
  /** 0-based offset. */
  readonly position: number;
  /** The labels it keeps apart (`by`, `on`) or drops (`without`, `ignoring`); none: all series together. */
  readonly grouping?: { readonly kind: 'by' | 'without' | 'on' | 'ignoring'; readonly labels: readonly string[] };
}

export interface ParsedQuery {
  readonly query: string;
  readonly selectors: readonly Selector[];
  readonly combining: readonly CombiningOperation[];
  /** What an instant query of it answers when no group is asked. */
  readonly instantResultType: 'vector' | 'matrix' | 'scalar' | 'string';
  /** Whether it answers something when every selector selects nothing (`absent(x)`, `... or vector(0)`). */
  readonly givesFromNothing: boolean;
  /** The whole query is `sort(...)` or `sort_desc(...)`: the order its instant answer must keep. */
  readonly sortedBy?: 'value' | 'value descending';
  /** Why the parser could not read it (too deeply nested, maybe valid): then nothing above is known. */
  readonly unread?: string;
}

/** A syntax error at a position of the query (0-based offset), as Prometheus reports it. */
export class PromQLParseError extends Error {
  constructor(
    readonly position: number,
    readonly query: string,
    /** What is wrong there, without the position. */
    readonly detail: string,
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

/** Go's one-letter escapes; any other escaped character stands for itself. */
const GO_ESCAPES: Readonly<Record<string, string>> = {
  a: '\x07',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
};

/** The value of a PromQL string literal: "…" and '…' with Go escapes, `…` raw. */
export function unquote(literal: string): string {
  const quote = literal[0];
  const body = literal.slice(1, -1);
  if (quote === '`') return body;
  return body.replace(/\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{3}|.)/g, (_, escape: string) => {
    if (escape.length === 1) return GO_ESCAPES[escape] ?? escape;
    if (escape[0] === 'x' || escape[0] === 'u' || escape[0] === 'U')
      return String.fromCodePoint(parseInt(escape.slice(1), 16));
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

/** Functions answering a scalar (`hour()`, `month()`, ... answer a vector: `vector(time())` by default). */
const SCALAR_FUNCTIONS = new Set(['scalar', 'time', 'pi']);
/** Functions whose answer takes every series of their argument together, whatever its labels. */
const ACROSS_SERIES_FUNCTIONS = new Set([
  'absent',
  'absent_over_time',
  'scalar',
  'sort_by_label',
  'sort_by_label_desc',
]);
/** Functions that answer something when their argument selects nothing (as do those called without one). */
const FROM_NOTHING_FUNCTIONS = new Set(['absent', 'absent_over_time', 'scalar', 'vector', 'time', 'pi']);
/** The operator of a binary expression, among its children. */
const BINARY_OPERATORS = new Set('Pow Mul Div Mod Atan2 Add Sub Eql Gte Gtr Lte Lss Neq And Or Unless'.split(' '));
const SORTED_BY: Readonly<Record<string, ParsedQuery['sortedBy']>> = { sort: 'value', sort_desc: 'value descending' };

function groupingOf(node: SyntaxNode, text: (n: SyntaxNode) => string): CombiningOperation['grouping'] | undefined {
  const labels = node.getChild('GroupingLabels')?.getChildren('LabelName').map(text) ?? [];
  for (const kind of ['By', 'Without', 'On', 'Ignoring'] as const) {
    if (node.getChild(kind))
      return { kind: kind.toLowerCase() as NonNullable<CombiningOperation['grouping']>['kind'], labels };
  }
  return undefined;
}

/** What this file steers of @lezer/lr's Parse (not exported); checked before use. */
interface LezerParse {
  bigReductionCount?: number;
  stacks?: ReadonlyArray<{ readonly stack?: { readonly length: number } }>;
}

/**
 * Deepest nesting of brackets read. Dashboards' queries nest a few levels; the check is a scan
 * before the parse, so a query of a hundred thousand parentheses costs microseconds, not seconds.
 */
export const MAX_NESTING_DEPTH = 256;

/**
 * The deepest nesting of (), [] and {} outside string literals and comments; the scan stops once
 * it passes `limit`.
 */
export function nestingDepth(query: string, limit = Infinity): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < query.length; i++) {
    const c = query[i];
    if (c === '(' || c === '[' || c === '{') {
      depth++;
      if (depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if (c === ')' || c === ']' || c === '}') {
      if (depth > 0) depth--;
    } else if (c === '"' || c === "'" || c === '`') {
      // Backslash escapes in "…" and '…'; `…` is raw.
      for (i++; i < query.length && query[i] !== c; i++) if (c !== '`' && query[i] === '\\') i++;
    } else if (c === '#') {
      while (i < query.length && query[i] !== '\n') i++;
    }
  }
  return deepest;
}

/** The error of a query nested deeper than MAX_NESTING_DEPTH, found by a scan before any parse. */
export function nestingError(query: string): PromQLParseError | undefined {
  if (nestingDepth(query, MAX_NESTING_DEPTH) <= MAX_NESTING_DEPTH) return undefined;
  return new PromQLParseError(
    0,
    query,
    `brackets nested more than ${MAX_NESTING_DEPTH} deep; the proxy reads at most ${MAX_NESTING_DEPTH} levels`,
  );
}

/** @lezer/lr cuts a parse stack this deep short (its Rec.CutDepth), which shows as a syntax error. */
const LEZER_CUT_DEPTH = 8400;

/**
 * The syntax tree of a query, and whether the parser hit its depth limit. @lezer/lr cuts short a
 * long left-associative chain (`a or b or c ...`) and a very deep nesting, either showing as a
 * syntax error where Prometheus' parser finds none. The first is switched off here (its counter
 * reset before each step); the second is reported.
 */
function parseTree(query: string): { tree: Tree; depthLimited: boolean } {
  const parse = parser.startParse(query);
  const internals = parse as PartialParse & LezerParse;
  let depthLimited = false;
  for (;;) {
    if (typeof internals.bigReductionCount === 'number') internals.bigReductionCount = 0;
    if (!depthLimited && internals.stacks?.some((s) => (s.stack?.length ?? 0) >= LEZER_CUT_DEPTH)) depthLimited = true;
    const tree = parse.advance();
    if (tree) return { tree, depthLimited };
  }
}

function unparenthesized(node: SyntaxNode | null): SyntaxNode | null {
  while (node?.name === 'ParenExpr') node = node.firstChild;
  return node;
}

/** Parses a query; throws PromQLParseError at the first syntax error, or when nested too deeply. */
export function parseQuery(query: string): ParsedQuery {
  if (query.trim() === '') throw new PromQLParseError(0, query, 'no expression found in input');
  const deep = nestingError(query);
  if (deep) throw deep;
  const text = (n: SyntaxNode) => query.slice(n.from, n.to);
  let error: number | undefined;
  const selectors: Selector[] = [];
  const combining: CombiningOperation[] = [];
  let givesFromNothing = false;
  const binaryTypes: BinaryTypes = new Map();
  let parsed: { tree: Tree; depthLimited: boolean };
  try {
    parsed = parseTree(query);
    parsed.tree.iterate({
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
        if (ref.name === 'FunctionCall') {
          const name = text(node.getChild('FunctionIdentifier') ?? node);
          if (ACROSS_SERIES_FUNCTIONS.has(name)) combining.push({ operation: name, position: node.from });
          if (FROM_NOTHING_FUNCTIONS.has(name) || !node.getChild('FunctionCallBody')?.firstChild)
            givesFromNothing = true;
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
        selectors.push({
          from: node.from,
          to: node.to,
          matchers,
          spans,
          ...(braces ? { braces: { from: braces.from, to: braces.to } } : {}),
        });
        return undefined;
      },
      // A binary operation's type once its operands' are known (bottom-up: chains may be long).
      leave(ref) {
        if (ref.name !== 'BinaryExpr') return;
        const node = ref.node;
        const left = typeOf(node.firstChild, text, binaryTypes);
        const right = typeOf(node.lastChild, text, binaryTypes);
        binaryTypes.set(`${node.from}-${node.to}`, left === 'scalar' && right === 'scalar' ? 'scalar' : 'vector');
        if (left !== 'scalar' && right !== 'scalar' && !node.getChild('MatchingModifierClause')) {
          // Two vectors, matched on all their labels.
          let op = node.firstChild?.nextSibling ?? null;
          while (op && !BINARY_OPERATORS.has(op.name)) op = op.nextSibling;
          combining.push({
            operation: text(op ?? node),
            position: (op ?? node).from,
            grouping: { kind: 'ignoring', labels: [] },
          });
        }
      },
    });
  } catch (err) {
    // Building or walking the tree of a query nested tens of thousands deep can run out of stack.
    if (err instanceof RangeError) return unreadQuery(query, 'it is nested too deeply for the proxy to read');
    throw err;
  }
  if (error !== undefined) {
    if (parsed.depthLimited) return unreadQuery(query, 'it is nested too deeply for the proxy to read');
    const found = query.slice(error, error + 20).split('\n')[0];
    throw new PromQLParseError(error, query, found === '' ? 'unexpected end of input' : `unexpected "${found}"`);
  }
  const top = unparenthesized(parsed.tree.topNode.firstChild);
  const sortedBy =
    top?.name === 'FunctionCall' ? SORTED_BY[text(top.getChild('FunctionIdentifier') ?? top)] : undefined;
  combining.sort((a, b) => a.position - b.position);
  return {
    query,
    selectors,
    combining,
    instantResultType: typeOf(top, text, binaryTypes),
    givesFromNothing,
    ...(sortedBy ? { sortedBy } : {}),
  };
}

function unreadQuery(query: string, why: string): ParsedQuery {
  return { query, selectors: [], combining: [], instantResultType: 'vector', givesFromNothing: true, unread: why };
}

/** The type each binary expression of a query answers, by `<from>-<to>`. */
type BinaryTypes = Map<string, ParsedQuery['instantResultType']>;

/** The type of what an expression answers; a binary expression's must already be known. */
function typeOf(
  node: SyntaxNode | null,
  text: (n: SyntaxNode) => string,
  binaryTypes: BinaryTypes,
): ParsedQuery['instantResultType'] {
  for (;;) {
    node = unparenthesized(node);
    if (node?.name !== 'UnaryExpr') break;
    node = node.lastChild;
  }
  switch (node?.name) {
    case 'BinaryExpr':
      return binaryTypes.get(`${node.from}-${node.to}`) ?? 'vector';
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
    default:
      return 'vector';
  }
}

/** Matcher tests, compiled once per matcher of a planned query (plans are cached). */
const compiled = new WeakMap<LabelMatcher, (value: string) => boolean>();

/**
 * A matcher's test. A regular expression is read as the stores read it: RE2 (re2js), fully anchored.
 * One that does not compile matches every value: more groups are asked, and the stores refuse it.
 */
function test(matcher: LabelMatcher): (value: string) => boolean {
  let known = compiled.get(matcher);
  if (known !== undefined) return known;
  switch (matcher.op) {
    case '=':
      known = (v) => v === matcher.value;
      break;
    case '!=':
      known = (v) => v !== matcher.value;
      break;
    default: {
      let regex: RE2JS | undefined;
      try {
        regex = RE2JS.compile(`^(?s:${matcher.value})$`);
      } catch {
        regex = undefined;
      }
      const negate = matcher.op === '!~';
      known = regex === undefined ? () => true : (v) => regex.matches(v) !== negate;
    }
  }
  compiled.set(matcher, known);
  return known;
}

/** Whether a group can hold series a selector selects. */
function groupCanAnswer(group: ServerGroup, selector: Selector): boolean {
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
  /** For `spanning`: why no group can compute it. */
  readonly reason?: string;
  /** A warning every answer to it carries (a query the proxy could not read, sent to every group). */
  readonly warning?: string;
}

/**
 * Routes a query. Selectors no group can answer select nothing anywhere: they do not choose groups.
 *   single    one group can answer every selector: forward untouched;
 *   several   several can, or the selectors need different groups but nothing is combined across
 *             them (`x or y{scrape="short"}`): ask each, merge;
 *   spanning  the selectors need different groups and the query combines their series: an empty
 *             answer with a warning, never a number computed from part of the data;
 *   none      every selector is unanswerable and the query then answers nothing.
 * A query without answerable selectors that answers something all the same (`1+1`, `absent(x)`)
 * goes to the first group; one the proxy could not read goes to every group, with a warning.
 */
export function planQuery(query: string | ParsedQuery, groups: readonly ServerGroup[]): Plan {
  const parsed = typeof query === 'string' ? parseQuery(query) : query;
  if (parsed.unread !== undefined) {
    const warning = `the proxy could not read the query (${parsed.unread}); it was sent to every server group and their answers merged, which is wrong where it combines series of different groups`;
    return {
      decision: groups.length > 1 ? 'several' : groups.length === 1 ? 'single' : 'none',
      groups,
      parsed,
      ...(groups.length > 1 ? { warning } : {}),
    };
  }
  const answerable = parsed.selectors
    .map((s) => groups.filter((g) => groupCanAnswer(g, s)))
    .filter((able) => able.length > 0);
  if (answerable.length === 0) {
    if (parsed.selectors.length > 0 && !parsed.givesFromNothing) return { decision: 'none', groups: [], parsed };
    return { decision: groups.length > 0 ? 'single' : 'none', groups: groups.slice(0, 1), parsed };
  }
  const all = groups.filter((g) => answerable.every((able) => able.includes(g)));
  const needed = groups.filter((g) => answerable.some((able) => able.includes(g)));
  if (all.length === needed.length) return { decision: all.length === 1 ? 'single' : 'several', groups: all, parsed };
  const problem = unsafeCombining(parsed, needed);
  if (problem === undefined) return { decision: 'several', groups: needed, parsed };
  return {
    decision: 'spanning',
    groups: [],
    parsed,
    reason: `the query combines series that live in different server groups (${needed.map((g) => g.name).join(' and ')}); no single group can compute it, so no result is given (${problem.operation})`,
  };
}

/** The `match[]` selectors of a listing request, routed. */
export interface MatchPlan {
  readonly decision: RouteDecision;
  readonly groups: readonly ServerGroup[];
  readonly matches: readonly ParsedQuery[];
}

/** Routes the `match[]` of the listings: the groups that can hold any of them; without any, all. */
export function planMatches(matches: readonly string[], groups: readonly ServerGroup[]): MatchPlan {
  if (matches.length === 0)
    return { decision: groups.length === 1 ? 'single' : groups.length === 0 ? 'none' : 'several', groups, matches: [] };
  const parsed = matches.map((m, index) => {
    const one = parseQuery(m);
    const [only, ...more] = one.selectors;
    const whole =
      only && more.length === 0 && only.from === m.length - m.trimStart().length && only.to === m.trimEnd().length;
    if (one.unread === undefined && !whole) {
      throw new PromQLParseError(
        0,
        m,
        `match[] number ${index + 1} must be a single series selector such as up{job="x"}`,
      );
    }
    return one;
  });
  const asked = groups.filter((g) => parsed.some((m) => matchAnswerable(m, g)));
  return {
    decision: asked.length === 0 ? 'none' : asked.length === 1 ? 'single' : 'several',
    groups: asked,
    matches: parsed,
  };
}

function matchAnswerable(match: ParsedQuery, group: ServerGroup): boolean {
  const [only] = match.selectors;
  return only === undefined || groupCanAnswer(group, only);
}

/** The `match[]` a group asked by planMatches receives: those it can answer, as queryForGroup writes them. */
export function matchesForGroup(plan: MatchPlan, group: ServerGroup): string[] {
  return plan.matches.filter((m) => matchAnswerable(m, group)).map((m) => queryForGroup(m, group));
}

/** Labels a group's series all carry with one known value: its `labels`, and single-valued includes. */
function fixedLabels(group: ServerGroup): Map<string, string> {
  const fixed = new Map<string, string>();
  for (const [label, values] of Object.entries(group.include)) if (values.length === 1) fixed.set(label, values[0]!);
  for (const [label, value] of Object.entries(group.labels)) fixed.set(label, value);
  return fixed;
}

/**
 * Why merging the groups' answers may give a wrong number, if it may: each group combined its own
 * series only. An operation that keeps the groups apart (`by` a label that tells them apart) is safe.
 */
export function combiningProblem(parsed: ParsedQuery, groups: readonly ServerGroup[]): string | undefined {
  return unsafeCombining(parsed, groups)?.warning;
}

/** The operation combiningProblem names (`"sum" at 1:1`), and its warning. */
function unsafeCombining(
  parsed: ParsedQuery,
  groups: readonly ServerGroup[],
): { operation: string; warning: string } | undefined {
  if (groups.length < 2) return undefined;
  const fixed = groups.map(fixedLabels);
  // Labels whose value tells every asked group's series apart.
  const separating = [...(fixed[0]?.keys() ?? [])].filter(
    (label) => new Set(fixed.map((f) => f.get(label))).size === groups.length && fixed.every((f) => f.has(label)),
  );
  const unsafe = parsed.combining.find(({ grouping }) => {
    if (separating.length === 0 || grouping === undefined) return true;
    const kept =
      grouping.kind === 'by' || grouping.kind === 'on'
        ? separating.some((l) => grouping.labels.includes(l))
        : separating.some((l) => !grouping.labels.includes(l));
    return !kept;
  });
  if (!unsafe) return undefined;
  const { line, column } = lineColumn(parsed.query, unsafe.position);
  const operation = `"${unsafe.operation}" at ${line}:${column}`;
  const names = groups.map((g) => g.name).join(' and ');
  const separator = separating[0];
  if (unsafe.operation.startsWith('sort_by_label')) {
    return {
      operation,
      warning: `${operation} sorts series, but the server groups ${names} each sorted their own: the merged series are in group order${separator ? `; select one group with a ${separator} matcher` : ''}`,
    };
  }
  const hint =
    separator === undefined
      ? ''
      : unsafe.grouping === undefined
        ? `; select one group with a ${separator} matcher`
        : `; keep the groups apart with by (${separator}) or select one with a ${separator} matcher`;
  return {
    operation,
    warning: `${operation} combines series across the server groups ${names}, but each group computed it over its own series only, so the merged numbers may be wrong${hint}`,
  };
}

/**
 * The query as a group with `labels` receives it: matchers on those labels (which its store does not
 * have) taken out, and a selector the group cannot answer made to select nothing (`__name__=""`).
 * A group without labels gets the query unchanged: its stores hold nothing its filter rules out.
 */
export function queryForGroup(parsed: ParsedQuery, group: ServerGroup): string {
  const own = Object.keys(group.labels);
  if (own.length === 0) return parsed.query;
  let out = '';
  let at = 0;
  for (const selector of parsed.selectors) {
    if (!groupCanAnswer(group, selector)) {
      const named = selector.matchers.length > selector.spans.length ? selector.matchers[0] : undefined;
      const written = selector.spans.map((s) => parsed.query.slice(s.from, s.to));
      const matchers = [...(named ? [`__name__=${JSON.stringify(named.value)}`] : []), ...written, '__name__=""'];
      out += `${parsed.query.slice(at, selector.from)}{${matchers.join(', ')}}`;
      at = selector.to;
      continue;
    }
    if (!selector.braces || !selector.spans.some((s) => own.includes(s.matcher.label))) continue;
    const kept = selector.spans
      .filter((s) => !own.includes(s.matcher.label))
      .map((s) => parsed.query.slice(s.from, s.to));
    // A selector needs one matcher: with nothing left and no metric name before the braces (the
    // one matcher without a span), select every series.
    const named = selector.matchers.length > selector.spans.length;
    out +=
      parsed.query.slice(at, selector.braces.from) +
      (kept.length === 0 && !named ? '{__name__=~".+"}' : `{${kept.join(', ')}}`);
    at = selector.braces.to;
  }
  return out + parsed.query.slice(at);
}
