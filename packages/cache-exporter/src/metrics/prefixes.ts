import { escapeLabelValue } from '@cachemon/core';
import type { ExpositionWriter } from '@cachemon/core';
import { scanPrefixLines } from '@cachemon/arcus';
import type { FamilySpec } from './catalog.js';
import {
  PREFIX_COLLECTED,
  PREFIX_COMMANDS,
  PREFIX_COMMAND_HITS,
  PREFIX_ITEMS,
  PREFIX_BYTES,
  PREFIX_ITEM_FIELDS,
  PREFIX_ITEM_TOTALS,
  PREFIX_NODES,
  PREFIX_OPERATION_CODES,
  PREFIX_OTHER,
} from './catalog.js';

/**
 * Prefix series are summed per service code (a prefix's keys hash over every node, so per node only
 * multiplies series), emitted from their first non-zero value on. Operation counts are running
 * totals (CounterTotals): a plain sum falls when a node fails, which rate() reads as a reset.
 */

export type NodePrefixState = 'ok' | 'failed' | 'limited';
export type PrefixKind = 'items' | 'operations';

/** The field names of one kind of prefix line, numbered in the order they were first seen: the columns of the sum rows. */
export class FieldTable {
  readonly names: string[] = [];
  private readonly ids = new Map<string, number>();

  get size(): number {
    return this.names.length;
  }

  /** The columns of a line's fields into `columns[at..at + pairs)`; -1 for the text field. */
  columnsOf(
    reply: Buffer,
    ranges: Uint32Array,
    counts: Float64Array,
    pairs: number,
    columns: Int32Array,
    at: number,
  ): void {
    for (let i = 0; i < pairs; i++) {
      columns[at + i] = Number.isNaN(counts[i]!)
        ? -1
        : this.id(reply.toString('utf8', ranges[i * 4], ranges[i * 4 + 1]));
    }
  }

  private id(name: string): number {
    let id = this.ids.get(name);
    if (id === undefined) {
      id = this.names.length;
      this.names.push(name);
      this.ids.set(name, id);
    }
    return id;
  }
}

interface ServiceCodeSums {
  collected: boolean;
  readonly states: Record<NodePrefixState, number>;
  /** prefix -> sums, one column per field of the kind's FieldTable. */
  readonly items: Map<string, Float64Array>;
  /** prefix -> running totals (CounterTotals), kept from scrape to scrape. */
  readonly operations: Map<string, Float64Array>;
}

/**
 * The running totals of the operation counters per service code and prefix, and each node's last
 * reading they were advanced from. Owned by the PrefixAggregator; lasts between scrapes.
 */
export class CounterTotals {
  private readonly codes = new Map<string, CodeCounters>();
  private scrape = 0;

  /** A new scrape. Totals of a prefix unreported for PREFIX_KEPT_SCRAPES scrapes are dropped, so prefixes that come and go do not pile up. */
  nextScrape(): void {
    this.scrape++;
    for (const code of this.codes.values()) {
      for (const [prefix, readIn] of code.readIn) {
        if (this.scrape - readIn <= PREFIX_KEPT_SCRAPES) continue;
        code.readIn.delete(prefix);
        code.totals.delete(prefix);
        for (const last of code.nodes.values()) last.delete(prefix);
      }
    }
  }

  /** The service code's running totals: prefix -> one column per operation field. */
  totalsOf(serviceCode: string): Map<string, Float64Array> {
    return this.code(serviceCode).totals;
  }

  private code(serviceCode: string): CodeCounters {
    let code = this.codes.get(serviceCode);
    if (code === undefined)
      this.codes.set(serviceCode, (code = { totals: new Map(), readIn: new Map(), nodes: new Map() }));
    return code;
  }

