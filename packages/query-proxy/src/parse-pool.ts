/**
 * Where queries are parsed: a short one at once, a long one in a worker thread, so that no query's
 * parse (a 16 KiB one can take tens of milliseconds) holds up the other requests.
 */
import { Worker } from 'node:worker_threads';
import { parseQuery, PromQLParseError } from './planner.js';
import type { ParsedQuery } from './planner.js';
import type { ParseRequest, ParseResponse } from './plan-worker.js';

/** Queries up to this long are parsed on the event loop: well under a millisecond for most. */
export const INLINE_PARSE_CHARS = 1024;

interface Pending {
  readonly query: string;
  resolve(parsed: ParsedQuery): void;
  reject(err: Error): void;
}

export class ParsePool {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;

  parse(query: string): Promise<ParsedQuery> {
    if (query.length <= INLINE_PARSE_CHARS) {
      try {
        return Promise.resolve(parseQuery(query));
      } catch (err) {
        return Promise.reject(err);
      }
    }
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      this.pending.set(id, { query, resolve, reject });
      this.started().postMessage({ id, query } satisfies ParseRequest);
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (worker) await worker.terminate();
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL('./plan-worker.js', import.meta.url));
    // Idle, it must not keep the process alive; a parse waited for keeps it busy anyway.
    worker.unref();
    worker.on('message', (response: ParseResponse) => {
      const waiting = this.pending.get(response.id);
      if (!waiting) return;
      this.pending.delete(response.id);
      if ('parsed' in response) waiting.resolve(response.parsed);
      else if ('syntax' in response)
        waiting.reject(new PromQLParseError(response.syntax.position, waiting.query, response.syntax.detail));
      else waiting.reject(new Error(`parsing the query failed: ${response.failure}`));
    });
    const lost = (why: string) => {
      if (this.worker === worker) this.worker = undefined;
      for (const [id, waiting] of this.pending) {
        this.pending.delete(id);
        waiting.reject(new Error(`parsing the query failed: ${why}`));
      }
    };
    worker.on('error', (err) => lost(err.message));
    worker.on('exit', (code) => lost(`the parser thread exited (${code})`));
    this.worker = worker;
    return worker;
  }
}
