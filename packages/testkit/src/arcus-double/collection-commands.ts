/** Collection commands: lop, sop and bop (list, set, b+tree). */
import {
  bkey,
  bkeyRange,
  createAttributes,
  eflagFilter,
  hexBytes,
  indexRange,
  int,
  key,
  matches,
  options,
  uint,
  type EflagFilter,
} from './arguments.js';
import { BadFormat, line, type CommandSpec } from './command-spec.js';
import {
  compareBkeys,
  formatBkey,
  MAX_ELEMENT_BYTES,
  type Bkey,
  type BtreeElement,
  type BtreeItem,
  type CollectionItem,
  type CreateAttributes,
  type Item,
} from './engine.js';
import type { CollectionType } from './memory.js';
import type { Operation, Outcome, ServerState } from './state.js';

export function collectionCreate(type: CollectionType, op: Operation): CommandSpec {
  return {
    noreply: true,
    run(state, args) {
      const k = key(args[0]);
      const { attrs, rest } = createAttributes(['create', ...args.slice(1)], 0);
      options(rest, []);
      const reply = state.engine.createCollection(type, k, attrs as CreateAttributes);
      state.record(op, k, reply === 'CREATED' ? 'ok' : undefined);
      return line(reply);
    },
  };
}

/** How an insert counts: a hit when stored, a miss when the key is not there. */
function insertOutcome(reply: string): Outcome | undefined {
  if (reply === 'STORED' || reply === 'CREATED_STORED') return 'hit';
  if (reply === 'NOT_FOUND') return 'miss';
  return undefined;
}

/** Outcome of reads and deletes: elements found, key found without elements, key missing. */
function readOutcome(reply: string): Outcome | undefined {
  if (reply === 'NOT_FOUND') return 'miss';
  if (reply === 'NOT_FOUND_ELEMENT') return 'none_hit';
  if (reply === 'TYPE_MISMATCH' || reply === 'UNREADABLE') return undefined;
  return 'elem_hit';
}

function elementData(args: readonly string[], at: number): number {
  return uint(args[at]);
}

const ELEMENT_TOO_LARGE = 'CLIENT_ERROR too large value';

export const lopInsert: CommandSpec = {
  noreply: true,
  dataLength: (args) => elementData(args, 2),
  maxData: MAX_ELEMENT_BYTES,
  tooLarge: ELEMENT_TOO_LARGE,
  run(state, args, data) {
    const k = key(args[0]);
    const index = int(args[1]);
    const { attrs, rest } = createAttributes(args, 3);
    options(rest, ['pipe']);
    const reply = state.engine.listInsert(k, index, data, attrs);
    state.record('lop_insert', k, insertOutcome(reply));
    return line(reply);
  },
};

export const lopDelete: CommandSpec = {
  noreply: true,
  run(state, args) {
    const k = key(args[0]);
    const [from, to] = indexRange(args[1]);
    const drop = options(args.slice(2), ['drop', 'pipe']).has('drop');
    const reply = listDelete(state, k, from, to, drop);
    state.record('lop_delete', k, readOutcome(reply));
    return line(reply);
  },
};

function listDelete(state: ServerState, k: string, from: number, to: number, drop: boolean): string {
  const list = state.engine.collection(k, 'list');
  if (typeof list === 'string') return list;
  const range = state.engine.listRange(list, from, to);
  if (range === undefined) return 'NOT_FOUND_ELEMENT';
  state.engine.listRemove(list, range.index, range.count);
  return dropIfEmpty(state, list, list.elements.length, drop);
}

function dropIfEmpty(state: ServerState, item: Item, remaining: number, drop: boolean): string {
  if (drop && remaining === 0) {
    state.engine.unlinkItem(item);
    return 'DELETED_DROPPED';
  }
  return 'DELETED';
}

/** A get of `op`: its reply for a missing, mistyped or unreadable item, else what `read` answers. */
function collectionGet<T extends CollectionItem>(
  state: ServerState,
  op: Operation,
  k: string,
  item: T | string,
  read: (item: T) => string,
): string {
  let reply: string;
  if (typeof item === 'string') reply = line(item);
  else if (!item.meta.readable) reply = line('UNREADABLE');
  else reply = read(item);
  state.record(op, k, readOutcome(reply.startsWith('VALUE') ? 'VALUE' : reply.trimEnd()));
  return reply;
}

