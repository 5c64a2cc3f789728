/** exporter-toolkit's `--web.config.file` (TLS, headers, basic auth), so node_exporter's file works here. */
import { readFile } from 'node:fs/promises';
import { createSecureContext } from 'node:tls';
import { dirname, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { validateConfig } from './config.js';
import { CachemonError, Errors, errorMessage } from './errors.js';

export const clientAuthTypes = [
  'NoClientCert',
  'RequestClientCert',
  'RequireAnyClientCert',
  'VerifyClientCertIfGiven',
  'RequireAndVerifyClientCert',
] as const;
export type ClientAuthType = (typeof clientAuthTypes)[number];

const TLS_VERSIONS = { TLS10: 'TLSv1', TLS11: 'TLSv1.1', TLS12: 'TLSv1.2', TLS13: 'TLSv1.3' } as const;
type TlsVersionName = keyof typeof TLS_VERSIONS;
export type TlsVersion = (typeof TLS_VERSIONS)[TlsVersionName];

/** exporter-toolkit allows only these, so a header cannot break Content-Type or framing. */
const ALLOWED_HEADERS = [
  'Strict-Transport-Security',
  'X-Content-Type-Options',
  'X-Frame-Options',
  'X-XSS-Protection',
  'Content-Security-Policy',
] as const;

const BCRYPT_HASH = /^\$2[aby]?\$\d{2}\$[./A-Za-z0-9]{53}$/;

/** Keys exporter-toolkit knows that we do not implement: refused by name rather than ignored. */
const notSupported = z
  .any()
  .refine(() => false, { message: 'not supported by cachemon' })
  .optional();

const tlsVersionSchema = z.enum(Object.keys(TLS_VERSIONS) as [TlsVersionName, ...TlsVersionName[]]);

const tlsServerConfigSchema = z
  .strictObject({
    cert_file: z.string().min(1, 'missing'),
    key_file: z.string().min(1, 'missing'),
    client_auth_type: z.enum(clientAuthTypes).default('NoClientCert'),
    client_ca_file: z.string().min(1).optional(),
    min_version: tlsVersionSchema.default('TLS12'),
    max_version: tlsVersionSchema.optional(),
    cipher_suites: notSupported,
    curve_preferences: notSupported,
    prefer_server_cipher_suites: notSupported,
    client_allowed_sans: notSupported,
    cert: notSupported,
    key: notSupported,
  })
  .superRefine((tls, ctx) => {
    const auth = tls.client_auth_type;
    const verifies = auth === 'VerifyClientCertIfGiven' || auth === 'RequireAndVerifyClientCert';
    if (verifies && tls.client_ca_file === undefined) {
      ctx.addIssue({ code: 'custom', path: ['client_ca_file'], message: `missing (needed by ${auth})` });
    }
    // exporter-toolkit refuses this too: a CA that is never asked for is a config mistake.
    if (tls.client_ca_file !== undefined && auth === 'NoClientCert') {
      const message = 'client_ca_file is set but client_auth_type is NoClientCert';
      ctx.addIssue({ code: 'custom', path: ['client_auth_type'], message });
    }
    const order = Object.keys(TLS_VERSIONS);
    if (tls.max_version !== undefined && order.indexOf(tls.max_version) < order.indexOf(tls.min_version)) {
      ctx.addIssue({ code: 'custom', path: ['max_version'], message: `lower than min_version ${tls.min_version}` });
    }
  });

const webConfigFileSchema = z.strictObject({
  tls_server_config: tlsServerConfigSchema.optional(),
  http_server_config: z
    .strictObject({
      // Accepted for compatibility; Node serves HTTP/1.1 here.
      http2: z.boolean().optional(),
      headers: z
        .record(
          z.string().refine((name) => ALLOWED_HEADERS.some((h) => h.toLowerCase() === name.toLowerCase()), {
            message: `header cannot be configured (allowed: ${ALLOWED_HEADERS.join(', ')})`,
          }),
          z.string(),
        )
        .optional(),
    })
    .optional(),
  basic_auth_users: z
    .record(z.string().min(1), z.string().regex(BCRYPT_HASH, 'not a bcrypt hash (expected $2y$/$2b$/$2a$...)'))
    .optional(),
});

export interface TlsSettings {
  readonly certFile: string;
  readonly keyFile: string;
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly clientAuthType: ClientAuthType;
  readonly clientCaFile: string | undefined;
  readonly clientCa: Buffer | undefined;
  readonly minVersion: TlsVersion;
  readonly maxVersion: TlsVersion | undefined;
}

export interface WebConfig {
  /** The file it came from, for messages. */
  readonly source: string;
  readonly tls: TlsSettings | undefined;
  readonly headers: Readonly<Record<string, string>>;
  /** username -> bcrypt hash; empty means no authentication. */
  readonly basicAuthUsers: ReadonlyMap<string, string>;
}

function invalid(message: string, cause?: unknown): CachemonError {
  return new CachemonError(Errors.WEB_CONFIG_INVALID, message, cause === undefined ? undefined : { cause });
}

async function readKeyed(file: string, key: string, path: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (err) {
    throw invalid(`${file}: ${key}: cannot read ${path}: ${errorMessage(err).replace(/, \w+ '.*'$/, '')}`, err);
  }
}

function parseYaml(file: string, text: string): unknown {
  const doc = parseDocument(text);
  const first = doc.errors[0];
  if (first !== undefined) {
    const pos = first.linePos?.[0];
    const where = pos === undefined ? file : `${file}:${pos.line}:${pos.col}`;
    const what = (first.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
    throw invalid(`${where}: ${what}`);
  }
  // An empty file means "no TLS, no auth", as in exporter-toolkit.
  return doc.toJS() ?? {};
}

async function loadTls(file: string, tls: z.output<typeof tlsServerConfigSchema>): Promise<TlsSettings> {
  const base = dirname(file);
  const certFile = resolve(base, tls.cert_file);
  const keyFile = resolve(base, tls.key_file);
  const clientCaFile = tls.client_ca_file === undefined ? undefined : resolve(base, tls.client_ca_file);
  const [cert, key, clientCa] = await Promise.all([
    readKeyed(file, 'tls_server_config.cert_file', certFile),
    readKeyed(file, 'tls_server_config.key_file', keyFile),
    clientCaFile === undefined ? undefined : readKeyed(file, 'tls_server_config.client_ca_file', clientCaFile),
  ]);
  const settings: TlsSettings = {
    certFile,
    keyFile,
    cert,
    key,
    clientAuthType: tls.client_auth_type,
    clientCaFile,
    clientCa,
    minVersion: TLS_VERSIONS[tls.min_version],
    maxVersion: tls.max_version === undefined ? undefined : TLS_VERSIONS[tls.max_version],
  };
  // Building a context now turns a bad PEM or a cert/key mismatch into a start-up error.
  try {
    createSecureContext(tlsContextOptions(settings));
  } catch (err) {
    throw invalid(`${file}: tls_server_config: ${errorMessage(err)} (cert_file ${certFile}, key_file ${keyFile})`, err);
  }
  return settings;
}

/** Node TLS options for the settings; client-certificate checks Node cannot express live in http.ts. */
export function tlsContextOptions(tls: TlsSettings): {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer;
  minVersion: TlsVersion;
  maxVersion?: TlsVersion;
  requestCert: boolean;
  rejectUnauthorized: boolean;
} {
  return {
    cert: tls.cert,
    key: tls.key,
    ...(tls.clientCa === undefined ? {} : { ca: tls.clientCa }),
    minVersion: tls.minVersion,
    ...(tls.maxVersion === undefined ? {} : { maxVersion: tls.maxVersion }),
    requestCert: tls.clientAuthType !== 'NoClientCert',
    rejectUnauthorized: tls.clientAuthType === 'RequireAndVerifyClientCert',
  };
}

/** Reads and checks a web config file; relative paths in it resolve against its directory. */
export async function loadWebConfig(file: string): Promise<WebConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw invalid(`${file}: cannot read web config file: ${errorMessage(err).replace(/, \w+ '.*'$/, '')}`, err);
  }
  const raw = validateConfig(file, parseYaml(file, text), webConfigFileSchema, { error: Errors.WEB_CONFIG_INVALID });
  return {
    source: file,
    tls: raw.tls_server_config === undefined ? undefined : await loadTls(file, raw.tls_server_config),
    headers: raw.http_server_config?.headers ?? {},
    basicAuthUsers: new Map(Object.entries(raw.basic_auth_users ?? {})),
  };
}
