export { ARCUS_ROOTS, addLastJoins, mappingNodeAddress, parseMappingChild, parseRegistration } from './znodes.js';
export type { ArcusRoot, MappingEntry, Registration, ReplicationRole } from './znodes.js';
export { EMPTY_TOPOLOGY, buildTopology, nodeKey } from './model.js';
export type { CacheNode, RootSnapshot, Topology } from './model.js';
export { expandServers, joinHostPort, splitHostPort, systemResolver } from './resolve.js';
export type { Resolver } from './resolve.js';
export { TopologyWatcher } from './watcher.js';
export type { TopologyWatcherOptions, WatcherLogger, WatcherState } from './watcher.js';
