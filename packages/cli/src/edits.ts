/**
 * Edits of the tree's files that keep what an operator wrote around them: comments, order and
 * formatting of the YAML target files (yaml's document API), the JSON-with-comments configs
 * (jsonc-parser's edits) and the bash env files (line by line).
 */
import { applyEdits, modify } from 'jsonc-parser';
import type { JSONPath } from 'jsonc-parser';
import { isMap, isScalar, isSeq, parseDocument, YAMLSeq } from 'yaml';
import type { Document } from 'yaml';
import { readJsonc } from './tree.js';

export interface TargetEntry {
  readonly targets: readonly string[];
  readonly labels?: Readonly<Record<string, string>>;
}

/** A target file's entries, or an error naming the file and what is wrong with it. */
export function readTargets(path: string, text: string): TargetEntry[] {
  const doc = parseTargets(path, text);
  return (doc.toJS() ?? []) as TargetEntry[];
}

function parseTargets(path: string, text: string): Document {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw new Error(`${path}: not valid YAML: ${doc.errors[0]!.message.split('\n')[0]}`);
  const value: unknown = doc.toJS();
  if (value === null || value === undefined) return doc;
  if (!Array.isArray(value)) throw new Error(`${path}: a target file is a list of entries (- targets: [...])`);
  for (const [i, entry] of value.entries()) {
    const e = entry as { targets?: unknown; labels?: unknown };
    if (
      typeof e !== 'object' ||
      e === null ||
      !Array.isArray(e.targets) ||
      !e.targets.every((t) => typeof t === 'string')
    )
      throw new Error(`${path}: entry ${i + 1} has no list of targets (- targets: ["<host>:<port>"])`);
    if (e.labels !== undefined && (typeof e.labels !== 'object' || e.labels === null || Array.isArray(e.labels)))
      throw new Error(`${path}: entry ${i + 1}: labels is not a map`);
  }
  return doc;
}

/** The text with an entry appended (an empty `[]` becomes a block list); comments stay. */
export function addTargetEntry(path: string, text: string, entry: TargetEntry): string {
  const doc = parseTargets(path, text);
  const node = doc.createNode(entry);
  if (isMap(node)) {
    const targets = node.get('targets', true);
    if (isSeq(targets)) {
      targets.flow = true;
      for (const t of targets.items) if (isScalar(t)) t.type = 'QUOTE_DOUBLE';
    }
  }
  if (isSeq(doc.contents)) {
    doc.contents.flow = false;
    doc.contents.items.push(node);
  } else {
    const seq = new YAMLSeq();
    seq.items.push(node);
    const comment = doc.contents?.commentBefore;
    doc.contents = seq;
    if (comment) seq.commentBefore = comment;
  }
  return doc.toString({ flowCollectionPadding: false });
}

/**
 * The text without the targets `drop` picks: a target removed from its entry, an entry left with
 * none removed; no entry left gives `[]`. Comments of the other entries stay.
 */
export function removeTargets(
  path: string,
  text: string,
  drop: (target: string, labels: Readonly<Record<string, string>>) => boolean,
): string {
  const doc = parseTargets(path, text);
  if (!isSeq(doc.contents)) return text;
  const seq = doc.contents;
  // The file's leading comment belongs to the first entry once there is one: it stays with the file.
  const leading = (seq.items[0] as { commentBefore?: string } | undefined)?.commentBefore;
  seq.items = seq.items.filter((item) => {
    if (!isMap(item)) return true;
    const labels = ((item.get('labels') as { toJSON?: () => unknown } | undefined)?.toJSON?.() ?? {}) as Record<
      string,
      string
    >;
    const targets = item.get('targets', true);
    if (!isSeq(targets)) return true;
    targets.items = targets.items.filter((t) => !(isScalar(t) && drop(String(t.value), labels)));
    return targets.items.length > 0;
  });
  const first = seq.items[0] as { commentBefore?: string } | undefined;
  if (leading && first && !first.commentBefore) first.commentBefore = leading;
  if (seq.items.length === 0) {
    seq.flow = true;
    if (leading && !seq.commentBefore) seq.commentBefore = leading;
  }
  return doc.toString({ flowCollectionPadding: false });
}

/** A JSON-with-comments text with one value set (undefined: removed), its formatting and comments kept. */
export function setJsonc(text: string, path: JSONPath, value: unknown): string {
  const indent = /\n( +)"/.exec(text)?.[1]?.length ?? 2;
  const edits = modify(text, path, value, { formattingOptions: { insertSpaces: true, tabSize: indent, eol: '\n' } });
  return applyEdits(text, edits);
}

/** Checks the edited JSON still parses (a JSON-with-comments file), naming the file otherwise. */
export function checkJsonc(file: string, text: string): Record<string, unknown> {
  return readJsonc(file, text);
}

/** Quotes a value for a bash env file when it needs it. */
function shellWord(value: string): string {
  return /^[A-Za-z0-9_.:/@%+,=-]*$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * An env file's text with NAME set: the active line replaced, else a commented-out `#NAME=` line
 * taken back, else a line added. An array value is written as a bash array.
 */
export function setEnvLine(text: string, name: string, value: string | readonly string[]): string {
  const line = `${name}=${typeof value === 'string' ? shellWord(value) : `(${value.map(shellWord).join(' ')})`}`;
  const active = new RegExp(`^${name}=.*$`, 'm');
  if (active.test(text)) return text.replace(active, () => line);
  const commented = new RegExp(`^#\\s?${name}=.*$`, 'm');
  if (commented.test(text)) return text.replace(commented, () => line);
  return `${text.replace(/\n*$/, '\n')}${line}\n`;
}

/** An env file's text with NAME's active line commented out (kept as an example). */
export function unsetEnvLine(text: string, name: string): string {
  return text.replace(new RegExp(`^${name}=(.*)$`, 'm'), (_m, v: string) => `#${name}=${v}`);
}
