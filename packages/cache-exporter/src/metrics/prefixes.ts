import { escapeLabelValue } from '@cachemon/core';
import type { ExpositionWriter } from '@cachemon/core';
import type { FamilySpec } from './catalog.js';
import {
  PREFIX_COLLECTED,
  PREFIX_COMMANDS,
  PREFIX_COMMAND_HITS,
  PREFIX_ITEM_FIELDS,
  PREFIX_ITEM_TOTALS,
  PREFIX_NODES,
  PREFIX_OPERATION_CODES,
  PREFIX_OTHER,
} from './catalog.js';

/**
 * Prefix series are summed per service code, not kept per node.
 *
 * Cardinality: a service code with P prefixes yields at most P x (10 item/size series +
 * ~55 operation series). Per node that would multiply by the node count: 500 nodes x 50 prefixes
 * x 65 = 1.6 M series at 1m, more than the whole rest of the stack. Keys of a prefix are hashed
 * over every node of the cluster, so the per-node split carries little information an operator
 * acts on; the per-node totals (items, bytes, commands) are in /metrics. Summed: 10 service codes
 * x 50 prefixes x 65 = 32 k series at most, and far fewer in practice because a series is only
 * emitted once its value has been non-zero (most prefixes use one or two item types); after that
 * it stays, zeros included, so rates and sums keep working. The cost of that rule: the very first
 * increase of a never-used command on a prefix is not seen by rate().
 *
 * Memory: each node's reply is folded into the sums as soon as it is parsed and then dropped, so
 * a scrape holds numbers per (service code, prefix, field), never the replies of all nodes.
 */

export interface PrefixItems {
  readonly prefix: string;
  readonly fields: Readonly<Record<string, number>>;
}
export interface PrefixOperations {
  readonly prefix: string;
  readonly counts: Readonly<Record<string, number>>;
}

export type NodePrefixState = 'ok' | 'failed' | 'limited';

export interface NodePrefixResult {
  readonly state: NodePrefixState;
  readonly items?: readonly PrefixItems[];
  readonly operations?: readonly PrefixOperations[];
}

export interface ServiceCodePrefixes {
  readonly serviceCode: string;
  readonly collected: boolean;
  readonly nodes: readonly NodePrefixResult[];
}

interface ServiceCodeSums {
  collected: boolean;
  readonly states: Record<NodePrefixState, number>;
  /** prefix -> `stats prefixes` field -> sum */
  readonly items: Map<string, Map<string, number>>;
  /** prefix -> `stats detail dump` code -> sum */
  readonly operations: Map<string, Map<string, number>>;
}

/** The sums of one /metrics/prefixes scrape, filled node by node. */
export class PrefixSums {
  readonly serviceCodes = new Map<string, ServiceCodeSums>();

  serviceCode(serviceCode: string, collected: boolean): void {
    if (!this.serviceCodes.has(serviceCode)) {
      this.serviceCodes.set(serviceCode, {
        collected,
        states: { ok: 0, failed: 0, limited: 0 },
        items: new Map(),
        operations: new Map(),
      });
    }
  }

  add(serviceCode: string, result: NodePrefixResult): void {
    this.serviceCode(serviceCode, true);
    const sums = this.serviceCodes.get(serviceCode)!;
    sums.states[result.state]++;
    for (const entry of result.items ?? []) fold(sums.items, entry.prefix, entry.fields);
    for (const entry of result.operations ?? []) fold(sums.operations, entry.prefix, entry.counts);
  }

  static of(groups: readonly ServiceCodePrefixes[]): PrefixSums {
    const sums = new PrefixSums();
    for (const group of groups) {
      sums.serviceCode(group.serviceCode, group.collected);
      for (const node of group.nodes) sums.add(group.serviceCode, node);
    }
    return sums;
  }
}

function fold(target: Map<string, Map<string, number>>, prefix: string, values: Readonly<Record<string, number>>): void {
  let sums = target.get(prefix);
  if (!sums) target.set(prefix, (sums = new Map()));
  for (const field in values) sums.set(field, (sums.get(field) ?? 0) + values[field]!);
}

interface Sample {
  readonly labels: string;
  readonly value: number;
}

export class PrefixAggregator {
  /** Series that have been non-zero once; they are emitted from then on, zeros included. */
  private readonly everNonZero = new Set<string>();

  render(ensemble: string, input: PrefixSums | readonly ServiceCodePrefixes[], writer: ExpositionWriter): void {
    const sums = input instanceof PrefixSums ? input : PrefixSums.of(input);
    const byFamily = new Map<FamilySpec, Sample[]>();
    const emit = (family: FamilySpec, labels: string, value: number, always = false) => {
      if (!always) {
        const key = `${family.name}${labels}`;
        if (value !== 0) this.everNonZero.add(key);
        else if (!this.everNonZero.has(key)) return;
      }
      let list = byFamily.get(family);
      if (!list) byFamily.set(family, (list = []));
      list.push({ labels, value });
    };

    for (const [serviceCode, group] of sums.serviceCodes) {
      const base = `ensemble="${escapeLabelValue(ensemble)}",service_code="${escapeLabelValue(serviceCode)}"`;
      emit(PREFIX_COLLECTED, `{${base}}`, group.collected ? 1 : 0, true);
      if (group.collected) {
        for (const state of ['ok', 'failed', 'limited'] as const) {
          emit(PREFIX_NODES, `{state="${state}",${base}}`, group.states[state], true);
        }
      }
      for (const [prefix, fields] of group.items) {
        const prefixBase = `prefix="${escapeLabelValue(prefix)}",${base}`;
        for (const [field, value] of fields) {
          if (PREFIX_ITEM_TOTALS.has(field)) continue;
          const rule = PREFIX_ITEM_FIELDS.get(field);
          if (rule) emit(rule.family, `{type="${rule.type}",${prefixBase}}`, value);
          else emit(PREFIX_OTHER, `{field="${escapeLabelValue(field)}",${prefixBase}}`, value);
        }
      }
      for (const [prefix, codes] of group.operations) {
        const prefixBase = `prefix="${escapeLabelValue(prefix)}",${base}`;
        for (const [code, value] of codes) {
          const rule = PREFIX_OPERATION_CODES.get(code);
          if (rule) emit(rule.hits ? PREFIX_COMMAND_HITS : PREFIX_COMMANDS, `{command="${rule.command}",${prefixBase}}`, value);
          else emit(PREFIX_OTHER, `{field="${escapeLabelValue(code)}",${prefixBase}}`, value);
        }
      }
    }

    for (const [family, samples] of byFamily) {
      writer.family(family.name, family.type, family.help);
      for (const sample of samples) writer.sample(sample.labels, sample.value);
    }
  }
}
