/**
 * The template variable values of a fleet-sized installation, as the topology provider would
 * answer them, and the worst multi-selections a user can make of them on each dashboard.
 */
import type { Dashboard } from '@grafana/grafana-foundation-sdk/dashboard';
import { allOf, variablesOf } from './queries.js';
import type { VariableValue } from './queries.js';

export const FLEET = { ensembles: 10, serviceCodes: 500, nodes: 2000, hosts: 1000, zkServersPerEnsemble: 5 } as const;
/**
 * Nodes of the largest service code: a fifth of the fleet in one cluster, the rest spread over the
 * other service codes. The node variable offers the nodes of one service code, so this bounds its
 * largest selection.
 */
export const LARGEST_SERVICE_CODE_NODES = 400;

const pad = (n: number) => String(n).padStart(4, '0');

/** Every value each variable can take in the fleet, for the widest choice of the variables before it. */
export interface FleetValues {
  readonly ensemble: readonly string[];
  readonly service_code: readonly string[];
  /** The nodes of the largest service code (the node variable follows one service code). */
  readonly node: readonly string[];
  readonly host: readonly string[];
  /** The servers of one ensemble. */
  readonly zk_server: readonly string[];
}

export function fleetValues(): FleetValues {
  const nodes = Array.from({ length: FLEET.nodes }, (_, i) => `10.1.${Math.floor(i / 250)}.${(i % 250) + 1}:11211`);
  return {
    ensemble: Array.from({ length: FLEET.ensembles }, (_, i) => `arcus-${String(i + 1).padStart(2, '0')}`),
    service_code: Array.from({ length: FLEET.serviceCodes }, (_, i) => `svc-${pad(i + 1)}`),
    node: nodes.slice(0, LARGEST_SERVICE_CODE_NODES),
    host: Array.from({ length: FLEET.hosts }, (_, i) => `cache-host-${pad(i + 1)}:9100`),
    zk_server: Array.from({ length: FLEET.zkServersPerEnsemble }, (_, i) => `10.0.0.${i + 1}:2181`),
  };
}

export type Selection = 'all' | 'every value';

/**
 * A dashboard's variables at fleet size: `scrape` and `resolution` as given, single-value
 * variables at their first value, and every multi-value variable either at "All" or with every
 * one of its values selected one by one (the longest alternation a user can make).
 */
export function fleetVariables(
  dashboard: Dashboard,
  selection: Selection,
  store: { scrape: string; resolution: string },
): Map<string, VariableValue> {
  const fleet = fleetValues() as unknown as Record<string, readonly string[]>;
  const values = new Map<string, VariableValue>();
  for (const v of variablesOf(dashboard)) {
    const name = v.name;
    if (name === 'scrape' || name === 'resolution') {
      values.set(name, { values: [store[name]], multi: false });
      continue;
    }
    const all = fleet[name];
    if (all === undefined) throw new Error(`${dashboard.title}: no fleet values for $${name}`);
    if (v.multi !== true) values.set(name, { values: all.slice(0, 1), multi: false });
    else values.set(name, selection === 'all' ? allOf(v, all) : { values: all, multi: true });
  }
  return values;
}
