/**
 * Names: a coordination ensemble given as one name for several servers, a name whose DNS answer
 * changed under a running coordination exporter, and cache and coordination hostnames that this
 * machine (the topology provider's) does not resolve, or resolves elsewhere than the exporters
 * connect. Facts are gathered first; the findings are pure functions of them.
 */
import { existsSync } from 'node:fs';
import { connectAddress, readJsonc } from '../tree.js';
import {
  commandLine,
  coordinationEnvs,
  durationSeconds,
  flagValue,
  formatEndpoint,
  isName,
  list,
  parseEndpoint,
  resolveName,
  runningMetrics,
  when,
} from './facts.js';
import type { CoordinationEnv, Lookup, Running } from './facts.js';
import { wanted } from './types.js';
import type { Check, DoctorContext, Finding } from './types.js';

/** The coordination exporter's default --resolve-interval. */
const DEFAULT_RESOLVE_INTERVAL_S = 60;

/** A name's answer here, by family: the coordination exporter prefers IPv4, cache hostnames take any. */
export type Answers = (name: string, family: 'prefer4' | 'any') => Lookup;

/** What a running coordination exporter says of its names and servers. */
export interface ExporterView {
  readonly pid: number;
  /** Its --resolve-interval in seconds (0: only at start and on SIGHUP). */
  readonly intervalSeconds: number;
  /** The zk_host labels of its series. */
  readonly zkHosts: ReadonlySet<string>;
  /** `<name>:<port>` to the addresses (`<ip>:<port>`) of its last successful resolution and when that was. */
  readonly resolved: ReadonlyMap<string, { readonly addresses: readonly string[]; readonly at: number | undefined }>;
  /** Whether it exposes zk_resolved_* at all (builds before do not). */
  readonly exposesResolution: boolean;
}

export function exporterView(running: Running): ExporterView {
  const interval = flagValue(commandLine(running.pid), 'resolve-interval');
  const zkHosts = new Set<string>();
  const addresses = new Map<string, string[]>();
  const at = new Map<string, number>();
  for (const s of running.samples) {
    if (s.name === 'zk_up' && s.labels['zk_host']) zkHosts.add(s.labels['zk_host']);
    const name = s.labels['name'];
    if (s.name === 'zk_resolved_address_info' && name && s.labels['address'])
      addresses.set(name, [...(addresses.get(name) ?? []), s.labels['address']].sort());
    if (s.name === 'zk_resolved_timestamp_seconds' && name) at.set(name, s.value);
  }
  const resolved = new Map<string, { addresses: string[]; at: number | undefined }>();
  for (const name of new Set([...addresses.keys(), ...at.keys()]))
    resolved.set(name, { addresses: addresses.get(name) ?? [], at: at.get(name) });
  return {
    pid: running.pid,
    intervalSeconds: (interval === undefined ? undefined : durationSeconds(interval)) ?? DEFAULT_RESOLVE_INTERVAL_S,
    zkHosts,
    resolved,
    exposesResolution: /^# TYPE zk_resolved_timestamp_seconds /m.test(running.text),
  };
}

const restart = (env: CoordinationEnv) => `cachemon restart coordination_exporter:${env.ensemble}`;
const withPort = (addresses: readonly string[], port: number) => addresses.map((a) => formatEndpoint(a, port));

