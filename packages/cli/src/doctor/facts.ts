/**
 * What the checks about names and coordination servers observe: the coordination exporters' env
 * files, a name's answer on this machine, and what the running exporters and topology provider
 * expose. Each is read once per doctor run, so that every check sees the same answers.
 */
import { lookup } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { parseMetrics, request } from '../probe.js';
import type { Sample } from '../probe.js';
import { daemonPid, readEnv } from '../sh.js';
import { connectAddress } from '../tree.js';
import type { Instance } from '../tree.js';
import { wanted } from './types.js';
import type { DoctorContext } from './types.js';

export interface Endpoint {
  readonly host: string;
  readonly port: number;
}

/** `host:port` or `[v6]:port`; undefined when it is neither. */
export function parseEndpoint(text: string): Endpoint | undefined {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]+)):(\d{1,5})$/.exec(text.trim());
  const port = Number(match?.[3]);
  if (!match || !(port >= 1 && port <= 65535)) return undefined;
  return { host: (match[1] ?? match[2])!, port };
}

export function formatEndpoint(host: string, port: number): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

export const isName = (host: string): boolean => isIP(host) === 0;

const memos = new WeakMap<DoctorContext, Map<string, Promise<unknown>>>();

/** `make()` once per doctor run and key. */
function once<T>(context: DoctorContext, key: string, make: () => Promise<T>): Promise<T> {
  let memo = memos.get(context);
  if (!memo) memos.set(context, (memo = new Map<string, Promise<unknown>>()));
  let value = memo.get(key) as Promise<T> | undefined;
  if (!value) memo.set(key, (value = make()));
  return value;
}

export interface Lookup {
  /** Sorted, without duplicates; empty when the name did not resolve. */
  readonly addresses: readonly string[];
  readonly error?: string;
}

const LOOKUP_TIMEOUT_MS = 5_000;

/**
 * A name's addresses by the system resolver (hosts file, then DNS), as the exporters and the
 * topology provider resolve it. `prefer4`: its IPv4 addresses, or its IPv6 ones when it has none,
 * as the coordination exporter takes them.
 */
export function resolveName(context: DoctorContext, name: string, family: 'prefer4' | 'any'): Promise<Lookup> {
  return once(context, `lookup ${family} ${name}`, async () => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${LOOKUP_TIMEOUT_MS / 1000}s`)), LOOKUP_TIMEOUT_MS);
    });
    try {
      const entries = await Promise.race([lookup(name, { all: true }), late]);
      const v4 = entries.filter((e) => e.family === 4);
      const chosen = family === 'prefer4' && v4.length > 0 ? v4 : entries;
      const addresses = [...new Set(chosen.map((e) => e.address))].sort();
      return addresses.length > 0 ? { addresses } : { addresses, error: 'no addresses' };
    } catch (error) {
      const code = (error as { code?: string }).code;
      return { addresses: [], error: code === 'ENOTFOUND' ? 'not found' : (code ?? (error as Error).message) };
    } finally {
      clearTimeout(timer);
    }
  });
}

export interface CoordinationEnv {
  readonly instance: Instance;
  /** The env file's name: the ensemble. */
  readonly ensemble: string;
  readonly file: string;
  /** ZK_DOMAIN when set. */
  readonly domain: string | undefined;
  /** ZK_SERVERS's entries (empty when unset). */
  readonly servers: readonly string[];
  /** What start.sh passes as --zk-hosts, parsed: ZK_DOMAIN, else ZK_SERVERS (entries that are no host:port left out). */
  readonly entries: readonly Endpoint[];
}

/** Every wanted coordination exporter's env file, read by bash as start.sh reads it. */
export function coordinationEnvs(context: DoctorContext): Promise<CoordinationEnv[]> {
  return once(context, 'coordination envs', async () => {
    const out: CoordinationEnv[] = [];
    for (const instance of context.instances) {
      if (instance.component !== 'coordination_exporter' || !instance.name || !wanted(context, instance.name)) continue;
      const file = context.tree.path('coordination_exporter/conf', `${instance.name}.env`);
      let values: Map<string, string | string[]>;
      try {
        values = await readEnv(file, ['ZK_DOMAIN', 'ZK_SERVERS']);
      } catch {
        continue; // an env file bash cannot read is the start script's and the tree checks' to report
      }
      const domainValue = values.get('ZK_DOMAIN');
      const domain = typeof domainValue === 'string' && domainValue !== '' ? domainValue : undefined;
      const serversValue = values.get('ZK_SERVERS');
      const servers = Array.isArray(serversValue) ? serversValue : [];
      const given = domain !== undefined ? [domain] : servers;
      const entries = given.map(parseEndpoint).filter((e): e is Endpoint => e !== undefined);
      out.push({ instance, ensemble: instance.name, file, domain, servers, entries });
    }
    return out;
  });
}

export interface Running {
  readonly pid: number;
  /** Where it is asked. */
  readonly address: string;
  readonly text: string;
  readonly samples: readonly Sample[];
}

/** A running instance's /metrics (each ask triggers a collection); undefined when it is not running or does not answer. */
export function runningMetrics(context: DoctorContext, instance: Instance): Promise<Running | undefined> {
  return once(context, `metrics ${instance.id}`, async () => {
    const pid = await daemonPid(context.tree.dir, instance.pidfile);
    if (pid === undefined) return undefined;
    const address = connectAddress(instance.listen);
    try {
      const answer = await request(address, '/metrics', { timeoutMs: 15_000 });
      if (answer.status !== 200) return undefined;
      return { pid, address, text: answer.text, samples: parseMetrics(answer.text) };
    } catch {
      return undefined; // not answering is the tree checks' to report
    }
  });
}

/** A process's command line; empty when /proc cannot tell. */
export function commandLine(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
  } catch {
    return [];
  }
}

/** A duration flag's value (`60s`, `1m30s`, `500ms`, `0`) in seconds. */
export function durationSeconds(value: string): number | undefined {
  if (/^0+$/.test(value)) return 0;
  const parts = [...value.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== value) return undefined;
  const unit: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 };
  return parts.reduce((sum, p) => sum + Number(p[1]) * unit[p[2]!]!, 0);
}

/** The value of a `--flag=value`, `-flag=value` or `--flag value` on a command line; the last one wins. */
export function flagValue(args: readonly string[], flag: string): string | undefined {
  let value: string | undefined;
  args.forEach((arg, i) => {
    const bare = arg.replace(/^--?/, '');
    if (bare === arg) return;
    if (bare.startsWith(`${flag}=`)) value = bare.slice(flag.length + 1);
    else if (bare === flag && i + 1 < args.length) value = args[i + 1];
  });
  return value;
}

/** A time as operators read it in logs: UTC, to the second. */
export function when(unixSeconds: number): string {
  return new Date(Math.round(unixSeconds) * 1000).toISOString().replace('.000Z', 'Z');
}

/** `a, b and c` */
export function list(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)!}`;
}
