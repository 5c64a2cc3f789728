/** The config loader: commented JSON, a strict zod schema, every problem as `<file>: <key.path>: <reason>`. */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  findNodeAtLocation,
  parse as parseJsonc,
  parseTree,
  printParseErrorCode,
  type Node as JsonNode,
  type ParseError,
} from 'jsonc-parser';
import { isMap, isScalar, isSeq, type Document, type LineCounter } from 'yaml';
import type { z } from 'zod';
import { CachemonError, Errors, errorMessage, type ErrorDefinition } from './errors.js';

export interface ConfigIssue {
  readonly path: string;
  readonly message: string;
  /** Where in the file the key is (1-based), when the file's text is known. */
  readonly line?: number;
  readonly column?: number;
}

/** Where a key path is in the file's text (1-based line and column); undefined when it cannot say. */
export type ConfigLocator = (path: ReadonlyArray<PropertyKey>) => { line: number; column: number } | undefined;

export interface ValidateOptions {
  /** Error raised on failure; web config files use their own code. */
  readonly error?: ErrorDefinition;
  /** Puts `:<line>:<column>` after the source in each message. */
  readonly locate?: ConfigLocator;
}

const IDENTIFIER_SAFE = /^[^.[\]\s"']+$/;

/** `ensembleByName.zk1[0]`; keys that would read ambiguously are quoted: `headers["a.b"]`. */
export function formatKeyPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (typeof key === 'symbol') out += `[${key.toString()}]`;
    else if (IDENTIFIER_SAFE.test(key)) out += out === '' ? key : `.${key}`;
    else out += `[${JSON.stringify(key)}]`;
  }
  return out === '' ? '(root)' : out;
}

/** Which file a config was loaded from, and which content: what `cachemon_config_info` exposes. */
export interface ConfigFileIdentity {
  /** Absolute. */
  readonly path: string;
  /** Lowercase hex SHA-256 of the bytes read. */
  readonly sha256: string;
}

/** A config file as read once: its text and the hash of the very bytes that text was decoded from. */
export interface ConfigFileRead {
  readonly file: ConfigFileIdentity;
  readonly text: string;
}

/**
 * Reads the file once, then hashes and decodes that one buffer, so that an edit while the daemon
 * reads cannot make the exposed hash disagree with what it parsed. The reason of a failure drops
 * Node's repeated path so the message names the file once.
 */
export function readConfigFile(file: string): ConfigFileRead {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (err) {
    const reason = errorMessage(err).replace(/, \w+ '.*'$/, '');
    throw new CachemonError(Errors.CONFIG_UNREADABLE, `${file}: cannot read config file: ${reason}`, { cause: err });
  }
  return {
    file: { path: resolve(file), sha256: createHash('sha256').update(bytes).digest('hex') },
    text: bytes.toString('utf8'),
  };
}

function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const lines = text.slice(0, offset).split('\n');
  return { line: lines.length, column: lines[lines.length - 1]!.length + 1 };
}

const PARSE_ERROR_TEXT: Readonly<Record<string, string>> = {
  InvalidSymbol: 'invalid character',
  InvalidNumberFormat: 'invalid number',
  PropertyNameExpected: 'expected a property name in double quotes',
  ValueExpected: 'expected a value',
  ColonExpected: 'expected ":"',
  CommaExpected: 'expected "," between entries',
  CloseBraceExpected: 'expected "}"',
  CloseBracketExpected: 'expected "]"',
  EndOfFileExpected: 'unexpected text after the end of the document',
  InvalidCommentToken: 'invalid comment',
  UnexpectedEndOfComment: 'comment is not closed',
  UnexpectedEndOfString: 'string is not closed',
  UnexpectedEndOfNumber: 'number is cut short',
  InvalidUnicode: 'invalid unicode escape',
  InvalidEscapeCharacter: 'invalid escape character',
  InvalidCharacter: 'invalid character in string',
};

/** Parses JSON that may carry comments and trailing commas, as the shipped example configs do. */
export function parseJsonWithComments(source: string, text: string): unknown {
  if (text.trim() === '') {
    throw new CachemonError(Errors.CONFIG_INVALID, `${source}:1:1: the file is empty (expected a JSON object)`);
  }
  const errors: ParseError[] = [];
  const value: unknown = parseJsonc(text, errors, { allowTrailingComma: true, disallowComments: false });
  const first = errors[0];
  if (first !== undefined) {
    const { line, column } = lineAndColumn(text, first.offset);
    const name = printParseErrorCode(first.error);
    const what = PARSE_ERROR_TEXT[name] ?? name;
    throw new CachemonError(Errors.CONFIG_INVALID, `${source}:${line}:${column}: ${what}`, {
      details: { line, column },
    });
  }
  if (value === undefined) {
    throw new CachemonError(Errors.CONFIG_INVALID, `${source}:1:1: no JSON value (only comments?)`);
  }
  return value;
}

