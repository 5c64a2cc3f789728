/** The double's in-memory store, with the ARCUS engine's semantics and accounting; no protocol text. */
import { mcHash } from './hash.js';
import {
  BTREE_INDEX_SIZE,
  BTREE_LEAF_SIZE,
  BTREE_NODE_FANOUT,
  itemSize,
  Memory,
  SET_CHAIN_MAX,
  SET_NODE_SIZE,
  type Allocation,
  type CollectionType,
} from './memory.js';
import { PrefixTable, type PrefixEntry } from './prefixes.js';

export type Clock = () => number;

export const ITEM_SIZE_MAX = 1024 * 1024;
export const MAX_ELEMENT_BYTES = 16384;
export const MAX_COLLECTION_SIZE = 50000;
const DEFAULT_COLLECTION_SIZE = 4000;
const REL_TIME_MAX_DELTA = 60 * 60 * 24 * 30; // exptimes above this are absolute unix times

export type OverflowAction =
  | 'error'
  | 'head_trim'
  | 'tail_trim'
  | 'smallest_trim'
  | 'largest_trim'
  | 'smallest_silent_trim'
  | 'largest_silent_trim';
const OVERFLOW_ACTIONS: Record<CollectionType, readonly OverflowAction[]> = {
  list: ['error', 'head_trim', 'tail_trim'],
  set: ['error'],
  map: ['error'],
  btree: ['error', 'smallest_trim', 'largest_trim', 'smallest_silent_trim', 'largest_silent_trim'],
};
const DEFAULT_OVERFLOW: Record<CollectionType, OverflowAction> = {
  list: 'tail_trim',
  set: 'error',
  map: 'error',
  btree: 'smallest_trim',
};

export interface CreateAttributes {
  readonly flags: number;
  readonly exptime: number;
  readonly maxcount: number;
  readonly overflowAction?: string;
  readonly readable?: boolean;
}

interface Meta {
  maxcount: number;
  overflow: OverflowAction;
  readable: boolean;
}

interface ItemBase {
  readonly key: string;
  readonly flags: number;
  /** Expiry as clock ms; 0 = never. */
  deadline: number;
  cas: number;
  prefix: PrefixEntry;
  readonly head: Allocation;
  /** Space charged to this item: head plus elements plus nodes. */
  stotal: number;
}

export interface KvItem extends ItemBase {
  readonly type: 'kv';
  value: string;
}

export interface ListElement {
  readonly value: string;
  readonly mem: Allocation;
}

export interface ListItem extends ItemBase {
  readonly type: 'list';
  readonly meta: Meta;
  readonly elements: ListElement[];
}

export interface SetElement {
  readonly value: string;
  readonly hash: number;
  readonly seq: number;
  readonly mem: Allocation;
}

export interface SetItem extends ItemBase {
  readonly type: 'set';
  readonly meta: Meta;
  readonly elements: Map<string, SetElement>;
  readonly chainSizes: number[];
  readonly nodes: Allocation[];
  seq: number;
}

/** A b+tree key: an unsigned 64-bit integer, or bytes written as upper-case hex (0x...). */
export type Bkey = { readonly kind: 'int'; readonly value: bigint } | { readonly kind: 'bin'; readonly hex: string };

export interface BtreeElement {
  readonly bkey: Bkey;
  /** Upper-case hex without 0x, or undefined. */
  readonly eflag: string | undefined;
  readonly value: string;
  readonly mem: Allocation;
}

export interface BtreeItem extends ItemBase {
  readonly type: 'btree';
  readonly meta: Meta;
  /** Sorted by bkey ascending. */
  readonly elements: BtreeElement[];
  readonly leaves: Allocation[];
  readonly indexNodes: Allocation[];
  trimmed: boolean;
}

export type Item = KvItem | ListItem | SetItem | BtreeItem;
export type CollectionItem = ListItem | SetItem | BtreeItem;

export function compareBkeys(a: Bkey, b: Bkey): number {
  if (a.kind === 'int' && b.kind === 'int') return a.value < b.value ? -1 : a.value > b.value ? 1 : 0;
  if (a.kind === 'bin' && b.kind === 'bin') return a.hex < b.hex ? -1 : a.hex > b.hex ? 1 : 0;
  return a.kind === 'int' ? -1 : 1;
}

export function formatBkey(bkey: Bkey): string {
  return bkey.kind === 'int' ? bkey.value.toString() : `0x${bkey.hex}`;
}

export type StoreMode = 'set' | 'add' | 'replace';

