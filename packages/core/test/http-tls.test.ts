import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { createHttpServer, loadWebConfig, type HttpServer } from '../src/index.js';
import { captureLogger } from './support/capture-logger.js';
import { generateCerts, type TestCerts } from './support/certs.js';
import { fetchRaw, parseJson } from './support/http-client.js';

let dir: string;
let certs: TestCerts;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'cachemon-tls-'));
  certs = generateCerts(dir);
});
after(() => rmSync(dir, { recursive: true, force: true }));

const open: HttpServer[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((server) => server.close()));
});

async function startTls(tlsLines: string[]): Promise<string> {
  const file = join(dir, `web-${open.length}-${Date.now()}.yml`);
  writeFileSync(file, ['tls_server_config:', '  cert_file: server.crt', '  key_file: server.key', ...tlsLines.map((l) => `  ${l}`)].join('\n'));
  const server = await createHttpServer({ name: 'cachemon-tls', logger: captureLogger().logger, webConfig: await loadWebConfig(file) });
  open.push(server);
  return (await server.listen('127.0.0.1:0')).url;
}

describe('TLS from the web config', () => {
  it('serves https with the configured certificate', async () => {
    const url = await startTls([]);
    assert.match(url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const unchecked = await fetchRaw(`${url}/-/healthy`);
    assert.equal(unchecked.status, 200);
    assert.equal(unchecked.text, 'cachemon-tls is Healthy.\n');
    const verified = await fetchRaw(`${url}/-/healthy`, { ca: certs.serverCert });
    assert.equal(verified.status, 200);
  });

  it('fails verification against another CA', async () => {
    const url = await startTls([]);
    await assert.rejects(fetchRaw(`${url}/-/healthy`, { ca: certs.clientCa }), /self[- ]signed|unable to verify/i);
  });

  it('does not answer plain http on the TLS port', async () => {
    const url = await startTls([]);
    const plain = url.replace('https:', 'http:');
    await assert.rejects(fetchRaw(`${plain}/-/healthy`), (err: unknown) => err instanceof Error);
  });

  it('honours min_version', async () => {
    const url = await startTls(['min_version: TLS13']);
    assert.equal((await fetchRaw(`${url}/-/healthy`)).status, 200);
    await assert.rejects(fetchRaw(`${url}/-/healthy`, { maxVersion: 'TLSv1.2' }), /version|protocol/i);
  });

  describe('client certificates', () => {
    const client = (): { cert: Buffer; key: Buffer } => ({ cert: certs.clientCert, key: certs.clientKey });

    it('RequireAndVerifyClientCert accepts a certificate from the client CA and refuses none', async () => {
      const url = await startTls(['client_auth_type: RequireAndVerifyClientCert', 'client_ca_file: client-ca.crt']);
      assert.equal((await fetchRaw(`${url}/-/healthy`, { ca: certs.serverCert, ...client() })).status, 200);
      await assert.rejects(fetchRaw(`${url}/-/healthy`, { ca: certs.serverCert }), (err: unknown) => err instanceof Error);
    });

    it('RequireAnyClientCert answers 403 JSON without a certificate', async () => {
      const url = await startTls(['client_auth_type: RequireAnyClientCert']);
      const refused = await fetchRaw(`${url}/-/healthy`, { ca: certs.serverCert });
      assert.equal(refused.status, 403);
      assert.deepEqual(parseJson(refused), { status: 'error', code: 'CACHEMON_FORBIDDEN', error: 'a client certificate is required' });
      assert.equal((await fetchRaw(`${url}/-/healthy`, { ca: certs.serverCert, ...client() })).status, 200);
    });

    it('VerifyClientCertIfGiven lets clients without a certificate in and refuses an untrusted one', async () => {
      const url = await startTls(['client_auth_type: VerifyClientCertIfGiven', 'client_ca_file: client-ca.crt']);
      assert.equal((await fetchRaw(`${url}/-/healthy`, { ca: certs.serverCert })).status, 200);
      assert.equal((await fetchRaw(`${url}/-/healthy`, { ca: certs.serverCert, ...client() })).status, 200);
      // The server's self-signed certificate is not from the client CA.
      const untrusted = await fetchRaw(`${url}/-/healthy`, { ca: certs.serverCert, cert: certs.serverCert, key: certs.serverKey });
      assert.equal(untrusted.status, 403);
      assert.match(String(parseJson(untrusted)['error']), /client certificate not trusted/);
    });
  });
});
