import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import bcrypt from 'bcryptjs';
import { Errors, isCachemonError, loadWebConfig } from '../src/index.js';
import { generateCerts, type TestCerts } from './support/certs.js';

let dir: string;
let certs: TestCerts;
let fileCount = 0;
const hash = bcrypt.hashSync('secret', 4);

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'cachemon-webcfg-'));
  mkdirSync(join(dir, 'tls'));
  certs = generateCerts(join(dir, 'tls'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

function writeConfig(text: string): string {
  const file = join(dir, `web-${fileCount++}.yml`);
  writeFileSync(file, text);
  return file;
}

async function rejectsWith(file: string, pattern: RegExp): Promise<void> {
  await assert.rejects(loadWebConfig(file), (err: unknown) => {
    assert.ok(isCachemonError(err, Errors.WEB_CONFIG_INVALID), String(err));
    assert.ok(err.message.includes(file), err.message);
    assert.match(err.message, pattern);
    return true;
  });
}

describe('loadWebConfig', () => {
  it('reads TLS, headers and users, resolving paths against the file', async () => {
    const file = writeConfig(
      [
        'tls_server_config:',
        '  cert_file: tls/server.crt',
        '  key_file: tls/server.key',
        '  client_auth_type: RequireAndVerifyClientCert',
        '  client_ca_file: tls/client-ca.crt',
        '  min_version: TLS13',
        'http_server_config:',
        '  http2: true',
        '  headers:',
        '    X-Frame-Options: deny',
        'basic_auth_users:',
        `  alice: ${hash}`,
      ].join('\n'),
    );
    const config = await loadWebConfig(file);
    assert.equal(config.source, file);
    assert.equal(config.tls?.certFile, join(dir, 'tls', 'server.crt'));
    assert.equal(config.tls?.keyFile, join(dir, 'tls', 'server.key'));
    assert.equal(config.tls?.clientCaFile, join(dir, 'tls', 'client-ca.crt'));
    assert.deepEqual(config.tls?.cert, certs.serverCert);
    assert.deepEqual(config.tls?.clientCa, certs.clientCa);
    assert.equal(config.tls?.clientAuthType, 'RequireAndVerifyClientCert');
    assert.equal(config.tls?.minVersion, 'TLSv1.3');
    assert.equal(config.tls?.maxVersion, undefined);
    assert.deepEqual(config.headers, { 'X-Frame-Options': 'deny' });
    assert.deepEqual([...config.basicAuthUsers], [['alice', hash]]);
  });

  it('defaults to TLS 1.2 and no client certificates', async () => {
    const config = await loadWebConfig(
      writeConfig('tls_server_config:\n  cert_file: tls/server.crt\n  key_file: tls/server.key\n'),
    );
    assert.equal(config.tls?.minVersion, 'TLSv1.2');
    assert.equal(config.tls?.clientAuthType, 'NoClientCert');
  });

  it('treats an empty file as no TLS and no auth', async () => {
    const config = await loadWebConfig(writeConfig(''));
    assert.equal(config.tls, undefined);
    assert.equal(config.basicAuthUsers.size, 0);
    assert.deepEqual(config.headers, {});
  });

  const invalid: Array<[string, string, RegExp]> = [
    [
      'an unknown key',
      'tls_server_config:\n  cert_file: tls/server.crt\n  key_file: tls/server.key\n  certfile: x\n',
      /: tls_server_config\.certfile: unknown key$/,
    ],
    ['an unknown top-level key', 'basic_auth:\n  a: b\n', /: basic_auth: unknown key$/],
    [
      'a missing key_file',
      'tls_server_config:\n  cert_file: tls/server.crt\n',
      /: tls_server_config\.key_file: missing/,
    ],
    [
      'a bad client_auth_type',
      'tls_server_config:\n  cert_file: tls/server.crt\n  key_file: tls/server.key\n  client_auth_type: Sometimes\n',
      /: tls_server_config\.client_auth_type: /,
    ],
    [
      'verification without a CA',
      'tls_server_config:\n  cert_file: tls/server.crt\n  key_file: tls/server.key\n  client_auth_type: RequireAndVerifyClientCert\n',
      /: tls_server_config\.client_ca_file: missing/,
    ],
    [
      'a bad min_version',
      'tls_server_config:\n  cert_file: tls/server.crt\n  key_file: tls/server.key\n  min_version: TLS14\n',
      /: tls_server_config\.min_version: /,
    ],
    [
      'max below min',
      'tls_server_config:\n  cert_file: tls/server.crt\n  key_file: tls/server.key\n  min_version: TLS13\n  max_version: TLS12\n',
      /: tls_server_config\.max_version: lower than min_version/,
    ],
    [
      'an unsupported exporter-toolkit key',
      'tls_server_config:\n  cert_file: tls/server.crt\n  key_file: tls/server.key\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n',
      /: tls_server_config\.cipher_suites: not supported/,
    ],
    [
      'an unreadable cert_file',
      'tls_server_config:\n  cert_file: tls/nope.crt\n  key_file: tls/server.key\n',
      /: tls_server_config\.cert_file: cannot read .*nope\.crt: ENOENT/,
    ],
    [
      'a key not matching the cert',
      'tls_server_config:\n  cert_file: tls/server.crt\n  key_file: tls/other.key\n',
      /: tls_server_config: .*mismatch/,
    ],
    [
      'a password that is not a bcrypt hash',
      'basic_auth_users:\n  alice: secret\n',
      /: basic_auth_users\.alice: not a bcrypt hash/,
    ],
    [
      'a header that may not be set',
      'http_server_config:\n  headers:\n    Content-Type: text/html\n',
      /http_server_config\.headers.*Content-Type.*cannot be configured/,
    ],
    ['a YAML syntax error', 'basic_auth_users:\n  alice: [unclosed\n', /web-\d+\.yml:\d+:\d+: /],
    ['a document that is not a mapping', '- a\n- b\n', /: \(root\): /],
  ];
  for (const [what, text, pattern] of invalid) {
    it(`refuses ${what}, naming file and key`, () => rejectsWith(writeConfig(text), pattern));
  }

  it('refuses a file that does not exist', async () => {
    await rejectsWith(join(dir, 'missing.yml'), /cannot read web config file: ENOENT/);
  });
});
