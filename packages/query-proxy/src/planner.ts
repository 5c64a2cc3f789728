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

/** Parses a query; throws PromQLParseError at the first syntax error. Returns its vector selectors. */
export function parseSelectors(query: string): Selector[] {
  if (query.trim() === '') throw new PromQLParseError(0, query, 'no expression found in input');
  const tree = parser.parse(query);
  const text = (n: SyntaxNode) => query.slice(n.from, n.to);
  let error: number | undefined;
  const selectors: Selector[] = [];
  tree.iterate({
    enter(ref) {
      if (ref.type.isError) {
        error ??= ref.from;
        return false;
      }
      if (ref.name !== 'VectorSelector') return undefined;
      const node = ref.node;
      const matchers: LabelMatcher[] = [];
      const name = node.getChild('Identifier');
      if (name) matchers.push({ label: '__name__', op: '=', value: text(name) });
      for (let child = node.getChild('LabelMatchers')?.firstChild ?? null; child; child = child.nextSibling) {
        const m = matcherOf(child, text);
        if (m) matchers.push(m);
      }
      selectors.push({ from: node.from, to: node.to, matchers });
      return undefined;
    },
  });
  if (error !== undefined) {
    const found = query.slice(error, error + 20).split('\n')[0];
    throw new PromQLParseError(error, query, found === '' ? 'unexpected end of input' : `unexpected "${found}"`);
  }
  return selectors;
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
  readonly selectors: readonly Selector[];
  /**
   * For `spanning`: the query's selectors need different groups, so no single store holds all it
   * combines; a number computed from one group's part would be wrong.
   */
  readonly reason?: string;
}

/**
 * Routes a parsed query:
 *   single    exactly one group can answer every selector: forward untouched;
 *   several   more than one can: ask each, merge;
 *   none      a selector no group can answer, alone: an empty result;
 *   spanning  every selector has a group, but no group has them all: refused with a warning.
 * A query without selectors (`1+1`, `time()`) goes to the first group.
 */
export function planQuery(query: string, groups: readonly ServerGroup[]): Plan {
  const selectors = parseSelectors(query);
  if (selectors.length === 0) return { decision: groups.length > 0 ? 'single' : 'none', groups: groups.slice(0, 1), selectors };
  const perSelector = selectors.map((s) => groups.filter((g) => groupCanAnswer(g, s)));
  const all = groups.filter((g) => perSelector.every((able) => able.includes(g)));
  if (all.length === 1) return { decision: 'single', groups: all, selectors };
  if (all.length > 1) return { decision: 'several', groups: all, selectors };
  if (perSelector.some((able) => able.length === 0)) return { decision: 'none', groups: [], selectors };
  const names = [...new Set(perSelector.flat())].map((g) => g.name).join(' and ');
  return {
    decision: 'spanning',
    groups: [],
    selectors,
    reason: `the query combines series that live in different server groups (${names}); no single group can compute it, so no result is given`,
  };
}