/** A coordination exporter's env file giving one name for several servers, and what the running exporter makes of it. */
export function domainFindings(env: CoordinationEnv, answers: Answers, exporter: ExporterView | undefined): Finding[] {
  const out: Finding[] = [];
  for (const entry of env.entries) {
    if (!isName(entry.host)) continue;
    const given = formatEndpoint(entry.host, entry.port);
    const here = withPort(answers(entry.host, 'prefer4').addresses, entry.port);
    const read = exporter?.resolved.get(given)?.addresses ?? [];
    // Its answer here decides; the exporter's last one only when it does not resolve here. A name
    // that went from several addresses to one is the DNS check's, and one server after a SIGHUP.
    const servers = here.length > 0 ? here : read;
    if (servers.length <= 1) continue;
    const form = env.domain !== undefined ? `ZK_DOMAIN=${given}` : `the ZK_SERVERS entry ${given}`;
    const replacement =
      env.domain !== undefined
        ? servers
        : env.servers.flatMap((s) => {
            const e = parseEndpoint(s);
            return e && formatEndpoint(e.host, e.port) === given ? servers : [s];
          });
    const fix = `in ${env.file}, ${env.domain !== undefined ? `replace ZK_DOMAIN=${given} by` : 'set'} ZK_SERVERS=(${replacement.join(' ')}) and run ${restart(env)}`;
    const what = `${env.file} gives the ensemble's servers as one name, ${form}, which resolves to ${list(servers)}`;
    // One series for the name while it stands for several servers: merged. This exporter labels a
    // name by itself only while it resolved to one address, which is a DNS change, not a merge.
    const merged =
      exporter !== undefined &&
      exporter.zkHosts.has(given) &&
      (exporter.exposesResolution ? read.length > 1 : here.length > 1);
    const base = { component: 'coordination_exporter', instance: env.ensemble };
    if (merged) {
      out.push({
        ...base,
        code: 'CACHEMON_DOCTOR_ZK_DOMAIN_MERGED',
        severity: 'error',
        message: `${what}; the running coordination exporter reports them as one server, zk_host="${given}": the data of several servers is merged into one series`,
        fix,
      });
    } else {
      out.push({
        ...base,
        code: 'CACHEMON_DOCTOR_ZK_DOMAIN',
        severity: 'warning',
        message:
          exporter === undefined
            ? `${what}; the coordination exporter is not running, so what it makes of the name was not seen. The spec's form is the explicit server list`
            : `${what}; this coordination exporter reports each address as a server of its own (zk_host="<address>:<port>"), so it works here, but the spec's form is the explicit server list`,
        fix,
      });
    }
  }
  return out;
}

/** Where an ensembleByName is: the file, whose it is, and how that component reloads it. */
export interface EnsembleConfig {
  readonly component: string;
  readonly instance: string;
  readonly file: string;
  readonly ensemble: string;
  readonly servers: readonly string[];
  readonly reload: string;
}

/** An ensembleByName entry that is one name for several servers. */
export function ensembleDomainFindings(config: EnsembleConfig, answers: Answers): Finding[] {
  const out: Finding[] = [];
  for (const server of config.servers) {
    const entry = parseEndpoint(server);
    if (!entry || !isName(entry.host)) continue;
    const here = withPort(answers(entry.host, 'prefer4').addresses, entry.port);
    if (here.length <= 1) continue;
    const servers = config.servers.flatMap((s) => (s === server ? here : [s]));
    out.push({
      code: 'CACHEMON_DOCTOR_ENSEMBLE_DOMAIN',
      severity: 'warning',
      component: config.component,
      instance: config.instance,
      message: `${config.file}: ensembleByName "${config.ensemble}" gives ${server}, one name that resolves to ${list(here)}; the client connects to one of them at a time, which works, but the spec's form is the server list, and a change of the name's DNS reaches it only at its next session`,
      fix: `in ${config.file}, set "${config.ensemble}": ${JSON.stringify(servers)} in ensembleByName and reload: ${config.reload}`,
    });
  }
  return out;
}

/** A name whose answer here is not what the running coordination exporter reads. */
export function dnsFindings(
  env: CoordinationEnv,
  answers: Answers,
  exporter: ExporterView | undefined,
  now: number,
): Finding[] {
  if (exporter === undefined) return [];
  const out: Finding[] = [];
  for (const [given, read] of exporter.resolved) {
    const entry = parseEndpoint(given);
    if (!entry) continue;
    const answer = answers(entry.host, 'prefer4');
    if (answer.error !== undefined) continue; // the hostname check reports a name that does not resolve here
    const here = withPort(answer.addresses, entry.port).sort();
    if (here.join(',') === [...read.addresses].sort().join(',')) continue;
    const interval = exporter.intervalSeconds;
    const stale = interval === 0 || read.at === undefined || now - read.at > 2 * interval;
    const since = read.at === undefined ? 'its start' : when(read.at);
    const next =
      interval === 0
        ? 'It was started with --resolve-interval=0s: it resolves names again only on SIGHUP or a restart'
        : stale
          ? `Its last successful resolution is older than twice its --resolve-interval (${interval}s): resolving fails for it (its log, coordination_exporter/log/${env.ensemble}.log, says why)`
          : `It resolves again by ${when(read.at + interval)}`;
    out.push({
      code: 'CACHEMON_DOCTOR_ZK_DNS_CHANGED',
      severity: stale ? 'error' : 'warning',
      component: 'coordination_exporter',
      instance: env.ensemble,
      message: `${given} resolves here to ${list(here)}, but the coordination exporter (pid ${exporter.pid}) reads ${list(read.addresses) || 'no address'}: the answer has changed since ${since}, when the exporter last resolved it. ${next}`,
      fix: stale
        ? `kill -HUP ${exporter.pid} (the exporter resolves its names again)`
        : `wait until then, or apply it now: kill -HUP ${exporter.pid}`,
    });
  }
  return out;
}

