/** Coded errors: a stable `code` for logs and tests, and an HTTP status; every code is in this one table. */

export interface ErrorDefinition {
  readonly code: string;
  readonly status: number;
  readonly summary: string;
}

function def(code: string, status: number, summary: string): ErrorDefinition {
  return { code, status, summary };
}

export const Errors = {
  CONFIG_INVALID: def('CACHEMON_CONFIG_INVALID', 400, 'configuration is invalid'),
  CONFIG_UNREADABLE: def('CACHEMON_CONFIG_UNREADABLE', 400, 'configuration file cannot be read'),
  FLAG_INVALID: def('CACHEMON_FLAG_INVALID', 400, 'command-line flag is invalid'),
  DURATION_INVALID: def('CACHEMON_DURATION_INVALID', 400, 'duration is invalid'),
  WEB_CONFIG_INVALID: def('CACHEMON_WEB_CONFIG_INVALID', 400, 'web config file is invalid'),
  LOG_FILE_UNWRITABLE: def('CACHEMON_LOG_FILE_UNWRITABLE', 500, 'log file cannot be opened'),
  LISTEN_FAILED: def('CACHEMON_LISTEN_FAILED', 500, 'cannot listen on the address'),
  BAD_REQUEST: def('CACHEMON_BAD_REQUEST', 400, 'bad request'),
  NOT_FOUND: def('CACHEMON_NOT_FOUND', 404, 'not found'),
  UNSUPPORTED_MEDIA_TYPE: def('CACHEMON_UNSUPPORTED_MEDIA_TYPE', 415, 'unsupported content type'),
  NOT_READY: def('CACHEMON_NOT_READY', 503, 'not ready to serve'),
  UNAUTHORIZED: def('CACHEMON_UNAUTHORIZED', 401, 'authentication required'),
  FORBIDDEN: def('CACHEMON_FORBIDDEN', 403, 'client certificate refused'),
  BODY_TOO_LARGE: def('CACHEMON_BODY_TOO_LARGE', 413, 'request body too large'),
  HEADERS_TOO_LARGE: def('CACHEMON_HEADERS_TOO_LARGE', 431, 'request headers too large'),
  REQUEST_TIMEOUT: def('CACHEMON_REQUEST_TIMEOUT', 408, 'request not received in time'),
  NODE_TIMEOUT: def('CACHEMON_NODE_TIMEOUT', 504, 'server did not answer in time'),
  NODE_UNREACHABLE: def('CACHEMON_NODE_UNREACHABLE', 502, 'server unreachable'),
  NODE_PROTOCOL: def('CACHEMON_NODE_PROTOCOL', 502, 'server reply is malformed'),
  NODE_ERROR_REPLY: def('CACHEMON_NODE_ERROR_REPLY', 502, 'server answered with an error'),
  NODE_CLOSED: def('CACHEMON_NODE_CLOSED', 502, 'connection closed'),
  ZK_UNAVAILABLE: def('CACHEMON_ZK_UNAVAILABLE', 503, 'coordination ensemble unavailable'),
  INTERNAL: def('CACHEMON_INTERNAL', 500, 'internal error'),
} as const;

export type ErrorCode = (typeof Errors)[keyof typeof Errors]['code'];

export class CachemonError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(
    definition: ErrorDefinition,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CachemonError';
    this.code = definition.code;
    this.status = definition.status;
    this.details = options?.details;
  }

  /** The JSON body every HTTP error answer carries. */
  toJSON(): { status: 'error'; code: string; error: string } {
    return { status: 'error', code: this.code, error: this.message };
  }
}

export function isCachemonError(err: unknown, definition?: ErrorDefinition): err is CachemonError {
  return err instanceof CachemonError && (definition === undefined || err.code === definition.code);
}

/** Message of any thrown value, for logs. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
