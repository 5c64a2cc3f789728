/**
 * Memory accounting of the ARCUS 1.15 default engine, for `bytes`, the per-prefix `tsz` sizes and
 * `stats slabs`. Item sizes are the engine's structure sizes on 64-bit with CAS on (they reproduce
 * the captured samples: 96 bytes for a small kv item, 272 for the transcript's 3-element list,
 * 376 for its 2-element set, 544 for its 3-element b+tree). Space is what the small-memory (SM)
 * allocator hands out: size + 4-byte slot tail, rounded up to 8, at least 32. The SM allocator
 * itself is simulated (a port of slabs.c: 256 KB blocks, free-slot classes, the "last 1%" class)
 * because `stats slabs` reports its free-slot state.
 */

const HASH_ITEM = 64 + 8; // hash_item + CAS
const META_SIZE = { list: 32, set: 24, map: 24, btree: 64 } as const;
const LIST_ELEM_HEAD = 32;
const SET_ELEM_HEAD = 24;
const BTREE_ELEM_HEAD = 8;
export const SET_NODE_SIZE = 168; // 16 chain counts + 16 chain heads
export const BTREE_LEAF_SIZE = 280; // 32 element pointers
export const BTREE_INDEX_SIZE = 408; // 32 child pointers + 32 counts
export const BTREE_NODE_FANOUT = 32;
export const SET_CHAIN_MAX = 64;

export type CollectionType = keyof typeof META_SIZE;

function metaOffset(nkey: number, nbytes: number): number {
  return (Math.floor((nkey + nbytes - 1) / 8) + 1) * 8;
}

/** Sizes in bytes as the engine allocates them; `nbytes` always includes the trailing CRLF. */
export const itemSize = {
  kv: (nkey: number, nbytes: number): number => HASH_ITEM + nkey + nbytes,
  collection: (type: CollectionType, nkey: number): number => HASH_ITEM + metaOffset(nkey, 2) + META_SIZE[type],
  listElement: (nbytes: number): number => LIST_ELEM_HEAD + nbytes,
  setElement: (nbytes: number): number => SET_ELEM_HEAD + nbytes,
  /** `nbkey` 0 means an 8-byte integer bkey. */
  btreeElement: (nbkey: number, neflag: number, nbytes: number): number =>
    BTREE_ELEM_HEAD + (nbkey === 0 ? 8 : nbkey) + neflag + nbytes,
};

// ---- slab classes --------------------------------------------------------------------------

const ITEM_SIZE_MAX = 1024 * 1024;
const SM_BLOCK_SIZE = 262144;
const SM_BHEAD_SIZE = 32;
const SM_BBODY_SIZE = SM_BLOCK_SIZE - SM_BHEAD_SIZE;
const SM_MIN_SLOT_SIZE = 32;
const SM_MAX_SLOT_SIZE = 49152;
const SM_TAIL_SIZE = 4;
export const MAX_SM_VALUE_LEN = SM_MAX_SLOT_SIZE - SM_TAIL_SIZE;
const RSVD_SLAB_COUNT = 4;

interface SlabClassSpec {
  readonly size: number;
  readonly perslab: number;
  readonly reserved: number;
}

/** Class 0 holds the SM blocks; classes 1.. hold big kv items (chunk_size 48, factor 1.25). */
const SLAB_CLASSES: readonly SlabClassSpec[] = (() => {
  const classes: SlabClassSpec[] = [{ size: SM_BLOCK_SIZE, perslab: ITEM_SIZE_MAX / SM_BLOCK_SIZE, reserved: 0 }];
  let size = 64 + 48;
  while (classes.length < 200 && size <= ITEM_SIZE_MAX / 1.25) {
    if (size % 8) size += 8 - (size % 8);
    classes.push({ size, perslab: Math.floor(ITEM_SIZE_MAX / size), reserved: RSVD_SLAB_COUNT });
    size = Math.floor(size * 1.25);
  }
  classes.push({ size: ITEM_SIZE_MAX, perslab: 1, reserved: RSVD_SLAB_COUNT });
  return classes;
})();

class SlabClass {
  pages = 0;
  freeChunks = 0; // sl_curr
  endPageFree = 0;
  requested = 0;
  constructor(readonly spec: SlabClassSpec) {}

