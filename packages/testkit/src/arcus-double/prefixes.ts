/**
 * The two per-prefix tables of an ARCUS server:
 * - the engine's prefix table (`stats prefixes`, `stats prefixlist item`): item counts and sizes
 *   by type, kept while the prefix holds items;
 * - the detail statistics (`stats detail dump`, `stats prefixlist operation`): operation counts,
 *   recorded only while `stats detail on`, never removed.
 * Both list prefixes the way the server walks its hash tables: by bucket of mc_hash (1024
 * buckets), newest first inside a bucket; the engine lists `<null>` first.
 */
import { mcHash } from './hash.js';

export const PREFIX_DELIMITER = ':';
export const NULL_PREFIX_NAME = '<null>';
const HASH_BUCKETS = 1024;

export const ITEM_TYPES = ['kv', 'list', 'set', 'map', 'btree'] as const;
export type ItemType = (typeof ITEM_TYPES)[number];

/** The prefix of a key: text before the first delimiter after position 0; '' for none (`<null>`). */
export function prefixOf(key: string): string {
  const at = key.indexOf(PREFIX_DELIMITER, 1);
  return at < 0 ? '' : key.slice(0, at);
}

function bucketOf(name: string): number {
  return mcHash(name) % HASH_BUCKETS;
}

/** Hash-table order: bucket ascending, newest first inside a bucket. */
function hashOrder<T extends { bucket: number; seq: number }>(entries: Iterable<T>): T[] {
  return [...entries].sort((a, b) => a.bucket - b.bucket || b.seq - a.seq);
}