/** A cache node as an exporter's series label it. */
export interface CacheNodeSeen {
  readonly ensemble: string;
  /** The cache exporter instance. */
  readonly instance: string;
  readonly hostname: string;
  /** `ip:port` the exporter connects to. */
  readonly node: string;
}

/** A coordination server name in an env file or a running exporter's zk_host. */
export interface CoordinationNameSeen {
  readonly ensemble: string;
  readonly name: string;
  /** The addresses (`ip:port`) the exporter reads for it; empty when it never resolved there. */
  readonly readAs: readonly string[];
}

/** A `cachemon_hostname_problem` series of the topology provider. */
export interface ProviderProblem {
  readonly ensemble: string;
  readonly kind: string;
  readonly hostname: string;
  readonly address: string;
  readonly problem: string;
  readonly resolved: readonly string[];
}

const HOSTS = '/etc/hosts on this machine';

/** Hostnames the exporters report, resolved here and compared with the addresses they connect to; the provider's own findings folded in. */
export function hostnameFindings(
  nodes: readonly CacheNodeSeen[],
  names: readonly CoordinationNameSeen[],
  provider: { readonly pid: number; readonly problems: readonly ProviderProblem[] } | undefined,
  answers: Answers,
): Finding[] {
  const out: Array<Finding & { readonly hostname: string }> = [];
  const seen = new Set<string>();
  for (const n of nodes) {
    const ip = parseEndpoint(n.node)?.host;
    if (!n.hostname || !ip || seen.has(`${n.hostname} ${ip}`)) continue;
    seen.add(`${n.hostname} ${ip}`);
    const answer = answers(n.hostname, 'any');
    const base = { component: 'cache_exporter', instance: n.instance, hostname: n.hostname };
    const of = `hostname ${n.hostname} of cache node ${n.node} (ensemble ${n.ensemble})`;
    if (answer.error !== undefined)
      out.push({
        ...base,
        code: 'CACHEMON_DOCTOR_HOSTNAME_UNRESOLVED',
        severity: 'error',
        message: `${of} does not resolve on this machine (${answer.error}); the cache exporter connects to ${ip}`,
        fix: `add the line "${ip} ${n.hostname}" to ${HOSTS} (or give the name that DNS record)`,
      });
    else if (!answer.addresses.includes(ip))
      out.push({
        ...base,
        code: 'CACHEMON_DOCTOR_HOSTNAME_MISMATCH',
        severity: 'error',
        message: `${of} resolves on this machine to ${list(answer.addresses)}, but the cache exporter connects to ${ip}`,
        fix: `make it "${ip} ${n.hostname}" in ${HOSTS}, in place of what gives ${list(answer.addresses)} (or correct the name's DNS record)`,
      });
  }
  for (const c of names) {
    if (!isName(c.name) || seen.has(`${c.name} coordination`)) continue;
    seen.add(`${c.name} coordination`);
    const answer = answers(c.name, 'prefer4');
    if (answer.error === undefined) continue; // a different answer is the DNS check's
    const ips = [...new Set(c.readAs.map((a) => parseEndpoint(a)?.host).filter((h) => h !== undefined))];
    out.push({
      code: 'CACHEMON_DOCTOR_HOSTNAME_UNRESOLVED',
      severity: 'error',
      component: 'coordination_exporter',
      instance: c.ensemble,
      hostname: c.name,
      message:
        `coordination server name ${c.name} (ensemble ${c.ensemble}) does not resolve on this machine (${answer.error}); ` +
        (ips.length > 0
          ? `the coordination exporter reads ${list(c.readAs)}, its last answer`
          : 'the coordination exporter cannot read it either'),
      fix:
        ips.length > 0
          ? `add ${list(ips.map((ip) => `the line "${ip} ${c.name}"`))} to ${HOSTS} (or give the name its DNS record)`
          : `add "<the server's address> ${c.name}" to ${HOSTS}, or give the name its DNS record`,
    });
  }
  if (provider === undefined) return out.map(({ hostname: _, ...f }) => f);
  const again = `kill -HUP ${provider.pid} (the topology provider resolves its names again)`;
  const folded: Finding[] = [];
  for (const p of provider.problems) {
    const ours = out.find((f) => f.hostname === p.hostname && f.code !== 'CACHEMON_DOCTOR_HOSTNAME_MISSING');
    if (ours) {
      if (!ours.message.endsWith('too)'))
        Object.assign(ours, {
          message: `${ours.message} (the topology provider reports it too)`,
          fix: `${ours.fix}; then ${again}`,
        });
      continue;
    }
    const base = { component: 'topology_provider', instance: '' };
    const ip = parseEndpoint(p.address)?.host ?? p.address;
    if (p.problem === 'no_hostname') {
      folded.push({
        ...base,
        code: 'CACHEMON_DOCTOR_HOSTNAME_MISSING',
        severity: 'warning',
        message: `cache node ${p.address} (ensemble ${p.ensemble}) registered without a hostname: it cannot be joined to its machine's host exporter, nor its name checked`,
        fix: `restart that cache server so that it registers <ip>:<port>-<hostname> under /arcus/cache_list, with its machine's hostname`,
      });
      continue;
    }
    const code = p.problem === 'mismatch' ? 'CACHEMON_DOCTOR_HOSTNAME_MISMATCH' : 'CACHEMON_DOCTOR_HOSTNAME_UNRESOLVED';
    const answer = answers(p.hostname, p.kind === 'cache' ? 'any' : 'prefer4');
    const fine = answer.error === undefined && (p.kind !== 'cache' || answer.addresses.includes(ip));
    const said = p.problem === 'mismatch' ? `resolves to ${list(p.resolved)}, not to ${ip}` : 'does not resolve';
    folded.push({
      ...base,
      code,
      severity: 'error',
      message: fine
        ? `the topology provider (pid ${provider.pid}) reports that ${p.kind} hostname ${p.hostname} of ${p.address} (ensemble ${p.ensemble}) ${said}; it resolves here to ${list(answer.addresses)} now: the provider's answer is older`
        : `the topology provider (pid ${provider.pid}) reports that ${p.kind} hostname ${p.hostname} of ${p.address} (ensemble ${p.ensemble}) ${said} on its machine`,
      fix: fine
        ? again
        : p.kind === 'cache'
          ? `make it "${ip} ${p.hostname}" in ${HOSTS} (or correct the name's DNS record); then ${again}`
          : `add "<the server's address> ${p.hostname}" to ${HOSTS}, or give the name its DNS record; then ${again}`,
    });
  }
  return [...out.map(({ hostname: _, ...f }) => f), ...folded];
}

