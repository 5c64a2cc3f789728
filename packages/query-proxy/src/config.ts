/**
 * The config in promxy's `promxy.yml` format (docs/query-proxy.md), so operators' files keep working.
 * Unimplemented and unknown keys are warned about and ignored; invalid values refused with their path.
 */
import { LineCounter, parseDocument } from 'yaml';
import { z } from 'zod';
import {
  CachemonError,
  Errors,
  errorMessage,
  parseGoDuration,
  readConfigFile,
  serverAddressSchema,
  validateConfig,
  yamlLocator,
} from '@cachemon/core';
import type { ConfigFileIdentity, ConfigLocator, LoadedConfig } from '@cachemon/core';

const DEFAULT_TIMEOUT = '5s';
/** promxy's default anti_affinity. */
const DEFAULT_ANTI_AFFINITY = '10s';
/** VictoriaMetrics' -search.maxQueryLen default: what a group's stores accept unless started with more. */
export const DEFAULT_GROUP_MAX_QUERY_LENGTH = 16 * 1024;

/**
 * A group's timeout in milliseconds: a Go duration as promxy reads it (`1.5s`, `1m30s`, `500ms`),
 * or the units the stack's other configs use (`1d`). Zero is refused: promxy reads it as no
 * timeout at all, which would let a store that never answers hold every request to it forever.
 */
const timeoutSchema = z.string().transform((text, ctx): number => {
  let ms: number;
  try {
    ms = parseGoDuration(text);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: `${errorMessage(err)} (a Go duration such as 5s, 1.5s, 500ms, 1m30s)` });
    return z.NEVER;
  }
  if (!(ms >= 1)) {
    ctx.addIssue({
      code: 'custom',
      message: `"${text}" is shorter than 1ms; a group needs a timeout (promxy reads 0 as none, which this proxy does not allow: a store that never answers would hold requests forever)`,
    });
    return z.NEVER;
  }
  return ms;
});

/** A group's anti_affinity in milliseconds: a Go duration as promxy reads it; 0 merges only samples at the same instant. */
const antiAffinitySchema = z.string().transform((text, ctx): number => {
  try {
    return parseGoDuration(text);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: `${errorMessage(err)} (a Go duration such as 10s, 2.5s, 0s)` });
    return z.NEVER;
  }
});

/** promxy.yml top-level keys (of its rule engine) not implemented, with where this stack does that work. */
const PROMXY_ONLY_TOP_KEYS: Readonly<Record<string, string>> = {
  global: "its evaluation settings and external labels serve promxy's rule engine; rules belong to the rule evaluator",
  rule_files: 'rules belong to the rule evaluator',
  alerting: 'alerts are sent by the rule evaluator to the alert router',
  remote_write: 'rule results are written to the long-term store by the rule evaluator',
  scrape_configs: 'the stores scrape the exporters, as their scrape.yml says',
  remote_read: 'the server groups are read through the Prometheus query API',
};
/** promxy label_filter keys this proxy does not implement. */
const PROMXY_ONLY_FILTER_KEYS: Readonly<Record<string, string>> = {
  dynamic_labels: 'the label values are not fetched from the stores; list them under static_labels_include',
  sync_interval: 'nothing is fetched from the stores to keep in sync',
};
/** promxy server-group keys that exist there and are ignored here (warned about). */
const PROMXY_ONLY_GROUP_KEYS: Readonly<Record<string, string | undefined>> = Object.fromEntries(
  (
    'remote_read remote_read_path http_client anti_affinity_dynamic relabel_configs metrics_relabel_configs ' +
    'kubernetes_sd_configs consul_sd_configs dns_sd_configs file_sd_configs hosts query_params_by_action ' +
    'prefer_max max_idle_conns max_idle_conns_per_host absent_metric_disabled instant_query_range'
  )
    .split(' ')
    .map((key) => [key, undefined]),
);