  /** Returns the bytes newly malloc'ed for a page (0 when a free chunk was reused). */
  alloc(size: number): number {
    let malloced = 0;
    if (this.freeChunks === 0 && this.endPageFree === 0) {
      this.pages += 1;
      this.endPageFree = this.spec.perslab;
      malloced = this.spec.size * this.spec.perslab;
    }
    if (this.freeChunks > 0) this.freeChunks -= 1;
    else this.endPageFree -= 1;
    this.requested += size;
    return malloced;
  }

  free(size: number): void {
    this.freeChunks += 1;
    this.requested -= size;
  }
}

// ---- SM slot classes -----------------------------------------------------------------------

interface SlotClassInfo {
  readonly sulen: number;
  readonly sucnt: number;
  readonly tolen: number;
  readonly tocnt: number;
}

const CLASS_INFO: readonly SlotClassInfo[] = (() => {
  const info: SlotClassInfo[] = [];
  let sulen = 8;
  const sucnt = 128;
  let tolen = 0;
  let tocnt = 0;
  while (tolen + sulen * sucnt < SM_MAX_SLOT_SIZE) {
    info.push({ sulen, sucnt, tolen, tocnt });
    tocnt += sucnt;
    tolen += sulen * sucnt;
    sulen *= 2;
  }
  const lastCount = (SM_MAX_SLOT_SIZE - tolen) / sulen;
  info.push({ sulen, sucnt: lastCount, tolen, tocnt });
  tocnt += lastCount;
  tolen += sulen * lastCount;
  info.push({ sulen: 0, sucnt: 0, tolen, tocnt });
  return info;
})();

/** Number of slot classes; the last one holds the big free slots. */
const SM_NUM_CLASSES = (CLASS_INFO[CLASS_INFO.length - 1]?.tocnt ?? 0) + 1;
const BIG_CLASS = SM_NUM_CLASSES - 1;

function slotLength(size: number): number {
  const slen = Math.floor((size + SM_TAIL_SIZE - 1) / 8 + 1) * 8;
  return Math.max(slen, SM_MIN_SLOT_SIZE);
}

function slotClass(slen: number, above: boolean): number {
  if (slen >= SM_MAX_SLOT_SIZE) return BIG_CLASS;
  let i = 0;
  while (slen >= (CLASS_INFO[i + 1] as SlotClassInfo).tolen) i++;
  const cls = CLASS_INFO[i] as SlotClassInfo;
  let smid = cls.tocnt + Math.floor((slen - cls.tolen) / cls.sulen);
  if (above && (slen - cls.tolen) % cls.sulen !== 0) smid++;
  return smid;
}

/** A slot inside an SM block; blocks are chains of slots in address order. */
interface Slot {
  offset: number;
  length: number;
  used: boolean;
  prev: Slot | null;
  next: Slot | null;
}

/** What an allocation returns; give it back to `free`. */
export interface Allocation {
  /** Bytes charged to the item (slabs_space_size). */
  readonly space: number;
  readonly size: number;
  readonly slot?: Slot;
  readonly slabClass?: number;
}

/** Per-double engine memory. Arrays are created on first use: an idle double stays small. */
export class Memory {
  private readonly slabs = new Map<number, SlabClass>();
  private malloced = 0;
  private sm: SmState | undefined;

  get mallocedBytes(): number {
    return this.malloced;
  }

  /** slabs_space_size: the space an allocation of `size` bytes takes, 0 when too large. */
  spaceSize(size: number): number {
    if (size <= MAX_SM_VALUE_LEN) return slotLength(size);
    const cls = SLAB_CLASSES.findIndex((c, i) => i > 0 && size <= c.size);
    return cls < 0 ? 0 : (SLAB_CLASSES[cls] as SlabClassSpec).size;
  }

  alloc(size: number): Allocation {
    if (size <= MAX_SM_VALUE_LEN) {
      this.sm ??= new SmState();
      const slot = this.sm.alloc(size, () => this.slabAlloc(0, SM_BLOCK_SIZE));
      return { space: slot.length, size, slot };
    }
    const cls = SLAB_CLASSES.findIndex((c, i) => i > 0 && size <= c.size);
    this.slabAlloc(cls, size);
    return { space: (SLAB_CLASSES[cls] as SlabClassSpec).size, size, slabClass: cls };
  }