/** Every name the given ones need, resolved (concurrently, each bounded), as a lookup function. */
async function answersFor(
  context: DoctorContext,
  needs: ReadonlyArray<readonly [string, 'prefer4' | 'any']>,
): Promise<Answers> {
  const found = new Map<string, Lookup>();
  await Promise.all(
    needs.map(async ([name, family]) => found.set(`${family} ${name}`, await resolveName(context, name, family))),
  );
  return (name, family) => found.get(`${family} ${name}`) ?? { addresses: [], error: 'not looked up' };
}

/** Each wanted coordination exporter's env with what its running process says (undefined: not running). */
async function coordinationFacts(
  context: DoctorContext,
): Promise<Array<{ env: CoordinationEnv; exporter: ExporterView | undefined }>> {
  return Promise.all(
    (await coordinationEnvs(context)).map(async (env) => {
      const running = await runningMetrics(context, env.instance);
      return { env, exporter: running ? exporterView(running) : undefined };
    }),
  );
}

const nameNeeds = (env: CoordinationEnv, exporter: ExporterView | undefined): Array<[string, 'prefer4']> => [
  ...env.entries.filter((e) => isName(e.host)).map((e): [string, 'prefer4'] => [e.host, 'prefer4']),
  ...[...(exporter?.resolved.keys() ?? []), ...(exporter?.zkHosts ?? [])]
    .map((n) => parseEndpoint(n)?.host)
    .filter((h): h is string => h !== undefined && isName(h))
    .map((h): [string, 'prefer4'] => [h, 'prefer4']),
];

