/**
 * The stats commands the exporters send to one cache node, parsed. One pipelined AsciiConnection
 * per node; every method takes the scrape's absolute deadline.
 */
import { CachemonError, Errors } from '@cachemon/core';
import { AsciiConnection, type AsciiConnectionOptions, type ReplyCallback } from './connection.js';
import { errorReplyOf, parseStats, type StatsReply } from './parse.js';

export type ArcusNodeClientOptions = AsciiConnectionOptions;

/** A `stats prefixlist ...` command line, CRLF included, stays below this many bytes. */
export const PREFIXLIST_MAX_LINE_BYTES = 2048;
/** Names per `stats prefixlist ...`: the server ignores tokens past the 29th, 3 are the command. */
export const PREFIXLIST_MAX_NAMES = 25;

export class ArcusNodeClient {
  readonly address: string;
  /** The node's connection, shared with the QoS probes (runQosProbes). */
  readonly connection: AsciiConnection;

  /** @param address `host:port` or `[ipv6]:port`; throws CachemonError CONFIG_INVALID when malformed. */
  constructor(address: string, options?: ArcusNodeClientOptions) {
    this.connection = new AsciiConnection(address, options);
    this.address = address;
  }

  /** See AsciiConnection.retryAt: skip the node until then after a failure. */
  get retryAt(): number {
    return this.connection.retryAt;
  }

  get lastError(): CachemonError | undefined {
    return this.connection.lastError;
  }

  stats(deadline: number): Promise<StatsReply> {
    return this.statsCommand('stats', deadline);
  }

  /** The `stats` reply's bytes to `done` (valid while it runs), for scanStats: no strings, no promise. */
  statsBytes(deadline: number, done: ReplyCallback): void {
    this.connection.send('stats', { deadline, reply: 'multi' }, done);
  }

  statsSettings(deadline: number): Promise<StatsReply> {
    return this.statsCommand('stats settings', deadline);
  }

  /** ARCUS only; plain memcached answers ERROR (NODE_ERROR_REPLY). */
  statsZookeeper(deadline: number): Promise<StatsReply> {
    return this.statsCommand('stats zookeeper', deadline);
  }

  statsSlabs(deadline: number): Promise<StatsReply> {
    return this.statsCommand('stats slabs', deadline);
  }

  /**
   * Item statistics per prefix, as the replies' bytes for scanPrefixLines (textField `time`):
   * every prefix (refused past max_stats_prefixes, see isTooManyPrefixes), or only `names`.
   */
  prefixItemsBytes(deadline: number, names?: readonly string[]): Promise<Buffer[]> {
    return this.multiBytes(names === undefined ? ['stats prefixes'] : prefixListCommands('item', names), deadline);
  }

  /**
   * Operation counts per prefix (`stats detail dump`, or `stats prefixlist operation ...`), as
   * bytes; rejects like prefixItemsBytes. The server counts only while detail is on.
   */
  prefixOperationsBytes(deadline: number, names?: readonly string[]): Promise<Buffer[]> {
    return this.multiBytes(
      names === undefined ? ['stats detail dump'] : prefixListCommands('operation', names),
      deadline,
    );
  }

  /** The caller is done with every reply's bytes (see AsciiConnection.release). */
  release(): void {
    this.connection.release();
  }

  close(): void {
    this.connection.close();
  }

  private async statsCommand(command: string, deadline: number): Promise<StatsReply> {
    return parseStats(await this.connection.requestBytes(command, { deadline, reply: 'multi' }));
  }

  /** Pipelined: all commands are written at once, replies come back in order. A refusal rejects. */
  private multiBytes(commands: string[], deadline: number): Promise<Buffer[]> {
    return Promise.all(
      commands.map(async (command) => {
        const reply = await this.connection.requestBytes(command, { deadline, reply: 'multi' });
        const refusal = errorReplyOf(reply);
        if (refusal) throw refusal;
        return reply;
      }),
    );
  }
}

/** `stats prefixlist` command lines for `names`, within both limits; every name validated first. */
export function prefixListCommands(subcommand: 'item' | 'operation', names: readonly string[]): string[] {
  for (const name of names) validatePrefixName(name);
  const head = `stats prefixlist ${subcommand}`;
  const budget = PREFIXLIST_MAX_LINE_BYTES - 2 - 1; // CRLF, and "below" the limit
  const commands: string[] = [];
  let line = head;
  let bytes = head.length;
  let count = 0;
  for (const name of names) {
    const nameBytes = Buffer.byteLength(name, 'utf8') + 1; // with its leading space
    if (head.length + nameBytes > budget) {
      throw new CachemonError(
        Errors.CONFIG_INVALID,
        `prefix name too long for one command: ${JSON.stringify(name.slice(0, 80))}`,
        {
          details: { prefix: name },
        },
      );
    }
    if (count === PREFIXLIST_MAX_NAMES || bytes + nameBytes > budget) {
      commands.push(line);
      line = head;
      bytes = head.length;
      count = 0;
    }
    line += ` ${name}`;
    bytes += nameBytes;
    count++;
  }
  if (count > 0) commands.push(line);
  return commands;
}

/** Throws CONFIG_INVALID unless `name` is one command token, so a name cannot smuggle in a command. */
export function validatePrefixName(name: string): void {
  if (typeof name !== 'string' || name.length === 0 || UNSAFE_IN_NAME.test(name)) {
    throw new CachemonError(
      Errors.CONFIG_INVALID,
      `invalid prefix name ${JSON.stringify(String(name).slice(0, 80))}: empty, or holds whitespace or control characters`,
      {
        details: { prefix: name },
      },
    );
  }
}

/** Whitespace, control, format and lone surrogate characters (\s covers every Unicode space). */
const UNSAFE_IN_NAME = /[\s\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/u;