  free(allocation: Allocation): void {
    if (allocation.slot !== undefined) {
      this.sm?.free(allocation.slot, () => this.slabClass(0).free(SM_BLOCK_SIZE));
    } else if (allocation.slabClass !== undefined) {
      this.slabClass(allocation.slabClass).free(allocation.size);
    }
  }

  /** `stats slabs` lines (name, value) in the server's order. */
  slabStats(memoryLimit: number): Array<[string, string | number]> {
    const sm = this.sm ?? new SmState();
    const lines: Array<[string, string | number]> = sm.statLines();
    let active = 0;
    for (let id = 0; id < SLAB_CLASSES.length; id++) {
      const cls = this.slabs.get(id);
      if (cls === undefined || cls.pages === 0) continue;
      active += 1;
      const total = cls.pages * cls.spec.perslab;
      lines.push(
        [`${id}:chunk_size`, cls.spec.size],
        [`${id}:chunks_per_page`, cls.spec.perslab],
        [`${id}:reserved_pages`, cls.spec.reserved],
        [`${id}:total_pages`, cls.pages],
        [`${id}:total_chunks`, total],
        [`${id}:used_chunks`, total - cls.freeChunks - cls.endPageFree],
        [`${id}:free_chunks`, cls.freeChunks],
        [`${id}:free_chunks_end`, cls.endPageFree],
        [`${id}:mem_requested`, cls.requested],
      );
    }
    lines.push(['active_slabs', active], ['memory_limit', memoryLimit], ['total_malloced', this.malloced]);
    return lines;
  }

  private slabClass(id: number): SlabClass {
    let cls = this.slabs.get(id);
    if (cls === undefined) {
      cls = new SlabClass(SLAB_CLASSES[id] as SlabClassSpec);
      this.slabs.set(id, cls);
    }
    return cls;
  }

  private slabAlloc(id: number, size: number): void {
    this.malloced += this.slabClass(id).alloc(size);
  }
}

/** The SM allocator's anchor and slot lists (do_smmgr_* in slabs.c). */
class SmState {
  private usedNumClasses = 0;
  private freeNumClasses = 0;
  private usedMinid = SM_NUM_CLASSES;
  private usedMaxid = -1;
  private used01pctClsid = -1;
  private freeMinid = SM_NUM_CLASSES;
  private freeMaxid = -1;
  private usedTotalSpace = 0;
  private used01pctSpace = 0;
  private freeSmallSpace = 0;
  private freeAvailSpace = 0;
  private readonly usedSpace = new Float64Array(SM_NUM_CLASSES);
  private readonly usedCount = new Int32Array(SM_NUM_CLASSES);
  private readonly freeSpace = new Float64Array(SM_NUM_CLASSES);
  /** Free slots per class in list order (a Set iterates in insertion order: head first). */
  private readonly freeLists = new Map<number, Set<Slot>>();

  statLines(): Array<[string, string | number]> {
    return [
      ['SM:used_num_classes', this.usedNumClasses],
      ['SM:free_num_classes', this.freeNumClasses],
      ['SM:used_min_classid', this.usedMinid],
      ['SM:used_01p_classid', this.used01pctClsid],
      ['SM:used_max_classid', this.usedMaxid],
      ['SM:free_min_classid', this.freeMinid],
      ['SM:free_max_classid', this.freeMaxid],
      ['SM:used_total_space', this.usedTotalSpace],
      ['SM:used_01pct_space', this.used01pctSpace],
      ['SM:free_small_space', this.freeSmallSpace],
      ['SM:free_bslot_space', this.freeSpace[BIG_CLASS] ?? 0],
      ['SM:free_avail_space', this.freeAvailSpace],
      ['SM:free_chunk_space', 0],
      ['SM:free_limit_space', 0],
      ['SM:space_shortage_level', 0],
    ];
  }

