/**
 * `cachemon service-codes NAME set|add|remove|all`: the spec's "collect only some service codes",
 * `serviceCodes` of the ensemble's cache exporter (and the dashboards' view of it, the topology
 * provider's `serviceCodesByEnsembleName`), applied with reloads and verified by the exporter's
 * own metrics.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { editAndReload, planEdit } from './change.js';
import { checkJsonc, setJsonc } from './edits.js';
import { checkName, collectedServiceCodes } from './ensemble.js';
import type { Plan } from './ensemble.js';
import { parseMetrics, post, request } from './probe.js';
import { instanceOf, providerAddress, reloadProvider, waitUntil } from './stack-state.js';
import { connectAddress, readJsonc } from './tree.js';
import type { Tree } from './tree.js';

export type ServiceCodesOp = 'set' | 'add' | 'remove' | 'all';

/** The service codes after the operation; undefined means every service code. */
function next(
  op: ServiceCodesOp,
  current: readonly string[] | undefined,
  codes: readonly string[],
): string[] | undefined {
  if (op === 'all') return undefined;
  for (const c of codes)
    if (c === '' || /[\s"]/.test(c)) throw new Error(`service code ${JSON.stringify(c)} is not valid`);
  if (codes.length === 0) throw new Error(`service-codes ${op}: give the service codes (a,b,...)`);
  let result: string[];
  if (op === 'set') result = [...new Set(codes)];
  else if (current === undefined)
    throw new Error(
      `the exporter collects every service code now; "${op}" needs a list to change: use "set ${codes.join(',')}"`,
    );
  else if (op === 'add') result = [...new Set([...current, ...codes])];
  else {
    const unknown = codes.filter((c) => !current.includes(c));
    if (unknown.length > 0)
      throw new Error(`not collected now: ${unknown.join(', ')} (collected: ${current.join(', ')})`);
    result = current.filter((c) => !codes.includes(c));
  }
  if (result.length === 0) throw new Error('no service code would be left: use "all" to collect every one');
  return result;
}

export async function planServiceCodes(
  tree: Tree,
  name: string,
  op: ServiceCodesOp,
  codes: readonly string[],
  options: { wait: number },
): Promise<Plan> {
  checkName(name);
  const conf = tree.path('cache_exporter/conf', `${name}.json`);
  if (!existsSync(conf)) throw new Error(`no cache exporter for ${name} (${conf}); cachemon ensemble list shows them`);
  const current = readJsonc(conf)['serviceCodes'] as string[] | undefined;
  const wanted = next(op, current, codes);
  const exporter = connectAddress((await instanceOf(tree, `cache_exporter:${name}`)).listen);
  const providerConf = tree.path('topology_provider/conf/config.json');
  const confEdit = planEdit(conf, (t) => {
    const text = setJsonc(t, ['serviceCodes'], wanted);
    checkJsonc(conf, text);
    return text;
  });
  const providerEdit = planEdit(providerConf, (t) => {
    const text = setJsonc(t, ['serviceCodesByEnsembleName', name], wanted);
    checkJsonc(providerConf, text);
    return text;
  });
  const provider = await providerAddress(tree);
  const described = wanted ? wanted.join(', ') : 'every service code';
  return {
    edits: [confEdit, providerEdit],
    actions: [
      `POST http://${exporter}/-/reload`,
      `POST http://${provider}/reload/config`,
      `wait until the exporter collects only ${described}`,
    ],
    run: async (change) => {
      await change.step(`set serviceCodes of cache_exporter:${name} and reload it`, () =>
        editAndReload([confEdit], () => post(exporter, '/-/reload').then(() => undefined)),
      );
      await change.step(`set what dashboards show of ${name} and reload the topology provider`, () =>
        editAndReload([providerEdit], () => reloadProvider(tree)),
      );
      const hash = createHash('sha256').update(confEdit.after!).digest('hex');
      await change.step(`verify: cache_exporter:${name} collects ${described}`, () =>
        waitUntil(options.wait, async () => {
          const samples = parseMetrics(
            (await request(exporter, '/metrics', { timeoutMs: 10_000 })).text,
            new Set(['cachemon_config_info']),
          );
          const loaded = samples.find((s) => s.labels['path'] === conf);
          if (loaded && loaded.labels['sha256'] !== hash) return 'the exporter has not loaded the new config';
          if (!wanted) return '';
          const extra = [...(await collectedServiceCodes(exporter))].filter((c) => !wanted.includes(c));
          return extra.length > 0 ? `the exporter still collects ${extra.join(', ')}` : '';
        }),
      );
    },
  };
}
