export * from './topology/index.js';
export * from './protocol/index.js';
