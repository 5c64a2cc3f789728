import type { MetricType } from '@cachemon/core';

/** Every family the exporter serves; the renderers and docs/metrics.md both read it, so they cannot drift. */
export interface FamilySpec {
  readonly name: string;
  readonly type: MetricType;
  readonly help: string;
  /** Labels beyond the node labels (ensemble, service_code, node, hostname[, group, role]). */
  readonly labels?: readonly string[];
  /** Where the value comes from, for the reference. */
  readonly source: string;
  /** Which endpoint serves it. */
  readonly endpoint: '/metrics' | '/metrics/prefixes';
}

export function family(
  name: string,
  type: MetricType,
  help: string,
  source: string,
  labels?: readonly string[],
  endpoint: FamilySpec['endpoint'] = '/metrics',
): FamilySpec {
  return labels === undefined ? { name, type, help, source, endpoint } : { name, type, help, source, labels, endpoint };
}
