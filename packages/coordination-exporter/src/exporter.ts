/** Each scrape sends `mntr` to every server at once, each within the deadline, none holding up another. */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import {
  CachemonError,
  Errors,
  createScrapeMetrics,
  errorMessage,
  expositionBody,
  isCachemonError,
} from '@cachemon/core';
import type { ExpositionBody } from '@cachemon/core';
import type { Logger } from '@cachemon/core';
import { Counter, Gauge, type Histogram, type Registry } from 'prom-client';
import { fourLetterWord } from './four-letter.js';
import { DEFAULT_MAX_KEYS, parseMntr } from './mntr.js';
import { prepareServer, writeServers, type PreparedServer, type ServerReading, type ServerStatus } from './render.js';

/** One `--zk-hosts` entry: an IP address or a name, and a port. */
export interface ServerEndpoint {
  readonly host: string;
  readonly port: number;
}

export interface CoordinationExporterOptions {
  readonly logger: Logger;
  readonly registry: Registry;
  /** Resolves a name to all its addresses (default: the system resolver; IPv4, or IPv6 when a name has no IPv4 address). */
  readonly resolve?: (name: string) => Promise<string[]>;
  /** The process_* and nodejs_* metrics (createProcessMetrics), appended to every body. */
  readonly processMetrics?: () => Promise<string>;
  /** mntr keys read per server at most (default DEFAULT_MAX_KEYS); the rest are counted as dropped. */
  readonly maxKeys?: number;
}

/** Parses `--zk-hosts`: comma separated `host:port` (IPv6 as `[addr]:port`). Throws CONFIG_INVALID naming the bad entry. */
export function parseServerList(list: string): ServerEndpoint[] {
  const entries = list
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (entries.length === 0)
    throw new CachemonError(Errors.CONFIG_INVALID, '--zk-hosts: no server given (a comma separated list of host:port)');
  const seen = new Set<string>();
  return entries.map((entry) => {
    const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]+)):(\d{1,5})$/.exec(entry);
    const port = Number(match?.[3]);
    if (!match || !(port >= 1 && port <= 65535)) {
      throw new CachemonError(
        Errors.CONFIG_INVALID,
        `--zk-hosts: ${JSON.stringify(entry)} is not host:port (IPv6 as [address]:port)`,
      );
    }
    const host = (match[1] ?? match[2])!;
    const key = `${host}:${port}`;
    if (seen.has(key)) throw new CachemonError(Errors.CONFIG_INVALID, `--zk-hosts: ${entry} is listed twice`);
    seen.add(key);
    return { host, port };
  });
}

/** `host:port`, IPv6 in brackets. */
export function formatEndpoint({ host, port }: ServerEndpoint): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * The zk_host label of a server as read now: `name:port` as given for a name that resolved to one
 * address (as the widely used ZooKeeper exporter labels it), else the address and port.
 */
export function serverLabel(endpoint: ServerEndpoint): string {
  const { name, single } = endpoint as Partial<ResolvedEndpoint>;
  return name !== undefined && single === true
    ? formatEndpoint({ host: name, port: endpoint.port })
    : formatEndpoint(endpoint);
}

export class CoordinationExporter {
  private readonly servers: readonly ServerEndpoint[];
  /** Names resolved to their addresses; a name lists every address it resolves to. */
  private resolved: ServerEndpoint[] = [];
  private readonly lastStatus = new Map<string, ServerStatus>();
  /** Names that failed to resolve at their last resolution (warned about once, until they resolve again). */
  private readonly failingNames = new Set<string>();
  private readonly scrapes: Counter<'status'>;
  private readonly scrapeDuration: Histogram<'path'>;
  private readonly resolutions: Counter<'result'>;
  private readonly keysDropped: Counter<'zk_host' | 'reason'>;
  private readonly sharedScrapes: Counter<'path'>;
  /** What each name resolved to last, and when: a DNS change is told from what the exporter reads. */
  private readonly resolvedAddresses: Gauge<'name' | 'address'>;
  private readonly resolvedAt: Gauge<'name'>;
  /** The address labels set per name label, to remove those a new answer no longer has. */
  private readonly addressLabels = new Map<string, string[]>();
  private running: Promise<ExpositionBody> | undefined;

