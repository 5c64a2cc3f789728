/** The prefix statistics replies parsed into plain objects, for tests. */
import { scanPrefixLines } from '../../src/protocol/parse.js';
import { protocolError, QUOTE_LIMIT } from '../../src/protocol/reply-errors.js';
import type { ArcusNodeClient } from '../../src/protocol/node-client.js';

/** One `stats prefixes` / `stats prefixlist item` line. */
export interface PrefixItemStats {
  /** Prefix name; `<null>` stands for keys without a prefix. */
  prefix: string;
  /** Every numeric pair of the line (`itm`, `kitm`, ..., `tsz`, `btsz`, and any field a newer server adds). */
  fields: Record<string, number>;
  /** The `time` field, creation time as the server prints it (`YYYYMMDDhhmmss`, server local time). */
  created?: string;
}

/** One `stats detail dump` / `stats prefixlist operation` line. */
export interface PrefixOperationStats {
  /** Prefix name; `<null>` stands for keys without a prefix. */
  prefix: string;
  /** Every pair of the line: `get`, `hit`, `set`, `del` (plain memcached stops there), `inc`, ..., `sas`. */
  counts: Record<string, number>;
}

/** Parses a `stats prefixes` or `stats prefixlist item ...` reply (text or bytes). */
export function parsePrefixItems(reply: string | Buffer): PrefixItemStats[] {
  const items: PrefixItemStats[] = [];
  parsePrefixLines(reply, 'time', (prefix, fields, created) => {
    items.push(created === undefined ? { prefix, fields } : { prefix, fields, created });
  });
  return items;
}

/** Parses a `stats detail dump` or `stats prefixlist operation ...` reply (text or bytes). */
export function parsePrefixOperations(reply: string | Buffer): PrefixOperationStats[] {
  const operations: PrefixOperationStats[] = [];
  parsePrefixLines(reply, undefined, (prefix, counts) => {
    operations.push({ prefix, counts });
  });
  return operations;
}

/** scanPrefixLines into strings and plain objects. */
function parsePrefixLines(
  reply: string | Buffer,
  textField: string | undefined,
  emit: (prefix: string, numbers: Record<string, number>, text: string | undefined) => void,
): void {
  const bytes = typeof reply === 'string' ? Buffer.from(reply, 'utf8') : reply;
  scanPrefixLines(bytes, textField, (nameStart, nameEnd, ranges, counts, pairs, lineStart, lineEnd) => {
    const numbers: Record<string, number> = {};
    let text: string | undefined;
    for (let i = 0; i < pairs; i++) {
      const field = bytes.toString('utf8', ranges[i * 4], ranges[i * 4 + 1]);
      if (Number.isNaN(counts[i])) {
        text = bytes.toString('utf8', ranges[i * 4 + 2], ranges[i * 4 + 3]);
        continue;
      }
      // The one name a plain object cannot hold as data.
      if (field === '__proto__')
        throw protocolError(
          'invalid field name',
          bytes.toString('utf8', lineStart, Math.min(lineEnd, lineStart + QUOTE_LIMIT + 1)),
        );
      numbers[field] = counts[i]!;
    }
    emit(bytes.toString('utf8', nameStart, nameEnd), numbers, text);
  });
}

/** ArcusNodeClient.prefixItemsBytes, parsed. */
export async function prefixItems(
  node: ArcusNodeClient,
  deadline: number,
  names?: readonly string[],
): Promise<PrefixItemStats[]> {
  return (await node.prefixItemsBytes(deadline, names)).flatMap(parsePrefixItems);
}

/** ArcusNodeClient.prefixOperationsBytes, parsed. */
export async function prefixOperations(
  node: ArcusNodeClient,
  deadline: number,
  names?: readonly string[],
): Promise<PrefixOperationStats[]> {
  return (await node.prefixOperationsBytes(deadline, names)).flatMap(parsePrefixOperations);
}
