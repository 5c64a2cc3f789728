/**
 * Durations as operators write them in configs and flags (`5s`, `1h30m`, `14d`, `2y`): the
 * Prometheus duration syntax, so a value copied from a store's flag means the same here.
 */
import { z } from 'zod';
import { CachemonError, Errors } from './errors.js';

const MS_PER_UNIT = {
  y: 365 * 24 * 60 * 60 * 1000,
  w: 7 * 24 * 60 * 60 * 1000,
  d: 24 * 60 * 60 * 1000,
  h: 60 * 60 * 1000,
  m: 60 * 1000,
  s: 1000,
  ms: 1,
} as const;

type Unit = keyof typeof MS_PER_UNIT;

/** Largest first: Prometheus requires that order, and it keeps `1h30m` from being written `30m1h`. */
const UNIT_ORDER: readonly Unit[] = ['y', 'w', 'd', 'h', 'm', 's', 'ms'];

const TOKEN = /(\d+)([a-zA-Zµ]*)/y;

function invalid(text: string, reason: string): CachemonError {
  return new CachemonError(Errors.DURATION_INVALID, `invalid duration "${text}": ${reason}`);
}

function isUnit(text: string): text is Unit {
  return Object.hasOwn(MS_PER_UNIT, text);
}

/** Parses `1h30m`-style text into milliseconds. */
export function parseDuration(text: string): number {
  const trimmed = text.trim();
  if (trimmed === '') throw invalid(text, 'empty (expected e.g. 30s, 5m, 1h30m, 14d)');
  if (trimmed.startsWith('-')) throw invalid(text, 'negative durations are not allowed');
  if (trimmed === '0') return 0;
  if (/\d[.,]\d/.test(trimmed)) {
    throw invalid(text, 'fractions are not allowed (use a smaller unit, e.g. 90m instead of 1.5h)');
  }

  let total = 0;
  let lastRank = -1;
  let offset = 0;
  while (offset < trimmed.length) {
    TOKEN.lastIndex = offset;
    const match = TOKEN.exec(trimmed);
    if (match === null) {
      throw invalid(text, `unexpected "${trimmed.slice(offset)}" (expected a number followed by a unit)`);
    }
    const [token, digits, unit] = match as unknown as [string, string, string];
    if (unit === '') {
      throw invalid(text, `number "${digits}" has no unit (units: ${UNIT_ORDER.join(', ')})`);
    }
    if (!isUnit(unit)) throw invalid(text, `unknown unit "${unit}" (units: ${UNIT_ORDER.join(', ')})`);
    const rank = UNIT_ORDER.indexOf(unit);
    if (rank <= lastRank) throw invalid(text, 'units must appear once each, largest first (e.g. 1h30m)');
    lastRank = rank;
    total += Number(digits) * MS_PER_UNIT[unit];
    offset += token.length;
  }
  if (!Number.isSafeInteger(total)) throw invalid(text, 'too large');
  return total;
}

/**
 * Writes milliseconds back in the largest exact units. Years only when exact and never weeks,
 * because retentions read as `14d` or `90d` (as the spec writes them), not `2w` or `12w6d`.
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) {
    throw new CachemonError(Errors.DURATION_INVALID, `cannot format duration ${ms}: not a finite non-negative number`);
  }
  let rest = Math.round(ms);
  if (rest === 0) return '0s';
  let out = '';
  if (rest % MS_PER_UNIT.y === 0) {
    out += `${rest / MS_PER_UNIT.y}y`;
    rest = 0;
  }
  for (const unit of ['d', 'h', 'm', 's', 'ms'] as const) {
    const count = Math.floor(rest / MS_PER_UNIT[unit]);
    if (count > 0) {
      out += `${count}${unit}`;
      rest -= count * MS_PER_UNIT[unit];
    }
  }
  return out;
}

/** Milliseconds per unit of a Go duration (time.ParseDuration's units). */
const GO_MS_PER_UNIT: Readonly<Record<string, number>> = {
  h: 3_600_000,
  m: 60_000,
  s: 1000,
  ms: 1,
  us: 0.001,
  µs: 0.001,
  μs: 0.001,
  ns: 0.000_001,
};
const GO_DURATION = /^(?:(?:\d+(?:\.\d*)?|\.\d+)(?:h|ms|m|s|us|µs|μs|ns))+$/;
const GO_DURATION_PART = /(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s|us|µs|μs|ns)/g;

/**
 * Parses a duration of a config written for a Go program (promxy's `timeout`): Go's own syntax,
 * fractions and all (`1.5s`, `1m30s`, `500ms`, `250us`), or else parseDuration's (`1d`).
 * Milliseconds, possibly fractional.
 */
export function parseGoDuration(text: string): number {
  const trimmed = text.trim();
  if (!GO_DURATION.test(trimmed)) return parseDuration(trimmed);
  let ms = 0;
  for (const [, amount, unit] of trimmed.matchAll(GO_DURATION_PART)) ms += Number(amount) * GO_MS_PER_UNIT[unit!]!;
  return ms;
}

/** Config field holding a duration string; parses to milliseconds, failing with parseDuration's message. */
export const durationSchema = z.string().transform((text, ctx): number => {
  try {
    return parseDuration(text);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: err instanceof Error ? err.message : String(err) });
    return z.NEVER;
  }
});
