import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually, freePort, parseExposition, startVictoriaMetrics, tempDir, valueOf } from '@cachemon/testkit';
import type { VictoriaMetrics } from '@cachemon/testkit';

const root = new URL('../../../../../', import.meta.url).pathname;

/** stack/query_proxy/start.sh and stop.sh as an operator runs them, SIGHUP reload, the binary's flags and env. */
describe('query_proxy start.sh / stop.sh and the binary', () => {
  let store: VictoriaMetrics;
  let componentDir: string;
  let port: number;
  const sh = (script: string, env: Record<string, string> = {}, ...args: string[]) =>
    spawnSync('bash', [join(componentDir, script), ...args], {
      encoding: 'utf8',
      env: { ...process.env, CACHEMON_HOME: root, ...env },
      timeout: 30_000,
    });
  const writePromxy = (targets: string, extra = '') =>
    writeFileSync(
      join(componentDir, 'conf', 'promxy.yml'),
      `promxy:\n  server_groups:\n    - static_configs: [{ targets: ["${targets}"] }]\n      label_filter: { static_labels_include: { scrape: [short] } }\n      query_params: { nocache: 1 }\n${extra}`,
    );
  const query = async (q: string) => {
    const response = await fetch(`http://127.0.0.1:${port}/api/v1/query`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ query: q }),
    });
    return {
      status: response.status,
      body: (await response.json()) as { status: string; data: { result: unknown[] }; errorType?: string },
    };
  };

  before(async () => {
    store = await startVictoriaMetrics();
    await store.importPrometheus(`arcus_up{scrape="short",node="a"} 1 ${Date.now()}`);
    const installDir = await tempDir('cachemon-install-');
    componentDir = join(installDir, 'query_proxy');
    cpSync(join(root, 'stack', 'query_proxy'), componentDir, { recursive: true });
    mkdirSync(join(installDir, 'lib'));
    cpSync(join(root, 'stack', 'lib'), join(installDir, 'lib'), { recursive: true });
    port = await freePort();
    writeFileSync(join(componentDir, 'conf', 'query_proxy.env'), `PROXY_LISTEN_ADDRESS=127.0.0.1:${port}\n`);
  });

  after(async () => {
    sh('stop.sh');
    await store?.stop();
  });

  test('the shipped promxy.yml is valid: a short group and a long group, 5s timeout, nocache', () => {
    const file = join(root, 'stack', 'query_proxy', 'conf', 'promxy.yml');
    const checked = spawnSync(
      process.execPath,
      [join(root, 'bin', 'query-proxy'), `--config=${file}`, '--check-config'],
      { encoding: 'utf8' },
    );
    assert.equal(checked.status, 0, checked.stderr);
    assert.match(
      checked.stdout,
      /valid \(group 0 \(scrape=short\): http:\/\/127\.0\.0\.1:8428; group 1 \(scrape=long\): http:\/\/127\.0\.0\.1:8429\)/,
    );
    const text = readFileSync(file, 'utf8');
    assert.equal(text.match(/timeout: 5s/g)?.length, 2);
    assert.equal(text.match(/nocache: 1/g)?.length, 2);
    assert.match(
      readFileSync(join(root, 'stack', 'query_proxy', 'conf', 'query_proxy.env'), 'utf8'),
      /^PROXY_LISTEN_ADDRESS=:8082$/m,
    );
  });

  test('start.sh serves conf/promxy.yml on PROXY_LISTEN_ADDRESS; SIGHUP reloads it; stop.sh stops it', async () => {
    writePromxy(`127.0.0.1:${store.port}`);
    const started = sh('start.sh');
    assert.equal(started.status, 0, started.stderr);
    assert.match(started.stdout, /query_proxy: started \(pid \d+\)/);
    const pid = Number(readFileSync(join(componentDir, 'run', 'query_proxy.pid'), 'utf8'));
    await eventually(async () => assert.equal((await fetch(`http://127.0.0.1:${port}/-/ready`)).status, 200));
    assert.equal((await query('arcus_up{scrape="short"}')).body.data.result.length, 1);
    assert.equal(sh('start.sh').status, 1, 'a second start is refused while running');

    // Point the group at a dead port and reload with SIGHUP: the next query says the group is down.
    writePromxy(`127.0.0.1:${await freePort()}`);
    process.kill(pid, 'SIGHUP');
    await eventually(async () => assert.equal((await query('arcus_up{scrape="short"}')).body.errorType, 'unavailable'));
    // An invalid file is refused; the running config stays.
    writeFileSync(join(componentDir, 'conf', 'promxy.yml'), 'promxy: {server_groups: []}\n');
    process.kill(pid, 'SIGHUP');
    await eventually(async () => {
      const metrics = parseExposition(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
      assert.equal(valueOf(metrics, 'cachemon_config_last_reload_successful', {}), 0);
    });
    assert.equal((await query('arcus_up{scrape="short"}')).body.errorType, 'unavailable');
    const log = readFileSync(join(componentDir, 'log', 'query_proxy.log'), 'utf8');
    assert.match(log, /configuration reload refused; the running configuration stays/);
    assert.match(log, /promxy\.server_groups: at least one server group/);

    const stopped = sh('stop.sh');
    assert.equal(stopped.status, 0, stopped.stderr);
    assert.match(stopped.stdout, /query_proxy: stopped/);
    assert.equal(existsSync(join(componentDir, 'run', 'query_proxy.pid')), false);
    await assert.rejects(fetch(`http://127.0.0.1:${port}/-/healthy`));
  });

  test("start.sh refuses an invalid promxy.yml and starts nothing; the caller's PROXY_LISTEN_ADDRESS wins over the env file", async () => {
    writeFileSync(
      join(componentDir, 'conf', 'promxy.yml'),
      'promxy:\n  server_groups:\n    - static_configs: [{ targets: [] }]\n',
    );
    const refused = sh('start.sh');
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /promxy\.server_groups\[0\]\.static_configs\[0\]\.targets: no targets/);
    assert.equal(existsSync(join(componentDir, 'run', 'query_proxy.pid')), false);

    writePromxy(`127.0.0.1:${store.port}`);
    const other = await freePort();
    assert.equal(sh('start.sh', { PROXY_LISTEN_ADDRESS: `127.0.0.1:${other}` }).status, 0);
    try {
      await eventually(async () => assert.equal((await fetch(`http://127.0.0.1:${other}/-/ready`)).status, 200));
    } finally {
      sh('stop.sh');
    }
  });

  test('the binary: --config is required; PROXY_LISTEN_ADDRESS is the default listen address', async () => {
    const bin = join(root, 'bin', 'query-proxy');
    const missing = spawnSync(process.execPath, [bin], { encoding: 'utf8' });
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /--config=<promxy\.yml> is required/);
    const config = join(componentDir, 'conf', 'promxy.yml');
    writePromxy(`127.0.0.1:${store.port}`, '      relabel_configs: []\n');
    const envPort = await freePort();
    const child = spawn(process.execPath, [bin, `--config=${config}`], {
      env: { ...process.env, PROXY_LISTEN_ADDRESS: `127.0.0.1:${envPort}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      await eventually(async () => assert.equal((await fetch(`http://127.0.0.1:${envPort}/-/ready`)).status, 200));
      assert.match(
        output,
        /promxy\.server_groups\[0\]\.relabel_configs: a promxy setting this proxy does not implement; ignored/,
      );
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
    }
  });

  test('the binary with --web.config.file: SIGHUP reads it again; new basic auth users apply, an invalid file is refused and the running one stays', async () => {
    // bcrypt (cost 4) of "first" and of "second".
    const first = '$2b$04$yHzeEbKFKEr65cHaSQ7vQuJt8E/g7aS9y8oWhSKwKYmxS8bMULekS';
    const second = '$2b$04$2aCWs6wT2UDiQS/mpWzw7.Tt7UjYXRc/ObcVgPyBFn5M4S8LNhsPu';
    const dir = await tempDir('query-proxy-web-');
    const webConfigFile = join(dir, 'web.yml');
    writeFileSync(webConfigFile, `basic_auth_users:\n  grafana: ${first}\n`);
    const config = join(dir, 'promxy.yml');
    writeFileSync(
      config,
      `promxy:\n  server_groups:\n    - static_configs: [{ targets: ["127.0.0.1:${store.port}"] }]\n      label_filter: { static_labels_include: { scrape: [short] } }\n`,
    );
    const own = await freePort();
    const child = spawn(
      process.execPath,
      [
        join(root, 'bin', 'query-proxy'),
        `--config=${config}`,
        `--bind-addr=127.0.0.1:${own}`,
        `--web.config.file=${webConfigFile}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const as = (password: string) => ({
      Authorization: `Basic ${Buffer.from(`grafana:${password}`).toString('base64')}`,
    });
    const ask = async (password?: string) => {
      const response = await fetch(`http://127.0.0.1:${own}/api/v1/query`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/x-www-form-urlencoded',
          ...(password === undefined ? {} : as(password)),
        },
        body: new URLSearchParams({ query: 'arcus_up{scrape="short"}' }),
      });
      const text = await response.text();
      return {
        status: response.status,
        series: response.status === 200 ? (JSON.parse(text) as { data: { result: unknown[] } }).data.result.length : -1,
      };
    };
    const reloadSucceeded = async () =>
      valueOf(
        parseExposition(await (await fetch(`http://127.0.0.1:${own}/metrics`, { headers: as('second') })).text()),
        'cachemon_config_last_reload_successful',
      );
    try {
      await eventually(async () => assert.deepEqual(await ask('first'), { status: 200, series: 1 }));
      // Refused in the API's shape, asking for credentials, and not logged as a failure of the proxy.
      for (const headers of [{}, as('second')]) {
        const refused = await fetch(`http://127.0.0.1:${own}/api/v1/query?query=up`, { headers });
        assert.equal(refused.status, 401);
        assert.equal(refused.headers.get('www-authenticate'), 'Basic');
        assert.equal(((await refused.json()) as { errorType: string }).errorType, 'unauthorized');
      }
      assert.doesNotMatch(output, /request failed/);

      writeFileSync(webConfigFile, `basic_auth_users:\n  grafana: ${second}\n`);
      child.kill('SIGHUP');
      await eventually(async () => assert.deepEqual(await ask('second'), { status: 200, series: 1 }));
      assert.equal((await ask('first')).status, 401, 'the old password no longer applies');
      assert.equal(await reloadSucceeded(), 1);

      writeFileSync(webConfigFile, 'basic_auth_users:\n  grafana: not-a-hash\n');
      child.kill('SIGHUP');
      await eventually(async () => assert.equal(await reloadSucceeded(), 0));
      assert.match(
        output,
        /"error":"[^"]*web\.yml: basic_auth_users\.grafana: not a bcrypt hash[^"]*","msg":"web config reload refused; the running web config stays"/,
      );
      assert.deepEqual(await ask('second'), { status: 200, series: 1 }, 'the running web config stays');
      assert.equal((await ask('first')).status, 401);
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
    }
  });
});