export class ArcusEngine {
  readonly items = new Map<string, Item>();
  readonly prefixes = new PrefixTable();
  readonly memory = new Memory();
  currItems = 0;
  totalItems = 0;
  currBytes = 0;
  reclaimed = 0;
  private casId = 0;

  constructor(readonly clock: Clock) {}

  /** exptime of the protocol to a clock deadline (0 = never; negative = already expired). */
  deadline(exptime: number): number {
    if (exptime === 0) return 0;
    const now = this.clock();
    if (exptime < 0) return now;
    if (exptime > REL_TIME_MAX_DELTA) return exptime * 1000;
    return now + exptime * 1000;
  }

  /** Remaining lifetime in seconds as getattr shows it (0 = never expires). */
  remainingSeconds(item: Item): number {
    if (item.deadline === 0) return 0;
    return Math.max(0, Math.ceil((item.deadline - this.clock()) / 1000));
  }

  /** The live item under `key`; an expired one is reclaimed on the way. */
  lookup(key: string): Item | undefined {
    const item = this.items.get(key);
    if (item === undefined) return undefined;
    if (item.deadline !== 0 && this.clock() >= item.deadline) {
      this.unlink(item);
      this.reclaimed += 1;
      return undefined;
    }
    return item;
  }

  // ---- kv ----------------------------------------------------------------------------------

  /** STORED | NOT_STORED | TYPE_MISMATCH | SERVER_ERROR object too large for cache */
  storeKv(mode: StoreMode, key: string, flags: number, exptime: number, value: string): string {
    const size = itemSize.kv(key.length, value.length + 2);
    if (value.length > ITEM_SIZE_MAX || this.memory.spaceSize(size) === 0)
      return 'SERVER_ERROR object too large for cache';
    const old = this.lookup(key);
    if (old !== undefined && old.type !== 'kv') return mode === 'add' ? 'NOT_STORED' : 'TYPE_MISMATCH';
    if ((mode === 'add' && old !== undefined) || (mode === 'replace' && old === undefined)) return 'NOT_STORED';
    const head = this.memory.alloc(size);
    const item: KvItem = {
      type: 'kv',
      key,
      flags,
      deadline: this.deadline(exptime),
      cas: 0,
      prefix: undefined as unknown as PrefixEntry,
      head,
      stotal: head.space,
      value,
    };
    this.link(item);
    if (old !== undefined) this.unlink(old); // after link: the prefix never drops to zero items
    return 'STORED';
  }

  /** incr/decr: the new value, NOT_FOUND, TYPE_MISMATCH or NON_NUMERIC. */
  arithmetic(key: string, delta: bigint, incr: boolean): bigint | 'NOT_FOUND' | 'TYPE_MISMATCH' | 'NON_NUMERIC' {
    const item = this.lookup(key);
    if (item === undefined) return 'NOT_FOUND';
    if (item.type !== 'kv') return 'TYPE_MISMATCH';
    if (!/^\d+$/.test(item.value)) return 'NON_NUMERIC';
    const max = (1n << 64n) - 1n;
    let value = BigInt(item.value);
    value = incr ? (value + delta) & max : value < delta ? 0n : value - delta;
    const remaining = item.deadline === 0 ? 0 : Math.max(1, Math.ceil((item.deadline - this.clock()) / 1000));
    this.storeKv('set', key, item.flags, remaining, value.toString());
    return value;
  }

  deleteKey(key: string): boolean {
    const item = this.lookup(key);
    if (item === undefined) return false;
    this.unlink(item);
    return true;
  }

  flushAll(): void {
    for (const item of [...this.items.values()]) this.unlink(item);
  }

  // ---- collections: common ----------------------------------------------------------------

  /** CREATED | EXISTS | CLIENT_ERROR ... */
  createCollection(type: CollectionType, key: string, attrs: CreateAttributes): string {
    const meta = this.meta(type, attrs);
    if (typeof meta === 'string') return meta;
    if (this.lookup(key) !== undefined) return 'EXISTS';
    this.newCollection(type, key, attrs, meta);
    return 'CREATED';
  }

  /** The collection under `key` of `type`, or the reply that says why not. */
  collection<T extends CollectionItem['type']>(
    key: string,
    type: T,
  ): Extract<CollectionItem, { type: T }> | 'NOT_FOUND' | 'TYPE_MISMATCH' {
    const item = this.lookup(key);
    if (item === undefined) return 'NOT_FOUND';
    if (item.type !== type) return 'TYPE_MISMATCH';
    return item as Extract<CollectionItem, { type: T }>;
  }