/** Zod reports an absent key as "expected string, received undefined"; operators need "missing". */
function missingKeyMessage(issue: z.core.$ZodRawIssue): string | undefined {
  if (issue.code === 'invalid_type' && issue.input === undefined) return `missing (expected ${issue.expected})`;
  return undefined;
}

/** One entry per problem; an object with several unknown keys yields one entry per key. */
export function configIssues(issues: ReadonlyArray<z.core.$ZodIssue>, locate?: ConfigLocator): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  const add = (keys: ReadonlyArray<PropertyKey>, message: string) => {
    const at = locate?.(keys);
    out.push({ path: formatKeyPath(keys), message, ...(at ? { line: at.line, column: at.column } : {}) });
  };
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) add([...issue.path, key], 'unknown key');
    } else if (issue.code === 'invalid_key') {
      // A record key failed its own schema: its inner messages say why, the path ends at the key.
      const reasons = issue.issues.map((inner) => inner.message).join('; ');
      add(issue.path, `invalid key: ${reasons}`);
    } else {
      add(issue.path, issue.message);
    }
  }
  return out;
}

/**
 * Locates key paths in a YAML document parsed with `lineCounter`: a map entry at its key, a list
 * item at the item; a path that goes further than the file (a missing key) at its last node found.
 */
export function yamlLocator(document: Document, lineCounter: LineCounter): ConfigLocator {
  return (path) => {
    let node: unknown = document.contents;
    let offset = (node as { range?: [number, number] } | null)?.range?.[0];
    for (const key of path) {
      if (isMap(node)) {
        const pair = node.items.find((p) => String(isScalar(p.key) ? p.key.value : p.key) === String(key));
        if (pair === undefined) break;
        offset = (pair.key as { range?: [number, number] } | null)?.range?.[0] ?? offset;
        node = pair.value;
      } else if (isSeq(node) && typeof key === 'number' && node.items[key] !== undefined) {
        node = node.items[key];
        offset = (node as { range?: [number, number] } | null)?.range?.[0] ?? offset;
      } else break;
    }
    if (offset === undefined) return undefined;
    const { line, col } = lineCounter.linePos(offset);
    return { line, column: col };
  };
}

/** Locates key paths in a (commented) JSON text as yamlLocator does in YAML. */
export function jsonLocator(text: string): ConfigLocator {
  const root = parseTree(text, [], { allowTrailingComma: true, disallowComments: false });
  return (path) => {
    if (root === undefined) return undefined;
    const keys = path.filter((k): k is string | number => typeof k !== 'symbol');
    for (let n = keys.length; n >= 0; n--) {
      const node: JsonNode | undefined = n === 0 ? root : findNodeAtLocation(root, keys.slice(0, n));
      if (node === undefined) continue;
      // A property's value: point at its key.
      const at = node.parent?.type === 'property' ? (node.parent.children?.[0] ?? node) : node;
      return lineAndColumn(text, at.offset);
    }
    return undefined;
  };
}

/** Validates an already-parsed value; `source` names it in messages (a file, a flag, an endpoint). */
export function validateConfig<T>(
  source: string,
  raw: unknown,
  schema: z.ZodType<T>,
  options: ValidateOptions = {},
): T {
  const result = schema.safeParse(raw, { error: missingKeyMessage });
  if (result.success) return result.data;
  const issues = configIssues(result.error.issues, options.locate);
  const where = (issue: ConfigIssue) => (issue.line === undefined ? source : `${source}:${issue.line}:${issue.column}`);
  const message = issues.map((issue) => `${where(issue)}: ${issue.path}: ${issue.message}`).join('\n');
  throw new CachemonError(options.error ?? Errors.CONFIG_INVALID, message, { details: { issues } });
}

/** A config with the file it was loaded from. */
export type LoadedConfig<T> = T & { readonly file: ConfigFileIdentity };

/** Reads, parses and validates a JSON config file; throws CachemonError on any problem. */
export function loadJsonConfig<T extends object>(file: string, schema: z.ZodType<T>): LoadedConfig<T> {
  const read = readConfigFile(file);
  const raw = parseJsonWithComments(file, read.text);
  return { ...validateConfig(file, raw, schema, { locate: jsonLocator(read.text) }), file: read.file };
}
