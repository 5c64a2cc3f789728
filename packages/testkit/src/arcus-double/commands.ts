/**
 * The ARCUS ascii commands the double answers, as a table: command word (and for collections the
 * second word) -> how long its data block is, and what it does. Replies are latin1 strings (one
 * char per byte), so values of any bytes pass through unchanged.
 */
import {
  bopCount,
  bopDelete,
  bopGet,
  bopInsert,
  collectionCreate,
  lopDelete,
  lopGet,
  lopInsert,
  sopDelete,
  sopExist,
  sopGet,
  sopInsert,
} from './collection-commands.js';
import { BadFormat, CLOSE, ERROR, line, type CommandSpec } from './command-spec.js';
import { arithmetic, casCommand, deleteCommand, flushAll, getattr, retrieve, store } from './kv-commands.js';
import {
  renderDetailDump,
  renderGeneralStats,
  renderPrefixes,
  renderPrefixListItems,
  renderPrefixListOperations,
  renderSettings,
  renderSlabs,
  renderZookeeper,
} from './stats.js';

const stats: CommandSpec = {
  run(state, args) {
    const [sub, ...rest] = args;
    switch (sub) {
      case undefined:
        return renderGeneralStats(state);
      case 'settings':
        return renderSettings(state);
      case 'slabs':
        return renderSlabs(state);
      case 'zookeeper':
        return renderZookeeper(state);
      case 'prefixes':
        return renderPrefixes(state);
      case 'detail':
        if (rest[0] === 'on' || rest[0] === 'off') {
          state.detailEnabled = rest[0] === 'on';
          return line('OK');
        }
        if (rest[0] === 'dump') return renderDetailDump(state);
        return line('CLIENT_ERROR usage: stats detail on|off|dump');
      case 'prefixlist':
        if (rest.length < 2) throw new BadFormat();
        if (rest[0] === 'item') return renderPrefixListItems(state, rest.slice(1));
        if (rest[0] === 'operation') return renderPrefixListOperations(state, rest.slice(1));
        throw new BadFormat();
      default:
        return ERROR;
    }
  },
};

export const COMMANDS: Readonly<Record<string, CommandSpec | Readonly<Record<string, CommandSpec>>>> = {
  get: retrieve(false),
  gets: retrieve(true),
  set: store('set'),
  add: store('add'),
  replace: store('replace'),
  cas: casCommand,
  delete: deleteCommand,
  incr: arithmetic(true),
  decr: arithmetic(false),
  getattr,
  stats,
  flush_all: flushAll,
  version: { run: (state) => line(`VERSION ${state.settings.version}`) },
  quit: { run: () => CLOSE },
  lop: {
    create: collectionCreate('list', 'lop_create'),
    insert: lopInsert,
    delete: lopDelete,
    get: lopGet,
  },
  sop: {
    create: collectionCreate('set', 'sop_create'),
    insert: sopInsert,
    delete: sopDelete,
    exist: sopExist,
    get: sopGet,
  },
  bop: {
    create: collectionCreate('btree', 'bop_create'),
    insert: bopInsert,
    delete: bopDelete,
    get: bopGet,
    count: bopCount,
  },
};

function isSpec(entry: CommandSpec | Readonly<Record<string, CommandSpec>>): entry is CommandSpec {
  return typeof (entry as CommandSpec).run === 'function';
}

/** The command for a request line's words and its arguments; undefined for unknown commands. */
export function resolve(words: readonly string[]): { spec: CommandSpec; args: readonly string[] } | undefined {
  const name = words[0] ?? '';
  const entry = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (entry === undefined) return undefined;
  if (isSpec(entry)) return { spec: entry, args: words.slice(1) };
  const sub = words[1] ?? '';
  const spec = Object.hasOwn(entry, sub) ? entry[sub] : undefined;
  return spec === undefined ? undefined : { spec, args: words.slice(2) };
}
