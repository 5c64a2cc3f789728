/**
 * Whether every coordination server answers `mntr`: each server of each coordination exporter's
 * env file asked directly, and what the running exporter says of it beside.
 */
import { Errors, errorMessage } from '@cachemon/core';
import type { CachemonError } from '@cachemon/core';
import { fourLetterWord, NOT_WHITELISTED_REPLY, parseMntr } from '@cachemon/coordination-exporter';
import { coordinationEnvs, formatEndpoint, isName, list, resolveName, runningMetrics } from './facts.js';
import type { CoordinationEnv, Endpoint, Running } from './facts.js';
import type { Check, DoctorContext, Finding } from './types.js';

const MNTR_TIMEOUT_MS = 3_000;

export type MntrResult =
  | { readonly kind: 'ok' | 'not_whitelisted' | 'not_serving' }
  | { readonly kind: 'unreachable' | 'other'; readonly error: string };

/** What a server's reply to mntr is, judged by the coordination exporter's own parser. */
export function classifyMntr(reply: string): MntrResult {
  try {
    const parsed = parseMntr(reply);
    return { kind: parsed.kind === 'metrics' ? 'ok' : parsed.kind };
  } catch (error) {
    return { kind: 'other', error: `answers mntr with no mntr reply: ${errorMessage(error)}` };
  }
}

/** `mntr` asked with the coordination exporter's own client (bounded in time and size); never rejects. */
export async function askMntr(host: string, port: number, timeoutMs = MNTR_TIMEOUT_MS): Promise<MntrResult> {
  try {
    return classifyMntr(await fourLetterWord(host, port, 'mntr', Date.now() + timeoutMs));
  } catch (error) {
    const failure = error as CachemonError;
    if (failure.code !== Errors.NODE_UNREACHABLE.code) return { kind: 'other', error: failure.message };
    const refused = failure.details?.['errno'] === 'ECONNREFUSED';
    return { kind: 'unreachable', error: refused ? 'connection refused' : failure.message };
  }
}

/** One server to ask: where, and the zk_host label the coordination exporter gives it. */
export interface AskedServer {
  readonly host: string;
  readonly port: number;
  readonly label: string;
  /** The env file's entry it comes from. */
  readonly entry: string;
}

/**
 * The servers of an env file as the exporter reads them: a name resolved to all its addresses,
 * labelled `<name>:<port>` when it has one, `<address>:<port>` each when it has several. A name that
 * does not resolve is left out: the hostname check reports it.
 */
export async function serversOf(context: DoctorContext, env: CoordinationEnv): Promise<AskedServer[]> {
  const out: AskedServer[] = [];
  for (const entry of env.entries) {
    const given = formatEndpoint(entry.host, entry.port);
    if (!isName(entry.host)) {
      out.push({ ...entry, label: given, entry: given });
      continue;
    }
    const { addresses } = await resolveName(context, entry.host, 'prefer4');
    for (const address of addresses)
      out.push({
        host: address,
        port: entry.port,
        label: addresses.length === 1 ? given : formatEndpoint(address, entry.port),
        entry: given,
      });
  }
  const seen = new Set<string>();
  return out.filter((s) => !seen.has(s.label) && !!seen.add(s.label));
}

/** What the running exporter says of each server (zk_host to the status of the scrape), and the names it resolved. */
export function exporterStatuses(running: Running): { statuses: Map<string, string>; resolvedNames: Set<string> } {
  const statuses = new Map<string, string>();
  const resolvedNames = new Set<string>();
  for (const s of running.samples) {
    if (s.name === 'zk_mntr_status' && s.value === 1 && s.labels['zk_host'])
      statuses.set(s.labels['zk_host'], s.labels['status'] ?? '');
    if (s.name === 'zk_resolved_address_info' && s.labels['name']) resolvedNames.add(s.labels['name']);
  }
  return { statuses, resolvedNames };
}

const restart = (env: CoordinationEnv) => `cachemon restart coordination_exporter:${env.ensemble}`;

