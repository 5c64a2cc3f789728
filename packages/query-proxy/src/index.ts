export { loadQueryProxyConfig, mergesReplicas, parseQueryProxyConfig } from './config.js';
export type { QueryProxyConfig, ServerGroup } from './config.js';
export {
  combiningProblem,
  matchesForGroup,
  MAX_NESTING_DEPTH,
  nestingDepth,
  parseQuery,
  planMatches,
  planQuery,
  PromQLParseError,
  queryForGroup,
  unquote,
} from './planner.js';
export type { ParsedQuery, Plan } from './planner.js';
export {
  MergeError,
  mergeMetadata,
  mergeQueryData,
  mergeReplicaMetadata,
  mergeReplicaQueryData,
  mergeReplicaSeries,
  mergeReplicaStrings,
  mergeSamples,
  mergeSeriesData,
  mergeStringLists,
  sortByValue,
} from './merge.js';
export type { ReplicaAnswer, ReplicasMerged } from './merge.js';
export { startQueryProxy } from './server.js';
export type { QueryProxy, QueryProxyOptions, ReloadResult } from './server.js';
