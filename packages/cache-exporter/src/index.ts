export { CacheExporter } from './exporter.js';
export type { CacheExporterOptions } from './exporter.js';
export {
  DEFAULT_COLLECT_PREFIXES,
  DEFAULT_SIMPLE_QOS,
  DEFAULT_SLAB_CLASSES,
  LEGACY_ENSEMBLE_NAME,
  cacheExporterConfigSchema,
  loadCacheExporterConfig,
  parseCacheExporterConfig,
  prefixSelectionFor,
} from './config.js';
export type { CacheExporterConfig, PrefixSelection } from './config.js';
export { NodeMetricsRenderer } from './metrics/render.js';
export { isDecimal } from './metrics/stats-plan.js';
export type { NodeSnapshot, QosSnapshot, RenderedStats, StatsEntries } from './metrics/render.js';
export { PrefixAggregator, PrefixSums } from './metrics/prefixes.js';
export type { NodePrefixState, PrefixKind } from './metrics/prefixes.js';
export { allFamilies } from './metrics/catalog.js';
export type { FamilySpec } from './metrics/catalog.js';
