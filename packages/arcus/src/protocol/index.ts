/**
 * ARCUS / memcached ascii protocol: reply parsers (pure), the pipelined connection, the per-node
 * stats client and the QoS probes.
 */
export { parseAddress } from './address.js';
export type { NodeAddress } from './address.js';
export { Backoff } from './backoff.js';
export type { BackoffOptions } from './backoff.js';
export { AsciiConnection, DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_MAX_REPLY_BYTES } from './connection.js';
export type { AsciiConnectionOptions, ReplyCallback, RequestOptions } from './connection.js';
export type { ReplyKind } from './framer.js';
export {
  ArcusNodeClient,
  PREFIXLIST_MAX_LINE_BYTES,
  PREFIXLIST_MAX_NAMES,
  prefixListCommands,
  validatePrefixName,
} from './node-client.js';
export type { ArcusNodeClientOptions } from './node-client.js';
export { errorReplyOf, isTooManyPrefixes, parseStats, scanPrefixLines, scanStats } from './parse.js';
export type { PrefixLineVisitor, StatLineVisitor, StatsReply } from './parse.js';
export { COLLECTION_PROBES, KV_PROBES, QOS_EXPIRY_SECONDS, QOS_KEY_PREFIX, runQosProbes } from './qos.js';
export type { QosOptions, QosProbe, QosResult } from './qos.js';
