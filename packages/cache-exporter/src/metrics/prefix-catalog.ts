/** The families of `/metrics/prefixes` and the `stats prefixes` / `stats detail dump` codes they come from. */
import { family } from './family.js';
import type { FamilySpec } from './family.js';

// ---- prefixes (summed per service code) -------------------------------------------------------

export const PREFIX_ITEMS = family(
  'arcus_prefix_items',
  'gauge',
  'Items under the prefix, summed over the nodes of the service code, by item type.',
  'stats prefixes *itm',
  ['prefix', 'type'],
  '/metrics/prefixes',
);
export const PREFIX_BYTES = family(
  'arcus_prefix_bytes',
  'gauge',
  'Bytes of the items under the prefix, summed over the nodes of the service code, by item type.',
  'stats prefixes *tsz',
  ['prefix', 'type'],
  '/metrics/prefixes',
);
export const PREFIX_COMMANDS = family(
  'arcus_prefix_commands_total',
  'counter',
  "Requests on keys of the prefix over the nodes of the service code, by command (needs stats detail on): a running total of each node's increase, so a node that fails, restarts or leaves never makes it fall.",
  'stats detail dump',
  ['prefix', 'command'],
  '/metrics/prefixes',
);
export const PREFIX_COMMAND_HITS = family(
  'arcus_prefix_command_hits_total',
  'counter',
  'Requests on keys of the prefix that hit, over the nodes of the service code, by command (needs stats detail on): a running total like arcus_prefix_commands_total.',
  'stats detail dump',
  ['prefix', 'command'],
  '/metrics/prefixes',
);
export const PREFIX_OTHER = family(
  'arcus_prefix_stat',
  'untyped',
  'A per-prefix field this exporter has no specific metric for, summed over the nodes of the service code.',
  'stats prefixes, stats detail dump',
  ['prefix', 'field'],
  '/metrics/prefixes',
);
export const PREFIX_NODES = family(
  'arcus_prefix_nodes',
  'gauge',
  'Nodes of the service code whose prefix statistics are in the sums, by state: ok, failed (no answer), limited (more prefixes than max_stats_prefixes; only named prefixes could be read).',
  'exporter',
  ['state'],
  '/metrics/prefixes',
);
export const PREFIX_COLLECTED = family(
  'arcus_prefix_collection_enabled',
  'gauge',
  'Whether prefix statistics are collected for the service code (collectPrefixes / serviceCodesToCollectPrefixes).',
  'config',
  [],
  '/metrics/prefixes',
);

/** Item type of the `stats prefixes` count and size fields. */
export const PREFIX_ITEM_FIELDS: ReadonlyMap<string, { family: FamilySpec; type: string }> = new Map([
  ['kitm', { family: PREFIX_ITEMS, type: 'kv' }],
  ['litm', { family: PREFIX_ITEMS, type: 'list' }],
  ['sitm', { family: PREFIX_ITEMS, type: 'set' }],
  ['mitm', { family: PREFIX_ITEMS, type: 'map' }],
  ['bitm', { family: PREFIX_ITEMS, type: 'btree' }],
  ['ktsz', { family: PREFIX_BYTES, type: 'kv' }],
  ['ltsz', { family: PREFIX_BYTES, type: 'list' }],
  ['stsz', { family: PREFIX_BYTES, type: 'set' }],
  ['mtsz', { family: PREFIX_BYTES, type: 'map' }],
  ['btsz', { family: PREFIX_BYTES, type: 'btree' }],
]);
/** Totals over the types: derivable by sum, so not exported twice. */
export const PREFIX_ITEM_TOTALS: ReadonlySet<string> = new Set(['itm', 'tsz']);

/**
 * `stats detail dump` codes: kv uses words; a collection code is a type letter (l, s, m, b; p, g for
 * bop position), an operation letter, and `s` for requests or `h` for hits. Create and attr: `s` only.
 */
const REQUEST_ONLY = 'get:get set:set del:delete inc:incr dec:decr gas:getattr sas:setattr';
const CREATES = 'lcs:lop_create scs:sop_create mcs:mop_create bcs:bop_create';
const PAIRED = [
  'li:lop_insert ld:lop_delete lg:lop_get',
  'si:sop_insert sd:sop_delete sg:sop_get se:sop_exist',
  'mi:mop_insert mu:mop_update md:mop_delete mg:mop_get',
  'bi:bop_insert bu:bop_update bd:bop_delete bp:bop_incr bm:bop_decr bg:bop_get bn:bop_count',
  'pf:bop_position pg:bop_pwg gp:bop_gbp',
];
const pairs = (table: string) => table.split(' ').map((pair) => pair.split(':') as [string, string]);
type OperationCode = [string, { command: string; hits: boolean }];
export const PREFIX_OPERATION_CODES: ReadonlyMap<string, OperationCode[1]> = new Map([
  ...pairs(`${REQUEST_ONLY} ${CREATES}`).map(([code, command]): OperationCode => [code, { command, hits: false }]),
  ['hit', { command: 'get', hits: true }] as OperationCode,
  ...PAIRED.flatMap(pairs).flatMap(([stem, command]): OperationCode[] => [
    [`${stem}s`, { command, hits: false }],
    [`${stem}h`, { command, hits: true }],
  ]),
]);
