/**
 * Coded errors of the test kit. Tests assert on `code`, never on message text; messages carry the
 * details (paths, ports, the tail of a process log) a person needs to see why a fixture failed.
 */

export const TestkitErrors = {
  PROCESS_START_FAILED: 'TESTKIT_PROCESS_START_FAILED',
  PROCESS_NOT_READY: 'TESTKIT_PROCESS_NOT_READY',
  PROCESS_EXITED: 'TESTKIT_PROCESS_EXITED',
  SOCKET_TIMEOUT: 'TESTKIT_SOCKET_TIMEOUT',
  ZK_CONNECT_TIMEOUT: 'TESTKIT_ZK_CONNECT_TIMEOUT',
  ZK_NO_LEADER: 'TESTKIT_ZK_NO_LEADER',
  ZK_OPERATION_FAILED: 'TESTKIT_ZK_OPERATION_FAILED',
  ARCUS_MAPPING_MISSING: 'TESTKIT_ARCUS_MAPPING_MISSING',
  ARCUS_MAPPING_INVALID: 'TESTKIT_ARCUS_MAPPING_INVALID',
  ARCUS_SERVICE_CODE_MISSING: 'TESTKIT_ARCUS_SERVICE_CODE_MISSING',
  ARCUS_NODE_EXISTS: 'TESTKIT_ARCUS_NODE_EXISTS',
  ARCUS_ALREADY_REGISTERED: 'TESTKIT_ARCUS_ALREADY_REGISTERED',
  INVALID_ARGUMENT: 'TESTKIT_INVALID_ARGUMENT',
} as const;

export type TestkitErrorCode = (typeof TestkitErrors)[keyof typeof TestkitErrors];

export class TestkitError extends Error {
  readonly code: TestkitErrorCode;

  constructor(code: TestkitErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TestkitError';
    this.code = code;
  }
}

export function isTestkitError(err: unknown, code?: TestkitErrorCode): err is TestkitError {
  return err instanceof TestkitError && (code === undefined || err.code === code);
}
