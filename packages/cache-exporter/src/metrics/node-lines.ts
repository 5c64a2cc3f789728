/**
 * The lines of a node's `stats settings`, `stats zookeeper` and `stats slabs` replies, as strings
 * per family: they change rarely (settings) or are cached per reply (slabs), so unlike `stats` they
 * need no byte-level plan.
 */
import { escapeLabelValue, formatValue } from '@cachemon/core';
import { scanStats } from '@cachemon/arcus';
import type { FamilySpec, SettingRule } from './catalog.js';
import {
  BOOLEAN_WORDS,
  OTHER_SETTING,
  OTHER_SLAB_CLASS_STAT,
  OTHER_SLAB_TOTAL,
  SETTINGS_INFO,
  SLAB_CLASS_FIELDS,
  SLAB_TOTALS,
  TEXT_SETTINGS,
} from './catalog.js';
import { withLabel } from './labels.js';
import { isDecimal } from './stats-plan.js';
import type { StatsEntries } from './render.js';

/** What the lines need of a node's series: its label texts and its cache of labelled prefixes. */
export interface SeriesLabels {
  /** The node labels, `ensemble="...",...` */
  readonly base: string;
  /** The same in braces. */
  readonly braced: string;
  readonly labelled: Map<string, string>;
}

/** `name{node labels,label="value"} `, kept per node: the same few labelled series recur every scrape. */
export function labelledPrefix(series: SeriesLabels, family: FamilySpec, label: string, value: string): string {
  const key = `${family.name}\u0000${label}\u0000${value}`;
  let prefix = series.labelled.get(key);
  if (prefix === undefined) {
    prefix = `${family.name}${withLabel(series.base, label, value)} `;
    series.labelled.set(key, prefix);
  }
  return prefix;
}

/**
 * Settings lines: the fields with a metric of their own; with `others`, every other numeric or
 * yes/no field as arcus_setting{field} and the text fields as labels of one arcus_settings_info.
 */
export function addSettings(
  add: (family: FamilySpec, line: string) => void,
  series: SeriesLabels,
  rules: ReadonlyMap<string, SettingRule>,
  entries: StatsEntries,
  others: boolean,
): void {
  let info = '';
  const seen = new Set<string>();
  for (const [name, raw] of entries) {
    // A field the server repeats is rendered once (a duplicate series is invalid exposition).
    if (seen.has(name)) continue;
    seen.add(name);
    const rule = rules.get(name);
    if (rule) {
      const value = rule.parse(raw);
      if (value === undefined) continue;
      const prefix = rule.label
        ? labelledPrefix(series, rule.family, rule.label[0], rule.label[1])
        : `${rule.family.name}${series.braced} `;
      add(rule.family, `${prefix}${formatValue(value)}\n`);
      continue;
    }
    if (!others) continue;
    const value = TEXT_SETTINGS.has(name) ? undefined : settingValue(raw);
    if (value !== undefined) {
      add(OTHER_SETTING, `${labelledPrefix(series, OTHER_SETTING, 'field', name)}${formatValue(value)}\n`);
    } else if (INFO_LABEL.test(name) && !name.startsWith('__') && !NODE_LABELS.has(name)) {
      info += `${name}="${escapeLabelValue(raw)}",`;
    }
  }
  if (info !== '') add(SETTINGS_INFO, `${SETTINGS_INFO.name}{${info}${series.base}} 1\n`);
}

/** A setting's value as a number: a decimal, or 1/0 for the words servers print for booleans. */
function settingValue(raw: string): number | undefined {
  const word = BOOLEAN_WORDS.get(raw);
  if (word !== undefined) return word;
  const bytes = Buffer.from(raw, 'latin1');
  return isDecimal(bytes, 0, bytes.length) ? Number(raw) : undefined;
}

/** A field name usable as a label name as it is. */
const INFO_LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
/** Labels every node series carries: a setting of that name would clash with them. */
const NODE_LABELS: ReadonlySet<string> = new Set(['ensemble', 'service_code', 'node', 'hostname', 'group', 'role']);

/**
 * The lines of a `stats slabs` reply. Per-class lines (`<class>:<field>`) are skipped on their
 * first byte when `perClass` is off, so the node totals cost a few strings per node.
 */
export function addSlabs(
  add: (family: FamilySpec, line: string) => void,
  series: SeriesLabels,
  reply: Buffer,
  perClass: boolean,
): void {
  const seen = new Set<string>();
  scanStats(reply, (nameStart, nameEnd, valueStart, valueEnd) => {
    const first = reply[nameStart]!;
    const isClass = first >= 0x30 && first <= 0x39;
    if ((isClass && !perClass) || !isDecimal(reply, valueStart, valueEnd)) return;
    const name = reply.toString('latin1', nameStart, nameEnd);
    if (seen.has(name)) return;
    seen.add(name);
    const value = reply.toString('latin1', valueStart, valueEnd);
    if (!isClass) {
      const family = SLAB_TOTALS.get(name);
      add(
        family ?? OTHER_SLAB_TOTAL,
        family
          ? `${family.name}${series.braced} ${value}\n`
          : `${labelledPrefix(series, OTHER_SLAB_TOTAL, 'field', name)}${value}\n`,
      );
      return;
    }
    const colon = name.indexOf(':');
    if (colon < 0) return;
    const slabClass = name.slice(0, colon);
    const field = name.slice(colon + 1);
    const family = SLAB_CLASS_FIELDS.get(field);
    const labels = family
      ? withLabel(series.base, 'slab_class', slabClass)
      : `{slab_class="${escapeLabelValue(slabClass)}",field="${escapeLabelValue(field)}",${series.base}}`;
    add(family ?? OTHER_SLAB_CLASS_STAT, `${(family ?? OTHER_SLAB_CLASS_STAT).name}${labels} ${value}\n`);
  });
}