  constructor(
    servers: readonly ServerEndpoint[],
    private readonly options: CoordinationExporterOptions,
  ) {
    this.servers = [...servers];
    const registers = [options.registry];
    this.scrapes = new Counter({
      name: 'cachemon_zk_server_reads_total',
      help: 'mntr reads of servers, by their status.',
      labelNames: ['status'],
      registers,
    });
    this.keysDropped = new Counter({
      name: 'cachemon_zk_mntr_keys_dropped_total',
      help: 'mntr keys of a server not exposed: past --mntr.max-keys (reason limit), or that cannot be (reason skipped: an unknown text value, a key too long, two keys that make one series).',
      labelNames: ['zk_host', 'reason'],
      registers,
    });
    const scrapes = createScrapeMetrics(options.registry);
    this.scrapeDuration = scrapes.duration;
    this.sharedScrapes = scrapes.shared;
    this.resolutions = new Counter({
      name: 'cachemon_zk_resolutions_total',
      help: 'Resolutions of the server names in --zk-hosts, by result (ok, failed).',
      labelNames: ['result'],
      registers,
    });
    this.resolvedAddresses = new Gauge({
      name: 'zk_resolved_address_info',
      help: 'The addresses a name in --zk-hosts resolved to at its last successful resolution (value 1): name and address with the port.',
      labelNames: ['name', 'address'],
      registers,
    });
    this.resolvedAt = new Gauge({
      name: 'zk_resolved_timestamp_seconds',
      help: 'When a name in --zk-hosts last resolved successfully, in Unix seconds.',
      labelNames: ['name'],
      registers,
    });
  }

  /** The servers as read now: names replaced by every address they resolved to. */
  get endpoints(): readonly ServerEndpoint[] {
    return this.resolved;
  }

  /**
   * Resolves every name in the server list to all its addresses. A name that fails to resolve
   * keeps its last addresses; one that never resolved is a server of its own, reported with the
   * status `unresolved` (zk_up 0) under its `name:port`. A failure is warned about once, until the
   * name resolves again. An IP address stands for itself.
   */
  async resolve(): Promise<void> {
    const resolveName = this.options.resolve ?? defaultResolve;
    const previous = new Map<string, ServerEndpoint[]>();
    for (const endpoint of this.resolved) {
      const name = (endpoint as ResolvedEndpoint).name;
      if (name !== undefined) previous.set(name, [...(previous.get(name) ?? []), endpoint]);
    }
    const next: ServerEndpoint[] = [];
    const seen = new Set<string>();
    for (const server of this.servers) {
      let endpoints: ServerEndpoint[];
      if (isIP(server.host) !== 0) {
        endpoints = [server];
      } else {
        try {
          const addresses = [...new Set(await resolveName(server.host))].sort();
          if (addresses.length === 0) throw new Error('no addresses');
          const single = addresses.length === 1;
          endpoints = addresses.map((address): ResolvedEndpoint => ({
            host: address,
            port: server.port,
            name: server.host,
            single,
          }));
          this.resolutions.inc({ result: 'ok' });
          this.noteResolved(formatEndpoint(server), endpoints.map(formatEndpoint));
          this.failingNames.delete(server.host);
          const before = (previous.get(server.host) ?? []).map(formatEndpoint).sort();
          const after = endpoints.map(formatEndpoint);
          if (before.join(',') !== after.join(','))
            this.options.logger.info({ domain: server.host, servers: after, before }, 'coordination servers resolved');
        } catch (err) {
          this.resolutions.inc({ result: 'failed' });
          const kept = previous.get(server.host)?.filter((endpoint) => !(endpoint as ResolvedEndpoint).unresolved);
          endpoints =
            kept !== undefined && kept.length > 0
              ? kept
              : [
                  {
                    host: server.host,
                    port: server.port,
                    name: server.host,
                    single: true,
                    unresolved: true,
                  } as ResolvedEndpoint,
                ];
          const first = !this.failingNames.has(server.host);
          this.failingNames.add(server.host);
          this.options.logger[first ? 'warn' : 'debug'](
            { domain: server.host, error: errorMessage(err), keeping: kept?.map(formatEndpoint) ?? [] },
            kept !== undefined && kept.length > 0
              ? 'cannot resolve coordination server name; its last addresses are read'
              : 'cannot resolve coordination server name; reported as unresolved (zk_up 0) until it resolves',
          );
        }
      }
      for (const endpoint of endpoints) {
        const key = serverLabel(endpoint);
        if (!seen.has(key)) {
          seen.add(key);
          next.push(endpoint);
        }
      }
    }
    this.resolved = next;
  }

