export { DEFAULT_MAX_KEYS, NOT_SERVING_REPLY, NOT_WHITELISTED_REPLY, parseKey, parseMntr, parseValue } from './mntr.js';
export type { MntrEntry, MntrReply } from './mntr.js';
export { fourLetterWord } from './four-letter.js';
export { counterName, GAUGE_RENAMES, LEGACY_GAUGES, shapeEntry, withBaseUnits } from './names.js';