const labelName = z.string().regex(/^[a-zA-Z_][a-zA-Z0-9_]*$/, 'not a label name');
const labelValues = z.record(labelName, z.array(z.string()).min(1, 'empty list of values'));

const filterSchema = z
  .object({ static_labels_include: labelValues.optional(), static_labels_exclude: labelValues.optional() })
  .passthrough();

const groupSchema = z
  .object({
    static_configs: z
      .array(z.object({ targets: z.array(serverAddressSchema).min(1, 'no targets') }).passthrough())
      .min(1, 'a server group needs static_configs with targets'),
    scheme: z.enum(['http', 'https']).optional(),
    path_prefix: z
      .string()
      .regex(/^(\/[^\s?#]*)?$/, 'a path starting with /, without query or fragment')
      .optional(),
    timeout: timeoutSchema.optional(),
    max_query_length: z.number().int('a whole number of characters').min(1, 'at least 1 character').optional(),
    query_params: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]).transform(String)).optional(),
    labels: z.record(labelName, z.string()).optional(),
    label_filter: filterSchema.optional(),
    ignore_error: z.boolean().optional(),
    replicas: z
      .enum(['merge', 'any'], {
        error: 'expected merge (every replica asked, their answers merged) or any (one healthy replica answers)',
      })
      .optional(),
    anti_affinity: antiAffinitySchema.optional(),
  })
  .passthrough();

const fileSchema = z
  .object({
    promxy: z.object({ server_groups: z.array(groupSchema).min(1, 'at least one server group') }).passthrough(),
  })
  .passthrough();

export interface ServerGroup {
  /** `group <index>` or, when it has labels, the labels: how logs, metrics and warnings name it. */
  readonly name: string;
  readonly index: number;
  /** Base URLs of the group's replicas: `<scheme>://<target><path_prefix>`, no trailing slash. */
  readonly targets: readonly string[];
  readonly timeoutMs: number;
  /** Longest query the group's stores accept (their -search.maxQueryLen): a longer one is refused at once. */
  readonly maxQueryLength: number;
  readonly queryParams: Readonly<Record<string, string>>;
  readonly labels: Readonly<Record<string, string>>;
  /** Label -> the values series of this group can have (its `labels` included); a label not listed is not filtered. */
  readonly include: Readonly<Record<string, readonly string[]>>;
  /** Label -> values series of this group never have. */
  readonly exclude: Readonly<Record<string, readonly string[]>>;
  readonly ignoreError: boolean;
  /**
   * How the group's targets answer: `merge`, each healthy one asked and their answers merged (two
   * stores scraping the same targets, as promxy merges them); `any`, one healthy target answers
   * for all (they are one logical store, such as a VictoriaMetrics cluster's vmselect nodes).
   */
  readonly replicas: 'merge' | 'any';
  /** promxy's anti_affinity: samples of two replicas closer than this are the same sample. */
  readonly antiAffinityMs: number;
}

/** Whether a query to the group asks every replica and merges their answers. */
export function mergesReplicas(group: ServerGroup): boolean {
  return group.replicas === 'merge' && group.targets.length > 1;
}

export interface QueryProxyConfig {
  readonly groups: readonly ServerGroup[];
  /** Keys that were ignored, with why: for a warning at start and reload. */
  readonly warnings: readonly string[];
  /** The file it was loaded from; none when parsed from elsewhere. */
  readonly file?: ConfigFileIdentity;
}

function groupName(
  index: number,
  labels: Readonly<Record<string, string>>,
  include: Readonly<Record<string, readonly string[]>>,
): string {
  const shown =
    Object.keys(labels).length > 0
      ? labels
      : Object.fromEntries(Object.entries(include).map(([k, v]) => [k, v.join('|')]));
  const text = Object.entries(shown)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  return text === '' ? `group ${index}` : `group ${index} (${text})`;
}

