/**
 * `cachemon ensemble add|remove`: the spec's procedures "add a collection target" and "remove a
 * collection target", in their order, verified, and rolled back whole when a step fails.
 */
import { existsSync, readFileSync } from 'node:fs';
import { lookup } from 'node:dns/promises';
import { createServer } from 'node:net';
import { editAndReload, planEdit } from './change.js';
import type { Change } from './change.js';
import type { FileEdit } from './change.js';
import { formatEndpoint } from './doctor/facts.js';
import { addTargetEntry, checkJsonc, readTargets, removeTargets, setEnvLine, setJsonc, unsetEnvLine } from './edits.js';
import { parseMetrics, request } from './probe.js';
import { daemonPid } from './sh.js';
import {
  activeTargets,
  instanceOf,
  providerAddress,
  providerEnsembleConfig,
  providerEnsembles,
  reachable,
  reloadProvider,
  reloadActions,
  reloadStore,
  scrapers,
  startInstance,
  stopInstance,
  waitUntil,
} from './stack-state.js';
import { connectAddress, portOf, readJsonc } from './tree.js';
import type { Tree } from './tree.js';

export interface Plan {
  readonly edits: readonly FileEdit[];
  readonly actions: readonly string[];
  /** Runs the plan's steps on a Change. */
  readonly run: (change: Change) => Promise<void>;
}

export interface AddOptions {
  readonly servers?: readonly string[];
  readonly domain?: string;
  /** A --domain of several servers kept as the one name (doctor's CACHEMON_DOCTOR_ZK_DOMAIN). */
  readonly allowMerged?: boolean;
  readonly serviceCodes?: readonly string[];
  readonly cachePort?: number;
  readonly coordinationPort?: number;
  /** Host part of the new exporters' listen address (default: the example config's). */
  readonly listenHost?: string;
  /** Seconds to wait for the verification. */
  readonly wait: number;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const ADDRESS = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9._-]+):([0-9]{1,5})$/;

export function checkName(name: string): void {
  if (!NAME.test(name) || name === 'example')
    throw new Error(`${JSON.stringify(name)} is not an ensemble name: letters, digits, '.', '_', '-' (not "example")`);
}

function checkAddress(what: string, address: string): void {
  const match = ADDRESS.exec(address);
  if (!match || Number(match[2]) < 1 || Number(match[2]) > 65535)
    throw new Error(`${what} ${JSON.stringify(address)} is not <host>:<port>`);
}

