import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ArcusDouble, ArcusZk, eventually, freePort, startZooKeeper, tempDir } from '@cachemon/testkit';
import type { ZooKeeperServer } from '@cachemon/testkit';
import { addEnsembleToTopologyProvider, cachemon, configureTree, freeStackPorts, installStack } from '@cachemon/stack';
import type { StackPorts } from '@cachemon/stack';
import type { Finding } from '../../src/doctor/types.js';

const RUNNER = join(dirname(fileURLToPath(import.meta.url)), 'doctor-names-runner.js');

interface Result {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A command run without blocking this process, whose own servers (forwarders, ARCUS nodes) must keep answering. */
function run(file: string, args: readonly string[]): Promise<Result> {
  return new Promise((resolve) => {
    execFile(file, [...args], { encoding: 'utf8', timeout: 300_000 }, (error, stdout, stderr) =>
      resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
    );
  });
}

/**
 * `command` in a mount namespace of its own whose /etc/hosts is a bind mount of `hosts`: what the
 * test writes there (in place, so the mount keeps seeing it) is what the resolver answers, and the
 * machine's own /etc/hosts is never touched. Processes it starts stay in that namespace.
 */
function withHosts(hosts: string, command: readonly string[]): Promise<Result> {
  return run('unshare', [
    '--mount',
    '--propagation',
    'private',
    'sh',
    '-c',
    'mount --bind "$0" /etc/hosts && exec "$@"',
    hosts,
    ...command,
  ]);
}

/** A TCP forwarder at host:port to a ZooKeeper: the domain's servers at their own loopback addresses. */
async function forwarder(host: string, port: number, to: number): Promise<{ close(): void }> {
  const sockets = new Set<Socket>();
  // Half-open both ways: a four-letter word is sent and the client's side ended before the answer.
  const server: Server = createServer({ allowHalfOpen: true }, (socket) => {
    const upstream = connect({ host: '127.0.0.1', port: to, allowHalfOpen: true });
    for (const s of [socket, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        socket.destroy();
        upstream.destroy();
      });
    }
    socket.pipe(upstream).pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return {
    close() {
      server.close();
      for (const s of sockets) s.destroy();
    },
  };
}

/**
 * The mntr and name checks on an installed tree with real faults: a ZooKeeper without mntr in its
 * whitelist, a domain of two loopback servers whose answer changes while the coordination
 * exporter runs, and cache nodes registered under a hostname that does not resolve and one that
 * resolves elsewhere. The exporters, the topology provider and the checks run in mount
 * namespaces whose /etc/hosts is the test's file.
 */
describe('cachemon doctor: mntr and names, each finding induced and then fixed as it says', () => {
  let dir: string;
  let hosts: string;
  let zkA: ZooKeeperServer;
  let zkB: ZooKeeperServer;
  let arcus: ArcusZk;
  const nodes: ArcusDouble[] = [];
  const forwarders: Array<{ close(): void }> = [];
  const port: Record<string, number> = {};
  let domainPort: number;
  const base = readFileSync('/etc/hosts', 'utf8').trimEnd();

  /** Rewrites the namespaces' hosts file in place (a rename would leave the bind mount on the old file). */
  const setHosts = (lines: readonly string[]) => writeFileSync(hosts, `${base}\n${lines.join('\n')}\n`);
  let names: Record<string, readonly string[]> = {};
  const setNames = (next: Record<string, readonly string[]>) => {
    names = next;
    setHosts(Object.entries(names).flatMap(([name, ips]) => ips.map((ip) => `${ip} ${name}`)));
  };

  const doctor = async (): Promise<Finding[]> => {
    const result = await withHosts(hosts, [process.execPath, RUNNER, dir]);
    assert.equal(result.status, 0, result.stderr);
    return JSON.parse(result.stdout) as Finding[];
  };
  const cachemonHere = (args: readonly string[]) => withHosts(hosts, [join(dir, 'bin/cachemon'), ...args]);
  const shown = (findings: readonly Finding[]) =>
    findings.map((f) => `${f.code} ${f.severity} ${f.component}:${f.instance}: ${f.message} FIX: ${f.fix}`).join('\n');
  /** The findings with this code whose message mentions `about`. */
  const having = (findings: readonly Finding[], code: string, about: string) =>
    findings.filter((f) => f.code === code && f.message.includes(about));
  /** The pid a fix says to signal (`kill -HUP <pid>`). */
  const hupOf = (finding: Finding) => {
    const pid = Number(/kill -HUP (\d+)/.exec(finding.fix)?.[1]);
    assert.ok(pid > 0, finding.fix);
    return pid;
  };

  before(async () => {
    dir = await tempDir('cachemon-doctor-names-');
    hosts = join(dir, 'hosts');
    installStack(dir);
    Object.assign(port, await freeStackPorts());
    port['zk2'] = await freePort();
    domainPort = await freePort();
    [zkA, zkB] = await Promise.all([startZooKeeper(), startZooKeeper({ fourLetterWords: ['ruok', 'srvr'] })]);
    arcus = await ArcusZk.connect(zkA.address);
    await arcus.createServiceCode('svc-d');
    for (const hostname of ['nowhere.doctor.test', 'elsewhere.doctor.test']) {
      const node = await ArcusDouble.start();
      nodes.push(node);
      await arcus.mapServer(node.address, 'svc-d');
      await node.register(arcus, { hostname });
    }
    for (const ip of ['127.0.0.2', '127.0.0.3']) forwarders.push(await forwarder(ip, domainPort, zkA.port));
    setNames({
      'zk.doctor.test': ['127.0.0.2', '127.0.0.3'],
      'elsewhere.doctor.test': ['127.0.0.9'],
    });
    configureTree(dir, {
      ports: port as unknown as StackPorts,
      host: '127.0.0.1',
      ensemble: 'zk1',
      zkServers: [zkA.address, zkB.address],
      cacheHostname: 'localhost',
      webhookUrl: 'http://127.0.0.1:9/',
      fast: true,
    });
    // The cache exporter reads the ARCUS ensemble (zkA) only; zkB is a second coordination server
    // for the coordination exporter, the one without mntr.
    const cacheConf = join(dir, 'cache_exporter/conf/zk1.json');
    const conf = JSON.parse(readFileSync(cacheConf, 'utf8')) as Record<string, unknown>;
    writeFileSync(cacheConf, JSON.stringify({ ...conf, ensembleByName: { zk1: [zkA.address] } }, null, 2));
    writeFileSync(
      join(dir, 'coordination_exporter/conf/zk2.env'),
      `LISTEN_PORT=${port['zk2']}\nZK_DOMAIN=zk.doctor.test:${domainPort}\n` +
        `COORDINATION_EXPORTER_FLAGS="--listen=127.0.0.1:${port['zk2']} --resolve-interval=1h"\n`,
    );
    addEnsembleToTopologyProvider(dir, 'zk1', [zkA.address]);
    const provider = join(dir, 'topology_provider/conf/config.json');
    writeFileSync(
      provider,
      readFileSync(provider, 'utf8').replace(
        /"ensembleByName": \{/,
        `"ensembleByName": {\n    "zk2": ["zk.doctor.test:${domainPort}"],`,
      ),
    );
    const providerEnv = join(dir, 'topology_provider/conf/topology_provider.env');
    writeFileSync(
      providerEnv,
      readFileSync(providerEnv, 'utf8').replace(
        /^TOPOLOGY_PROVIDER_FLAGS="/m,
        // Names resolved again only on SIGHUP: a fix reaches the provider when the finding says so.
        'TOPOLOGY_PROVIDER_FLAGS="-resolve-interval=1d ',
      ),
    );
    const started = await cachemonHere([
      'start',
      'cache_exporter:zk1',
      'coordination_exporter:zk1',
      'coordination_exporter:zk2',
      'topology_provider',
    ]);
    assert.equal(started.status, 0, started.stdout + started.stderr);
  });

  after(async () => {
    if (dir) await cachemon(dir, ['stop']);
    for (const f of forwarders) f.close();
    for (const node of nodes) await node.stop();
    await arcus?.close();
    await zkA?.stop();
    await zkB?.stop();
  });

  test('ensemble add with a domain of two servers: refused, naming the --servers to give; --allow-merged keeps the name', async () => {
    const add = ['ensemble', 'add', 'zk3', '--domain', `zk.doctor.test:${domainPort}`, '--dry-run'];
    const refused = await cachemonHere(add);
    assert.notEqual(refused.status, 0, refused.stdout);
    assert.match(refused.stderr, /--domain zk\.doctor\.test:\d+ resolves to 2 coordination servers/);
    assert.match(
      refused.stderr,
      new RegExp(`Give them as --servers 127\\.0\\.0\\.2:${domainPort},127\\.0\\.0\\.3:${domainPort} `),
    );
    assert.match(refused.stderr, /or pass --allow-merged/);
    const allowed = await cachemonHere([...add, '--allow-merged']);
    assert.equal(allowed.status, 0, allowed.stderr);
    assert.match(allowed.stdout, new RegExp(`^\\+ZK_DOMAIN=zk\\.doctor\\.test:${domainPort}$`, 'm'));
    assert.doesNotMatch(allowed.stdout, /^\+ZK_SERVERS=/m, 'one of the two variables, never both');
  });

  test('a coordination server without mntr in its whitelist: an error, then unreachable while it restarts, then clean', async () => {
    const findings = await eventually(async () => {
      const found = await doctor();
      const refused = having(found, 'CACHEMON_DOCTOR_MNTR_NOT_WHITELISTED', zkB.address);
      assert.equal(refused.length, 1, shown(found));
      assert.match(refused[0]!.message, /the running exporter reports not_whitelisted too/);
      return found;
    });
    const [refused] = having(findings, 'CACHEMON_DOCTOR_MNTR_NOT_WHITELISTED', zkB.address);
    assert.equal(refused!.severity, 'error');
    assert.equal(refused!.instance, 'zk1');
    assert.match(refused!.message, /coordination_exporter\/conf\/zk1\.env refuses mntr/);
    assert.match(
      refused!.fix,
      /add mntr to 4lw\.commands\.whitelist in the zoo\.cfg of 127\.0\.0\.1:\d+ .* and restart that server/,
    );
    assert.deepEqual(having(findings, 'CACHEMON_DOCTOR_MNTR_NOT_WHITELISTED', zkA.address), []);

    // The fix: mntr added to that server's zoo.cfg, and the server restarted.
    await zkB.stop();
    const zooCfg = join(dirname(zkB.dataDir), 'conf/zoo.cfg');
    writeFileSync(zooCfg, readFileSync(zooCfg, 'utf8').replace(/^4lw\.commands\.whitelist=/m, '$&mntr,'));
    const down = having(await doctor(), 'CACHEMON_DOCTOR_ZK_UNREACHABLE', zkB.address);
    assert.equal(down.length, 1);
    assert.equal(down[0]!.severity, 'warning');
    assert.match(down[0]!.message, /cannot be reached: connection refused/);
    await zkB.start();
    await eventually(async () => {
      const found = await doctor();
      assert.deepEqual(
        found.filter((f) => /MNTR|ZK_UNREACHABLE/.test(f.code)),
        [],
        shown(found),
      );
    });
  });

  test('cache hostnames that do not resolve here, or resolve elsewhere: errors with the hosts-file line, gone once it is there', async () => {
    const [unresolved, elsewhere] = nodes.map((n) => n.address);
    const findings = await eventually(async () => {
      const found = await doctor();
      const missing = having(found, 'CACHEMON_DOCTOR_HOSTNAME_UNRESOLVED', 'nowhere.doctor.test');
      const wrong = having(found, 'CACHEMON_DOCTOR_HOSTNAME_MISMATCH', 'elsewhere.doctor.test');
      assert.equal(missing.length, 1, shown(found));
      assert.equal(wrong.length, 1, shown(found));
      // The provider resolves them too, on its own, when it first sees them.
      assert.match(missing[0]!.message, /the topology provider reports it too/, shown(found));
      assert.match(wrong[0]!.message, /the topology provider reports it too/, shown(found));
      return found;
    });
    const [missing] = having(findings, 'CACHEMON_DOCTOR_HOSTNAME_UNRESOLVED', 'nowhere.doctor.test');
    const [wrong] = having(findings, 'CACHEMON_DOCTOR_HOSTNAME_MISMATCH', 'elsewhere.doctor.test');
    assert.equal(missing!.severity, 'error');
    assert.match(
      missing!.message,
      new RegExp(`of cache node ${unresolved!.replace(/\./g, '\\.')} .*does not resolve on this machine`),
    );
    assert.match(missing!.fix, /add the line "127\.0\.0\.1 nowhere\.doctor\.test" to \/etc\/hosts on this machine/);
    assert.match(
      wrong!.message,
      new RegExp(
        `of cache node ${elsewhere!.replace(/\./g, '\\.')} .*resolves on this machine to 127\\.0\\.0\\.9, but the cache exporter connects to 127\\.0\\.0\\.1`,
      ),
    );
    assert.match(wrong!.fix, /make it "127\.0\.0\.1 elsewhere\.doctor\.test" in \/etc\/hosts/);

    // The fix: the lines the findings give, then the provider told to resolve again.
    setNames({ ...names, 'nowhere.doctor.test': ['127.0.0.1'], 'elsewhere.doctor.test': ['127.0.0.1'] });
    process.kill(hupOf(missing!), 'SIGHUP');
    await eventually(async () => {
      const found = await doctor();
      assert.deepEqual(
        found.filter((f) => f.code.startsWith('CACHEMON_DOCTOR_HOSTNAME_')),
        [],
        shown(found),
      );
    });
  });

  test('one domain for two servers, its answer changed while the exporter runs: warnings, each gone after its fix', async () => {
    const servers = `127.0.0.2:${domainPort} 127.0.0.3:${domainPort}`;
    let findings = await doctor();
    const [domain, ...more] = having(findings, 'CACHEMON_DOCTOR_ZK_DOMAIN', `ZK_DOMAIN=zk.doctor.test:${domainPort}`);
    assert.equal(more.length, 0, shown(findings));
    assert.equal(domain!.severity, 'warning', shown(findings));
    assert.equal(domain!.instance, 'zk2');
    assert.match(domain!.message, /reports each address as a server of its own .* so it works here/);
    assert.match(
      domain!.fix,
      new RegExp(
        `replace ZK_DOMAIN=zk\\.doctor\\.test:${domainPort} by ZK_SERVERS=\\(${servers.replace(/\./g, '\\.')}\\)`,
      ),
    );
    const [provider] = having(findings, 'CACHEMON_DOCTOR_ENSEMBLE_DOMAIN', `"zk2" gives zk.doctor.test:${domainPort}`);
    assert.equal(provider!.component, 'topology_provider', shown(findings));
    assert.match(provider!.fix, /curl -X POST http:\/\/127\.0\.0\.1:\d+\/reload\/config/);

    // The name's answer changes while the exporter runs.
    setNames({ ...names, 'zk.doctor.test': ['127.0.0.2'] });
    findings = await doctor();
    const [changed] = having(
      findings,
      'CACHEMON_DOCTOR_ZK_DNS_CHANGED',
      `zk.doctor.test:${domainPort} resolves here to 127.0.0.2:${domainPort}`,
    );
    assert.equal(changed!.severity, 'warning', shown(findings));
    assert.match(changed!.message, new RegExp(`reads 127\\.0\\.0\\.2:${domainPort} and 127\\.0\\.0\\.3:${domainPort}`));
    assert.match(
      changed!.message,
      /the answer has changed since \d{4}-\d\d-\d\dT[\d:]+Z, when the exporter last resolved it\. It resolves again by /,
    );
    process.kill(hupOf(changed!), 'SIGHUP');
    await eventually(async () => {
      const found = await doctor();
      assert.deepEqual(having(found, 'CACHEMON_DOCTOR_ZK_DNS_CHANGED', 'zk.doctor.test'), [], shown(found));
    });

    // Back to two servers, applied by the same signal; then the domain replaced by the server list.
    setNames({ ...names, 'zk.doctor.test': ['127.0.0.2', '127.0.0.3'] });
    process.kill(hupOf(changed!), 'SIGHUP');
    await eventually(async () => {
      const found = await doctor();
      assert.deepEqual(having(found, 'CACHEMON_DOCTOR_ZK_DNS_CHANGED', 'zk.doctor.test'), [], shown(found));
      assert.equal(having(found, 'CACHEMON_DOCTOR_ZK_DOMAIN', 'zk.doctor.test').length, 1, shown(found));
    });
    const env = join(dir, 'coordination_exporter/conf/zk2.env');
    writeFileSync(env, readFileSync(env, 'utf8').replace(/^ZK_DOMAIN=.*$/m, `ZK_SERVERS=(${servers})`));
    const restarted = await cachemonHere(['restart', 'coordination_exporter:zk2']);
    assert.equal(restarted.status, 0, restarted.stdout + restarted.stderr);
    const config = join(dir, 'topology_provider/conf/config.json');
    writeFileSync(
      config,
      readFileSync(config, 'utf8').replace(
        `"zk2": ["zk.doctor.test:${domainPort}"]`,
        `"zk2": ${JSON.stringify(servers.split(' '))}`,
      ),
    );
    const reload = /curl -X POST (\S+)/.exec(provider!.fix)![1]!;
    assert.equal((await fetch(reload, { method: 'POST' })).status, 200);
    findings = await doctor();
    assert.deepEqual(
      findings.filter((f) => /DOMAIN|DNS_CHANGED/.test(f.code)),
      [],
      shown(findings),
    );
    // The server list is read per server: both answer mntr, through the exporter too.
    assert.deepEqual(
      findings.filter((f) => f.instance === 'zk2'),
      [],
      shown(findings),
    );
  });
});
