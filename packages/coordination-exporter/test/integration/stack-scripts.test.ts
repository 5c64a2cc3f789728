import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { eventually, freePort, startZooKeeper, tempDir, type ZooKeeperServer } from '@cachemon/testkit';

const root = new URL('../../../../../', import.meta.url).pathname;

/** stack/coordination_exporter/start.sh and stop.sh as an operator runs them in an installed tree. */
describe('coordination_exporter start.sh / stop.sh', () => {
  let zk: ZooKeeperServer;
  let componentDir: string;
  const sh = (script: string, ...args: string[]) =>
    spawnSync('bash', [join(componentDir, script), ...args], {
      encoding: 'utf8',
      env: { ...process.env, CACHEMON_HOME: root },
      timeout: 30_000,
    });

  before(async () => {
    zk = await startZooKeeper();
    const installDir = await tempDir('cachemon-install-');
    componentDir = join(installDir, 'coordination_exporter');
    cpSync(join(root, 'stack', 'coordination_exporter'), componentDir, { recursive: true });
    mkdirSync(join(installDir, 'lib'));
    cpSync(join(root, 'stack', 'lib'), join(installDir, 'lib'), { recursive: true });
  });
  after(async () => {
    sh('stop.sh', 'ens1');
    await zk?.stop();
  });

  it('the shipped example env is valid as it is: exactly one of ZK_SERVERS and ZK_DOMAIN', () => {
    const example = readFileSync(join(componentDir, 'conf', 'example.env'), 'utf8');
    assert.match(example, /^LISTEN_PORT=\d+$/m);
    assert.match(example, /^ZK_SERVERS=\(/m);
    assert.doesNotMatch(example, /^ZK_DOMAIN=/m);
  });

  it('start.sh <name> runs conf/<name>.env (ZK_SERVERS array) in the background; stop.sh stops it', async () => {
    const port = await freePort();
    writeFileSync(join(componentDir, 'conf', 'ens1.env'), `LISTEN_PORT=${port}\nZK_SERVERS=(${zk.address})\n`);
    const started = sh('start.sh', 'ens1');
    assert.equal(started.status, 0, started.stderr);
    assert.match(started.stdout, new RegExp(`started \\(pid \\d+\\), listening on 0\\.0\\.0\\.0:${port}\\n$`));
    const pid = Number(readFileSync(join(componentDir, 'run', 'ens1.pid'), 'utf8'));
    process.kill(pid, 0);
    await eventually(async () => {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      assert.match(text, new RegExp(`^zk_up\\{zk_host="${zk.address.replace(/\./g, '\\.')}"\\} 1$`, 'm'));
    });
    await eventually(() =>
      assert.match(readFileSync(join(componentDir, 'log', 'ens1.log'), 'utf8'), /coordination exporter listening/),
    );
    const again = sh('start.sh', 'ens1');
    assert.notEqual(again.status, 0);
    assert.match(again.stderr, /already running/);
    const stopped = sh('stop.sh', 'ens1');
    assert.equal(stopped.status, 0, stopped.stderr);
    assert.equal(existsSync(join(componentDir, 'run', 'ens1.pid')), false);
    assert.throws(() => process.kill(pid, 0));
  });

  for (const [label, body, message] of [
    [
      'both ZK_DOMAIN and ZK_SERVERS',
      'ZK_DOMAIN=zk.example:2181\nZK_SERVERS=(10.0.0.1:2181)\n',
      /sets both ZK_DOMAIN and ZK_SERVERS; set exactly one\. Nothing started\./,
    ],
    [
      'neither ZK_DOMAIN nor ZK_SERVERS',
      '',
      /sets neither ZK_DOMAIN nor ZK_SERVERS; set exactly one\. Nothing started\./,
    ],
    ['an empty ZK_SERVERS array', 'ZK_SERVERS=()\n', /sets neither ZK_DOMAIN nor ZK_SERVERS/],
    [
      'ZK_SERVERS as a string',
      'ZK_SERVERS="10.0.0.1:2181 10.0.0.2:2181"\n',
      /ZK_SERVERS must be a bash array, ZK_SERVERS=\(<host>:<port> \.\.\.\), got the string '10\.0\.0\.1:2181 10\.0\.0\.2:2181'\. Nothing started\./,
    ],
    [
      'ZK_SERVERS as a string and ZK_DOMAIN',
      'ZK_DOMAIN=zk.example:2181\nZK_SERVERS=10.0.0.1:2181\n',
      /ZK_SERVERS must be a bash array/,
    ],
  ] as const) {
    it(`${label}: a clear error naming the file, nothing started`, async () => {
      const port = await freePort();
      writeFileSync(join(componentDir, 'conf', 'bad.env'), `LISTEN_PORT=${port}\n${body}`);
      const result = sh('start.sh', 'bad');
      assert.equal(result.status, 1);
      assert.match(result.stderr, message);
      assert.match(result.stderr, /conf\/bad\.env/);
      assert.equal(existsSync(join(componentDir, 'run', 'bad.pid')), false);
      await assert.rejects(fetch(`http://127.0.0.1:${port}/metrics`));
    });
  }

  it('an empty ZK_SERVERS string beside ZK_DOMAIN counts as unset: the domain is used', async () => {
    const port = await freePort();
    writeFileSync(
      join(componentDir, 'conf', 'dom.env'),
      `LISTEN_PORT=${port}\nZK_DOMAIN=${zk.address.replace('127.0.0.1', 'localhost')}\nZK_SERVERS=\n`,
    );
    const started = sh('start.sh', 'dom');
    assert.equal(started.status, 0, started.stderr);
    try {
      const named = `zk_up{zk_host="localhost:${zk.port}"} 1`;
      await eventually(async () => {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        // localhost resolves to 127.0.0.1 alone: one server, labelled with the name as given
        assert.ok(text.split('\n').includes(named), text.slice(0, 2000));
      });
    } finally {
      assert.equal(sh('stop.sh', 'dom').status, 0);
    }
  });

  it('a --listen in COORDINATION_EXPORTER_FLAGS: the address it names is the one waited for and printed', async () => {
    const [envPort, flagPort] = [await freePort(), await freePort()];
    writeFileSync(
      join(componentDir, 'conf', 'own.env'),
      `LISTEN_PORT=${envPort}\nZK_SERVERS=(${zk.address})\nCOORDINATION_EXPORTER_FLAGS="--listen=127.0.0.1:${flagPort}"\n`,
    );
    const started = sh('start.sh', 'own');
    try {
      assert.equal(started.status, 0, started.stderr);
      assert.match(started.stdout, new RegExp(`listening on 127\\.0\\.0\\.1:${flagPort}\\n$`));
      assert.equal((await fetch(`http://127.0.0.1:${flagPort}/-/ready`)).status, 200);
      await assert.rejects(fetch(`http://127.0.0.1:${envPort}/-/ready`));
    } finally {
      assert.equal(sh('stop.sh', 'own').status, 0);
    }
  });

  it('a bad flag in COORDINATION_EXPORTER_FLAGS is said before anything starts', async () => {
    const port = await freePort();
    writeFileSync(
      join(componentDir, 'conf', 'flag.env'),
      `LISTEN_PORT=${port}\nZK_SERVERS=(${zk.address})\nCOORDINATION_EXPORTER_FLAGS="--timeout=0s"\n`,
    );
    const result = sh('start.sh', 'flag');
    assert.equal(result.status, 1);
    assert.match(result.stderr, /--timeout: must be more than 0/);
    assert.match(result.stderr, /the flags are refused \(above\); nothing started/);
    assert.equal(existsSync(join(componentDir, 'run', 'flag.pid')), false);
    await assert.rejects(fetch(`http://127.0.0.1:${port}/metrics`));
  });

  it('a bad LISTEN_PORT and a missing env file are named', () => {
    writeFileSync(join(componentDir, 'conf', 'port.env'), `LISTEN_PORT=http\nZK_SERVERS=(${zk.address})\n`);
    assert.match(sh('start.sh', 'port').stderr, /LISTEN_PORT must be a port number \(1-65535\), got 'http'/);
    assert.match(sh('start.sh', 'nosuch').stderr, /no env file .*conf\/nosuch\.env \(copy conf\/example\.env/);
  });
});