  alloc(size: number, newBlock: () => void): Slot {
    const slen = slotLength(size);
    const targ = slotClass(slen, true);
    let smid: number;
    if (targ > this.freeMaxid) {
      smid = BIG_CLASS;
    } else if (this.head(targ) !== undefined) {
      smid = targ;
    } else {
      smid = slotClass(slen * 2, false);
      if (smid > this.freeMaxid) {
        smid = this.freeMaxid;
      } else {
        while (smid <= this.freeMaxid && this.head(smid) === undefined) smid++;
      }
    }

    let slot = this.head(smid);
    if (slot === undefined) {
      newBlock();
      slot = { offset: SM_BHEAD_SIZE, length: slen, used: true, prev: null, next: null };
      const rest: Slot = {
        offset: SM_BHEAD_SIZE + slen,
        length: SM_BBODY_SIZE - slen,
        used: false,
        prev: slot,
        next: null,
      };
      slot.next = rest;
      this.linkFree(rest);
    } else {
      const length = slot.length;
      this.unlinkFree(slot);
      slot.used = true;
      slot.length = slen;
      if (length > slen) {
        const rest: Slot = {
          offset: slot.offset + slen,
          length: length - slen,
          used: false,
          prev: slot,
          next: slot.next,
        };
        if (slot.next !== null) slot.next.prev = rest;
        slot.next = rest;
        this.linkFree(rest);
      }
    }

    this.usedTotalSpace += slen;
    this.usedSpace[targ] = (this.usedSpace[targ] ?? 0) + slen;
    this.usedCount[targ] = (this.usedCount[targ] ?? 0) + 1;
    if (this.usedCount[targ] === 1) {
      if (targ < this.usedMinid) this.usedMinid = targ;
      if (targ > this.usedMaxid) this.usedMaxid = targ;
      this.usedNumClasses += 1;
    }
    if (this.usedTotalSpace === slen) {
      this.firstSet(slen, targ);
    } else if (targ >= this.used01pctClsid) {
      this.used01pctSpace += slen;
      this.moveRight();
    } else {
      this.moveLeft();
    }
    return slot;
  }

  free(slot: Slot, freeBlock: () => void): void {
    const slen = slot.length;
    const targ = slotClass(slen, true);
    let merged = slot;
    let offset = slot.offset;
    let length = slen;
    const prev = slot.prev;
    if (offset > SM_BHEAD_SIZE && prev !== null && !prev.used) {
      this.unlinkFree(prev);
      offset = prev.offset;
      length += prev.length;
      prev.next = slot.next;
      if (slot.next !== null) slot.next.prev = prev;
      merged = prev;
    }
    const next = merged.next;
    if (offset + length < SM_BLOCK_SIZE && next !== null && !next.used) {
      this.unlinkFree(next);
      length += next.length;
      merged.next = next.next;
      if (next.next !== null) next.next.prev = merged;
    }
    merged.offset = offset;
    merged.length = length;
    merged.used = false;
    if (offset > SM_BHEAD_SIZE || length < SM_BBODY_SIZE) this.linkFree(merged);
    else freeBlock();

    this.usedTotalSpace -= slen;
    this.usedSpace[targ] = (this.usedSpace[targ] ?? 0) - slen;
    this.usedCount[targ] = (this.usedCount[targ] ?? 0) - 1;
    if (this.usedCount[targ] === 0) this.usedListDel(targ);
    if (this.usedTotalSpace === 0) {
      this.used01pctClsid = -1;
      this.used01pctSpace = 0;
    } else if (targ >= this.used01pctClsid) {
      this.used01pctSpace -= slen;
      this.moveLeft();
    } else {
      this.moveRight();
    }
  }

  private head(smid: number): Slot | undefined {
    const list = this.freeLists.get(smid);
    return list === undefined ? undefined : list.values().next().value;
  }

  private linkFree(slot: Slot): void {
    const slen = slot.length;
    slot.used = false;
    if (slen < SM_MIN_SLOT_SIZE) {
      this.freeSmallSpace += slen;
      return;
    }
    const smid = slotClass(slen, false);
    let list = this.freeLists.get(smid);
    if (list === undefined) {
      list = new Set();
      this.freeLists.set(smid, list);
    }
    list.add(slot);
    this.freeSpace[smid] = (this.freeSpace[smid] ?? 0) + slen;
    if (list.size === 1 && smid < BIG_CLASS) {
      if (this.freeMinid > smid) this.freeMinid = smid;
      if (this.freeMaxid < smid) this.freeMaxid = smid;
      this.freeNumClasses += 1;
    }
    if (this.used01pctClsid !== -1) {
      if (smid < this.used01pctClsid) this.freeSmallSpace += slen;
      else this.freeAvailSpace += slen;
    } else if (smid === BIG_CLASS) {
      this.freeAvailSpace += slen;
    }
  }

