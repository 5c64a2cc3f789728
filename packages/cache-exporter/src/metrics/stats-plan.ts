/**
 * The plan of a `stats` field list (what every node of one server version sends): each field's
 * family and scale, and a byte-for-byte check of a reply against the list, so that only a reply
 * with another list is parsed.
 */
import type { FamilySpec } from './catalog.js';
import { STATS_TEXT_FIELDS, ruleForStat } from './catalog.js';
import { withLabel } from './labels.js';

/** How a node's `stats` field list is rendered. Shared by every node with the same list. */
export interface StatsPlan {
  readonly names: readonly string[];
  /** `STAT <name>` of each position as the server sends it, `headOffsets[i]..headOffsets[i + 1]`. */
  readonly heads: Buffer;
  readonly headOffsets: Uint32Array;
  /** The plan's families, in the order of their first field. */
  readonly families: readonly FamilySpec[];
  readonly familyIndex: ReadonlyMap<FamilySpec, number>;
  /**
   * The plan's index of each family of its renderer's statsFamilyOrder (plans belong to one
   * renderer), by its position there (-1: not in this plan): render() looks families up for every
   * node without a map. Set again whenever that order grows.
   */
  byOrder: Int32Array;
  /** The rendered positions, family by family; family f is order[familyStarts[f]..familyStarts[f + 1]). */
  readonly order: Uint32Array;
  readonly familyStarts: Uint32Array;
  readonly scales: ReadonlyArray<number | undefined>;
  /** Positions of the text fields that make arcus_version_info, or -1. */
  readonly versionAt: number;
  readonly libeventAt: number;
  /** `name{labels} ` of a position for a node's label text ('' for a position not rendered). */
  readonly prefixText: (position: number, base: string, braced: string) => string;
}

/** A plan from the `STAT <name>` heads of a reply's lines, as bytes. */
export function makePlan(heads: readonly Buffer[]): StatsPlan {
  const names = heads.map((head) => head.toString('utf8', STAT_HEAD));
  const families: FamilySpec[] = [];
  const familyIndex = new Map<FamilySpec, number>();
  const positions: number[][] = [];
  const scales: Array<number | undefined> = [];
  const rules = names.map((name) => ruleForStat(name));
  const seen = new Set<string>();
  rules.forEach((rule, position) => {
    const name = names[position]!;
    scales.push(rule.kind === 'field' ? rule.scale : undefined);
    // Text fields go to arcus_version_info; a field the server repeats is rendered once.
    if (STATS_TEXT_FIELDS.has(name) || seen.has(name)) return;
    seen.add(name);
    let index = familyIndex.get(rule.family);
    if (index === undefined) {
      index = families.length;
      families.push(rule.family);
      familyIndex.set(rule.family, index);
      positions.push([]);
    }
    positions[index]!.push(position);
  });
  const order = Uint32Array.from(positions.flat());
  const familyStarts = new Uint32Array(families.length + 1);
  positions.forEach((list, f) => (familyStarts[f + 1] = familyStarts[f]! + list.length));
  const rendered = new Set(order);
  const headOffsets = new Uint32Array(heads.length + 1);
  heads.forEach((head, i) => (headOffsets[i + 1] = headOffsets[i]! + head.length));
  return {
    names,
    heads: Buffer.concat(heads),
    headOffsets,
    families,
    familyIndex,
    byOrder: new Int32Array(0),
    order,
    familyStarts,
    scales,
    versionAt: names.indexOf('version'),
    libeventAt: names.indexOf('libevent'),
    prefixText: (position, base, braced) => {
      if (!rendered.has(position)) return '';
      const rule = rules[position]!;
      return rule.kind === 'field'
        ? `${rule.family.name}${braced} `
        : `${rule.family.name}${withLabel(base, rule.label, rule.value)} `;
    },
  };
}

/**
 * Checks that a reply has exactly the plan's lines (`STAT <name>` heads, byte for byte, in order,
 * then END) and records where each value is. Accepts every reply scanStats accepts with these
 * names; false for anything else, which then goes to the parser.
 */
export function matchPlan(plan: StatsPlan, reply: Buffer, values: Uint32Array): boolean {
  const heads = plan.heads;
  const headOffsets = plan.headOffsets;
  const count = plan.names.length;
  const length = reply.length;
  let pos = 0;
  for (let position = 0; position < count; position++) {
    const headStart = headOffsets[position]!;
    const headLength = headOffsets[position + 1]! - headStart;
    if (pos + headLength > length) return false;
    for (let i = 0; i < headLength; i++) if (reply[pos + i] !== heads[headStart + i]) return false;
    const after = pos + headLength;
    // Values are a few bytes: a loop beats a native indexOf call per line.
    let nl = after;
    while (nl < length && reply[nl] !== LF) nl++;
    if (nl === length) return false;
    const end = nl > after && reply[nl - 1] === CR ? nl - 1 : nl;
    if (after === end) {
      values[position * 2] = end; // `STAT <name>`: no value
    } else if (reply[after] === SPACE) {
      values[position * 2] = after + 1;
    } else {
      return false; // a longer name
    }
    values[position * 2 + 1] = end;
    pos = nl + 1;
  }
  const rest = length - pos;
  return (
    (rest === 5 || (rest === 4 && reply[pos + 3] === LF)) &&
    reply[pos] === 0x45 &&
    reply[pos + 1] === 0x4e &&
    reply[pos + 2] === 0x44 &&
    (rest === 4 || (reply[pos + 3] === CR && reply[pos + 4] === LF))
  );
}

/**
 * True when bytes [start, end) are a decimal number as servers print them and the exposition
 * format takes them: `-?digits[.digits][e[+-]digits]` (`.5` and `5.` too).
 */
export function isDecimal(bytes: Buffer, start: number, end: number): boolean {
  let i = start;
  if (i < end && bytes[i] === 0x2d) i++;
  let digits = 0;
  while (i < end && bytes[i]! >= 0x30 && bytes[i]! <= 0x39) {
    i++;
    digits++;
  }
  if (i < end && bytes[i] === 0x2e) {
    i++;
    while (i < end && bytes[i]! >= 0x30 && bytes[i]! <= 0x39) {
      i++;
      digits++;
    }
  }
  if (digits === 0) return false;
  if (i < end && (bytes[i] === 0x65 || bytes[i] === 0x45)) {
    i++;
    if (i < end && (bytes[i] === 0x2b || bytes[i] === 0x2d)) i++;
    const exponentStart = i;
    while (i < end && bytes[i]! >= 0x30 && bytes[i]! <= 0x39) i++;
    if (i === exponentStart) return false;
  }
  return i === end;
}

const STAT_HEAD = 5; // `STAT `
const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