/** The findings of one env file from the servers' answers and the exporter's statuses (undefined: not running). */
export function mntrFindings(
  env: CoordinationEnv,
  answers: ReadonlyArray<{ readonly server: AskedServer; readonly result: MntrResult }>,
  exporter: { readonly statuses: ReadonlyMap<string, string>; readonly resolvedNames: ReadonlySet<string> } | undefined,
): Finding[] {
  const base = { component: 'coordination_exporter', instance: env.ensemble };
  const out: Finding[] = [];
  for (const { server, result } of answers) {
    const where = server.label === server.entry ? server.label : `${server.label} (of ${server.entry})`;
    const reported = exporter?.statuses.get(server.label);
    if (result.kind === 'not_whitelisted') {
      out.push({
        ...base,
        code: 'CACHEMON_DOCTOR_MNTR_NOT_WHITELISTED',
        severity: 'error',
        message:
          `coordination server ${where} of ${env.file} refuses mntr ("${NOT_WHITELISTED_REPLY}"): ` +
          `the coordination exporter cannot read it` +
          (reported === 'not_whitelisted' ? ' (the running exporter reports not_whitelisted too)' : ''),
        fix: `add mntr to 4lw.commands.whitelist in the zoo.cfg of ${server.label} (e.g. 4lw.commands.whitelist=mntr,srvr,ruok) and restart that server`,
      });
    } else if (result.kind === 'unreachable') {
      out.push({
        ...base,
        code: 'CACHEMON_DOCTOR_ZK_UNREACHABLE',
        severity: 'warning',
        message: `coordination server ${where} of ${env.file} cannot be reached: ${result.error}`,
        fix: `start that ZooKeeper server; or, if the address is wrong, correct it in ${env.file} and run ${restart(env)}`,
      });
    } else if (result.kind === 'ok' && reported !== undefined && reported !== 'ok' && reported !== 'leader_only') {
      out.push({
        ...base,
        code: 'CACHEMON_DOCTOR_MNTR_EXPORTER_DIFFERS',
        severity: 'warning',
        message: `coordination server ${where} answers mntr here, but the running coordination exporter reports it ${reported}`,
        fix: `run ${restart(env)}; if it still reports ${reported}, its log (coordination_exporter/log/${env.ensemble}.log) says what it meets`,
      });
    }
  }
  if (exporter === undefined) return out;
  // A listed server the exporter does not read: it runs with another server list than the file's.
  const entries = new Map<string, Endpoint>();
  for (const e of env.entries) entries.set(formatEndpoint(e.host, e.port), e);
  for (const [entry, endpoint] of entries) {
    const read =
      exporter.statuses.has(entry) ||
      (isName(endpoint.host) &&
        (exporter.resolvedNames.has(entry) ||
          answers.some((a) => a.server.entry === entry && exporter.statuses.has(a.server.label))));
    if (read) continue;
    out.push({
      ...base,
      code: 'CACHEMON_DOCTOR_MNTR_EXPORTER_DIFFERS',
      severity: 'warning',
      message: `${env.file} lists ${entry}, but the running coordination exporter does not read it (it reads ${list([...exporter.statuses.keys()].sort()) || 'no server'}): it was started with another server list`,
      fix: `run ${restart(env)} to start it with the file's servers`,
    });
  }
  return out;
}

async function mntrCheck(context: DoctorContext): Promise<Finding[]> {
  const out: Finding[] = [];
  for (const env of await coordinationEnvs(context)) {
    const servers = await serversOf(context, env);
    const [answers, running] = await Promise.all([
      Promise.all(servers.map(async (server) => ({ server, result: await askMntr(server.host, server.port) }))),
      runningMetrics(context, env.instance),
    ]);
    out.push(...mntrFindings(env, answers, running ? exporterStatuses(running) : undefined));
  }
  return out;
}

export const mntrChecks: Check[] = [mntrCheck];
