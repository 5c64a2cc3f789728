import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CoordinationEnv, Lookup } from '../../src/doctor/facts.js';
import { classifyMntr, mntrFindings } from '../../src/doctor/mntr.js';
import { dnsFindings, domainFindings, hostnameFindings } from '../../src/doctor/resolution.js';
import type { Answers, ExporterView } from '../../src/doctor/resolution.js';
import type { Instance } from '../../src/tree.js';

const instance = { component: 'coordination_exporter', name: 'zk1', id: 'coordination_exporter:zk1' } as Instance;
const file = '/opt/cachemon/coordination_exporter/conf/zk1.env';
const domainEnv: CoordinationEnv = {
  instance,
  ensemble: 'zk1',
  file,
  domain: 'zk.example:2181',
  servers: [],
  entries: [{ host: 'zk.example', port: 2181 }],
};

function answering(table: Record<string, string[] | undefined>): Answers {
  return (name): Lookup => {
    const addresses = table[name];
    return addresses ? { addresses } : { addresses: [], error: 'not found' };
  };
}

function view(over: Partial<ExporterView>): ExporterView {
  return {
    pid: 4242,
    intervalSeconds: 60,
    zkHosts: new Set(),
    resolved: new Map(),
    exposesResolution: true,
    ...over,
  };
}

const codes = (findings: ReadonlyArray<{ code: string; severity: string }>) =>
  findings.map((f) => `${f.code} ${f.severity}`);

describe('doctor: one name for several coordination servers', () => {
  const answers = answering({ 'zk.example': ['10.0.0.1', '10.0.0.2'] });

  it('reported per address: a warning with the server list to use instead', () => {
    const exporter = view({
      zkHosts: new Set(['10.0.0.1:2181', '10.0.0.2:2181']),
      resolved: new Map([['zk.example:2181', { addresses: ['10.0.0.1:2181', '10.0.0.2:2181'], at: 1 }]]),
    });
    const [finding, ...rest] = domainFindings(domainEnv, answers, exporter);
    assert.equal(rest.length, 0);
    assert.equal(finding!.code, 'CACHEMON_DOCTOR_ZK_DOMAIN');
    assert.equal(finding!.severity, 'warning');
    assert.match(
      finding!.fix,
      /replace ZK_DOMAIN=zk\.example:2181 by ZK_SERVERS=\(10\.0\.0\.1:2181 10\.0\.0\.2:2181\)/,
    );
  });

  it('one zk_host for the name by an exporter that does not say what it resolved: merged, an error', () => {
    const exporter = view({ zkHosts: new Set(['zk.example:2181']), exposesResolution: false });
    assert.deepEqual(codes(domainFindings(domainEnv, answers, exporter)), ['CACHEMON_DOCTOR_ZK_DOMAIN_MERGED error']);
  });

  it('one zk_host for the name because it resolved to one address then: no merge (the DNS check tells)', () => {
    const exporter = view({
      zkHosts: new Set(['zk.example:2181']),
      resolved: new Map([['zk.example:2181', { addresses: ['10.0.0.1:2181'], at: 1 }]]),
    });
    assert.deepEqual(codes(domainFindings(domainEnv, answers, exporter)), ['CACHEMON_DOCTOR_ZK_DOMAIN warning']);
  });

  it('a ZK_SERVERS entry that is a domain: the other entries are kept in the list to use', () => {
    const env: CoordinationEnv = {
      ...domainEnv,
      domain: undefined,
      servers: ['10.0.0.9:2181', 'zk.example:2181'],
      entries: [
        { host: '10.0.0.9', port: 2181 },
        { host: 'zk.example', port: 2181 },
      ],
    };
    const [finding] = domainFindings(env, answers, undefined);
    assert.match(finding!.message, /not running/);
    assert.match(finding!.fix, /set ZK_SERVERS=\(10\.0\.0\.9:2181 10\.0\.0\.1:2181 10\.0\.0\.2:2181\)/);
  });
});

describe("doctor: a name's DNS answer changed under the coordination exporter", () => {
  const now = 10_000;
  const resolvedAt = (at: number | undefined, interval = 60) =>
    view({
      intervalSeconds: interval,
      resolved: new Map([['zk.example:2181', { addresses: ['10.0.0.1:2181', '10.0.0.2:2181'], at }]]),
    });
  const answers = answering({ 'zk.example': ['10.0.0.1'] });

  it('resolved recently: a warning saying by when it resolves again, and the signal that does it now', () => {
    const [finding] = dnsFindings(domainEnv, answers, resolvedAt(now - 30), now);
    assert.equal(finding!.code, 'CACHEMON_DOCTOR_ZK_DNS_CHANGED');
    assert.equal(finding!.severity, 'warning');
    assert.match(
      finding!.message,
      /resolves here to 10\.0\.0\.1:2181, but .* reads 10\.0\.0\.1:2181 and 10\.0\.0\.2:2181/,
    );
    assert.match(finding!.message, /It resolves again by 1970-01-01T02:47:10Z/);
    assert.match(finding!.fix, /kill -HUP 4242/);
  });

  it('last resolved more than twice the interval ago, or never again (0s): an error', () => {
    assert.deepEqual(codes(dnsFindings(domainEnv, answers, resolvedAt(now - 121), now)), [
      'CACHEMON_DOCTOR_ZK_DNS_CHANGED error',
    ]);
    assert.deepEqual(codes(dnsFindings(domainEnv, answers, resolvedAt(now - 1, 0), now)), [
      'CACHEMON_DOCTOR_ZK_DNS_CHANGED error',
    ]);
  });

  it('the same answer, or none here (the hostname check says so): nothing', () => {
    const same = answering({ 'zk.example': ['10.0.0.2', '10.0.0.1'] });
    assert.deepEqual(dnsFindings(domainEnv, same, resolvedAt(now - 500), now), []);
    assert.deepEqual(dnsFindings(domainEnv, answering({}), resolvedAt(now - 30), now), []);
  });
});