/** The VALUE reply of `lines`; with delete or drop, `remove` takes them out and returns how many remain. */
function valueReply(
  state: ServerState,
  item: CollectionItem,
  lines: readonly string[],
  opts: ReadonlySet<string>,
  remove: () => number,
): string {
  const reply = `VALUE ${item.flags} ${lines.length}\r\n${lines.join('')}`;
  if (!opts.has('delete') && !opts.has('drop')) return `${reply}END\r\n`;
  return reply + line(dropIfEmpty(state, item, remove(), opts.has('drop')));
}

const valueLine = (e: { value: string }) => `${e.value.length} ${e.value}\r\n`;

export const lopGet: CommandSpec = {
  run(state, args) {
    const k = key(args[0]);
    const [from, to] = indexRange(args[1]);
    const opts = options(args.slice(2), ['delete', 'drop']);
    return collectionGet(state, 'lop_get', k, state.engine.collection(k, 'list'), (list) => {
      const range = state.engine.listRange(list, from, to);
      if (range === undefined) return line('NOT_FOUND_ELEMENT');
      let elements = list.elements.slice(range.index, range.index + range.count);
      if (!range.forward) elements = elements.reverse();
      return valueReply(state, list, elements.map(valueLine), opts, () => {
        state.engine.listRemove(list, range.index, range.count);
        return list.elements.length;
      });
    });
  },
};

export const sopInsert: CommandSpec = {
  noreply: true,
  dataLength: (args) => elementData(args, 1),
  maxData: MAX_ELEMENT_BYTES,
  tooLarge: ELEMENT_TOO_LARGE,
  run(state, args, data) {
    const k = key(args[0]);
    const { attrs, rest } = createAttributes(args, 2);
    options(rest, ['pipe']);
    const reply = state.engine.setInsert(k, data, attrs);
    state.record('sop_insert', k, insertOutcome(reply));
    return line(reply);
  },
};

export const sopDelete: CommandSpec = {
  noreply: true,
  dataLength: (args) => elementData(args, 1),
  maxData: MAX_ELEMENT_BYTES,
  tooLarge: ELEMENT_TOO_LARGE,
  run(state, args, data) {
    const k = key(args[0]);
    const drop = options(args.slice(2), ['drop', 'pipe']).has('drop');
    const set = state.engine.collection(k, 'set');
    let reply: string;
    if (typeof set === 'string') reply = set;
    else if (state.engine.setRemove(set, [data]) === 0) reply = 'NOT_FOUND_ELEMENT';
    else reply = dropIfEmpty(state, set, set.elements.size, drop);
    state.record('sop_delete', k, readOutcome(reply));
    return line(reply);
  },
};

export const sopExist: CommandSpec = {
  dataLength: (args) => elementData(args, 1),
  maxData: MAX_ELEMENT_BYTES,
  tooLarge: ELEMENT_TOO_LARGE,
  run(state, args, data) {
    const k = key(args[0]);
    options(args.slice(2), ['pipe']);
    const set = state.engine.collection(k, 'set');
    let reply: string;
    if (typeof set === 'string') reply = set;
    else if (!set.meta.readable) reply = 'UNREADABLE';
    else reply = set.elements.has(data) ? 'EXIST' : 'NOT_EXIST';
    state.record(
      'sop_exist',
      k,
      reply === 'NOT_FOUND' ? 'miss' : reply === 'EXIST' || reply === 'NOT_EXIST' ? 'hit' : undefined,
    );
    return line(reply);
  },
};

export const sopGet: CommandSpec = {
  run(state, args) {
    const k = key(args[0]);
    const count = uint(args[1]);
    const opts = options(args.slice(2), ['delete', 'drop']);
    return collectionGet(state, 'sop_get', k, state.engine.collection(k, 'set'), (set) => {
      if (set.elements.size === 0) return line('NOT_FOUND_ELEMENT');
      let elements = state.engine.setElementsInOrder(set);
      if (count > 0) elements = elements.slice(0, count);
      return valueReply(state, set, elements.map(valueLine), opts, () => {
        state.engine.setRemove(
          set,
          elements.map((e) => e.value),
        );
        return set.elements.size;
      });
    });
  },
};

/** `<fwhere> [<bitwop> <foperand>] <compop> <fvalue>[,<fvalue>...]` */
function btreeSelect(tree: BtreeItem, [from, to]: [Bkey, Bkey], filter: EflagFilter | undefined): BtreeElement[] {
  const descending = compareBkeys(from, to) > 0;
  const [low, high] = descending ? [to, from] : [from, to];
  const selected = tree.elements.filter(
    (e) => compareBkeys(e.bkey, low) >= 0 && compareBkeys(e.bkey, high) <= 0 && matches(e, filter),
  );
  return descending ? selected.reverse() : selected;
}

