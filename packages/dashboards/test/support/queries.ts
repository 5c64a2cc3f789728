/**
 * What the dashboard server does with a shipped dashboard's queries, for checking them without
 * it: every query of every panel, and variable values put in the way the dashboard server puts
 * them (Prometheus datasource: regex-escaped alternations inside PromQL strings; JSON datasource:
 * the `regex` format of its string queries; both: a custom all value as it is, unescaped).
 */
import type { Dashboard, Panel, RowPanel, VariableModel } from '@grafana/grafana-foundation-sdk/dashboard';

export interface ExtractedQuery {
  readonly dashboard: string;
  readonly panel: string;
  readonly refId: string;
  readonly datasourceUid: string;
  /** PromQL (query proxy) or the topology provider's query text. */
  readonly text: string;
  readonly instant: boolean;
}

interface Target {
  refId?: string;
  datasource?: { uid?: string };
  expr?: string;
  target?: string;
  instant?: boolean;
  range?: boolean;
}

function panelsOf(dashboard: Dashboard): Panel[] {
  return (dashboard.panels ?? []).flatMap((p) =>
    (p as RowPanel).type === 'row' ? ((p as RowPanel).panels ?? []) : [p as Panel],
  );
}

/** Every query of every panel, with the datasource it goes to. */
export function panelQueries(dashboard: Dashboard): ExtractedQuery[] {
  return panelsOf(dashboard).flatMap((panel) =>
    ((panel.targets ?? []) as Target[]).map((t) => ({
      dashboard: dashboard.title ?? '',
      panel: panel.title ?? '',
      refId: t.refId ?? '',
      datasourceUid: t.datasource?.uid ?? panel.datasource?.uid ?? '',
      text: t.expr ?? t.target ?? '',
      instant: t.instant === true && t.range !== true,
    })),
  );
}

/** Every datasource uid the dashboard names: panels, targets, variables. */
export function datasourceUids(dashboard: Dashboard): Set<string> {
  const uids = new Set<string>();
  for (const panel of panelsOf(dashboard)) {
    if (panel.datasource?.uid) uids.add(panel.datasource.uid);
    for (const t of (panel.targets ?? []) as Target[]) if (t.datasource?.uid) uids.add(t.datasource.uid);
  }
  for (const v of dashboard.templating?.list ?? []) if (v.datasource?.uid) uids.add(v.datasource.uid);
  return uids;
}

export function variablesOf(dashboard: Dashboard): VariableModel[] {
  return dashboard.templating?.list ?? [];
}

/** The text of a JSON-datasource variable query. */
export function variableQueryText(variable: VariableModel): string {
  const query = variable.query as { query?: string } | string | undefined;
  return typeof query === 'string' ? query : (query?.query ?? '');
}

const regexEscape = (value: string) => value.replace(/[\\^$*+?.()|[\]{}/]/g, '\\$&');
/** The Prometheus datasource's escaping of a value put inside a regex matcher's string. */
const promRegexEscape = (value: string) => value.replace(/\\/g, '\\\\\\\\').replace(/[$^*{}[\]'+?.()|]/g, '\\\\$&');
/** Its escaping of a single value of a single-value variable. */
const promEscape = (value: string) => value.replace(/\\/g, '\\\\').replace(/'/g, "\\\\'");

export interface VariableValue {
  readonly values: readonly string[];
  readonly multi: boolean;
  /** "All" chosen: the variable's custom all value, which the dashboard server puts in unescaped. */
  readonly allValue?: string;
}

/** "All" of a multi-value variable, as the dashboard opens: its custom all value, else every value. */
export function allOf(variable: VariableModel, values: readonly string[]): VariableValue {
  return variable.allValue
    ? { values, multi: true, allValue: variable.allValue }
    : { values, multi: variable.multi === true };
}

function replaceVariables(text: string, format: (name: string) => string | undefined): string {
  return text.replace(
    /\$(\w+)|\$\{(\w+)\}/g,
    (whole, a: string | undefined, b: string | undefined) => format((a ?? b)!) ?? whole,
  );
}

/** A topology provider query with the variables put in (the JSON datasource's `regex` format). */
export function interpolateTopology(text: string, variables: ReadonlyMap<string, VariableValue>): string {
  return replaceVariables(text, (name) => {
    const v = variables.get(name);
    if (v === undefined) return undefined;
    if (v.allValue !== undefined) return v.allValue;
    return v.values.length === 1 ? regexEscape(v.values[0]!) : `(${v.values.map(regexEscape).join('|')})`;
  });
}

export interface TimeMacros {
  /** `$__rate_interval`, `$__interval` as PromQL durations. */
  readonly rateInterval: string;
  readonly interval: string;
}

/** A PromQL query with the variables and the time macros put in (the Prometheus datasource's way). */
export function interpolatePromQL(
  text: string,
  variables: ReadonlyMap<string, VariableValue>,
  macros: TimeMacros,
): string {
  const withMacros = text
    .replaceAll('$__rate_interval', macros.rateInterval)
    .replaceAll('$__interval', macros.interval);
  return replaceVariables(withMacros, (name) => {
    const v = variables.get(name);
    if (v === undefined) return undefined;
    if (v.allValue !== undefined) return v.allValue;
    if (!v.multi) return promEscape(v.values[0] ?? '');
    return v.values.length === 1 ? promRegexEscape(v.values[0]!) : `(${v.values.map(promRegexEscape).join('|')})`;
  });
}
