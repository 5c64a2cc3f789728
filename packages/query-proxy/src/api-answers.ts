/** Prometheus' success and error bodies, and a `Server-Timing` entry per group asked. */
import { errorMessage, isCachemonError } from '@cachemon/core';
import type { FastifyReply, FastifyRequest } from '@cachemon/core';
import type { ServerGroup } from './config.js';

export type Endpoint = 'query' | 'query_range' | 'series' | 'labels' | 'label_values' | 'metadata';
/** Prometheus' error types, and the web config's refusals (basic auth, client certificate). */
type ErrorType =
  'bad_data' | 'timeout' | 'unavailable' | 'canceled' | 'internal' | 'execution' | 'unauthorized' | 'forbidden';

export const JSON_TYPE = 'application/json';
const STATUS_OF: Readonly<Record<ErrorType, number>> = {
  bad_data: 400,
  execution: 422,
  timeout: 503,
  unavailable: 503,
  canceled: 499,
  internal: 500,
  unauthorized: 401,
  forbidden: 403,
};

/** An answer in Prometheus' error shape. */
export class ApiError extends Error {
  constructor(
    readonly errorType: ErrorType,
    message: string,
    readonly status = STATUS_OF[errorType],
  ) {
    super(message);
  }
}

/** How long one group took, and why it failed if it did. */
export interface Timing {
  readonly group: ServerGroup;
  readonly ms: number;
  readonly failure?: string;
}

/** A success in the API's shape, with Prometheus' `warnings` when there are any. */
export function successBody(data: unknown, warnings: readonly string[]): string {
  return JSON.stringify(warnings.length > 0 ? { status: 'success', data, warnings } : { status: 'success', data });
}

/** Prometheus' errorType for an HTTP status, for answers made outside the API routes. */
export function errorTypeFor(status: number): ErrorType {
  if (status === 401) return 'unauthorized';
  if (status === 403) return 'forbidden';
  if (status === 408 || status === 504) return 'timeout';
  if (status === 422) return 'execution';
  if (status === 499) return 'canceled';
  if (status === 503) return 'unavailable';
  return status >= 500 ? 'internal' : 'bad_data';
}

/** Every error the server answers outside the API routes (core's `errorBody`), in the API's shape. */
export function apiShapedBody(status: number, _code: string, message: string): string {
  return JSON.stringify({ status: 'error', errorType: errorTypeFor(status), error: message });
}

/** An error in the API's shape. */
export function errorBody(error: ApiError): string {
  return JSON.stringify({ status: 'error', errorType: error.errorType, error: error.message });
}

export function serverTiming(timings: readonly Timing[]): string {
  return timings
    .map((t) => {
      const desc = (t.failure ? `${t.group.name} failed: ${t.failure}` : t.group.name)
        .replace(/[\\"]/g, '\\$&')
        .replace(/[\r\n]+/g, ' ');
      return `g${t.group.index};desc="${desc}";dur=${t.ms.toFixed(2)}`;
    })
    .join(', ');
}

/** The API's error handler: errors in Prometheus' shape, whatever threw them (a body too large included). */
export function apiErrorHandler(bodyLimitBytes: number) {
  return (err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const { code, statusCode } = err as { code?: unknown; statusCode?: unknown };
    let error: ApiError;
    if (err instanceof ApiError) error = err;
    else if (isCachemonError(err) && err.status < 500) {
      // The web config's checks, run before the route: a refusal to answer, not a failure of the proxy.
      error = new ApiError(
        err.status === 401 ? 'unauthorized' : err.status === 403 ? 'forbidden' : 'bad_data',
        err.message,
        err.status,
      );
    } else if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      error = new ApiError('bad_data', `the request body is larger than ${bodyLimitBytes} bytes`, 413);
    } else if (typeof statusCode === 'number' && statusCode < 500) {
      error = new ApiError('bad_data', errorMessage(err), statusCode);
    } else {
      request.log.error({ err, url: request.url }, 'request failed');
      error = new ApiError('internal', `internal error: ${errorMessage(err)}`);
    }
    // A route's error handler returns nothing; the reply is sent here.
    void reply.code(error.status).type(JSON_TYPE).send(errorBody(error));
  };
}
