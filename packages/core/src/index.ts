export { CachemonError, Errors, errorMessage, isCachemonError } from './errors.js';
export type { ErrorCode, ErrorDefinition } from './errors.js';
