/**
 * The daemons' own metrics. A fresh registry (not prom-client's global one) so tests and several
 * servers in one process never see each other's series.
 */
import { collectDefaultMetrics, Registry } from 'prom-client';

/**
 * Registry with prom-client's process_* and nodejs_* metrics. Daemons keep their cachemon_* ones
 * in a registry of their own: the process metrics do not depend on a scrape (reading them takes
 * /proc reads and an event-loop turn), so a daemon can start reading them while it waits for what
 * the scrape does depend on.
 */
export function createSelfRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}
