import { Registry } from 'prom-client';
import { allFamilies } from './metrics/catalog.js';
import type { FamilySpec } from './metrics/catalog.js';
import { SelfMetrics } from './self-metrics.js';
import { MEMCACHED_EXPORTER_MIGRATION } from './migration.js';
import { SLAB_CLASS_FIELDS, SLAB_TOTALS } from './metrics/catalog.js';

/** Writes docs/metrics.md from the catalogue (`npm run docs:metrics`); a test compares the committed file. */
export function metricsReference(): string {
  const families = allFamilies();
  const section = (endpoint: FamilySpec['endpoint']) =>
    families
      .filter((f) => f.endpoint === endpoint)
      .map(
        (f) =>
          `| \`${f.name}\` | ${f.type} | ${(f.labels ?? []).map((l) => `\`${l}\``).join(', ')} | ${f.source} | ${f.help.replace(/\|/g, '\\|')} |`,
      )
      .join('\n');
  const header = '| metric | type | extra labels | from | meaning |\n|---|---|---|---|---|';
  return `# Metrics reference

Generated from the cache exporter's metric catalogue (\`npm run docs:metrics\`); a test fails when
this file is out of date.

## Cache exporter: \`GET /metrics\`

Every series carries \`ensemble\` (the logical name in \`ensembleByName\`), \`service_code\`,
\`node\` (\`ip:port\`) and \`hostname\` (as the node registered it in ZooKeeper); nodes of
replication clusters (\`/arcus_repl\`) also carry \`group\` and \`role\` (\`master\`, \`slave\`; while a node is
down, the role it last registered with).
The exporter never sets \`job\` or \`instance\`.

Stats fields are mapped by name: \`cmd_<command>\` to \`arcus_commands_total{command}\`,
\`<command>_hits\` / \`_misses\` / \`_elem_hits\` / \`_none_hits\` / \`_oks\` to the families below,
the fields in the table to their own metric, and any other numeric field to
\`arcus_stat{field}\` so that nothing a newer server adds is lost. \`stats settings\` and
\`stats zookeeper\` are read every 30 s, not on every scrape: every numeric or yes/no settings
field is a gauge (its own, or \`arcus_setting{field}\`), the text fields are labels of one
\`arcus_settings_info\` per node.

\`stats slabs\` is read with every \`stats\`, pipelined on the same connection: the allocator's
shortage level changes within seconds when memory runs out, and the reply (${SLAB_TOTALS.size} totals plus
${SLAB_CLASS_FIELDS.size} lines per active slab class, a few KB) costs the server about what \`stats\` does. A
node whose slabs reply fails or comes late is still up, without slab series in that scrape. The
${SLAB_TOTALS.size} node totals (\`arcus_sm_*\`, \`arcus_slab_active_classes\`, \`arcus_slab_memory_limit_bytes\`,
\`arcus_slab_malloced_bytes\`) are always served; the per-class families (label \`slab_class\`)
only with \`slabClasses: true\` (docs/cache-exporter.md has the series count).

${header}
${section('/metrics')}

### Exporter health (\`cachemon_*\`, same endpoint)

Every \`cachemon_*\` series carries \`ensemble\` as well, as the node series do, so that an alert on
the exporter itself names its ensemble; the labels listed below come on top of it.

| metric | type | meaning |
|---|---|---|
${selfRows()}
| \`process_*\`, \`nodejs_*\` | various | Process metrics of the exporter (CPU, memory, event loop lag): prom-client's default collectors, without its \`nodejs_active_handles_total\`, \`nodejs_active_requests_total\` and \`nodejs_active_resources_total\` (gauges named like counters, which \`promtool check metrics\` rejects; \`nodejs_active_handles\`, \`nodejs_active_requests\` and \`nodejs_active_resources\` count the same by type). |

## From prometheus/memcached_exporter

Each metric of memcached_exporter (stats, settings, items, slabs) and the metric here that
carries the same figure, or why there is none. Labels differ throughout: the node labels above
replace its per-target \`instance\`, and \`slab_class\` replaces \`slab\`.

| memcached_exporter | from | cachemon | note |
|---|---|---|---|
${migrationRows(families)}

## Cache exporter: \`GET /metrics/prefixes\`

Scraped every minute by the \`arcus_prefixes\` job. Series are summed per service code (labels
\`ensemble\`, \`service_code\`, \`prefix\`; no \`node\`), and a series appears once its value has
been non-zero; see docs/cache-exporter.md for the cardinality arithmetic. The prefix of keys
without one is \`<null>\`.

${header}
${section('/metrics/prefixes')}
`;
}

/** The migration table; throws when it names a metric the catalogue does not have. */
function migrationRows(families: readonly FamilySpec[]): string {
  const known = new Set(families.map((f) => f.name));
  return MEMCACHED_EXPORTER_MIGRATION.map((row) => {
    for (const name of row.ours)
      if (!known.has(name)) throw new Error(`migration table: ${name} (for ${row.theirs}) is not in the catalogue`);
    const ours = row.ours.length > 0 ? row.ours.map((name) => `\`${name}\``).join(', ') : 'none';
    return `| \`${row.theirs}\` | ${row.from} | ${ours} | ${(row.note ?? '').replace(/\|/g, '\\|')} |`;
  }).join('\n');
}

/** The exporter's own cachemon_* metrics, as it registers them: one row each. */
function selfRows(): string {
  const registry = new Registry();
  new SelfMetrics(registry, { version: '', ensemble: '' });
  return registry
    .getMetricsAsArray()
    .map((object) => {
      // prom-client's metric objects carry these; its MetricObject type names only some of them.
      const metric = object as unknown as { name: string; type: string; help: string; labelNames: readonly string[] };
      const labels =
        metric.labelNames.length > 0 ? ` Labels: ${metric.labelNames.map((l) => `\`${l}\``).join(', ')}.` : '';
      return `| \`${metric.name}\` | ${metric.type} | ${`${metric.help}${labels}`.replace(/\|/g, '\\|')} |`;
    })
    .join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(metricsReference());
}