  /** Exposes a name's new answer; a failed resolution leaves the last one, as the servers read do. */
  private noteResolved(name: string, addresses: readonly string[]): void {
    for (const address of this.addressLabels.get(name) ?? [])
      if (!addresses.includes(address)) this.resolvedAddresses.remove({ name, address });
    for (const address of addresses) this.resolvedAddresses.set({ name, address }, 1);
    this.addressLabels.set(name, [...addresses]);
    this.resolvedAt.set({ name }, Date.now() / 1000);
  }

  /**
   * One scrape: every server at once, each bounded by `deadline`. Scrapes that arrive while one
   * runs share it (two stores scraping one exporter do not double the servers' load).
   */
  metrics(deadline: number): Promise<ExpositionBody> {
    if (this.running !== undefined) {
      this.sharedScrapes.inc({ path: '/metrics' });
      return this.running;
    }
    const running = this.collect(deadline).finally(() => {
      if (this.running === running) this.running = undefined;
    });
    this.running = running;
    return running;
  }

  private async collect(deadline: number): Promise<ExpositionBody> {
    const end = this.scrapeDuration.startTimer({ path: '/metrics' });
    const started = performance.now();
    const reading = Promise.all(this.resolved.map((endpoint) => this.read(endpoint, deadline)));
    // Read while the servers answer.
    const processText = this.options.processMetrics?.();
    processText?.catch(() => undefined); // awaited below, once the servers are in
    const reads = await reading;
    this.findLeaderOnly(reads);
    const servers = reads.map(({ prepared, error }) => {
      this.scrapes.inc({ status: prepared.status });
      this.noteStatus(prepared.host, prepared.status, error);
      return prepared;
    });
    const read = performance.now();
    const text = writeServers(servers);
    const rendered = performance.now();
    end();
    const processPart = (await processText) ?? '';
    // Read last, so that the scrapes that joined this collection are counted in its body.
    const body = Buffer.from(text + processPart + (await this.options.registry.metrics()), 'utf8');
    if (this.options.logger.isLevelEnabled('debug')) {
      const ms = (t: number) => Math.round(t * 100) / 100;
      this.options.logger.debug(
        {
          servers: servers.length,
          readMs: ms(read - started),
          renderMs: ms(rendered - read),
          selfMs: ms(performance.now() - rendered),
          bytes: body.length,
        },
        'scrape collected',
      );
    }
    return expositionBody(body);
  }

  /**
   * A leader that serves no clients (`leaderServes=no` in its zoo.cfg) answers mntr as a server
   * without quorum does. When exactly one server says so while others answer as followers and none
   * as leader, the followers have a leader, and it can only be that one: it is reported as
   * `leader_only` (zk_up 1, zk_server_leader 1, no mntr figures). With several such servers the
   * leader cannot be told from a server still joining, and all stay `not_serving`.
   */
  private findLeaderOnly(reads: Array<{ prepared: PreparedServer; error: string | undefined }>): void {
    const notServing = reads.filter(({ prepared }) => prepared.status === 'not_serving');
    if (notServing.length !== 1) return;
    const states = reads.map(({ prepared }) => prepared.state);
    if (states.includes('leader') || !states.includes('follower')) return;
    const read = notServing[0]!;
    read.prepared = prepareServer({ host: read.prepared.host, status: 'leader_only', entries: [] });
  }

  /** One server's reading, prepared for rendering as soon as it is in. */
  private async read(
    endpoint: ServerEndpoint,
    deadline: number,
  ): Promise<{ prepared: PreparedServer; error: string | undefined }> {
    const host = serverLabel(endpoint);
    if ((endpoint as ResolvedEndpoint).unresolved) {
      return {
        prepared: prepareServer({ host, status: 'unresolved', entries: [] }),
        error: 'the name does not resolve',
      };
    }
    let reading: ServerReading;
    let error: string | undefined;
    try {
      const reply = await fourLetterWord(endpoint.host, endpoint.port, 'mntr', deadline);
      const parsed = parseMntr(reply, { maxKeys: this.options.maxKeys ?? DEFAULT_MAX_KEYS });
      if (parsed.kind === 'metrics') {
        reading = { host, status: 'ok', entries: parsed.entries };
        this.keysDropped.inc({ zk_host: host, reason: 'limit' }, parsed.dropped);
        this.keysDropped.inc({ zk_host: host, reason: 'skipped' }, parsed.skippedCount);
        if (parsed.skippedCount > 0)
          this.options.logger.debug(
            { zkHost: host, skipped: parsed.skipped, count: parsed.skippedCount },
            'mntr lines skipped',
          );
        if (parsed.dropped > 0) this.noteDropped(host, parsed.dropped);
      } else {
        reading = { host, status: parsed.kind, entries: [] };
      }
    } catch (err) {
      reading = { host, status: statusOf(err), entries: [] };
      error = errorMessage(err);
    }
    const prepared = prepareServer(reading);
    if (prepared.skipped > 0) this.keysDropped.inc({ zk_host: host, reason: 'skipped' }, prepared.skipped);
    return { prepared, error };
  }