  /** Advances the service code's totals by each of one node's counts' increase (all of it when restarted or new). */
  advance(serviceCode: string, node: string, pending: PendingLines, width: number): void {
    const code = this.code(serviceCode);
    let last = code.nodes.get(node);
    if (last === undefined) code.nodes.set(node, (last = new Map<string, Float64Array>()));
    for (let line = 0; line < pending.lines; line++) {
      const prefix = pending.prefixes[line]!;
      code.readIn.set(prefix, this.scrape);
      const first = !last.has(prefix);
      const counts = rowOf(last, prefix, width);
      const total = rowOf(code.totals, prefix, width);
      for (let i = pending.lineStarts[line]!; i < pending.lineStarts[line + 1]!; i++) {
        const column = pending.columns[i]!;
        if (column < 0) continue;
        const count = Math.max(0, Math.floor(pending.counts[i]!));
        const increase = count - counts[column]!;
        // A count lower than the last reading has counted from zero again (a restart): all of it is new.
        total[column]! += first || increase < 0 ? count : increase;
        counts[column] = count;
      }
    }
  }

  /** Forgets the nodes and service codes no longer in the topology (their totals are not rendered any more). */
  retain(nodes: ReadonlyArray<{ readonly serviceCode: string; readonly node: string }>): void {
    const keep = new Map<string, Set<string>>();
    for (const n of nodes) {
      let set = keep.get(n.serviceCode);
      if (set === undefined) keep.set(n.serviceCode, (set = new Set()));
      set.add(n.node);
    }
    for (const [serviceCode, code] of this.codes) {
      const live = keep.get(serviceCode);
      if (live === undefined) {
        this.codes.delete(serviceCode);
        continue;
      }
      for (const node of code.nodes.keys()) if (!live.has(node)) code.nodes.delete(node);
    }
  }
}

/** What CounterTotals keeps of one service code. */
interface CodeCounters {
  /** prefix -> running totals, one column per operation field. */
  readonly totals: Map<string, Float64Array>;
  /** prefix -> the scrape that last read it. */
  readonly readIn: Map<string, number>;
  /** node (`ip:port`) -> prefix -> its last counts. */
  readonly nodes: Map<string, Map<string, Float64Array>>;
}

/** Scrapes (minutes, at the prefix job's interval) a prefix's totals outlive its last report. */
export const PREFIX_KEPT_SCRAPES = 10;

/** A line read and checked, waiting until every reply of its node is checked. */
interface PendingLines {
  prefixes: string[];
  /** Per line, where its pairs start in columns/counts: lineStarts[i]..lineStarts[i + 1]. */
  lineStarts: Uint32Array;
  columns: Int32Array;
  counts: Float64Array;
  lines: number;
  pairs: number;
}

/** The sums of one /metrics/prefixes scrape, filled node by node. */
export class PrefixSums {
  readonly serviceCodes = new Map<string, ServiceCodeSums>();
  private readonly pending: Record<PrefixKind, PendingLines> = { items: pendingLines(), operations: pendingLines() };
  #closed = false;

  constructor(
    readonly fields: Readonly<Record<PrefixKind, FieldTable>>,
    private readonly counters: CounterTotals = new CounterTotals(),
  ) {}

  /** No more nodes are added (the scrape's deadline has passed); addNode and failed do nothing. */
  close(): void {
    this.#closed = true;
  }

  get closed(): boolean {
    return this.#closed;
  }

  serviceCode(serviceCode: string, collected: boolean): ServiceCodeSums {
    let sums = this.serviceCodes.get(serviceCode);
    if (sums === undefined) {
      // A service code that does not collect shows no totals (kept, should collection come back).
      const operations = collected ? this.counters.totalsOf(serviceCode) : new Map<string, Float64Array>();
      sums = { collected, states: { ok: 0, failed: 0, limited: 0 }, items: new Map(), operations };
      this.serviceCodes.set(serviceCode, sums);
    }
    return sums;
  }