  private unlinkFree(slot: Slot): void {
    const slen = slot.length;
    if (slen < SM_MIN_SLOT_SIZE) {
      this.freeSmallSpace -= slen;
      return;
    }
    const smid = slotClass(slen, false);
    if (smid < this.used01pctClsid) this.freeSmallSpace -= slen;
    else this.freeAvailSpace -= slen;
    const list = this.freeLists.get(smid);
    list?.delete(slot);
    this.freeSpace[smid] = (this.freeSpace[smid] ?? 0) - slen;
    if (list !== undefined && list.size === 0) {
      this.freeLists.delete(smid);
      if (smid < BIG_CLASS) this.freeListDel(smid);
    }
  }

  private freeListDel(targ: number): void {
    if (targ === this.freeMinid) {
      let smid = targ + 1;
      while (smid <= this.freeMaxid && this.head(smid) === undefined) smid++;
      if (smid <= this.freeMaxid) {
        this.freeMinid = smid;
      } else {
        this.freeMinid = SM_NUM_CLASSES;
        this.freeMaxid = -1;
      }
    }
    if (targ === this.freeMaxid) {
      let smid = targ - 1;
      while (smid >= this.freeMinid && this.head(smid) === undefined) smid--;
      this.freeMaxid = smid;
    }
    this.freeNumClasses -= 1;
  }

  private usedListDel(targ: number): void {
    if (this.usedTotalSpace > 0) {
      if (targ === this.usedMinid) {
        let smid = targ + 1;
        while (smid <= this.usedMaxid && (this.usedCount[smid] ?? 0) === 0) smid++;
        this.usedMinid = smid;
      }
      if (targ === this.usedMaxid) {
        let smid = targ - 1;
        while (smid >= this.usedMinid && (this.usedCount[smid] ?? 0) === 0) smid--;
        this.usedMaxid = smid;
      }
    } else {
      this.usedMinid = SM_NUM_CLASSES;
      this.usedMaxid = -1;
    }
    this.usedNumClasses -= 1;
  }

  private freeSpaceBetween(from: number, to: number): number {
    let sum = 0;
    for (let i = Math.max(from, 0); i < to; i++) sum += this.freeSpace[i] ?? 0;
    return sum;
  }

  private firstSet(slen: number, targ: number): void {
    if (this.freeMaxid !== -1) {
      const space = this.freeSpace[this.freeMaxid] ?? 0;
      if (this.freeMaxid < targ) this.freeSmallSpace = space;
      else this.freeAvailSpace = space;
    }
    this.used01pctClsid = targ;
    this.used01pctSpace = slen;
  }

  private moveRight(): void {
    const standard = Math.floor(this.usedTotalSpace / 100) + 1;
    let smid = this.used01pctClsid;
    for (; smid < this.usedMaxid; smid++) {
      const space = this.usedSpace[smid] ?? 0;
      if (space > 0) {
        if (this.used01pctSpace - space < standard) break;
        this.used01pctSpace -= space;
      }
    }
    if (smid !== this.used01pctClsid) {
      const adjusted = this.freeSpaceBetween(this.used01pctClsid, smid);
      this.freeSmallSpace += adjusted;
      this.freeAvailSpace -= adjusted;
      this.used01pctClsid = smid;
    }
  }

  private moveLeft(): void {
    const standard = Math.floor(this.usedTotalSpace / 100) + 1;
    if (this.used01pctSpace < standard) {
      let smid = Math.min(this.used01pctClsid - 1, this.usedMaxid);
      for (; smid >= this.usedMinid; smid--) {
        const space = this.usedSpace[smid] ?? 0;
        if (space > 0) {
          this.used01pctSpace += space;
          if (this.used01pctSpace >= standard) break;
        }
      }
      const adjusted = this.freeSpaceBetween(smid, this.used01pctClsid);
      this.freeSmallSpace -= adjusted;
      this.freeAvailSpace += adjusted;
      this.used01pctClsid = smid;
    } else if ((this.usedSpace[this.used01pctClsid] ?? 0) === 0) {
      let smid = this.used01pctClsid + 1;
      while (smid <= this.usedMaxid && (this.usedSpace[smid] ?? 0) === 0) smid++;
      const adjusted = this.freeSpaceBetween(this.used01pctClsid, smid);
      this.freeSmallSpace += adjusted;
      this.freeAvailSpace -= adjusted;
      this.used01pctClsid = smid;
    }
  }
}