function unknownKeys(
  value: Record<string, unknown>,
  known: readonly string[],
  path: string,
  warnings: string[],
  /** promxy keys this proxy does not implement, each with where that work is done here, if said. */
  promxyOnly: Readonly<Record<string, string | undefined>> = {},
): void {
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue;
    const where = path === '' ? key : `${path}.${key}`;
    if (Object.hasOwn(promxyOnly, key)) {
      const why = promxyOnly[key] === undefined ? '' : ` (${promxyOnly[key]})`;
      warnings.push(`${where}: a promxy setting this proxy does not implement${why}; ignored`);
    } else {
      warnings.push(`${where}: unknown key; ignored`);
    }
  }
}

/** Validates a parsed promxy.yml; `source` names it in messages, `locate` gives their line and column. */
export function parseQueryProxyConfig(source: string, raw: unknown, locate?: ConfigLocator): QueryProxyConfig {
  const parsed = validateConfig(source, raw, fileSchema, locate ? { locate } : {});
  const warnings: string[] = [];
  unknownKeys(parsed, ['promxy'], '', warnings, PROMXY_ONLY_TOP_KEYS);
  unknownKeys(parsed.promxy, ['server_groups'], 'promxy', warnings);
  const groups = parsed.promxy.server_groups.map((group, index): ServerGroup => {
    const path = `promxy.server_groups[${index}]`;
    unknownKeys(group, Object.keys(groupSchema.shape), path, warnings, PROMXY_ONLY_GROUP_KEYS);
    if (group.label_filter)
      unknownKeys(
        group.label_filter,
        Object.keys(filterSchema.shape),
        `${path}.label_filter`,
        warnings,
        PROMXY_ONLY_FILTER_KEYS,
      );
    group.static_configs.forEach((c, i) =>
      unknownKeys(c, ['targets'], `${path}.static_configs[${i}]`, warnings, {
        labels: "target labels, which promxy uses only in relabel_configs; the group's own labels are its `labels` key",
      }),
    );
    const scheme = group.scheme ?? 'http';
    const prefix = (group.path_prefix ?? '').replace(/\/+$/, '');
    const labels = group.labels ?? {};
    // A group's own labels are on every series it answers: they filter like a one-value include.
    const include = {
      ...(group.label_filter?.static_labels_include ?? {}),
      ...Object.fromEntries(Object.entries(labels).map(([k, v]) => [k, [v]])),
    };
    return {
      name: groupName(index, labels, include),
      index,
      targets: group.static_configs.flatMap((c) => c.targets).map((t) => `${scheme}://${t}${prefix}`),
      timeoutMs: group.timeout ?? timeoutSchema.parse(DEFAULT_TIMEOUT),
      maxQueryLength: group.max_query_length ?? DEFAULT_GROUP_MAX_QUERY_LENGTH,
      queryParams: group.query_params ?? {},
      labels,
      include,
      exclude: group.label_filter?.static_labels_exclude ?? {},
      ignoreError: group.ignore_error ?? false,
      replicas: group.replicas ?? 'merge',
      antiAffinityMs: group.anti_affinity ?? antiAffinitySchema.parse(DEFAULT_ANTI_AFFINITY),
    };
  });
  return { groups, warnings };
}

/** Reads and validates promxy.yml; every error names the file, line and column. */
export function loadQueryProxyConfig(file: string): LoadedConfig<QueryProxyConfig> {
  const read = readConfigFile(file);
  // Without prettyErrors the errors carry no linePos: the counter turns their offsets into one.
  const lineCounter = new LineCounter();
  const document = parseDocument(read.text, { prettyErrors: false, lineCounter });
  const problem = document.errors[0];
  if (problem !== undefined) {
    const { line, col } = lineCounter.linePos(problem.pos[0]);
    throw new CachemonError(Errors.CONFIG_INVALID, `${file}:${line}:${col}: ${problem.message.split('\n')[0]}`);
  }
  const located = parseQueryProxyConfig(file, document.toJS(), yamlLocator(document, lineCounter));
  return { ...located, file: read.file };
}
