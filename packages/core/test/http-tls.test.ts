import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent as HttpsAgent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import bcrypt from 'bcryptjs';
import { createHttpServer, Errors, isCachemonError, loadWebConfig, type HttpServer } from '../src/index.js';
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
  writeFileSync(
    file,
    ['tls_server_config:', '  cert_file: server.crt', '  key_file: server.key', ...tlsLines.map((l) => `  ${l}`)].join(
      '\n',
    ),
  );
  const server = await createHttpServer({
    name: 'cachemon-tls',
    logger: captureLogger().logger,
    webConfig: await loadWebConfig(file),
  });
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
      await assert.rejects(
        fetchRaw(`${url}/-/healthy`, { ca: certs.serverCert }),
        (err: unknown) => err instanceof Error,
      );
    });

    it('RequireAnyClientCert answers 403 JSON without a certificate', async () => {
      const url = await startTls(['client_auth_type: RequireAnyClientCert']);
      const refused = await fetchRaw(`${url}/-/healthy`, { ca: certs.serverCert });
      assert.equal(refused.status, 403);
      assert.deepEqual(parseJson(refused), {
        status: 'error',
        code: 'CACHEMON_FORBIDDEN',
        error: 'a client certificate is required',
      });
      assert.equal((await fetchRaw(`${url}/-/healthy`, { ca: certs.serverCert, ...client() })).status, 200);
    });

    it('VerifyClientCertIfGiven lets clients without a certificate in and refuses an untrusted one', async () => {
      const url = await startTls(['client_auth_type: VerifyClientCertIfGiven', 'client_ca_file: client-ca.crt']);
      assert.equal((await fetchRaw(`${url}/-/healthy`, { ca: certs.serverCert })).status, 200);
      assert.equal((await fetchRaw(`${url}/-/healthy`, { ca: certs.serverCert, ...client() })).status, 200);
      // The server's self-signed certificate is not from the client CA.
      const untrusted = await fetchRaw(`${url}/-/healthy`, {
        ca: certs.serverCert,
        cert: certs.serverCert,
        key: certs.serverKey,
      });
      assert.equal(untrusted.status, 403);
      assert.match(String(parseJson(untrusted)['error']), /client certificate not trusted/);
    });
  });
});

describe('the web config read again (reloadWebConfig)', () => {
  /** A server from a web config file written with `lines`; returns it, its URL and a writer for the file. */
  async function startFromFile(
    lines: string[],
  ): Promise<{ server: HttpServer; url: string; rewrite: (next: string[]) => void }> {
    const file = join(dir, `reload-${open.length}-${Date.now()}.yml`);
    writeFileSync(file, lines.join('\n'));
    const server = await createHttpServer({
      name: 'cachemon-reload',
      logger: captureLogger().logger,
      webConfig: await loadWebConfig(file),
      webConfigFile: file,
    });
    open.push(server);
    return {
      server,
      url: (await server.listen('127.0.0.1:0')).url,
      rewrite: (next) => writeFileSync(file, next.join('\n')),
    };
  }
  /** A fresh connection each time: a kept-alive one would keep the certificate it started with. */
  const fresh = (url: string, options: Parameters<typeof fetchRaw>[1] = {}) =>
    fetchRaw(url, { ...options, agent: new HttpsAgent({ keepAlive: false }) });

  it('a rotated certificate is served to new connections without a restart', async () => {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        'rotated.key',
        '-out',
        'rotated.crt',
      ],
      { cwd: dir, stdio: 'pipe' },
    );
    const rotated = readFileSync(join(dir, 'rotated.crt'));
    const { server, url, rewrite } = await startFromFile([
      'tls_server_config:',
      '  cert_file: server.crt',
      '  key_file: server.key',
    ]);
    assert.equal((await fresh(`${url}/-/healthy`, { ca: certs.serverCert })).status, 200);
    await assert.rejects(fresh(`${url}/-/healthy`, { ca: rotated }), /self[- ]signed|unable to verify/i);

    rewrite(['tls_server_config:', '  cert_file: rotated.crt', '  key_file: rotated.key']);
    await server.reloadWebConfig();
    assert.equal((await fresh(`${url}/-/healthy`, { ca: rotated })).status, 200);
    await assert.rejects(fresh(`${url}/-/healthy`, { ca: certs.serverCert }), /self[- ]signed|unable to verify/i);
  });

  it('what needs a restart, or a file that does not parse, is refused and the running config stays', async () => {
    const { server, url, rewrite } = await startFromFile([
      'tls_server_config:',
      '  cert_file: server.crt',
      '  key_file: server.key',
    ]);
    for (const [lines, reason] of [
      [
        [
          'tls_server_config:',
          '  cert_file: server.crt',
          '  key_file: server.key',
          '  client_auth_type: RequireAnyClientCert',
        ],
        /client_auth_type changed from NoClientCert to RequireAnyClientCert: needs a restart/,
      ],
      [['basic_auth_users: {}'], /tls_server_config removed: switching between http and https needs a restart/],
      [['tls_server_config: [unclosed'], /reload-.*\.yml:1:/],
      [['tls_server_config:', '  cert_file: server.crt', '  key_file: other.key'], /tls_server_config: .*key/i],
    ] as const) {
      rewrite([...lines]);
      await assert.rejects(
        server.reloadWebConfig(),
        (err: unknown) => isCachemonError(err, Errors.WEB_CONFIG_INVALID) && reason.test((err as Error).message),
      );
      assert.equal(
        (await fresh(`${url}/-/healthy`, { ca: certs.serverCert })).status,
        200,
        `still served after ${String(reason)}`,
      );
    }
  });

  it('basic auth users added, changed and removed apply to the next request', async () => {
    const hash = (password: string) => bcrypt.hashSync(password, 4);
    const { server, url, rewrite } = await startFromFile([]);
    const auth = (user: string, password: string) => ({
      authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
    });
    assert.equal((await fetchRaw(`${url}/-/healthy`)).status, 200);

    rewrite([
      'basic_auth_users:',
      `  prometheus: ${hash('first')}`,
      'http_server_config:',
      '  headers:',
      '    X-Frame-Options: deny',
    ]);
    await server.reloadWebConfig();
    const refused = await fetchRaw(`${url}/-/healthy`);
    assert.equal(refused.status, 401);
    assert.equal(refused.headers['x-frame-options'], 'deny');
    assert.equal((await fetchRaw(`${url}/-/healthy`, { headers: auth('prometheus', 'first') })).status, 200);

    rewrite(['basic_auth_users:', `  prometheus: ${hash('second')}`]);
    await server.reloadWebConfig();
    assert.equal(
      (await fetchRaw(`${url}/-/healthy`, { headers: auth('prometheus', 'first') })).status,
      401,
      'the old password no longer works',
    );
    assert.equal((await fetchRaw(`${url}/-/healthy`, { headers: auth('prometheus', 'second') })).status, 200);

    rewrite(['']);
    await server.reloadWebConfig();
    const open_ = await fetchRaw(`${url}/-/healthy`);
    assert.equal(open_.status, 200);
    assert.equal(open_.headers['x-frame-options'], undefined);
  });

  it('does nothing for a server started without a web config file', async () => {
    const server = await createHttpServer({ name: 'plain', logger: captureLogger().logger });
    open.push(server);
    const url = (await server.listen('127.0.0.1:0')).url;
    await server.reloadWebConfig();
    assert.equal((await fetchRaw(`${url}/-/healthy`)).text, 'plain is Healthy.\n');
  });
});