  /** Servers warned about for answering more keys than read, so that it is said once, not every scrape. */
  private readonly droppedWarned = new Set<string>();

  private noteDropped(host: string, dropped: number): void {
    if (this.droppedWarned.has(host)) return;
    this.droppedWarned.add(host);
    const max = this.options.maxKeys ?? DEFAULT_MAX_KEYS;
    this.options.logger.warn(
      { zkHost: host, dropped, maxKeys: max },
      `coordination server ${host} answered mntr with more than ${max} keys: the first ${max} are read, ` +
        `${dropped} dropped (cachemon_zk_mntr_keys_dropped_total; --mntr.max-keys raises the limit)`,
    );
  }

  /** One log line when a server's status changes (and for the first failure). */
  private noteStatus(host: string, status: ServerStatus, error: string | undefined): void {
    const last = this.lastStatus.get(host);
    if (last === status) return;
    this.lastStatus.set(host, status);
    const logger = this.options.logger;
    switch (status) {
      case 'ok':
        if (last !== undefined) logger.info({ zkHost: host, was: last }, 'coordination server answers mntr again');
        return;
      case 'not_whitelisted':
        logger.error(
          { zkHost: host },
          `coordination server ${host} refuses mntr: it is not on its four-letter-word whitelist. ` +
            'Add mntr to 4lw.commands.whitelist in its zoo.cfg (e.g. 4lw.commands.whitelist=mntr,srvr,ruok) and restart it',
        );
        return;
      case 'not_serving':
        logger.warn(
          { zkHost: host },
          `coordination server ${host} is not serving requests (no quorum, or still joining the ensemble)`,
        );
        return;
      case 'leader_only':
        logger.info(
          { zkHost: host, was: last },
          `coordination server ${host} serves no clients while the other servers follow a leader: ` +
            'taken to be the leader of an ensemble with leaderServes=no (it has no mntr figures)',
        );
        return;
      case 'protocol':
        // The error in the message only: a preview of what the server sent, escaped, once.
        logger.warn(
          { zkHost: host, was: last },
          `coordination server ${host} answered mntr with something that is no mntr reply: ${error ?? 'unknown'}`,
        );
        return;
      case 'unresolved':
        // resolve() has warned, with the resolver's error.
        logger.debug(
          { zkHost: host, was: last },
          `coordination server ${host} cannot be read: its name does not resolve`,
        );
        return;
      default:
        logger.warn({ zkHost: host, status, error }, `coordination server ${host} cannot be read: ${status}`);
    }
  }
}

interface ResolvedEndpoint extends ServerEndpoint {
  /** The name in --zk-hosts this address came from. */
  readonly name: string;
  /** The name resolved to this address alone. */
  readonly single: boolean;
  /** The name never resolved: `host` is the name itself, and the server is not read. */
  readonly unresolved?: boolean;
}

function statusOf(err: unknown): ServerStatus {
  if (!isCachemonError(err)) return 'protocol';
  if (err.code === Errors.NODE_TIMEOUT.code) return 'timeout';
  if (err.code === Errors.NODE_UNREACHABLE.code || err.code === Errors.NODE_CLOSED.code) return 'unreachable';
  return 'protocol';
}

/**
 * A name's IPv4 addresses, or its IPv6 ones when it has none: a name with both kinds of records
 * names each server twice, and one server must not be reported as two.
 */
async function defaultResolve(name: string): Promise<string[]> {
  const entries = await lookup(name, { all: true });
  const v4 = entries.filter((entry) => entry.family === 4);
  return (v4.length > 0 ? v4 : entries).map((entry) => entry.address);
}
