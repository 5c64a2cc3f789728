import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Replies of a live ARCUS 1.15.0 server captured byte for byte (CRLF kept), and the transcript of
 * the session they came from: the parser fixtures and the model the ARCUS test double answers like.
 * Compiled to dist/src/; the fixtures stay in the package's source tree.
 */
export const ARCUS_SAMPLES_DIR = fileURLToPath(new URL('../../fixtures/arcus-1.15.0/', import.meta.url));

/** A captured reply (or transcript.txt), byte for byte, as a latin1 string. */
export function arcusSample(name: string): string {
  return readFileSync(new URL(name, new URL('../../fixtures/arcus-1.15.0/', import.meta.url)), 'latin1');
}

/** Names of the captured replies (`NN-*.raw`), sorted. */
export function arcusSampleNames(): string[] {
  return readdirSync(ARCUS_SAMPLES_DIR)
    .filter((name) => name.endsWith('.raw'))
    .sort();
}

/** Requests of transcript.txt in order, each with its data lines joined by CRLF. */
export function arcusTranscriptCommands(): string[] {
  const commands: string[] = [];
  let current: string[] | undefined;
  for (const line of arcusSample('transcript.txt').split('\n')) {
    if (line.startsWith('>>> ')) {
      current ??= [];
      current.push(line.slice(4));
    } else if (current !== undefined) {
      commands.push(current.join('\r\n'));
      current = undefined;
    }
  }
  return commands;
}
