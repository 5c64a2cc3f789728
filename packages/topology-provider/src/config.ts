import { z } from 'zod';
import {
  defaultLogBlock,
  durationSchema,
  listenAddressSchema,
  loadJsonConfig,
  logBlockSchema,
  serverListSchema,
  validateConfig,
} from '@cachemon/core';
import type { ConfigFileIdentity, LoadedConfig, LogBlock } from '@cachemon/core';

/** The provider's `config.json`, exactly the spec's keys. */

export const DEFAULT_LISTEN = '0.0.0.0:8084';
/** The spec: equal to the short-term store's retention, 14d by default. */
export const DEFAULT_RAW_RETENTION = '14d';

const ENSEMBLE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const ensembleName = z
  .string()
  .regex(ENSEMBLE_NAME, 'an ensemble name is letters, digits, ".", "_" or "-" (at most 128)');

const rawSchema = z
  .strictObject({
    listen: listenAddressSchema.optional(),
    ensembleByName: z.record(ensembleName, serverListSchema),
    serviceCodesByEnsembleName: z.record(ensembleName, z.array(z.string().min(1, 'empty service code'))).optional(),
    rawRetention: durationSchema.optional(),
    log: logBlockSchema.optional(),
  })
  .superRefine((value, ctx) => {
    for (const name of Object.keys(value.serviceCodesByEnsembleName ?? {})) {
      if (!Object.hasOwn(value.ensembleByName, name)) {
        ctx.addIssue({
          code: 'custom',
          path: ['serviceCodesByEnsembleName', name],
          message: `no ensemble "${name}" in ensembleByName (known: ${Object.keys(value.ensembleByName).join(', ') || 'none'})`,
        });
      }
    }
    if (value.rawRetention !== undefined && value.rawRetention <= 0) {
      ctx.addIssue({ code: 'custom', path: ['rawRetention'], message: 'must be longer than zero' });
    }
  });

export interface EnsembleConfig {
  readonly name: string;
  /** `host:port` of its servers; a domain is one entry. */
  readonly servers: readonly string[];
  /** Visible service codes; undefined = all of the ensemble's. */
  readonly serviceCodes: readonly string[] | undefined;
}

export interface TopologyProviderConfig {
  readonly listen: string;
  /** In the file's order. */
  readonly ensembles: readonly EnsembleConfig[];
  /** Milliseconds. */
  readonly rawRetentionMs: number;
  readonly log: LogBlock;
  /** The file it was loaded from; none when parsed from elsewhere. */
  readonly file?: ConfigFileIdentity;
}

function normalize(raw: z.infer<typeof rawSchema>): TopologyProviderConfig {
  return {
    listen: raw.listen ?? DEFAULT_LISTEN,
    ensembles: Object.entries(raw.ensembleByName).map(([name, servers]) => ({
      name,
      servers,
      serviceCodes: raw.serviceCodesByEnsembleName?.[name],
    })),
    rawRetentionMs: raw.rawRetention ?? durationSchema.parse(DEFAULT_RAW_RETENTION),
    log: raw.log ?? defaultLogBlock,
  };
}

export const topologyProviderConfigSchema = rawSchema.transform(normalize);

export function loadTopologyProviderConfig(file: string): LoadedConfig<TopologyProviderConfig> {
  return loadJsonConfig(file, topologyProviderConfigSchema);
}

export function parseTopologyProviderConfig(source: string, raw: unknown): TopologyProviderConfig {
  return validateConfig(source, raw, topologyProviderConfigSchema);
}
