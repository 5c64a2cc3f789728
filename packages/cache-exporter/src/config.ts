import { z } from 'zod';
import { validatePrefixName } from '@cachemon/arcus';
import {
  defaultLogBlock,
  listenAddressSchema,
  loadJsonConfig,
  logBlockSchema,
  serverAddressSchema,
  serverListSchema,
  validateConfig,
} from '@cachemon/core';
import type { ConfigFileIdentity, LoadedConfig, LogBlock } from '@cachemon/core';

/** The cache exporter's JSON config, exactly the spec's keys (`ensembleByName` one pair, or `ensemble`). */

/** Default of `collectPrefixes`: the shipped scrape config has a prefix job, so it has data. */
export const DEFAULT_COLLECT_PREFIXES = true;
/** kv probes only by default: the collection probes add requests and items a busy node should opt into. */
export const DEFAULT_SIMPLE_QOS = true;
/**
 * Per-slab-class series off by default: they multiply a node's series by its active slab classes
 * (docs/cache-exporter.md has the arithmetic); the node totals come either way.
 */
export const DEFAULT_SLAB_CLASSES = false;
/** Name used for the ensemble label when the older `ensemble` array form is used. */
export const LEGACY_ENSEMBLE_NAME = 'default';

/** A prefix travels on a command line: the names the node client sends (validatePrefixName), bounded length. */
function isSendablePrefix(name: string): boolean {
  try {
    validatePrefixName(name);
    return name.length <= 250;
  } catch {
    return false;
  }
}

const prefixSelection = z
  .array(
    z
      .string()
      .refine(isSendablePrefix, 'a prefix has 1-250 characters and no whitespace, control or format characters'),
  )
  .refine((list) => !(list.includes('*') && list.length > 1), '"*" must be alone');

const rawSchema = z
  .strictObject({
    listen: listenAddressSchema,
    ensembleByName: z
      .record(z.string().min(1, 'empty ensemble name'), serverListSchema)
      .refine((m) => Object.keys(m).length === 1, {
        message: 'exactly one ensemble is allowed per cache exporter (start one exporter per ensemble)',
      })
      .optional(),
    ensemble: z.array(serverAddressSchema).min(1, 'empty server list').optional(),
    serviceCodes: z
      .array(z.string().min(1))
      .min(1, 'an empty list would collect nothing: leave serviceCodes out to collect every service code')
      .optional(),
    collectPrefixes: z.boolean().optional(),
    simpleQos: z.boolean().optional(),
    slabClasses: z.boolean().optional(),
    serviceCodesToCollectPrefixes: z.record(z.string().min(1), prefixSelection).optional(),
    log: logBlockSchema.optional(),
  })
  .superRefine((value, ctx) => {
    if (value.ensembleByName === undefined && value.ensemble === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['ensembleByName'],
        message: 'missing: give ensembleByName (or the older ensemble array)',
      });
    }
    if (value.ensembleByName !== undefined && value.ensemble !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['ensemble'], message: 'use either ensembleByName or ensemble, not both' });
    }
  });

/** Which prefixes of a service code are collected. */
export type PrefixSelection =
  { readonly kind: 'all' } | { readonly kind: 'none' } | { readonly kind: 'named'; readonly names: readonly string[] };

export interface CacheExporterConfig {
  readonly listen: string;
  readonly ensemble: { readonly name: string; readonly servers: readonly string[] };
  /** undefined = every service code of the ensemble. */
  readonly serviceCodes: readonly string[] | undefined;
  readonly collectPrefixes: boolean;
  readonly simpleQos: boolean;
  /** Series per slab class of `stats slabs` (the node totals are always collected). */
  readonly slabClasses: boolean;
  readonly serviceCodesToCollectPrefixes: Readonly<Record<string, readonly string[]>>;
  readonly log: LogBlock;
  /** The file it was loaded from; none when parsed from elsewhere. */
  readonly file?: ConfigFileIdentity;
}

function normalize(raw: z.infer<typeof rawSchema>): CacheExporterConfig {
  const [name, servers] = raw.ensembleByName
    ? (Object.entries(raw.ensembleByName)[0] as [string, string[]])
    : [LEGACY_ENSEMBLE_NAME, raw.ensemble!];
  return {
    listen: raw.listen,
    ensemble: { name, servers },
    serviceCodes: raw.serviceCodes,
    collectPrefixes: raw.collectPrefixes ?? DEFAULT_COLLECT_PREFIXES,
    simpleQos: raw.simpleQos ?? DEFAULT_SIMPLE_QOS,
    slabClasses: raw.slabClasses ?? DEFAULT_SLAB_CLASSES,
    serviceCodesToCollectPrefixes: raw.serviceCodesToCollectPrefixes ?? {},
    log: raw.log ?? defaultLogBlock,
  };
}

export const cacheExporterConfigSchema = rawSchema.transform(normalize);

export function loadCacheExporterConfig(file: string): LoadedConfig<CacheExporterConfig> {
  return loadJsonConfig(file, cacheExporterConfigSchema);
}

export function parseCacheExporterConfig(source: string, raw: unknown): CacheExporterConfig {
  return validateConfig(source, raw, cacheExporterConfigSchema);
}

/** `serviceCodesToCollectPrefixes` wins over `collectPrefixes` for the codes it lists. */
export function prefixSelectionFor(config: CacheExporterConfig, serviceCode: string): PrefixSelection {
  // Own keys only: a service code named `constructor` or `toString` is not an Object method.
  const list = Object.hasOwn(config.serviceCodesToCollectPrefixes, serviceCode)
    ? config.serviceCodesToCollectPrefixes[serviceCode]
    : undefined;
  if (list === undefined) return config.collectPrefixes ? { kind: 'all' } : { kind: 'none' };
  if (list.length === 0) return { kind: 'none' };
  if (list.length === 1 && list[0] === '*') return { kind: 'all' };
  return { kind: 'named', names: list };
}