  // ---- list --------------------------------------------------------------------------------

  /** STORED | CREATED_STORED | NOT_FOUND | TYPE_MISMATCH | OUT_OF_RANGE | OVERFLOWED | CLIENT_ERROR ... */
  listInsert(key: string, index: number, value: string, create?: CreateAttributes): string {
    const mem = this.memory.alloc(itemSize.listElement(value.length + 2));
    const target = this.insertTarget('list', key, mem, create);
    if (typeof target === 'string') return target;
    const { item: list, created, fail } = target;
    const count = list.elements.length;
    const max = list.meta.maxcount;
    if (index >= 0 ? index > count || index > max - 1 : -index > count + 1 || -index > max) return fail('OUT_OF_RANGE');
    if (list.meta.overflow === 'error' && count >= max) return fail('OVERFLOWED');
    if (count >= max) {
      if (index === 0 || index === -1) {
        this.listRemove(list, index === -1 ? 0 : list.elements.length - 1, 1);
      } else {
        const headTrim = list.meta.overflow === 'head_trim';
        this.listRemove(list, headTrim ? 0 : list.elements.length - 1, 1);
        if (headTrim && index > 0) index -= 1;
        if (!headTrim && index < 0) index += 1;
      }
    }
    if (index < 0) index = Math.max(0, index + list.elements.length + 1);
    list.elements.splice(index, 0, { value, mem });
    this.charge(list, mem.space);
    return created ? 'CREATED_STORED' : 'STORED';
  }

  /** Normalises an index range against the list (adjust_list_range); undefined when out of range. */
  listRange(list: ListItem, from: number, to: number): { index: number; count: number; forward: boolean } | undefined {
    const n = list.elements.length;
    if (n === 0) return undefined;
    if (from < 0) from += n;
    if (to < 0) to += n;
    if (from < 0) {
      if (to < 0) return undefined;
      from = 0;
    } else if (from >= n) {
      if (to >= n) return undefined;
      from = n - 1;
    }
    to = Math.min(Math.max(to, 0), n - 1);
    return from <= to
      ? { index: from, count: to - from + 1, forward: true }
      : { index: to, count: from - to + 1, forward: false };
  }

  /** Removes `count` elements from `index`; returns them in index order. */
  listRemove(list: ListItem, index: number, count: number): ListElement[] {
    const removed = list.elements.splice(index, count);
    for (const element of removed) this.release(list, element.mem);
    return removed;
  }

  // ---- set ---------------------------------------------------------------------------------

  /** STORED | CREATED_STORED | ELEMENT_EXISTS | NOT_FOUND | TYPE_MISMATCH | OVERFLOWED | CLIENT_ERROR ... */
  setInsert(key: string, value: string, create?: CreateAttributes): string {
    const mem = this.memory.alloc(itemSize.setElement(value.length + 2));
    const target = this.insertTarget('set', key, mem, create);
    if (typeof target === 'string') return target;
    const { item: set, created, fail } = target;
    if (set.elements.has(value)) return fail('ELEMENT_EXISTS');
    if (set.elements.size >= set.meta.maxcount) return fail('OVERFLOWED');
    const hash = mcHash(value);
    set.elements.set(value, { value, hash, seq: ++set.seq, mem });
    const chain = hash & 0xf;
    set.chainSizes[chain] = (set.chainSizes[chain] ?? 0) + 1;
    this.charge(set, mem.space);
    this.resizeSetNodes(set);
    return created ? 'CREATED_STORED' : 'STORED';
  }

  setRemove(set: SetItem, values: readonly string[]): number {
    let removed = 0;
    for (const value of values) {
      const element = set.elements.get(value);
      if (element === undefined) continue;
      set.elements.delete(value);
      const chain = element.hash & 0xf;
      set.chainSizes[chain] = (set.chainSizes[chain] ?? 1) - 1;
      this.release(set, element.mem);
      removed += 1;
    }
    this.resizeSetNodes(set);
    return removed;
  }

  /**
   * Elements in the order the server's hash tree yields them: by the low 4 bits of the hash,
   * newest first in a chain; a chain that outgrew 64 elements is split by the next 4 bits.
   */
  setElementsInOrder(set: SetItem): SetElement[] {
    const order = (elements: SetElement[], depth: number): SetElement[] => {
      const chains: SetElement[][] = Array.from({ length: 16 }, () => []);
      for (const e of elements) chains[(e.hash >>> (depth * 4)) & 0xf]?.push(e);
      return chains.flatMap((chain) =>
        chain.length > SET_CHAIN_MAX && depth < 7 ? order(chain, depth + 1) : chain.sort((a, b) => b.seq - a.seq),
      );
    };
    return order([...set.elements.values()], 0);
  }