  /** Counts a node whose statistics are not in the sums (it failed). */
  failed(serviceCode: string): void {
    if (this.#closed) return;
    this.serviceCode(serviceCode, true).states.failed++;
  }

  /**
   * Adds one node's (`ip:port`) prefix replies into its service code's sums. Every reply is checked
   * first: one that is not a prefix reply throws (NODE_PROTOCOL, NODE_ERROR_REPLY), adding nothing.
   */
  addNode(
    serviceCode: string,
    node: string,
    state: 'ok' | 'limited',
    items: readonly Buffer[],
    operations: readonly Buffer[],
  ): void {
    if (this.#closed) return;
    this.read('items', items, 'time');
    this.read('operations', operations, undefined);
    const sums = this.serviceCode(serviceCode, true);
    sums.states[state]++;
    this.apply(sums.items, this.pending.items, this.fields.items.size);
    this.counters.advance(serviceCode, node, this.pending.operations, this.fields.operations.size);
  }

  /** Prefixes with sums for the service code. */
  prefixesOf(serviceCode: string): string[] {
    const sums = this.serviceCodes.get(serviceCode);
    return sums === undefined ? [] : [...new Set([...sums.items.keys(), ...sums.operations.keys()])];
  }

  private read(kind: PrefixKind, replies: readonly Buffer[], textField: string | undefined): void {
    const table = this.fields[kind];
    const pending = this.pending[kind];
    pending.lines = 0;
    pending.pairs = 0;
    for (const reply of replies) {
      scanPrefixLines(reply, textField, (nameStart, nameEnd, ranges, counts, pairs) => {
        reserve(pending, pending.lines + 2, pending.pairs + pairs);
        const at = pending.pairs;
        table.columnsOf(reply, ranges, counts, pairs, pending.columns, at);
        pending.prefixes[pending.lines] = reply.toString('utf8', nameStart, nameEnd);
        pending.lineStarts[pending.lines] = at;
        const pendingCounts = pending.counts;
        for (let i = 0; i < pairs; i++) pendingCounts[at + i] = counts[i]!;
        pending.lines++;
        pending.pairs += pairs;
        pending.lineStarts[pending.lines] = pending.pairs;
      });
    }
  }

  private apply(rows: Map<string, Float64Array>, pending: PendingLines, width: number): void {
    for (let line = 0; line < pending.lines; line++) {
      const row = rowOf(rows, pending.prefixes[line]!, width);
      for (let i = pending.lineStarts[line]!; i < pending.lineStarts[line + 1]!; i++) {
        const column = pending.columns[i]!;
        if (column >= 0) row[column]! += pending.counts[i]!;
      }
    }
  }
}

/** A row of at least `width` columns for `prefix` in `rows` (grown, values kept). */
function rowOf(rows: Map<string, Float64Array>, prefix: string, width: number): Float64Array {
  let row = rows.get(prefix);
  if (row === undefined || row.length < width) {
    const grown = new Float64Array(width);
    if (row !== undefined) grown.set(row);
    rows.set(prefix, (row = grown));
  }
  return row;
}

function pendingLines(): PendingLines {
  return {
    prefixes: [],
    lineStarts: new Uint32Array(64),
    columns: new Int32Array(1024),
    counts: new Float64Array(1024),
    lines: 0,
    pairs: 0,
  };
}

function reserve(pending: PendingLines, lines: number, pairs: number): void {
  if (pending.lineStarts.length < lines) {
    const grown = new Uint32Array(lines * 2);
    grown.set(pending.lineStarts);
    pending.lineStarts = grown;
  }
  if (pending.columns.length < pairs) {
    const columns = new Int32Array(pairs * 2);
    columns.set(pending.columns);
    pending.columns = columns;
    const counts = new Float64Array(pairs * 2);
    counts.set(pending.counts);
    pending.counts = counts;
  }
}

/** What a column of a kind becomes: its family and the label that names it, or nothing (totals). */
interface ColumnRule {
  readonly family: FamilySpec;
  readonly label: string;
}

function columnRule(kind: PrefixKind, field: string): ColumnRule | undefined {
  if (kind === 'items') {
    if (PREFIX_ITEM_TOTALS.has(field)) return undefined;
    const rule = PREFIX_ITEM_FIELDS.get(field);
    return rule
      ? { family: rule.family, label: `type="${rule.type}"` }
      : { family: PREFIX_OTHER, label: `field="${escapeLabelValue(field)}"` };
  }
  const rule = PREFIX_OPERATION_CODES.get(field);
  return rule
    ? { family: rule.hits ? PREFIX_COMMAND_HITS : PREFIX_COMMANDS, label: `command="${rule.command}"` }
    : { family: PREFIX_OTHER, label: `field="${escapeLabelValue(field)}"` };
}

/** What is remembered of a service code's prefix between scrapes. */
interface PrefixSeries {
  /** `prefix="..",ensemble="..",service_code=".."` */
  readonly labels: string;
  /** Columns that have been non-zero once, per kind: emitted from then on, zeros included. */
  readonly everNonZero: Record<PrefixKind, Uint8Array>;
}

const FAMILY_ORDER: readonly FamilySpec[] = [
  PREFIX_COLLECTED,
  PREFIX_NODES,
  PREFIX_ITEMS,
  PREFIX_BYTES,
  PREFIX_COMMANDS,
  PREFIX_COMMAND_HITS,
  PREFIX_OTHER,
];

/** Sums prefix statistics per service code and renders them; owns what lasts between scrapes. */
export class PrefixAggregator {
  readonly fields: Readonly<Record<PrefixKind, FieldTable>> = { items: new FieldTable(), operations: new FieldTable() };
  private readonly rules: Record<PrefixKind, Array<ColumnRule | undefined>> = { items: [], operations: [] };
  private readonly series = new Map<string, Map<string, PrefixSeries>>();
  private readonly counters = new CounterTotals();

  /** Sums for a new scrape, sharing this aggregator's field tables and running totals. */
  newSums(): PrefixSums {
    this.counters.nextScrape();
    return new PrefixSums(this.fields, this.counters);
  }

  /** Forgets what it keeps of nodes and service codes no longer in the topology. */
  retain(nodes: ReadonlyArray<{ readonly serviceCode: string; readonly node: string }>): void {
    this.counters.retain(nodes);
    const codes = new Set(nodes.map((n) => n.serviceCode));
    for (const code of this.series.keys()) if (!codes.has(code)) this.series.delete(code);
  }

  render(ensemble: string, sums: PrefixSums, writer: ExpositionWriter): void {
    const samples = new Map<FamilySpec, { labels: string[]; values: number[] }>(
      FAMILY_ORDER.map((family) => [family, { labels: [], values: [] }]),
    );
    const add = (family: FamilySpec, labels: string, value: number) => {
      const list = samples.get(family)!;
      list.labels.push(`{${labels}}`);
      list.values.push(value);
    };
    for (const kind of ['items', 'operations'] as const) {
      const table = this.fields[kind];
      for (let column = this.rules[kind].length; column < table.size; column++)
        this.rules[kind].push(columnRule(kind, table.names[column]!));
    }

    for (const [serviceCode, group] of sums.serviceCodes) {
      const base = `ensemble="${escapeLabelValue(ensemble)}",service_code="${escapeLabelValue(serviceCode)}"`;
      add(PREFIX_COLLECTED, base, group.collected ? 1 : 0);
      if (group.collected) {
        for (const state of ['ok', 'failed', 'limited'] as const)
          add(PREFIX_NODES, `state="${state}",${base}`, group.states[state]);
      }
      let known = this.series.get(serviceCode);
      if (known === undefined) this.series.set(serviceCode, (known = new Map<string, PrefixSeries>()));
      for (const kind of ['items', 'operations'] as const) {
        const rules = this.rules[kind];
        for (const [prefix, row] of group[kind]) {
          let series = known.get(prefix);
          if (series === undefined) {
            series = {
              labels: `prefix="${escapeLabelValue(prefix)}",${base}`,
              everNonZero: { items: new Uint8Array(0), operations: new Uint8Array(0) },
            };
            known.set(prefix, series);
          }
          let seen = series.everNonZero[kind];
          if (seen.length < rules.length) {
            const grown = new Uint8Array(rules.length + 8);
            grown.set(seen);
            series.everNonZero[kind] = seen = grown;
          }
          for (let column = 0; column < rules.length; column++) {
            const rule = rules[column];
            if (rule === undefined) continue;
            const value = column < row.length ? row[column]! : 0;
            if (value !== 0) seen[column] = 1;
            else if (seen[column] === 0) continue;
            add(rule.family, `${rule.label},${series.labels}`, value);
          }
        }
      }
    }

    for (const [family, { labels, values }] of samples) {
      if (labels.length === 0) continue;
      writer.family(family.name, family.type, family.help);
      for (let i = 0; i < labels.length; i++) writer.sample(labels[i]!, values[i]!);
    }
  }
}
