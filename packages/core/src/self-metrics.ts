/**
 * The daemons' own metrics. A fresh registry (not prom-client's global one) so tests and several
 * servers in one process never see each other's series.
 */
import { collectDefaultMetrics, Registry } from 'prom-client';

/** Registry with prom-client's process_* and nodejs_* metrics; daemons add their cachemon_* ones. */
export function createSelfRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}
