/** kv commands (get, gets, set, add, replace, cas, delete, incr, decr, flush_all) and getattr. */
import { int, key, uint, uint64, UINT32_MAX } from './arguments.js';
import { BadFormat, ERROR, line, type CommandSpec } from './command-spec.js';
import { formatBkey, ITEM_SIZE_MAX, type Item, type StoreMode } from './engine.js';
import type { Operation, ServerState } from './state.js';

export function retrieve(withCas: boolean): CommandSpec {
  return {
    run(state, args) {
      if (args.length === 0) return ERROR;
      let reply = '';
      for (const token of args) {
        const k = key(token);
        const item = state.engine.lookup(k);
        const hit = item !== undefined && item.type === 'kv';
        state.record('get', k, hit ? 'hit' : 'miss');
        if (hit)
          reply += `VALUE ${k} ${item.flags} ${item.value.length}${withCas ? ` ${item.cas}` : ''}\r\n${item.value}\r\n`;
      }
      return `${reply}END\r\n`;
    },
  };
}

export function store(mode: StoreMode): CommandSpec {
  return {
    noreply: true,
    dataLength: (args) => uint(args[3]),
    maxData: ITEM_SIZE_MAX,
    tooLarge: 'SERVER_ERROR object too large for cache',
    run(state, args, data) {
      if (args.length !== 4) throw new BadFormat();
      const k = key(args[0]);
      const flags = uint(args[1], UINT32_MAX);
      const exptime = int(args[2]);
      state.record('set', k);
      return line(state.engine.storeKv(mode, k, flags, exptime, data));
    },
  };
}

export const casCommand: CommandSpec = {
  noreply: true,
  dataLength: (args) => uint(args[3]),
  maxData: ITEM_SIZE_MAX,
  tooLarge: 'SERVER_ERROR object too large for cache',
  run(state, args, data) {
    if (args.length !== 5) throw new BadFormat();
    const k = key(args[0]);
    const flags = uint(args[1], UINT32_MAX);
    const exptime = int(args[2]);
    const unique = uint(args[4]);
    const item = state.engine.lookup(k);
    if (item === undefined) {
      state.record('cas', k, 'miss');
      return line('NOT_FOUND');
    }
    if (item.type !== 'kv' || item.cas !== unique) {
      state.record('cas', k, 'badval');
      return line('EXISTS');
    }
    state.record('cas', k, 'hit');
    return line(state.engine.storeKv('set', k, flags, exptime, data));
  },
};

export const deleteCommand: CommandSpec = {
  noreply: true,
  run(state, args) {
    if (args.length < 1 || args.length > 2 || (args[1] !== undefined && args[1] !== '0')) throw new BadFormat();
    const k = key(args[0]);
    const deleted = state.engine.deleteKey(k);
    state.record('delete', k, deleted ? 'hit' : 'miss');
    return line(deleted ? 'DELETED' : 'NOT_FOUND');
  },
};

export function arithmetic(incr: boolean): CommandSpec {
  return {
    noreply: true,
    run(state, args) {
      if (args.length !== 2) throw new BadFormat();
      const k = key(args[0]);
      const result = state.engine.arithmetic(k, uint64(args[1]), incr);
      const op: Operation = incr ? 'incr' : 'decr';
      state.record(op, k, typeof result === 'bigint' ? 'hit' : 'miss');
      if (result === 'NON_NUMERIC') return line('CLIENT_ERROR cannot increment or decrement non-numeric value');
      return line(String(result));
    },
  };
}

function attributes(state: ServerState, item: Item): Array<[string, string | number]> {
  const common: Array<[string, string | number]> = [
    ['type', item.type === 'btree' ? 'b+tree' : item.type],
    ['flags', item.flags],
    ['expiretime', state.engine.remainingSeconds(item)],
  ];
  if (item.type === 'kv') return common;
  const count = item.type === 'set' ? item.elements.size : item.elements.length;
  const attrs: Array<[string, string | number]> = [
    ...common,
    ['count', count],
    ['maxcount', item.meta.maxcount],
    ['overflowaction', item.meta.overflow],
    ['readable', item.meta.readable ? 'on' : 'off'],
  ];
  if (item.type === 'btree') {
    const first = item.elements[0];
    const last = item.elements[item.elements.length - 1];
    attrs.push(
      ['maxbkeyrange', 0],
      ['minbkey', first === undefined ? -1 : formatBkey(first.bkey)],
      ['maxbkey', last === undefined ? -1 : formatBkey(last.bkey)],
      ['trimmed', item.trimmed ? 1 : 0],
    );
  }
  return attrs;
}

export const getattr: CommandSpec = {
  run(state, args) {
    const k = key(args[0]);
    const item = state.engine.lookup(k);
    state.record('getattr', k, item === undefined ? 'miss' : 'hit');
    if (item === undefined) return line('NOT_FOUND');
    let attrs = attributes(state, item);
    const names = args.slice(1);
    if (names.length > 0) {
      if (names.some((n) => !attrs.some(([name]) => name === n))) return line('ATTR_ERROR not found');
      attrs = attrs.filter(([name]) => names.includes(name));
    }
    return `${attrs.map(([name, value]) => `ATTR ${name}=${value}\r\n`).join('')}END\r\n`;
  },
};

export const flushAll: CommandSpec = {
  noreply: true,
  run(state) {
    state.engine.flushAll();
    state.count('cmd_flush');
    return line('OK');
  },
};
