/**
 * Everything a double knows about itself besides its items: settings, operation counters,
 * per-prefix detail statistics, connection and heartbeat numbers, ZooKeeper status.
 */
import { ArcusEngine, type Clock } from './engine.js';
import { DetailStats, type DetailField } from './prefixes.js';

/**
 * normal; hang (read, never answer); garbage (non-protocol bytes); refuse-stats-prefixes (too many
 * prefixes); hang-stats-prefixes (a connection that asks for prefix statistics is never answered
 * again, as when the server's worker for it is stuck; other connections are served);
 * hang-stats-settings (the same for `stats settings`: what was asked before it is answered).
 */
export type ArcusDoubleBehavior =
  'normal' | 'hang' | 'garbage' | 'refuse-stats-prefixes' | 'hang-stats-prefixes' | 'hang-stats-settings';

export interface ServerSettings {
  readonly host: string;
  port: number;
  readonly maxStatsPrefixes: number;
  readonly version: string;
}

/** How an operation's result is counted: `<op>_hits`, `<op>_misses`, `<op>_elem_hits`, ... */
export type Outcome = 'hit' | 'miss' | 'elem_hit' | 'none_hit' | 'ok' | 'badval';
const OUTCOME_SUFFIX: Record<Outcome, string> = {
  hit: 'hits',
  miss: 'misses',
  elem_hit: 'elem_hits',
  none_hit: 'none_hits',
  ok: 'oks',
  badval: 'badval',
};

/** Every counted operation: its `cmd_<op>` counter and the detail fields (requests, hits) it feeds. */
const OPERATIONS = {
  get: ['get', 'hit'],
  set: ['set', undefined],
  cas: ['set', undefined],
  incr: ['inc', undefined],
  decr: ['dec', undefined],
  delete: ['del', undefined],
  lop_create: ['lcs', undefined],
  lop_insert: ['lis', 'lih'],
  lop_delete: ['lds', 'ldh'],
  lop_get: ['lgs', 'lgh'],
  sop_create: ['scs', undefined],
  sop_insert: ['sis', 'sih'],
  sop_delete: ['sds', 'sdh'],
  sop_get: ['sgs', 'sgh'],
  sop_exist: ['ses', 'seh'],
  bop_create: ['bcs', undefined],
  bop_insert: ['bis', 'bih'],
  bop_delete: ['bds', 'bdh'],
  bop_get: ['bgs', 'bgh'],
  bop_count: ['bns', 'bnh'],
  getattr: ['gas', undefined],
} as const satisfies Record<string, readonly [DetailField, DetailField | undefined]>;
export type Operation = keyof typeof OPERATIONS;

export class ServerState {
  readonly engine: ArcusEngine;
  readonly detail = new DetailStats();
  readonly counters = new Map<string, number>();
  readonly startedAt: number;
  behavior: ArcusDoubleBehavior = 'normal';
  detailEnabled: boolean;
  zookeeper = { connected: false, timeoutMs: 30_000 };
  connections = { current: 0, total: 0, peak: 0 };
  bytesRead = 0;
  /** Request lines that began with `stats`, answered or not (a test's proof that a collection reached the node). */
  statsRequests = 0;
  bytesWritten = 0;
  heartbeats = 0;
  heartbeatLatencyMs = 0;

  constructor(
    readonly settings: ServerSettings,
    readonly clock: Clock,
    detailEnabled: boolean,
  ) {
    this.engine = new ArcusEngine(clock);
    this.startedAt = clock();
    this.detailEnabled = detailEnabled;
  }

  count(name: string, by = 1): void {
    this.counters.set(name, (this.counters.get(name) ?? 0) + by);
  }

  /** Counts one request: `cmd_<op>`, its outcome counter, and (detail on) the prefix's fields. */
  record(op: Operation, key: string, outcome?: Outcome): void {
    this.count(`cmd_${op}`);
    if (outcome !== undefined) this.count(`${op}_${OUTCOME_SUFFIX[outcome]}`);
    if (this.detailEnabled) {
      const [requests, hits] = OPERATIONS[op];
      const hit = outcome === 'hit' || outcome === 'elem_hit';
      this.detail.record(key, requests, hit ? hits : undefined);
    }
  }
}
