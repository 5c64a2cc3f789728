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

interface Sum {
  readonly family: FamilySpec;
  readonly labels: string;
  value: number;
}

export class PrefixAggregator {
  /** Series that have been non-zero once; they are emitted from then on, zeros included. */
  private readonly everNonZero = new Set<string>();

  render(ensemble: string, groups: readonly ServiceCodePrefixes[], writer: ExpositionWriter): void {
    const byFamily = new Map<FamilySpec, Sum[]>();
    const put = (sums: Map<string, Sum>, family: FamilySpec, labels: string, value: number) => {
      const key = `${family.name}${labels}`;
      const sum = sums.get(key);
      if (sum) sum.value += value;
      else sums.set(key, { family, labels, value });
    };

    for (const group of groups) {
      const base = `ensemble="${escapeLabelValue(ensemble)}",service_code="${escapeLabelValue(group.serviceCode)}"`;
      const sums = new Map<string, Sum>();
      put(sums, PREFIX_COLLECTED, `{${base}}`, group.collected ? 1 : 0);
      const states: Record<NodePrefixState, number> = { ok: 0, failed: 0, limited: 0 };
      for (const node of group.nodes) {
        states[node.state]++;
        for (const entry of node.items ?? []) {
          const prefixBase = `prefix="${escapeLabelValue(entry.prefix)}",${base}`;
          for (const field in entry.fields) {
            if (PREFIX_ITEM_TOTALS.has(field)) continue;
            const value = entry.fields[field]!;
            const rule = PREFIX_ITEM_FIELDS.get(field);
            if (rule) put(sums, rule.family, `{type="${rule.type}",${prefixBase}}`, value);
            else put(sums, PREFIX_OTHER, `{field="${escapeLabelValue(field)}",${prefixBase}}`, value);
          }
        }
        for (const entry of node.operations ?? []) {
          const prefixBase = `prefix="${escapeLabelValue(entry.prefix)}",${base}`;
          for (const code in entry.counts) {
            const value = entry.counts[code]!;
            const rule = PREFIX_OPERATION_CODES.get(code);
            if (rule) {
              put(sums, rule.hits ? PREFIX_COMMAND_HITS : PREFIX_COMMANDS, `{command="${rule.command}",${prefixBase}}`, value);
            } else {
              put(sums, PREFIX_OTHER, `{field="${escapeLabelValue(code)}",${prefixBase}}`, value);
            }
          }
        }
      }
      if (group.collected) {
        for (const state of ['ok', 'failed', 'limited'] as const) {
          put(sums, PREFIX_NODES, `{state="${state}",${base}}`, states[state]);
        }
      }
      for (const [key, sum] of sums) {
        const always = sum.family === PREFIX_NODES || sum.family === PREFIX_COLLECTED;
        if (!always) {
          if (sum.value !== 0) this.everNonZero.add(key);
          else if (!this.everNonZero.has(key)) continue;
        }
        let list = byFamily.get(sum.family);
        if (!list) byFamily.set(sum.family, (list = []));
        list.push(sum);
      }
    }

    for (const [family, sums] of byFamily) {
      writer.family(family.name, family.type, family.help);
      for (const sum of sums) writer.sample(sum.labels, sum.value);
    }
  }
}