  // ---- b+tree ------------------------------------------------------------------------------

  /** STORED | CREATED_STORED | ELEMENT_EXISTS | NOT_FOUND | TYPE_MISMATCH | BKEY_MISMATCH | OVERFLOWED | OUT_OF_RANGE | CLIENT_ERROR ... */
  btreeInsert(key: string, bkey: Bkey, eflag: string | undefined, value: string, create?: CreateAttributes): string {
    const nbkey = bkey.kind === 'int' ? 0 : bkey.hex.length / 2;
    const mem = this.memory.alloc(
      itemSize.btreeElement(nbkey, eflag === undefined ? 0 : eflag.length / 2, value.length + 2),
    );
    const target = this.insertTarget('btree', key, mem, create);
    if (typeof target === 'string') return target;
    const { item: tree, created, fail } = target;
    const first = tree.elements[0];
    if (first !== undefined && first.bkey.kind !== bkey.kind) return fail('BKEY_MISMATCH');
    let at = this.btreeSearch(tree, bkey);
    if (tree.elements[at] !== undefined && compareBkeys((tree.elements[at] as BtreeElement).bkey, bkey) === 0)
      return fail('ELEMENT_EXISTS');
    if (tree.elements.length >= tree.meta.maxcount) {
      const overflow = tree.meta.overflow;
      if (overflow === 'error') return fail('OVERFLOWED');
      const smallest = overflow === 'smallest_trim' || overflow === 'smallest_silent_trim';
      if (smallest ? at === 0 : at === tree.elements.length) return fail('OUT_OF_RANGE');
      this.btreeRemove(tree, smallest ? 0 : tree.elements.length - 1, 1);
      if (overflow === 'smallest_trim' || overflow === 'largest_trim') tree.trimmed = true;
      if (smallest) at -= 1;
    }
    tree.elements.splice(at, 0, { bkey, eflag, value, mem });
    this.charge(tree, mem.space);
    this.resizeBtreeNodes(tree);
    return created ? 'CREATED_STORED' : 'STORED';
  }

