/**
 * QoS probes: real operations on a node, each timed until its expected reply, with the commands and
 * replies of a live ARCUS 1.15.0. Keys expire and collections are dropped, so nothing is left behind.
 */
import { isCachemonError, Errors } from '@cachemon/core';
import type { AsciiConnection } from './connection.js';
import type { ReplyKind } from './framer.js';

export interface QosProbe {
  /** Stable probe name for metrics labels: kv_set, kv_get, lop_insert, ... */
  readonly name: string;
  /** Command as AsciiConnection.request takes it (data block after CRLF, no trailing CRLF). */
  readonly command: string;
  readonly reply: ReplyKind;
  /** True when `reply` is the answer of a healthy node. */
  readonly expect: (reply: string) => boolean;
}

export interface QosResult {
  probe: string;
  ok: boolean;
  /** From sending the probe until its reply (or its failure); 0 when not sent. */
  seconds: number;
  /** Why it failed: `unexpected reply: <first line>`, or the CachemonError code when the connection broke. */
  error?: string;
}

export interface QosOptions {
  /** Only the kv probes (the `simpleQos: true` setting). */
  simple: boolean;
  /** Absolute Date.now() ms deadline shared by all probes. */
  deadline: number;
  /** Monotonic clock in ns; default process.hrtime.bigint. */
  now?: () => bigint;
}

export const QOS_KEY_PREFIX = 'arcus-ping:';
/** Seconds the probe keys live, in case a drop never ran. */
export const QOS_EXPIRY_SECONDS = 3;

const KV = `${QOS_KEY_PREFIX}qos_kv`;
const LIST = `${QOS_KEY_PREFIX}qos_lop`;
const SET = `${QOS_KEY_PREFIX}qos_sop`;
const BTREE = `${QOS_KEY_PREFIX}qos_bop`;
const DATA = 'DATA';
/** `create <flags> <exptime> <maxcount>` */
const CREATE = `create 0 ${QOS_EXPIRY_SECONDS} 10`;

function exactly(expected: string): (reply: string) => boolean {
  return (reply) => reply === expected;
}

export const KV_PROBES: readonly QosProbe[] = Object.freeze([
  probe('kv_set', `set ${KV} 0 ${QOS_EXPIRY_SECONDS} ${DATA.length}\r\n${DATA}`, 'line', 'STORED\r\n'),
  probe('kv_get', `get ${KV}`, 'value', `VALUE ${KV} 0 ${DATA.length}\r\n${DATA}\r\nEND\r\n`),
]);

export const COLLECTION_PROBES: readonly QosProbe[] = Object.freeze([
  probe('lop_insert', `lop insert ${LIST} 0 ${DATA.length} ${CREATE}\r\n${DATA}`, 'line', 'CREATED_STORED\r\n'),
  probe('lop_get', `lop get ${LIST} 0..10`, 'value', `VALUE 0 1\r\n${DATA.length} ${DATA}\r\nEND\r\n`),
  probe('lop_delete', `lop delete ${LIST} 0..10 drop`, 'line', 'DELETED_DROPPED\r\n'),
  probe('sop_insert', `sop insert ${SET} ${DATA.length} ${CREATE}\r\n${DATA}`, 'line', 'CREATED_STORED\r\n'),
  probe('sop_exist', `sop exist ${SET} ${DATA.length}\r\n${DATA}`, 'line', 'EXIST\r\n'),
  probe('sop_delete', `sop delete ${SET} ${DATA.length} drop\r\n${DATA}`, 'line', 'DELETED_DROPPED\r\n'),
  probe('bop_insert', `bop insert ${BTREE} 1 ${DATA.length} ${CREATE}\r\n${DATA}`, 'line', 'CREATED_STORED\r\n'),
  probe('bop_get', `bop get ${BTREE} 1..10`, 'value', `VALUE 0 1\r\n1 ${DATA.length} ${DATA}\r\nEND\r\n`),
  // `1..10 10 drop`: range, count, drop (the form the server accepted).
  probe('bop_delete', `bop delete ${BTREE} 1..10 10 drop`, 'line', 'DELETED_DROPPED\r\n'),
]);

function probe(name: string, command: string, reply: ReplyKind, expected: string): QosProbe {
  return Object.freeze({ name, command, reply, expect: exactly(expected) });
}

/**
 * Runs the probes one after the other on `conn`. An unexpected reply fails that probe alone; once
 * the connection breaks, the rest fail with its error code unsent. Never rejects.
 */
export async function runQosProbes(conn: AsciiConnection, options: QosOptions): Promise<QosResult[]> {
  const now = options.now ?? (() => process.hrtime.bigint());
  const probes = options.simple ? KV_PROBES : [...KV_PROBES, ...COLLECTION_PROBES];
  const results: QosResult[] = [];
  let broken: string | undefined;
  for (const { name, command, reply: kind, expect } of probes) {
    if (broken !== undefined) {
      results.push({ probe: name, ok: false, seconds: 0, error: broken });
      continue;
    }
    const start = now();
    try {
      const reply = await conn.request(command, { deadline: options.deadline, reply: kind });
      const seconds = elapsed(start, now());
      if (expect(reply)) results.push({ probe: name, ok: true, seconds });
      else results.push({ probe: name, ok: false, seconds, error: `unexpected reply: ${firstLine(reply)}` });
    } catch (err) {
      broken = isCachemonError(err) ? err.code : Errors.INTERNAL.code;
      results.push({ probe: name, ok: false, seconds: elapsed(start, now()), error: broken });
    }
  }
  return results;
}

function elapsed(start: bigint, end: bigint): number {
  return Number(end - start) / 1e9;
}

/** First line of a reply, printable and short enough for a log line or a label. */
function firstLine(reply: string): string {
  const nl = reply.indexOf('\r\n');
  const line = nl === -1 ? reply : reply.slice(0, nl);
  // eslint-disable-next-line no-control-regex
  const printable = line.slice(0, 80).replace(/[\u0000-\u001f\u007f]/g, '?');
  return line.length > 80 ? `${printable}...` : printable;
}
