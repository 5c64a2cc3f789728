import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface TestCerts {
  readonly dir: string;
  /** Self-signed server certificate for 127.0.0.1; also its own CA. */
  readonly serverCert: Buffer;
  readonly serverKey: Buffer;
  readonly clientCa: Buffer;
  readonly clientCert: Buffer;
  readonly clientKey: Buffer;
  /** A second key that does not match serverCert. */
  readonly otherKey: Buffer;
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

/** Writes server.crt/key, client-ca.crt/key, client.crt/key and other.key into dir. */
export function generateCerts(dir: string): TestCerts {
  openssl(dir, [
    'req',
    '-x509',
    ...EC,
    '-days',
    '1',
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-keyout',
    'server.key',
    '-out',
    'server.crt',
  ]);
  openssl(dir, [
    'req',
    '-x509',
    ...EC,
    '-days',
    '1',
    '-subj',
    '/CN=cachemon-test-ca',
    '-keyout',
    'client-ca.key',
    '-out',
    'client-ca.crt',
  ]);
  openssl(dir, ['req', ...EC, '-subj', '/CN=scraper', '-keyout', 'client.key', '-out', 'client.csr']);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    'client.csr',
    '-CA',
    'client-ca.crt',
    '-CAkey',
    'client-ca.key',
    '-CAcreateserial',
    '-days',
    '1',
    '-out',
    'client.crt',
  ]);
  openssl(dir, [
    'req',
    '-x509',
    ...EC,
    '-days',
    '1',
    '-subj',
    '/CN=other',
    '-keyout',
    'other.key',
    '-out',
    'other.crt',
  ]);
  const read = (name: string): Buffer => readFileSync(join(dir, name));
  return {
    dir,
    serverCert: read('server.crt'),
    serverKey: read('server.key'),
    clientCa: read('client-ca.crt'),
    clientCert: read('client.crt'),
    clientKey: read('client.key'),
    otherKey: read('other.key'),
  };
}
