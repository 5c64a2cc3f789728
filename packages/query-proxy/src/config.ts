/**
 * The query proxy's config, in the format of promxy's config file (`promxy.yml`), so operators'
 * files keep working:
 *
 *   promxy:
 *     server_groups:
 *       - static_configs: [{ targets: ["127.0.0.1:8428"] }]
 *         scheme: http                    # or https
 *         path_prefix: /select/0/prometheus
 *         timeout: 5s
 *         query_params: { nocache: 1 }
 *         labels: { sg: short }           # added to every series the group answers
 *         label_filter:
 *           static_labels_include: { scrape: [short] }
 *           static_labels_exclude: { ... }
 *         ignore_error: false
 *
 * Keys promxy knows and this proxy does not implement are warned about and ignored; unknown keys
 * are warned about; invalid values are refused with their key path.
 */
import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { CachemonError, Errors, errorMessage, serverAddressSchema, validateConfig, durationSchema } from '@cachemon/core';

export const DEFAULT_TIMEOUT = '5s';

/** promxy server-group keys this proxy reads. */
const SUPPORTED_GROUP_KEYS = ['static_configs', 'scheme', 'path_prefix', 'timeout', 'query_params', 'labels', 'label_filter', 'ignore_error'] as const;
/** promxy server-group keys that exist there and are ignored here (warned about). */
const PROMXY_ONLY_GROUP_KEYS = [
  'remote_read',
  'remote_read_path',
  'http_client',
  'anti_affinity',
  'relabel_configs',
  'metrics_relabel_configs',
  'kubernetes_sd_configs',
  'consul_sd_configs',
  'dns_sd_configs',
  'file_sd_configs',
  'hosts',
  'query_params_by_action',
  'prefer_max',
  'max_idle_conns',
  'max_idle_conns_per_host',
  'absent_metric_disabled',
  'instant_query_range',
];

const labelName = z.string().regex(/^[a-zA-Z_][a-zA-Z0-9_]*$/, 'not a label name');
const labelValues = z.record(labelName, z.array(z.string()).min(1, 'empty list of values'));

const groupSchema = z.object({
  static_configs: z
    .array(z.object({ targets: z.array(serverAddressSchema).min(1, 'no targets') }).passthrough())
    .min(1, 'a server group needs static_configs with targets'),
  scheme: z.enum(['http', 'https']).optional(),
  path_prefix: z
    .string()
    .regex(/^(\/[^\s?#]*)?$/, 'a path starting with /, without query or fragment')
    .optional(),
  timeout: durationSchema.optional(),
  query_params: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]).transform(String)).optional(),
  labels: z.record(labelName, z.string()).optional(),
  label_filter: z
    .object({
      static_labels_include: labelValues.optional(),
      static_labels_exclude: labelValues.optional(),
    })
    .passthrough()
    .optional(),
  ignore_error: z.boolean().optional(),
}).passthrough();

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
  readonly queryParams: Readonly<Record<string, string>>;
  readonly labels: Readonly<Record<string, string>>;
  /** Label -> the values series of this group can have (its `labels` included); a label not listed is not filtered. */
  readonly include: Readonly<Record<string, readonly string[]>>;
  /** Label -> values series of this group never have. */
  readonly exclude: Readonly<Record<string, readonly string[]>>;
  readonly ignoreError: boolean;
}

export interface QueryProxyConfig {
  readonly groups: readonly ServerGroup[];
  /** Keys that were ignored, with why: for a warning at start and reload. */
  readonly warnings: readonly string[];
}

function groupName(index: number, labels: Readonly<Record<string, string>>, include: Readonly<Record<string, readonly string[]>>): string {
  const shown = Object.keys(labels).length > 0 ? labels : Object.fromEntries(Object.entries(include).map(([k, v]) => [k, v.join('|')]));
  const text = Object.entries(shown)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  return text === '' ? `group ${index}` : `group ${index} (${text})`;
}

function unknownKeys(value: Record<string, unknown>, known: readonly string[], path: string, warnings: string[], promxyOnly: readonly string[] = []): void {
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue;
    if (promxyOnly.includes(key)) warnings.push(`${path}.${key}: a promxy setting this proxy does not implement; ignored`);
    else warnings.push(`${path}.${key}: unknown key; ignored`);
  }
}

/** Validates a parsed promxy.yml; `source` names it in messages. */
export function parseQueryProxyConfig(source: string, raw: unknown): QueryProxyConfig {
  const parsed = validateConfig(source, raw, fileSchema);
  const warnings: string[] = [];
  unknownKeys(parsed, ['promxy', 'global', 'remote_write', 'scrape_configs', 'rule_files', 'alerting'], '', warnings);
  unknownKeys(parsed.promxy, ['server_groups'], 'promxy', warnings);
  const groups = parsed.promxy.server_groups.map((group, index): ServerGroup => {
    const path = `promxy.server_groups[${index}]`;
    unknownKeys(group, SUPPORTED_GROUP_KEYS, path, warnings, PROMXY_ONLY_GROUP_KEYS);
    if (group.label_filter) unknownKeys(group.label_filter, ['static_labels_include', 'static_labels_exclude'], `${path}.label_filter`, warnings);
    group.static_configs.forEach((c, i) => unknownKeys(c, ['targets', 'labels'], `${path}.static_configs[${i}]`, warnings));
    const scheme = group.scheme ?? 'http';
    const prefix = (group.path_prefix ?? '').replace(/\/+$/, '');
    const labels = group.labels ?? {};
    // A group's own labels are on every series it answers: they filter like a one-value include.
    const include = { ...(group.label_filter?.static_labels_include ?? {}), ...Object.fromEntries(Object.entries(labels).map(([k, v]) => [k, [v]])) };
    return {
      name: groupName(index, labels, include),
      index,
      targets: group.static_configs.flatMap((c) => c.targets).map((t) => `${scheme}://${t}${prefix}`),
      timeoutMs: group.timeout ?? durationSchema.parse(DEFAULT_TIMEOUT),
      queryParams: group.query_params ?? {},
      labels,
      include,
      exclude: group.label_filter?.static_labels_exclude ?? {},
      ignoreError: group.ignore_error ?? false,
    };
  });
  return { groups, warnings };
}

/** Reads and validates promxy.yml; YAML syntax errors name the file, line and column. */
export function loadQueryProxyConfig(file: string): QueryProxyConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new CachemonError(Errors.CONFIG_UNREADABLE, `${file}: cannot read: ${errorMessage(err)}`, { cause: err });
  }
  const document = parseDocument(text, { prettyErrors: false });
  const problem = document.errors[0];
  if (problem !== undefined) {
    const [line, column] = problem.linePos?.[0] ? [problem.linePos[0].line, problem.linePos[0].col] : [0, 0];
    throw new CachemonError(Errors.CONFIG_INVALID, `${file}:${line}:${column}: ${problem.message.split('\n')[0]}`);
  }
  return parseQueryProxyConfig(file, document.toJS());
}
