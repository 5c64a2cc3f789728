/** Parsers for command arguments; each throws BadFormat on anything the server would refuse. */
import { BadFormat } from './command-spec.js';
import type { Bkey, BtreeElement, CreateAttributes } from './engine.js';

const KEY_MAX = 250;
export const UINT32_MAX = 4294967295;

export function key(token: string | undefined): string {
  if (token === undefined || token.length > KEY_MAX) throw new BadFormat();
  return token;
}

export function uint(token: string | undefined, max = Number.MAX_SAFE_INTEGER): number {
  if (token === undefined || !/^\d+$/.test(token)) throw new BadFormat();
  const value = Number(token);
  if (value > max) throw new BadFormat();
  return value;
}

export function int(token: string | undefined): number {
  if (token === undefined || !/^-?\d+$/.test(token)) throw new BadFormat();
  return Number(token);
}

export function uint64(token: string | undefined): bigint {
  if (token === undefined || !/^\d+$/.test(token)) throw new BadFormat();
  const value = BigInt(token);
  if (value >= 1n << 64n) throw new BadFormat();
  return value;
}

/** `0x` + 1..31 bytes of hex, returned upper-case without the 0x. */
export function hexBytes(token: string | undefined): string {
  if (token === undefined || !/^0[xX]([0-9a-fA-F]{2}){1,31}$/.test(token)) throw new BadFormat();
  return token.slice(2).toUpperCase();
}

export function bkey(token: string | undefined): Bkey {
  if (token !== undefined && /^0[xX]/.test(token)) return { kind: 'bin', hex: hexBytes(token) };
  return { kind: 'int', value: uint64(token) };
}

function split(token: string | undefined): [string, string] {
  if (token === undefined) throw new BadFormat();
  const at = token.indexOf('..');
  return at < 0 ? [token, token] : [token.slice(0, at), token.slice(at + 2)];
}

export function indexRange(token: string | undefined): [number, number] {
  const [from, to] = split(token);
  return [int(from), int(to)];
}

export function bkeyRange(token: string | undefined): [Bkey, Bkey] {
  const [from, to] = split(token);
  const range: [Bkey, Bkey] = [bkey(from), bkey(to)];
  if (range[0].kind !== range[1].kind) throw new BadFormat();
  return range;
}

/** `create <flags> <exptime> <maxcount> [<ovflaction>] [unreadable]` starting at `args[at]`; undefined without `create`. */
export function createAttributes(
  args: readonly string[],
  at: number,
): { attrs: CreateAttributes | undefined; rest: readonly string[] } {
  if (args[at] !== 'create') return { attrs: undefined, rest: args.slice(at) };
  const flags = uint(args[at + 1], UINT32_MAX);
  const exptime = int(args[at + 2]);
  const maxcount = int(args[at + 3]);
  let next = at + 4;
  let overflowAction: string | undefined;
  let readable = true;
  if (args[next] !== undefined && /_trim$|^error$/.test(args[next] as string)) overflowAction = args[next++];
  if (args[next] === 'unreadable') {
    readable = false;
    next++;
  }
  return { attrs: { flags, exptime, maxcount, overflowAction, readable }, rest: args.slice(next) };
}

/** Trailing options a command accepts (`drop`, `delete`, `pipe`, `getrim`); anything else is a format error. */
export function options(rest: readonly string[], allowed: readonly string[]): Set<string> {
  for (const token of rest) if (!allowed.includes(token)) throw new BadFormat();
  return new Set(rest);
}

/** Replies end in CRLF; `line` adds it. */
export interface EflagFilter {
  readonly offset: number;
  readonly bitwise?: { readonly op: string; readonly operand: Buffer };
  readonly compare: string;
  readonly values: readonly Buffer[];
}

const COMPARE_OPS = ['EQ', 'NE', 'LT', 'LE', 'GT', 'GE'];

/** Splits an eflag filter off the front of `args` when there is one. */
export function eflagFilter(args: readonly string[]): { filter: EflagFilter | undefined; rest: readonly string[] } {
  for (const width of [3, 5]) {
    const compare = args[width - 2];
    if (compare === undefined || !COMPARE_OPS.includes(compare)) continue;
    const offset = uint(args[0], 30);
    const bitwise = width === 5 ? { op: args[1] as string, operand: Buffer.from(hexBytes(args[2]), 'hex') } : undefined;
    if (bitwise !== undefined && !['&', '|', '^'].includes(bitwise.op)) throw new BadFormat();
    const values = (args[width - 1] ?? '').split(',').map((v) => Buffer.from(hexBytes(v), 'hex'));
    if (values.length > 1 && compare !== 'EQ' && compare !== 'NE') throw new BadFormat();
    return { filter: { offset, bitwise, compare, values }, rest: args.slice(width) };
  }
  return { filter: undefined, rest: args };
}

export function matches(element: BtreeElement, filter: EflagFilter | undefined): boolean {
  if (filter === undefined) return true;
  if (element.eflag === undefined) return false;
  const eflag = Buffer.from(element.eflag, 'hex');
  const length = filter.values[0]?.length ?? 0;
  if (filter.offset + length > eflag.length) return false;
  const operand = Buffer.from(eflag.subarray(filter.offset, filter.offset + length));
  if (filter.bitwise !== undefined) {
    for (let i = 0; i < operand.length; i++) {
      const b = filter.bitwise.operand[i] ?? 0;
      const a = operand[i] ?? 0;
      operand[i] = filter.bitwise.op === '&' ? a & b : filter.bitwise.op === '|' ? a | b : a ^ b;
    }
  }
  const results = filter.values.map((v) => Buffer.compare(operand, v));
  switch (filter.compare) {
    case 'EQ':
      return results.includes(0);
    case 'NE':
      return !results.includes(0);
    case 'LT':
      return (results[0] ?? 0) < 0;
    case 'LE':
      return (results[0] ?? 0) <= 0;
    case 'GT':
      return (results[0] ?? 0) > 0;
    default:
      return (results[0] ?? 0) >= 0;
  }
}

/** Elements of `tree` in `range` (descending when from > to) that pass `filter`. */