describe('doctor: hostnames resolved here against the addresses the exporters connect to', () => {
  const node = (hostname: string, ip: string) => ({ ensemble: 'zk1', instance: 'zk1', hostname, node: `${ip}:11211` });
  const answers = answering({ 'cache1.example': ['10.1.0.1'], 'cache2.example': ['10.9.9.9'] });

  it('unresolved and resolving elsewhere: errors with the hosts-file line', () => {
    const findings = hostnameFindings(
      [node('cache1.example', '10.1.0.1'), node('cache2.example', '10.1.0.2'), node('cache3.example', '10.1.0.3')],
      [],
      undefined,
      answers,
    );
    assert.deepEqual(codes(findings), [
      'CACHEMON_DOCTOR_HOSTNAME_MISMATCH error',
      'CACHEMON_DOCTOR_HOSTNAME_UNRESOLVED error',
    ]);
    assert.match(
      findings[0]!.message,
      /cache2\.example .* resolves on this machine to 10\.9\.9\.9, but .* connects to 10\.1\.0\.2/,
    );
    assert.match(findings[0]!.fix, /"10\.1\.0\.2 cache2\.example"/);
    assert.match(findings[1]!.fix, /"10\.1\.0\.3 cache3\.example"/);
  });

  it("the provider's own problems: folded into the same finding, or reported as the provider's when only it sees them", () => {
    const problem = (hostname: string, address: string, p: string) => ({
      ensemble: 'zk1',
      kind: 'cache',
      hostname,
      address,
      problem: p,
      resolved: [],
    });
    const findings = hostnameFindings(
      [node('cache3.example', '10.1.0.3')],
      [],
      {
        pid: 77,
        problems: [
          problem('cache3.example', '10.1.0.3:11211', 'unresolved'),
          problem('cache1.example', '10.1.0.1:11211', 'unresolved'),
          problem('', '10.1.0.4:11211', 'no_hostname'),
        ],
      },
      answers,
    );
    assert.deepEqual(codes(findings), [
      'CACHEMON_DOCTOR_HOSTNAME_UNRESOLVED error',
      'CACHEMON_DOCTOR_HOSTNAME_UNRESOLVED error',
      'CACHEMON_DOCTOR_HOSTNAME_MISSING warning',
    ]);
    assert.match(findings[0]!.message, /reports it too/);
    assert.match(findings[0]!.fix, /then kill -HUP 77/);
    assert.match(findings[1]!.message, /the provider's answer is older/);
    assert.equal(findings[1]!.component, 'topology_provider');
  });

  it('a coordination name that does not resolve here: the hosts-file line from the address the exporter reads', () => {
    const [finding] = hostnameFindings(
      [],
      [{ ensemble: 'zk1', name: 'zk1.example', readAs: ['10.0.0.5:2181'] }],
      undefined,
      answers,
    );
    assert.equal(finding!.code, 'CACHEMON_DOCTOR_HOSTNAME_UNRESOLVED');
    assert.match(finding!.fix, /"10\.0\.0\.5 zk1\.example"/);
  });
});

describe('doctor: mntr answers', () => {
  it('are told apart', () => {
    assert.equal(classifyMntr('mntr is not executed because it is not in the whitelist.\n').kind, 'not_whitelisted');
    assert.equal(classifyMntr('zk_version\t3.8.0\nzk_avg_latency\t0\n').kind, 'ok');
    assert.equal(classifyMntr('HTTP/1.1 400 Bad Request\r\n').kind, 'other');
    // Judged as the exporter judges it: a zk_version line among garbage is no reply.
    assert.equal(classifyMntr('zk_version\t3.8.0\nzk_avg\u0000latency\t0\n').kind, 'other');
  });

  it('a server the running exporter does not read: it runs with another list than the file', () => {
    const env: CoordinationEnv = {
      ...domainEnv,
      domain: undefined,
      servers: ['10.0.0.1:2181', '10.0.0.2:2181'],
      entries: [
        { host: '10.0.0.1', port: 2181 },
        { host: '10.0.0.2', port: 2181 },
      ],
    };
    const server = (ip: string) => ({ host: ip, port: 2181, label: `${ip}:2181`, entry: `${ip}:2181` });
    const findings = mntrFindings(
      env,
      [
        { server: server('10.0.0.1'), result: { kind: 'ok' } },
        { server: server('10.0.0.2'), result: { kind: 'ok' } },
      ],
      { statuses: new Map([['10.0.0.1:2181', 'unreachable']]), resolvedNames: new Set() },
    );
    assert.deepEqual(codes(findings), [
      'CACHEMON_DOCTOR_MNTR_EXPORTER_DIFFERS warning',
      'CACHEMON_DOCTOR_MNTR_EXPORTER_DIFFERS warning',
    ]);
    assert.match(findings[0]!.message, /reports it unreachable/);
    assert.match(
      findings[1]!.message,
      /lists 10\.0\.0\.2:2181, but the running coordination exporter does not read it/,
    );
  });
});