function btreeFind(state: ServerState, k: string, range: [Bkey, Bkey]): BtreeItem | string {
  const tree = state.engine.collection(k, 'btree');
  if (typeof tree === 'string') return tree;
  const first = tree.elements[0];
  if (first !== undefined && first.bkey.kind !== range[0].kind) return 'BKEY_MISMATCH';
  return tree;
}

export const bopInsert: CommandSpec = {
  noreply: true,
  dataLength: (args) => elementData(args, args[2] !== undefined && /^0[xX]/.test(args[2]) ? 3 : 2),
  maxData: MAX_ELEMENT_BYTES,
  tooLarge: ELEMENT_TOO_LARGE,
  run(state, args, data) {
    const k = key(args[0]);
    const b = bkey(args[1]);
    const hasEflag = args[2] !== undefined && /^0[xX]/.test(args[2]);
    const eflag = hasEflag ? hexBytes(args[2]) : undefined;
    const { attrs, rest } = createAttributes(args, hasEflag ? 4 : 3);
    options(rest, ['pipe', 'getrim']);
    const reply = state.engine.btreeInsert(k, b, eflag, data, attrs);
    state.record('bop_insert', k, insertOutcome(reply));
    return line(reply);
  },
};

function elementLine(e: BtreeElement): string {
  return `${formatBkey(e.bkey)} ${e.eflag === undefined ? '' : `0x${e.eflag} `}${e.value.length} ${e.value}\r\n`;
}

export const bopGet: CommandSpec = {
  run(state, args) {
    const k = key(args[0]);
    const range = bkeyRange(args[1]);
    const { filter, rest } = eflagFilter(args.slice(2));
    const numbers = rest.filter((t) => /^\d+$/.test(t));
    if (numbers.length > 2 || rest.slice(0, numbers.length).some((t, i) => t !== numbers[i])) throw new BadFormat();
    const offset = numbers.length === 2 ? uint(numbers[0]) : 0;
    const count = numbers.length > 0 ? uint(numbers[numbers.length - 1]) : 0;
    const opts = options(rest.slice(numbers.length), ['delete', 'drop']);
    return collectionGet(state, 'bop_get', k, btreeFind(state, k, range), (tree) => {
      let selected = btreeSelect(tree, range, filter).slice(offset);
      if (count > 0) selected = selected.slice(0, count);
      if (selected.length === 0) return line('NOT_FOUND_ELEMENT');
      return valueReply(state, tree, selected.map(elementLine), opts, () => {
        state.engine.btreeRemoveElements(tree, selected);
        return tree.elements.length;
      });
    });
  },
};

export const bopDelete: CommandSpec = {
  noreply: true,
  run(state, args) {
    const k = key(args[0]);
    const range = bkeyRange(args[1]);
    const { filter, rest } = eflagFilter(args.slice(2));
    let count = 0;
    let tail = rest;
    if (tail[0] !== undefined && /^\d+$/.test(tail[0])) {
      count = uint(tail[0]);
      tail = tail.slice(1);
    }
    const drop = options(tail, ['drop', 'pipe']).has('drop');
    const tree = btreeFind(state, k, range);
    let reply: string;
    if (typeof tree === 'string') {
      reply = tree;
    } else {
      let selected = btreeSelect(tree, range, filter);
      if (count > 0) selected = selected.slice(0, count);
      if (selected.length === 0) {
        reply = 'NOT_FOUND_ELEMENT';
      } else {
        state.engine.btreeRemoveElements(tree, selected);
        reply = dropIfEmpty(state, tree, tree.elements.length, drop);
      }
    }
    state.record('bop_delete', k, readOutcome(reply));
    return line(reply);
  },
};

export const bopCount: CommandSpec = {
  run(state, args) {
    const k = key(args[0]);
    const range = bkeyRange(args[1]);
    const { filter, rest } = eflagFilter(args.slice(2));
    options(rest, []);
    const tree = btreeFind(state, k, range);
    if (typeof tree === 'string') {
      state.record('bop_count', k, tree === 'NOT_FOUND' ? 'miss' : undefined);
      return line(tree);
    }
    if (!tree.meta.readable) return line('UNREADABLE');
    state.record('bop_count', k, 'hit');
    return line(`COUNT=${btreeSelect(tree, range, filter).length}`);
  },
};