function ensembleConfigs(context: DoctorContext): EnsembleConfig[] {
  const out: EnsembleConfig[] = [];
  for (const instance of context.instances) {
    if (instance.component !== 'cache_exporter' && instance.component !== 'topology_provider') continue;
    const file = instance.reloadable[0];
    if (!file || !existsSync(file)) continue;
    let config: Record<string, unknown>;
    try {
      config = readJsonc(file);
    } catch {
      continue; // an unreadable config is the tree checks' to report
    }
    const byName = (config['ensembleByName'] ?? {}) as Record<string, unknown>;
    const older = Array.isArray(config['ensemble']) && instance.name ? { [instance.name]: config['ensemble'] } : {};
    const path = instance.component === 'cache_exporter' ? '/-/reload' : '/reload/config';
    for (const [ensemble, servers] of Object.entries({ ...older, ...byName })) {
      if (!Array.isArray(servers) || !wanted(context, ensemble)) continue;
      out.push({
        component: instance.component,
        instance: instance.name ?? '',
        file,
        ensemble,
        servers: servers.filter((s): s is string => typeof s === 'string'),
        reload: `curl -X POST http://${connectAddress(instance.listen)}${path}`,
      });
    }
  }
  return out;
}

async function domainCheck(context: DoctorContext): Promise<Finding[]> {
  const facts = await coordinationFacts(context);
  const configs = ensembleConfigs(context);
  const answers = await answersFor(context, [
    ...facts.flatMap(({ env, exporter }) => nameNeeds(env, exporter)),
    ...configs.flatMap((c) =>
      c.servers
        .map((s) => parseEndpoint(s)?.host)
        .filter((h): h is string => h !== undefined && isName(h))
        .map((h): [string, 'prefer4'] => [h, 'prefer4']),
    ),
  ]);
  return [
    ...facts.flatMap(({ env, exporter }) => domainFindings(env, answers, exporter)),
    ...configs.flatMap((c) => ensembleDomainFindings(c, answers)),
  ];
}

async function dnsCheck(context: DoctorContext): Promise<Finding[]> {
  const facts = await coordinationFacts(context);
  const answers = await answersFor(
    context,
    facts.flatMap(({ env, exporter }) => nameNeeds(env, exporter)),
  );
  const now = Date.now() / 1000;
  return facts.flatMap(({ env, exporter }) => dnsFindings(env, answers, exporter, now));
}

async function hostnameCheck(context: DoctorContext): Promise<Finding[]> {
  const nodes: CacheNodeSeen[] = [];
  let provider: { pid: number; problems: ProviderProblem[] } | undefined;
  for (const instance of context.instances) {
    if (instance.component === 'cache_exporter' && instance.name) {
      const running = await runningMetrics(context, instance);
      for (const s of running?.samples ?? []) {
        if (s.name !== 'arcus_up') continue;
        const ensemble = s.labels['ensemble'] ?? instance.name;
        if (wanted(context, ensemble) || wanted(context, instance.name))
          nodes.push({
            ensemble,
            instance: instance.name,
            hostname: s.labels['hostname'] ?? '',
            node: s.labels['node'] ?? '',
          });
      }
    }
    if (instance.component === 'topology_provider') {
      const running = await runningMetrics(context, instance);
      if (!running) continue;
      const problems = running.samples
        .filter((s) => s.name === 'cachemon_hostname_problem' && s.value === 1)
        .map((s) => ({
          ensemble: s.labels['ensemble'] ?? '',
          kind: s.labels['kind'] ?? '',
          hostname: s.labels['hostname'] ?? '',
          address: s.labels['address'] ?? '',
          problem: s.labels['problem'] ?? '',
          resolved: (s.labels['resolved'] ?? '').split(',').filter((a) => a !== ''),
        }))
        .filter((p) => wanted(context, p.ensemble));
      provider = { pid: running.pid, problems };
    }
  }
  const names: CoordinationNameSeen[] = [];
  const facts = await coordinationFacts(context);
  for (const { env, exporter } of facts) {
    for (const given of new Set([
      ...env.entries.map((e) => formatEndpoint(e.host, e.port)),
      ...(exporter?.zkHosts ?? []),
      ...(exporter?.resolved.keys() ?? []),
    ])) {
      const name = parseEndpoint(given)?.host;
      if (name && isName(name))
        names.push({ ensemble: env.ensemble, name, readAs: exporter?.resolved.get(given)?.addresses ?? [] });
    }
  }
  const answers = await answersFor(context, [
    ...nodes.filter((n) => n.hostname !== '').map((n): [string, 'any'] => [n.hostname, 'any']),
    ...names.map((n): [string, 'prefer4'] => [n.name, 'prefer4']),
    ...(provider?.problems ?? [])
      .filter((p) => p.hostname !== '')
      .map((p): [string, 'prefer4' | 'any'] => [p.hostname, p.kind === 'cache' ? 'any' : 'prefer4']),
  ]);
  return hostnameFindings(nodes, names, provider, answers);
}

export const resolutionChecks: Check[] = [domainCheck, dnsCheck, hostnameCheck];
