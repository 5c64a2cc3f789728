/**
 * Every cache and coordination hostname must resolve to the address its node registered with.
 * Resolved with the system resolver, as the exporters' machines do, `concurrency` at a time, every
 * interval and at once for a new name.
 */
import { isIP } from 'node:net';
import { errorMessage } from '@cachemon/core';
import type { Resolver } from '@cachemon/arcus';
import type { HostnameProblem } from './view.js';

export interface HostnameTarget {
  readonly ensemble: string;
  readonly kind: 'cache' | 'coordination';
  readonly hostname: string;
  /** Node `ip:port`, or the configured `name:port` of a coordination server. */
  readonly address: string;
  /** The IP the name must resolve to (a cache node's registered address); undefined = any. */
  readonly expected?: string;
}

interface Resolution {
  readonly addresses: readonly string[];
  readonly error?: string;
}

export interface HostnameLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface HostnameCheckerOptions {
  readonly resolver: Resolver;
  readonly intervalMs: number;
  readonly concurrency?: number;
  readonly logger?: HostnameLogger;
  /** Called after resolutions changed something (problems or coordination addresses). */
  readonly onChange?: () => void;
}

function problemKey(p: HostnameProblem): string {
  return `${p.ensemble}\u0000${p.kind}\u0000${p.hostname}\u0000${p.address}\u0000${p.problem}`;
}

export class HostnameChecker {
  private targets: readonly HostnameTarget[] = [];
  private readonly resolutions = new Map<string, Resolution>();
  private problemList: readonly HostnameProblem[] = [];
  private problemKeys = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private rerun = false;
  private stopped = false;
  /** Lookups made, by result; for the provider's metrics. */
  readonly lookups = { ok: 0, failed: 0 };

  constructor(private readonly options: HostnameCheckerOptions) {}

  get problems(): readonly HostnameProblem[] {
    return this.problemList;
  }

  /** Addresses a name resolved to last; undefined before its first lookup or when it failed. */
  addressesOf(hostname: string): readonly string[] | undefined {
    const resolution = this.resolutions.get(hostname);
    return resolution === undefined || resolution.error !== undefined ? undefined : resolution.addresses;
  }

  start(): void {
    const tick = () => {
      if (this.stopped) return;
      void this.resolveAll(true).finally(() => {
        if (!this.stopped) this.timer = setTimeout(tick, this.options.intervalMs);
      });
    };
    this.timer = setTimeout(tick, this.options.intervalMs);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** Replaces the names to check; names never resolved before are resolved at once. */
  setTargets(targets: readonly HostnameTarget[]): Promise<void> {
    this.targets = targets;
    const resolutions = this.resolutions;
    const names = new Set(targets.map((t) => t.hostname).filter((n) => n !== '' && isIP(n) === 0));
    for (const name of [...resolutions.keys()]) if (!names.has(name)) resolutions.delete(name);
    this.evaluate();
    return this.resolveAll(false);
  }

  /** Resolves every name (all = true) or only those never resolved; runs one pass at a time. */
  resolveAll(all: boolean): Promise<void> {
    if (this.running !== undefined) {
      this.rerun = true;
      return this.running;
    }
    this.running = this.pass(all).finally(() => {
      this.running = undefined;
      if (this.rerun && !this.stopped) {
        this.rerun = false;
        void this.resolveAll(false);
      }
    });
    return this.running;
  }

  private async pass(all: boolean): Promise<void> {
    const names = [...new Set(this.targets.map((t) => t.hostname))].filter(
      (n) => n !== '' && isIP(n) === 0 && (all || !this.resolutions.has(n)),
    );
    if (names.length === 0) return;
    let changed = false;
    let next = 0;
    const worker = async () => {
      while (next < names.length && !this.stopped) {
        const name = names[next++]!;
        let resolution: Resolution;
        try {
          const addresses = [...new Set(await this.options.resolver(name))].sort();
          resolution = addresses.length === 0 ? { addresses, error: 'no addresses' } : { addresses };
        } catch (err) {
          resolution = { addresses: [], error: errorMessage(err) };
        }
        if (resolution.error === undefined) this.lookups.ok++;
        else this.lookups.failed++;
        const before = this.resolutions.get(name);
        if (
          before === undefined ||
          before.error !== resolution.error ||
          before.addresses.join() !== resolution.addresses.join()
        ) {
          changed = true;
        }
        this.resolutions.set(name, resolution);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.options.concurrency ?? 8, names.length) }, worker));
    if (changed && !this.stopped) {
      this.evaluate();
      this.options.onChange?.();
    }
  }

  /** Recomputes the problems from the targets and what their names resolved to; logs each change. */
  private evaluate(): void {
    const problems: HostnameProblem[] = [];
    for (const target of this.targets) {
      if (target.hostname === '') {
        if (target.kind === 'cache') problems.push({ ...base(target), problem: 'no_hostname', resolved: [] });
        continue;
      }
      if (isIP(target.hostname) !== 0) continue;
      const resolution = this.resolutions.get(target.hostname);
      if (resolution === undefined) continue;
      if (resolution.error !== undefined) {
        problems.push({ ...base(target), problem: 'unresolved', resolved: [], error: resolution.error });
      } else if (target.expected !== undefined && !resolution.addresses.includes(target.expected)) {
        problems.push({ ...base(target), problem: 'mismatch', resolved: resolution.addresses });
      }
    }
    const keys = new Set(problems.map(problemKey));
    const logger = this.options.logger;
    if (logger !== undefined) {
      for (const problem of problems) {
        if (this.problemKeys.has(problemKey(problem))) continue;
        logger.warn(
          { ...problem, resolved: problem.resolved.join(',') },
          problem.problem === 'unresolved'
            ? `hostname ${problem.hostname} of ${problem.address} does not resolve here; the spec requires it to (add it to the hosts file or DNS)`
            : problem.problem === 'mismatch'
              ? `hostname ${problem.hostname} resolves to ${problem.resolved.join(',')}, not to ${problem.address}'s address; the spec requires the same names everywhere`
              : `node ${problem.address} registered without a hostname`,
        );
      }
      for (const old of this.problemList) {
        if (!keys.has(problemKey(old)))
          logger.info(
            { ensemble: old.ensemble, hostname: old.hostname, address: old.address },
            `hostname problem resolved (${old.problem})`,
          );
      }
    }
    this.problemList = problems;
    this.problemKeys = keys;
  }
}

function base(target: HostnameTarget): Pick<HostnameProblem, 'ensemble' | 'kind' | 'hostname' | 'address'> {
  return { ensemble: target.ensemble, kind: target.kind, hostname: target.hostname, address: target.address };
}
