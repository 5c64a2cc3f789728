export { DEFAULT_TIMEOUT, loadQueryProxyConfig, parseQueryProxyConfig } from './config.js';
export type { QueryProxyConfig, ServerGroup } from './config.js';
export {
  combiningProblem,
  groupCanAnswer,
  matchesForGroup,
  parseQuery,
  planMatches,
  planQuery,
  PromQLParseError,
  queryForGroup,
  unquote,
} from './planner.js';
export type {
  CombiningOperation,
  LabelMatcher,
  MatchOp,
  MatchPlan,
  ParsedQuery,
  Plan,
  RouteDecision,
  Selector,
} from './planner.js';
export {
  formatLabels,
  groupWarnings,
  MergeError,
  mergeMetadata,
  mergeQueryData,
  mergeSeriesData,
  mergeStringLists,
  sortByValue,
  withGroupLabels,
} from './merge.js';
export type { GroupAnswer, Merged, QueryData } from './merge.js';
export { PROMETHEUS_COMPATIBLE_VERSION } from './routes/api.js';
export { DEFAULT_BODY_LIMIT_BYTES, DEFAULT_MAX_QUERY_LENGTH, startQueryProxy } from './server.js';
export type { QueryProxy, QueryProxyOptions, ReloadResult } from './server.js';