/** Every port the tree's configs give a listener. */
async function configuredPorts(tree: Tree): Promise<Set<number>> {
  const ports = new Set<number>();
  for (const i of await tree.instances()) {
    const port = portOf(i.listen);
    if (port) ports.add(port);
  }
  return ports;
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host: '0.0.0.0', exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** The given port, or the first from `from` that no config of the tree names and no process holds. */
async function choosePort(what: string, given: number | undefined, from: number, taken: Set<number>): Promise<number> {
  if (given !== undefined) {
    if (!Number.isInteger(given) || given < 1 || given > 65535) throw new Error(`${what} ${given} is not a port`);
    if (taken.has(given)) throw new Error(`${what} ${given} is already the port of another component in this tree`);
    if (!(await portFree(given))) throw new Error(`${what} ${given} is in use by another process`);
    return given;
  }
  for (let port = from; port < 65536; port++) if (!taken.has(port) && (await portFree(port))) return port;
  throw new Error(`no free port from ${from} for the ${what}`);
}

/** The ensemble's servers as the exporters take them: the list, or the domain (one address). */
async function checkServers(options: AddOptions): Promise<string[]> {
  if ((options.servers === undefined) === (options.domain === undefined))
    throw new Error('give exactly one of --servers <host:port,...> and --domain <domain:port>');
  const list = options.servers ?? [options.domain!];
  if (list.length === 0) throw new Error('--servers is empty');
  for (const s of list) checkAddress(options.domain ? '--domain' : 'server', s);
  let addresses = list;
  if (options.domain) {
    const at = options.domain.lastIndexOf(':');
    const resolved = await lookup(options.domain.slice(0, at), { all: true }).catch((error: Error) => {
      throw new Error(`--domain ${options.domain}: does not resolve (${error.message})`);
    });
    addresses = [...new Set(resolved.map((r) => formatEndpoint(r.address, Number(options.domain!.slice(at + 1)))))];
    if (addresses.length > 1 && !options.allowMerged)
      throw new Error(
        `--domain ${options.domain} resolves to ${addresses.length} coordination servers (${addresses.join(', ')}): ` +
          `the spec's --zk-hosts lists every server, since with one name their data is merged into one series and a change of the name's DNS needs a restart. ` +
          `Give them as --servers ${addresses.join(',')} (their hostnames, where they have them), or pass --allow-merged to keep the name`,
      );
  }
  const up = await Promise.all(addresses.map((a) => reachable(a)));
  if (!up.some(Boolean))
    throw new Error(
      `no coordination server accepts connections: ${addresses.join(', ')} (check the addresses and the firewall)`,
    );
  return list as string[];
}

/** The target address the store scrapes for a listen address (a wildcard host is this machine's loopback). */
const targetOf = (listen: string) => connectAddress(listen);

/** The files an ensemble's procedures change. */
function ensembleFiles(tree: Tree, name: string) {
  return {
    cacheConf: tree.path('cache_exporter/conf', `${name}.json`),
    coordEnv: tree.path('coordination_exporter/conf', `${name}.env`),
    cacheTargets: tree.path('short_term_store/conf/exporter/cache_exporter.yml'),
    coordTargets: tree.path('short_term_store/conf/exporter/coordination_exporter.yml'),
    providerConf: tree.path('topology_provider/conf/config.json'),
  };
}

export async function planAdd(
  tree: Tree,
  name: string,
  options: AddOptions,
  say: (line: string) => void,
): Promise<Plan> {
  checkName(name);
  const { cacheConf, coordEnv, cacheTargets, coordTargets, providerConf } = ensembleFiles(tree, name);
  for (const [file, what] of [
    [cacheConf, 'a cache exporter config'],
    [coordEnv, 'a coordination exporter env file'],
  ] as const)
    if (existsSync(file))
      throw new Error(`ensemble ${name} exists already: ${what} ${file} (cachemon ensemble remove ${name} first)`);
  if (name in providerEnsembleConfig(tree))
    throw new Error(`ensemble ${name} exists already in ${providerConf} (ensembleByName)`);
  const coordEntries = readTargets(coordTargets, readFileSync(coordTargets, 'utf8'));
  if (coordEntries.some((e) => e.labels?.['ensemble'] === name))
    throw new Error(`ensemble ${name} exists already in ${coordTargets}`);
  readTargets(cacheTargets, readFileSync(cacheTargets, 'utf8'));
  for (const code of options.serviceCodes ?? [])
    if (code === '' || /[\s"]/.test(code)) throw new Error(`service code ${JSON.stringify(code)} is not valid`);

  const servers = await checkServers(options);
  const example = readJsonc(tree.path('cache_exporter/conf/example.json'));
  const exampleListen = typeof example['listen'] === 'string' ? example['listen'] : '0.0.0.0:9151';
  const host = options.listenHost ?? exampleListen.slice(0, exampleListen.lastIndexOf(':'));
  const taken = await configuredPorts(tree);
  const cachePort = await choosePort('cache exporter port', options.cachePort, portOf(exampleListen) ?? 9151, taken);
  taken.add(cachePort);
  const coordPort = await choosePort('coordination exporter port', options.coordinationPort, 9141, taken);
  const cacheListen = `${host}:${cachePort}`;
  const cacheTarget = targetOf(cacheListen);
  const coordTarget = targetOf(`0.0.0.0:${coordPort}`);

  const exampleText = readFileSync(tree.path('cache_exporter/conf/example.json'), 'utf8');
  const cacheEdit = planEdit(cacheConf, () => {
    let text = setJsonc(exampleText, ['ensembleByName'], undefined);
    text = setJsonc(text, ['ensembleByName'], { [name]: servers });
    text = setJsonc(text, ['listen'], cacheListen);
    text = setJsonc(text, ['log', 'filename'], `log/${name}.log`);
    if (options.serviceCodes) text = setJsonc(text, ['serviceCodes'], options.serviceCodes);
    checkJsonc(cacheConf, text);
    return text.replace(
      /^\/\/ Cache exporter of one ensemble\. Copy to .*\n/,
      `// Cache exporter of the ensemble ${name}.\n`,
    );
  });
  const coordEdit = planEdit(coordEnv, () => {
    let text = readFileSync(tree.path('coordination_exporter/conf/example.env'), 'utf8');
    text = setEnvLine(text, 'LISTEN_PORT', String(coordPort));
    if (options.domain) text = setEnvLine(unsetEnvLine(text, 'ZK_SERVERS'), 'ZK_DOMAIN', options.domain);
    else text = setEnvLine(unsetEnvLine(text, 'ZK_DOMAIN'), 'ZK_SERVERS', servers);
    return text.replace(
      /^# Coordination exporter of one ensemble: copy .*\n/,
      `# Coordination exporter of the ensemble ${name}.\n`,
    );
  });
  const cacheTargetsEdit = planEdit(cacheTargets, (t) => addTargetEntry(cacheTargets, t, { targets: [cacheTarget] }));
  const coordTargetsEdit = planEdit(coordTargets, (t) =>
    addTargetEntry(coordTargets, t, { targets: [coordTarget], labels: { ensemble: name } }),
  );
  const providerEdit = planEdit(providerConf, (t) => {
    let text = t;
    // The shipped placeholder goes with the first real ensemble: its servers do not exist.
    const placeholder = providerEnsembleConfig(tree)['example'];
    if (placeholder?.every((s) => s.endsWith('.example.com:2181')))
      text = setJsonc(text, ['ensembleByName', 'example'], undefined);
    text = setJsonc(text, ['ensembleByName', name], servers);
    if (options.serviceCodes) text = setJsonc(text, ['serviceCodesByEnsembleName', name], options.serviceCodes);
    checkJsonc(providerConf, text);
    return text;
  });
  const store = await scrapers(tree);
  const provider = await providerAddress(tree);
  await instanceOf(tree, 'short_term_store:short');
  say(
    `plan: cache exporter on ${cacheListen}, coordination exporter on 0.0.0.0:${coordPort}, servers ${servers.join(',')}`,
  );

  return {
    edits: [cacheEdit, coordEdit, cacheTargetsEdit, coordTargetsEdit, providerEdit],
    actions: [
      `cache_exporter/start.sh ${name}`,
      `coordination_exporter/start.sh ${name}`,
      ...reloadActions(store),
      `POST http://${provider}/reload/config`,
      `wait until the store scrapes ${cacheTarget} and ${coordTarget} and the topology provider lists ${name}`,
    ],
    run: async (change) => {
      await change.edit(cacheEdit);
      await change.step(`start cache_exporter:${name}`, async () => {
        await startInstance(tree, 'cache_exporter', [name]);
        return () => stopInstance(tree, 'cache_exporter', [name]);
      });
      await change.edit(coordEdit);
      await change.step(`start coordination_exporter:${name}`, async () => {
        await startInstance(tree, 'coordination_exporter', [name]);
        return () => stopInstance(tree, 'coordination_exporter', [name]);
      });
      await change.step('add the targets to the short-term store and reload it', () =>
        editAndReload([cacheTargetsEdit, coordTargetsEdit], () => reloadStore(tree)),
      );
      await change.step('add the ensemble to the topology provider and reload it', () =>
        editAndReload([providerEdit], () => reloadProvider(tree)),
      );
      await change.step(`verify: the store scrapes the exporters and the topology provider lists ${name}`, async () => {
        await waitUntil(options.wait, async () => {
          const targets = await activeTargets(store);
          for (const [address, what] of [
            [cacheTarget, 'cache exporter'],
            [coordTarget, 'coordination exporter'],
          ] as const) {
            const mine = targets.filter((t) => t.instance === address);
            if (mine.length === 0) return `the store has no target ${address} (${what}) yet`;
            const down = mine.find((t) => t.health !== 'up');
            if (down)
              return `the store's ${down.job} target ${address} is ${down.health}${down.lastError ? `: ${down.lastError}` : ''}`;
          }
          const ready = await request(cacheTarget, '/-/ready');
          if (ready.status !== 200) return `the cache exporter has read no topology from ${servers.join(',')} yet`;
          const listed = (await providerEnsembles(provider)).get(name);
          if (listed === undefined) return `the topology provider does not list ${name}`;
          if (listed.includes('(unavailable)')) return `the topology provider cannot read ${name} from its servers`;
          return '';
        });
      });
    },
  };
}

export async function planRemove(tree: Tree, name: string, options: { wait: number }): Promise<Plan> {
  checkName(name);
  const { cacheConf, coordEnv, cacheTargets, coordTargets, providerConf } = ensembleFiles(tree, name);
  const instances = await tree.instances();
  const cache = instances.find((i) => i.id === `cache_exporter:${name}`);
  const coord = instances.find((i) => i.id === `coordination_exporter:${name}`);
  const inProvider = name in providerEnsembleConfig(tree);
  const coordEntries = readTargets(coordTargets, readFileSync(coordTargets, 'utf8'));
  readTargets(cacheTargets, readFileSync(cacheTargets, 'utf8'));
  const coordAddresses = new Set([
    ...coordEntries.filter((e) => e.labels?.['ensemble'] === name).flatMap((e) => e.targets),
    ...(coord ? [targetOf(coord.listen)] : []),
  ]);
  const cacheAddresses = new Set(cache ? [targetOf(cache.listen)] : []);
  if (!cache && !coord && !inProvider && coordAddresses.size === 0)
    throw new Error(`no ensemble ${name} in ${tree.dir} (cachemon ensemble list shows them)`);

  const providerEdit = planEdit(providerConf, (t) => {
    let text = setJsonc(t, ['ensembleByName', name], undefined);
    if ((readJsonc(providerConf, t)['serviceCodesByEnsembleName'] as Record<string, unknown> | undefined)?.[name])
      text = setJsonc(text, ['serviceCodesByEnsembleName', name], undefined);
    return text;
  });
  const cacheTargetsEdit = planEdit(cacheTargets, (t) => removeTargets(cacheTargets, t, (a) => cacheAddresses.has(a)));
  const coordTargetsEdit = planEdit(coordTargets, (t) =>
    removeTargets(coordTargets, t, (a, labels) => labels['ensemble'] === name || coordAddresses.has(a)),
  );
  const removals = [cacheConf, coordEnv].filter((f) => existsSync(f)).map((f) => planEdit(f, () => null));
  const store = await scrapers(tree);
  const provider = await providerAddress(tree);
  const changed = (e: FileEdit) => e.before === null || e.after === null || !e.before.equals(Buffer.from(e.after));
  return {
    edits: [providerEdit, cacheTargetsEdit, coordTargetsEdit, ...removals].filter(changed),
    actions: [
      `POST http://${provider}/reload/config`,
      ...reloadActions(store),
      ...(cache ? [`cache_exporter/stop.sh ${name}`] : []),
      ...(coord ? [`coordination_exporter/stop.sh ${name}`] : []),
      `wait until the store no longer scrapes ${[...cacheAddresses, ...coordAddresses].join(', ') || 'them'} and the provider no longer lists ${name}`,
    ],
    run: async (change) => {
      await change.step('remove the ensemble from the topology provider and reload it', () =>
        editAndReload(changed(providerEdit) ? [providerEdit] : [], () => reloadProvider(tree)),
      );
      await change.step('remove the targets from the short-term store and reload it', () =>
        editAndReload([cacheTargetsEdit, coordTargetsEdit].filter(changed), () => reloadStore(tree)),
      );
      for (const i of [cache, coord])
        if (i)
          await change.step(`stop ${i.id}`, async () => {
            await stopInstance(tree, i.component, i.startArgs);
            return () => startInstance(tree, i.component, i.startArgs);
          });
      for (const r of removals) await change.edit(r);
      await change.step(
        `verify: the store no longer scrapes ${name}'s exporters and the provider no longer lists it`,
        () =>
          waitUntil(options.wait, async () => {
            const gone = new Set([...cacheAddresses, ...coordAddresses]);
            const left = (await activeTargets(store)).find((t) => gone.has(t.instance));
            if (left) return `the store still scrapes ${left.instance} (${left.job})`;
            if ((await providerEnsembles(provider)).has(name)) return `the topology provider still lists ${name}`;
            return '';
          }),
      );
    },
  };
}

export interface EnsembleRow {
  readonly name: string;
  readonly servers: readonly string[];
  readonly serviceCodes: readonly string[] | null;
  readonly cacheExporter: { address: string; running: boolean; scraped: string } | null;
  readonly coordinationExporter: { address: string; running: boolean; scraped: string } | null;
  readonly inTopologyProvider: boolean;
}

/** Every ensemble the tree knows of, from its configs, with what runs and what the store scrapes. */
export async function listEnsembles(tree: Tree): Promise<EnsembleRow[]> {
  const instances = await tree.instances();
  const provider = providerEnsembleConfig(tree);
  let targets: Awaited<ReturnType<typeof activeTargets>> | undefined;
  try {
    targets = await activeTargets(await scrapers(tree));
  } catch {
    targets = undefined;
  }
  const scraped = (address: string) => {
    if (!targets) return 'store not answering';
    const mine = targets.filter((t) => t.instance === address);
    if (mine.length === 0) return 'not a target';
    return mine.map((t) => `${t.job} ${t.health}`).join(', ');
  };
  const names = new Set([...tree.cacheExporterNames(), ...tree.coordinationExporterNames(), ...Object.keys(provider)]);
  const rows: EnsembleRow[] = [];
  for (const name of [...names].sort()) {
    const cache = instances.find((i) => i.id === `cache_exporter:${name}`);
    const coord = instances.find((i) => i.id === `coordination_exporter:${name}`);
    const conf = cache ? readJsonc(tree.path('cache_exporter/conf', `${name}.json`)) : undefined;
    const exporter = async (i: typeof cache) =>
      i
        ? {
            address: targetOf(i.listen),
            running: (await daemonPid(tree.dir, i.pidfile)) !== undefined,
            scraped: scraped(targetOf(i.listen)),
          }
        : null;
    rows.push({
      name,
      servers: (conf?.['ensembleByName'] as Record<string, string[]> | undefined)?.[name] ?? provider[name] ?? [],
      serviceCodes: (conf?.['serviceCodes'] as string[] | undefined) ?? null,
      cacheExporter: await exporter(cache),
      coordinationExporter: await exporter(coord),
      inTopologyProvider: name in provider,
    });
  }
  return rows;
}

/** The service codes a cache exporter collects now, from its own metrics. */
export async function collectedServiceCodes(address: string): Promise<Set<string>> {
  const samples = parseMetrics((await request(address, '/metrics', { timeoutMs: 10_000 })).text, new Set(['arcus_up']));
  return new Set(samples.map((s) => s.labels['service_code'] ?? ''));
}
