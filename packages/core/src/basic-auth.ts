/**
 * Basic auth against bcrypt hashes, as exporter-toolkit does it. bcrypt is slow by design, so a verified
 * pair is remembered, keyed by a SHA-256 of the attempt: no password is kept.
 */
import { createHash } from 'node:crypto';
import bcrypt from 'bcryptjs';

export interface BasicCredentials {
  readonly username: string;
  readonly password: string;
}

/** Hash compared against for unknown users, so their answer takes as long as a known user's. */
const DUMMY_HASH = '$2b$10$6pjmlsDfGcKYnCIz0npOr.Q2GKyA.ZjKr3/4gNMIROcVu5/9odhve';

/** Bounds memory if someone sprays distinct valid-looking attempts; far above any real user count. */
const MAX_CACHED = 1024;

export function parseBasicAuthorization(header: string | undefined): BasicCredentials | undefined {
  if (header === undefined) return undefined;
  const match = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(header);
  if (match === null) return undefined;
  const decoded = Buffer.from(match[1] as string, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) return undefined;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

export type BasicAuthVerifier = (credentials: BasicCredentials) => Promise<boolean>;

/** bcrypt's check of a password against a hash (a parameter so that a test can count its calls). */
export type PasswordCheck = (password: string, hash: string) => Promise<boolean>;

export function createBasicAuthVerifier(
  users: ReadonlyMap<string, string>,
  check: PasswordCheck = bcrypt.compare,
): BasicAuthVerifier {
  const verified = new Set<string>();
  return async ({ username, password }) => {
    const hash = users.get(username);
    const key = createHash('sha256')
      .update(`${username}\0${password}\0${hash ?? ''}`)
      .digest('base64');
    if (hash !== undefined && verified.has(key)) return true;
    const ok = await check(password, hash ?? DUMMY_HASH);
    if (!ok || hash === undefined) return false;
    if (verified.size >= MAX_CACHED) verified.clear();
    verified.add(key);
    return true;
  };
}