  /** Index of the first element whose bkey is >= `bkey`. */
  btreeSearch(tree: BtreeItem, bkey: Bkey): number {
    let lo = 0;
    let hi = tree.elements.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareBkeys((tree.elements[mid] as BtreeElement).bkey, bkey) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  btreeRemove(tree: BtreeItem, index: number, count: number): BtreeElement[] {
    const removed = tree.elements.splice(index, count);
    for (const element of removed) this.release(tree, element.mem);
    this.resizeBtreeNodes(tree);
    return removed;
  }

  /** Removes the given elements (found by identity). */
  btreeRemoveElements(tree: BtreeItem, elements: readonly BtreeElement[]): void {
    const doomed = new Set(elements);
    const kept = tree.elements.filter((e) => !doomed.has(e));
    tree.elements.splice(0, tree.elements.length, ...kept);
    for (const element of elements) this.release(tree, element.mem);
    this.resizeBtreeNodes(tree);
  }

  // ---- item life cycle ---------------------------------------------------------------------

  /** Drops a collection that became empty (the `drop` option). */
  unlinkItem(item: Item): void {
    this.unlink(item);
  }

  private meta(type: CollectionType, attrs: CreateAttributes): Meta | string {
    const overflow = (attrs.overflowAction ?? DEFAULT_OVERFLOW[type]) as OverflowAction;
    if (!OVERFLOW_ACTIONS[type].includes(overflow)) return 'ATTR_ERROR bad value';
    const maxcount =
      attrs.maxcount === 0
        ? DEFAULT_COLLECTION_SIZE
        : attrs.maxcount < 0 || attrs.maxcount > MAX_COLLECTION_SIZE
          ? MAX_COLLECTION_SIZE
          : attrs.maxcount;
    return { maxcount, overflow, readable: attrs.readable ?? true };
  }

  /** The collection an insert goes into (created if asked), else the error reply; `fail` undoes both. */
  private insertTarget<T extends CollectionItem['type']>(
    type: T,
    key: string,
    mem: Allocation,
    create: CreateAttributes | undefined,
  ): { item: Extract<CollectionItem, { type: T }>; created: boolean; fail: (reply: string) => string } | string {
    let found = this.collection(key, type);
    let created = false;
    if (found === 'NOT_FOUND' && create !== undefined) {
      const meta = this.meta(type, create);
      if (typeof meta === 'string') return this.discard(mem, meta);
      found = this.newCollection(type, key, create, meta) as Extract<CollectionItem, { type: T }>;
      created = true;
    }
    if (typeof found === 'string') return this.discard(mem, found);
    const item = found;
    const fail = (reply: string): string => {
      if (created) this.unlink(item);
      return this.discard(mem, reply);
    };
    return { item, created, fail };
  }

  private newCollection(type: CollectionType, key: string, attrs: CreateAttributes, meta: Meta): CollectionItem {
    const head = this.memory.alloc(itemSize.collection(type, key.length));
    const base = {
      key,
      flags: attrs.flags,
      deadline: this.deadline(attrs.exptime),
      cas: 0,
      prefix: undefined as unknown as PrefixEntry,
      head,
      stotal: head.space,
      meta,
    };
    let item: CollectionItem;
    if (type === 'list') item = { ...base, type: 'list', elements: [] };
    else if (type === 'set')
      item = {
        ...base,
        type: 'set',
        elements: new Map(),
        chainSizes: new Array<number>(16).fill(0),
        nodes: [],
        seq: 0,
      };
    else item = { ...base, type: 'btree', elements: [], leaves: [], indexNodes: [], trimmed: false };
    this.link(item);
    return item;
  }

  private link(item: Item): void {
    item.cas = ++this.casId;
    item.prefix = this.prefixes.link(item.key, item.type, item.stotal, this.clock());
    this.items.set(item.key, item);
    this.currItems += 1;
    this.totalItems += 1;
    this.currBytes += item.stotal;
  }

  /** Takes the item out of the accounting; the key goes only if it still maps to this item (not after a replace). */
  private unlink(item: Item): void {
    if (this.items.get(item.key) === item) this.items.delete(item.key);
    this.prefixes.unlink(item.prefix, item.type, item.stotal);
    this.currItems -= 1;
    this.currBytes -= item.stotal;
    if (item.type === 'list') for (const e of item.elements) this.memory.free(e.mem);
    if (item.type === 'set') {
      for (const e of item.elements.values()) this.memory.free(e.mem);
      for (const node of item.nodes) this.memory.free(node);
    }
    if (item.type === 'btree') {
      for (const e of item.elements) this.memory.free(e.mem);
      for (const node of [...item.leaves, ...item.indexNodes]) this.memory.free(node);
    }
    this.memory.free(item.head);
  }

  private charge(item: CollectionItem, space: number): void {
    item.stotal += space;
    this.currBytes += space;
    this.prefixes.addBytes(item.prefix, item.type, space);
  }

  private release(item: CollectionItem, mem: Allocation): void {
    this.memory.free(mem);
    item.stotal -= mem.space;
    this.currBytes -= mem.space;
    this.prefixes.addBytes(item.prefix, item.type, -mem.space);
  }

  private discard(mem: Allocation, reply: string): string {
    this.memory.free(mem);
    return reply;
  }

  /** One root node while the set has elements, plus one per chain that outgrew 64 elements. */
  private resizeSetNodes(set: SetItem): void {
    const want = set.elements.size === 0 ? 0 : 1 + set.chainSizes.filter((n) => n > SET_CHAIN_MAX).length;
    this.resizeNodes(set, set.nodes, want, SET_NODE_SIZE);
  }

  /** Leaves of 32 elements and the index levels above them. */
  private resizeBtreeNodes(tree: BtreeItem): void {
    const leaves = Math.ceil(tree.elements.length / BTREE_NODE_FANOUT);
    let index = 0;
    for (let level = leaves; level > 1;) {
      level = Math.ceil(level / BTREE_NODE_FANOUT);
      index += level;
    }
    this.resizeNodes(tree, tree.leaves, leaves, BTREE_LEAF_SIZE);
    this.resizeNodes(tree, tree.indexNodes, index, BTREE_INDEX_SIZE);
  }

  private resizeNodes(item: CollectionItem, nodes: Allocation[], want: number, size: number): void {
    while (nodes.length < want) {
      const node = this.memory.alloc(size);
      nodes.push(node);
      this.charge(item, node.space);
    }
    while (nodes.length > want) this.release(item, nodes.pop() as Allocation);
  }
}