/** `YYYYMMDDhhmmss` in local time, as the server prints prefix create times. */
function stamp(ms: number): string {
  const d = new Date(ms);
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

export class PrefixEntry {
  readonly counts = [0, 0, 0, 0, 0];
  readonly bytes = [0, 0, 0, 0, 0];
  totalCount = 0;
  totalBytes = 0;

  constructor(
    readonly name: string,
    readonly bucket: number,
    readonly seq: number,
    public createdAt: number,
  ) {}

  line(): string {
    const [k, l, s, m, b] = this.counts;
    const [kb, lb, sb, mb, bb] = this.bytes;
    const name = this.name === '' ? NULL_PREFIX_NAME : this.name;
    return `PREFIX ${name} itm ${this.totalCount} kitm ${k} litm ${l} sitm ${s} mitm ${m} bitm ${b} tsz ${this.totalBytes} ktsz ${kb} ltsz ${lb} stsz ${sb} mtsz ${mb} btsz ${bb} time ${stamp(this.createdAt)}\r\n`;
  }
}

/** The engine's prefix table. */
export class PrefixTable {
  private readonly named = new Map<string, PrefixEntry>();
  private readonly nullPrefix = new PrefixEntry('', bucketOf(''), 0, 0);
  private seq = 0;

  /** Counts a newly linked item of `type` taking `bytes`; creates the prefix on first use. */
  link(key: string, type: ItemType, bytes: number, now: number): PrefixEntry {
    const name = prefixOf(key);
    let entry: PrefixEntry;
    if (name === '') {
      entry = this.nullPrefix;
      entry.createdAt = now; // the server re-stamps <null> on every link
    } else {
      entry = this.named.get(name) ?? this.create(name, now);
    }
    const t = ITEM_TYPES.indexOf(type);
    entry.counts[t] = (entry.counts[t] ?? 0) + 1;
    entry.totalCount += 1;
    this.addBytes(entry, type, bytes);
    return entry;
  }

  /** Uncounts an item; a named prefix without items disappears. */
  unlink(entry: PrefixEntry, type: ItemType, bytes: number): void {
    const t = ITEM_TYPES.indexOf(type);
    entry.counts[t] = (entry.counts[t] ?? 0) - 1;
    entry.totalCount -= 1;
    this.addBytes(entry, type, -bytes);
    if (entry !== this.nullPrefix && entry.totalCount === 0) this.named.delete(entry.name);
  }

  addBytes(entry: PrefixEntry, type: ItemType, delta: number): void {
    const t = ITEM_TYPES.indexOf(type);
    entry.bytes[t] = (entry.bytes[t] ?? 0) + delta;
    entry.totalBytes += delta;
  }

  /** `curr_prefixes`: named prefixes plus `<null>` while it holds items. */
  get count(): number {
    return this.named.size + (this.nullPrefix.totalCount > 0 ? 1 : 0);
  }

  /** All prefixes in the server's order. */
  list(): PrefixEntry[] {
    const all = hashOrder(this.named.values());
    return this.nullPrefix.totalCount > 0 ? [this.nullPrefix, ...all] : all;
  }

  /** By name as a client writes it (`<null>` for keys without prefix). */
  find(name: string): PrefixEntry | undefined {
    if (name === NULL_PREFIX_NAME) return this.nullPrefix.totalCount > 0 ? this.nullPrefix : undefined;
    return this.named.get(name);
  }

  clear(): void {
    this.named.clear();
    this.nullPrefix.counts.fill(0);
    this.nullPrefix.bytes.fill(0);
    this.nullPrefix.totalCount = 0;
    this.nullPrefix.totalBytes = 0;
  }

  private create(name: string, now: number): PrefixEntry {
    const entry = new PrefixEntry(name, bucketOf(name), ++this.seq, now);
    this.named.set(name, entry);
    return entry;
  }
}

/** Fields of a `stats detail dump` line, in the server's order. */
export const DETAIL_FIELDS = [
  'get',
  'hit',
  'set',
  'del',
  'inc',
  'dec',
  'lcs',
  'lis',
  'lih',
  'lds',
  'ldh',
  'lgs',
  'lgh',
  'scs',
  'sis',
  'sih',
  'sds',
  'sdh',
  'sgs',
  'sgh',
  'ses',
  'seh',
  'mcs',
  'mis',
  'mih',
  'mus',
  'muh',
  'mds',
  'mdh',
  'mgs',
  'mgh',
  'bcs',
  'bis',
  'bih',
  'bus',
  'buh',
  'bds',
  'bdh',
  'bps',
  'bph',
  'bms',
  'bmh',
  'bgs',
  'bgh',
  'bns',
  'bnh',
  'pfs',
  'pfh',
  'pgs',
  'pgh',
  'gps',
  'gph',
  'gas',
  'sas',
] as const;
export type DetailField = (typeof DETAIL_FIELDS)[number];

class DetailEntry {
  readonly counts = new Map<DetailField, number>();
  constructor(
    readonly name: string,
    readonly bucket: number,
    readonly seq: number,
  ) {}

  line(): string {
    const name = this.name === '' ? NULL_PREFIX_NAME : this.name;
    return `PREFIX ${name} ${DETAIL_FIELDS.map((f) => `${f} ${this.counts.get(f) ?? 0}`).join(' ')}\r\n`;
  }
}

/** Per-prefix operation counts (stats_prefix.c). */
export class DetailStats {
  private readonly entries = new Map<string, DetailEntry>();
  private seq = 0;

  record(key: string, request: DetailField, hit: DetailField | undefined): void {
    const name = prefixOf(key);
    let entry = this.entries.get(name);
    if (entry === undefined) {
      entry = new DetailEntry(name, bucketOf(name), ++this.seq);
      this.entries.set(name, entry);
    }
    entry.counts.set(request, (entry.counts.get(request) ?? 0) + 1);
    if (hit !== undefined) entry.counts.set(hit, (entry.counts.get(hit) ?? 0) + 1);
  }

  /** `stat_prefixes` */
  get count(): number {
    return this.entries.size;
  }

  lines(): string[] {
    return hashOrder(this.entries.values()).map((e) => e.line());
  }

  line(name: string): string | undefined {
    return this.entries.get(name === NULL_PREFIX_NAME ? '' : name)?.line();
  }
}
