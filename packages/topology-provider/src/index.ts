export {
  DEFAULT_LISTEN,
  DEFAULT_RAW_RETENTION,
  loadTopologyProviderConfig,
  parseTopologyProviderConfig,
  topologyProviderConfigSchema,
} from './config.js';
export type { EnsembleConfig, TopologyProviderConfig } from './config.js';
export {
  parseQuery,
  parseJsonQuery,
  parseStringQuery,
  QUERY_ARGUMENTS,
  SERIES_QUERIES,
  TABLE_QUERIES,
  VARIABLE_QUERIES,
} from './query.js';
export type { Matcher, QueryName, TopologyQuery } from './query.js';
export { resolutionFor, scrapeFor, selectNodes, seriesAnswer, tableAnswer, variableValues } from './answers.js';
export type { QueryContext, Series, Table, VariableValue } from './answers.js';
export { NodeCountHistory } from './history.js';
export { HostnameChecker } from './hostnames.js';
export type { HostnameTarget } from './hostnames.js';
export { TopologyProvider } from './provider.js';
export type { ReloadResult, TopologyProviderOptions } from './provider.js';
export type { EnsembleView, FleetView, HostnameProblem, TopologyStatus } from './view.js';
export {
  answerMetrics,
  answerPayloadOptions,
  answerQuery,
  answerTagKeys,
  answerTagValues,
  answerVariable,
} from './plugin.js';
export type { ProtocolContext } from './plugin.js';
export { DEFAULT_BODY_LIMIT_BYTES, DEFAULT_HOST_EXPORTER_PORT, startProviderServer } from './server.js';
export type { ProviderServer, ProviderServerOptions } from './server.js';
