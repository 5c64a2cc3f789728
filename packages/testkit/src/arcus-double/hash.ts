/**
 * mc_hash of the ARCUS server: Bob Jenkins' lookup3 `hashlittle` (initval 0). The server orders
 * `stats prefixes`, `stats detail dump` and set elements by buckets of this hash, so the double
 * uses it to list things in the same order as the real server.
 */

function rot(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

function word(bytes: Uint8Array, at: number, count: number): number {
  let value = 0;
  for (let i = 0; i < count; i++) value |= (bytes[at + i] ?? 0) << (8 * i);
  return value >>> 0;
}

export function mcHash(text: string): number {
  const bytes = Buffer.from(text, 'latin1');
  let length = bytes.length;
  let a = (0xdeadbeef + length) >>> 0;
  let b = a;
  let c = a;
  let at = 0;
  while (length > 12) {
    a = (a + word(bytes, at, 4)) >>> 0;
    b = (b + word(bytes, at + 4, 4)) >>> 0;
    c = (c + word(bytes, at + 8, 4)) >>> 0;
    a = (a - c) >>> 0;
    a = (a ^ rot(c, 4)) >>> 0;
    c = (c + b) >>> 0;
    b = (b - a) >>> 0;
    b = (b ^ rot(a, 6)) >>> 0;
    a = (a + c) >>> 0;
    c = (c - b) >>> 0;
    c = (c ^ rot(b, 8)) >>> 0;
    b = (b + a) >>> 0;
    a = (a - c) >>> 0;
    a = (a ^ rot(c, 16)) >>> 0;
    c = (c + b) >>> 0;
    b = (b - a) >>> 0;
    b = (b ^ rot(a, 19)) >>> 0;
    a = (a + c) >>> 0;
    c = (c - b) >>> 0;
    c = (c ^ rot(b, 4)) >>> 0;
    b = (b + a) >>> 0;
    length -= 12;
    at += 12;
  }
  if (length === 0) return c;
  a = (a + word(bytes, at, Math.min(length, 4))) >>> 0;
  if (length > 4) b = (b + word(bytes, at + 4, Math.min(length - 4, 4))) >>> 0;
  if (length > 8) c = (c + word(bytes, at + 8, length - 8)) >>> 0;
  c = (c ^ b) >>> 0;
  c = (c - rot(b, 14)) >>> 0;
  a = (a ^ c) >>> 0;
  a = (a - rot(c, 11)) >>> 0;
  b = (b ^ a) >>> 0;
  b = (b - rot(a, 25)) >>> 0;
  c = (c ^ b) >>> 0;
  c = (c - rot(b, 16)) >>> 0;
  a = (a ^ c) >>> 0;
  a = (a - rot(c, 4)) >>> 0;
  b = (b ^ a) >>> 0;
  b = (b - rot(a, 14)) >>> 0;
  c = (c ^ b) >>> 0;
  c = (c - rot(b, 24)) >>> 0;
  return c;
}
