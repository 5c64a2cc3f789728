/** The worker thread long queries are parsed in (parse-pool.ts): their parse never holds up the event loop. */
import { parentPort } from 'node:worker_threads';
import { errorMessage } from '@cachemon/core';
import { parseQuery, PromQLParseError } from './planner.js';

export interface ParseRequest {
  readonly id: number;
  readonly query: string;
}

export type ParseResponse =
  | { readonly id: number; readonly parsed: ReturnType<typeof parseQuery> }
  | { readonly id: number; readonly syntax: { readonly position: number; readonly detail: string } }
  | { readonly id: number; readonly failure: string };

parentPort?.on('message', ({ id, query }: ParseRequest) => {
  let response: ParseResponse;
  try {
    response = { id, parsed: parseQuery(query) };
  } catch (err) {
    response =
      err instanceof PromQLParseError
        ? { id, syntax: { position: err.position, detail: err.detail } }
        : { id, failure: errorMessage(err) };
  }
  parentPort?.postMessage(response);
});
