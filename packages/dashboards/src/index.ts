/**
 * The shipped dashboards, as code. `npm run dashboards:generate` writes each into
 * stack/dashboard_server/dashboards/<name>.json; a test fails when a file is not current.
 */
import type { Dashboard } from '@grafana/grafana-foundation-sdk/dashboard';
import { buildDashboard } from './kit.js';
import type { DashboardSpec } from './kit.js';
import { cacheNode } from './dashboards/cache-node.js';
import { coordination } from './dashboards/coordination.js';
import { fleet } from './dashboards/fleet.js';
import { hosts } from './dashboards/hosts.js';
import { prefixes } from './dashboards/prefixes.js';
import { serviceCode } from './dashboards/service-code.js';
import { stack } from './dashboards/stack.js';

export { ALL_VALUE, MAX_QUERY_LENGTH, QUERY_PROXY, SCHEMA_VERSION, TOPOLOGY } from './kit.js';
export type { DashboardSpec } from './kit.js';

export const DASHBOARDS: readonly DashboardSpec[] = [
  fleet,
  serviceCode,
  cacheNode,
  prefixes,
  coordination,
  hosts,
  stack,
];

/** File name to file content, as written into the dashboards directory. */
export function renderDashboards(): Map<string, string> {
  return new Map(DASHBOARDS.map((spec) => [`${spec.name}.json`, `${JSON.stringify(buildDashboard(spec), null, 2)}\n`]));
}

export function builtDashboards(): Dashboard[] {
  return DASHBOARDS.map(buildDashboard);
}
