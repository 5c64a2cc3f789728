export { DEFAULT_TIMEOUT, loadQueryProxyConfig, parseQueryProxyConfig } from './config.js';
export type { QueryProxyConfig, ServerGroup } from './config.js';
export { groupCanAnswer, parseSelectors, planQuery, PromQLParseError, unquote } from './planner.js';
export type { LabelMatcher, MatchOp, Plan, RouteDecision, Selector } from './planner.js';
