import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@cachemon/testkit';
import { STACK_DIR } from '@cachemon/stack';
import { doctorReport, exitStatus, renderFindings, runDoctor } from '../../src/doctor/index.js';
import type { Check, Finding } from '../../src/doctor/index.js';
import { finding, sortFindings } from '../../src/doctor/render.js';
import { downNodeFindings } from '../../src/doctor/running-checks.js';
import type { Sample } from '../../src/probe.js';
import {
  portConflictFindings,
  retentionFinding,
  scrapeJobFindings,
  unfilledFindings,
  zkDomainAndServersFinding,
} from '../../src/doctor/tree-checks.js';
import { Tree } from '../../src/tree.js';
import type { Instance } from '../../src/tree.js';

const warning = finding('CACHEMON_DOCTOR_B', 'warning', 'topology_provider', '', 'b is off', 'fix b');
const error = finding('CACHEMON_DOCTOR_A', 'error', 'cache_exporter', 'zk1', 'a is wrong', 'fix a');
const storeError = finding('CACHEMON_DOCTOR_C', 'error', 'short_term_store', 'short', 'c is wrong', 'fix c');
const notice = finding('CACHEMON_DOCTOR_D', 'notice', 'cache_exporter', 'zk1', 'd is down', 'start d');

test('findings: one line each with severity, code, component:instance, message and fix, then the counts', () => {
  const sorted = sortFindings([notice, warning, error, storeError]);
  assert.deepEqual(
    sorted.map((f) => f.code),
    ['CACHEMON_DOCTOR_C', 'CACHEMON_DOCTOR_A', 'CACHEMON_DOCTOR_B', 'CACHEMON_DOCTOR_D'],
    'errors, warnings, notices; then in component order',
  );
  assert.equal(
    renderFindings(sorted),
    [
      'ERROR CACHEMON_DOCTOR_C short_term_store:short: c is wrong -> fix: fix c',
      'ERROR CACHEMON_DOCTOR_A cache_exporter:zk1: a is wrong -> fix: fix a',
      'WARNING CACHEMON_DOCTOR_B topology_provider: b is off -> fix: fix b',
      'NOTICE CACHEMON_DOCTOR_D cache_exporter:zk1: d is down -> fix: start d',
      'doctor: 2 errors, 1 warning, 1 notice',
    ].join('\n'),
  );
  assert.equal(renderFindings([]), 'doctor: no findings');
  assert.equal(renderFindings([notice]).split('\n').at(-1), 'doctor: no findings, 1 notice');
  assert.deepEqual(doctorReport([error, warning, notice]), {
    findings: [error, warning, notice],
    errors: 1,
    warnings: 1,
    notices: 1,
  });
});

test('exit status: 0 clean or notices only, 1 warnings, 2 any error', () => {
  assert.equal(exitStatus([]), 0);
  assert.equal(exitStatus([notice]), 0);
  assert.equal(exitStatus([notice, warning]), 1);
  assert.equal(exitStatus([warning, warning]), 1);
  assert.equal(exitStatus([warning, error]), 2);
});

test('a check that throws or overruns its bound is a finding naming it, and the others still report', async () => {
  const tree = new Tree(await tempDir('cachemon-doctor-'));
  const fine: Check = async () => [warning];
  const broken: Check = async function brokenCheck() {
    throw new Error('cannot read x');
  };
  const hanging: Check = function hangingCheck() {
    return new Promise<Finding[]>(() => undefined);
  };
  const findings = await runDoctor(tree, [], { checks: [fine, broken, hanging], timeoutMs: 200 });
  assert.deepEqual(
    findings.map((f) => `${f.severity} ${f.code} ${f.instance}: ${f.message}`),
    [
      'error CACHEMON_DOCTOR_CHECK_FAILED brokenCheck: the check brokenCheck failed: cannot read x; what it checks is unknown',
      'error CACHEMON_DOCTOR_CHECK_FAILED hangingCheck: the check hangingCheck took longer than 0.2 s; what it checks is unknown',
      'warning CACHEMON_DOCTOR_B : b is off',
    ],
  );
});

const SHIPPED_SCRAPE = readFileSync(join(STACK_DIR, 'short_term_store/conf/scrape.yml'), 'utf8');
const STORES = { short: '0.0.0.0:8428', long: '0.0.0.0:8429' };
const jobs = (text: string) =>
  scrapeJobFindings('/t/scrape.yml', text, STORES, 'reload').map((f) => `${f.code}: ${f.message}`);

test('scrape jobs: the shipped six pass; a missing or changed one is named with what differs', () => {
  assert.deepEqual(jobs(SHIPPED_SCRAPE), []);
  assert.deepEqual(
    jobs(
      SHIPPED_SCRAPE.replace(
        'scrape_interval: 1m\n    metrics_path: /metrics\n    static',
        'scrape_interval: 60s\n    metrics_path: /metrics\n    static',
      ),
    ),
    [],
    '60s is 1m',
  );
  const changed = SHIPPED_SCRAPE.replace('job_name: meta-long', 'job_name: meta-longer')
    .replace(/(job_name: zookeeper\n\s+scrape_interval:) 1m/, '$1 30s')
    .replace('/metrics/prefixes', '/metrics/prefix');
  assert.deepEqual(jobs(changed), [
    "CACHEMON_DOCTOR_SCRAPE_JOB_MISSING: /t/scrape.yml has no job meta-long, one of the spec's six: its series are not collected",
    "CACHEMON_DOCTOR_SCRAPE_JOB_CHANGED: job arcus_prefixes in /t/scrape.yml is not as the spec has it: metrics_path /metrics/prefix (the spec's /metrics/prefixes)",
    "CACHEMON_DOCTOR_SCRAPE_JOB_CHANGED: job zookeeper in /t/scrape.yml is not as the spec has it: scrape_interval 30s (the spec's 1m)",
  ]);
  const unlabelled = SHIPPED_SCRAPE.replace(
    /(exporter\/host_exporter\.yml\]\n)\s+relabel_configs:\n\s+- target_label: scrape\n\s+replacement: short\n/,
    '$1',
  ).replace('127.0.0.1:8428', '127.0.0.1:9999');
  assert.deepEqual(jobs(unlabelled), [
    "CACHEMON_DOCTOR_SCRAPE_JOB_CHANGED: job meta-short in /t/scrape.yml is not as the spec has it: no static target of the short-term store's own address 127.0.0.1:8428",
    'CACHEMON_DOCTOR_SCRAPE_JOB_CHANGED: job system_resource in /t/scrape.yml is not as the spec has it: no relabel_configs entry setting scrape=short',
  ]);
  assert.match(
    jobs('scrape_configs: [')[0]!,
    /^CACHEMON_DOCTOR_SCRAPE_CONFIG_INVALID: \/t\/scrape\.yml is not valid YAML/,
  );
});

test('retention: compared as durations, the provider default 14d', () => {
  assert.equal(retentionFinding('/p.json', '2w', '/short.env', '14d', 'reload'), undefined);
  assert.equal(retentionFinding('/p.json', undefined, '/short.env', '336h', 'reload'), undefined);
  const found = retentionFinding('/p.json', undefined, '/short.env', '30d', 'reload');
  assert.equal(found?.code, 'CACHEMON_DOCTOR_RETENTION_MISMATCH');
  assert.match(
    found.message,
    /^rawRetention is 14d \(unset: the default\) in \/p\.json, but the short-term store keeps 30d/,
  );
  assert.equal(found.fix, 'set "rawRetention": "30d" in /p.json, then reload');
});

const instance = (id: string, listen: string, startFiles: string[] = [`/${id}.env`]): Instance => {
  const [component, name] = id.split(':') as [string, string | undefined];
  return {
    component,
    name,
    id,
    kind: 'cachemon',
    startArgs: [],
    pidfile: '',
    listen,
    reloadable: [`/${id}.json`],
    startFiles,
    healthPath: '',
  };
};

test('ports: two instances on one port clash unless both listen on different specific hosts', () => {
  const found = portConflictFindings(
    [
      instance('short_term_store:short', '127.0.0.1:8428'),
      instance('cache_exporter:zk1', '0.0.0.0:9151'),
      instance('coordination_exporter:zk1', '0.0.0.0:9151'),
      instance('query_proxy', '127.0.0.2:8428'),
    ],
    '/t',
  );
  assert.deepEqual(
    found.map((f) => [f.code, f.component, f.instance, f.message, f.fix]),
    [
      [
        'CACHEMON_DOCTOR_PORT_CONFLICT',
        'coordination_exporter',
        'zk1',
        'port 9151 is configured for cache_exporter:zk1 (0.0.0.0:9151, "listen" in /cache_exporter:zk1.json) and coordination_exporter:zk1 (0.0.0.0:9151, LISTEN_PORT in /coordination_exporter:zk1.env): only one of them can listen on it',
        'give coordination_exporter:zk1 a free port: LISTEN_PORT in /coordination_exporter:zk1.env, and its target in /t/coordination_exporter.yml; then cachemon restart coordination_exporter:zk1',
      ],
    ],
  );
});

test('alert router: each <FILL: ...> named by line and key, comments left out', () => {
  const found = unfilledFindings(
    '/a.yml',
    '# fields marked <FILL: ...>\nglobal:\n  smtp_from: "<FILL: sender>"\nreceivers:\n  - url: "<FILL: webhook>"\n',
    'reload',
  );
  assert.deepEqual(
    found.map((f) => f.message),
    [
      '/a.yml line 3: smtp_from is still "<FILL: sender>"; start.sh refuses to start the alert router until it is filled',
      '/a.yml line 5: url is still "<FILL: webhook>"; start.sh refuses to start the alert router until it is filled',
    ],
  );
});

test('ZK_DOMAIN and ZK_SERVERS: an error only when both hold a value', () => {
  assert.equal(zkDomainAndServersFinding('zk1', '/e', 'zk:2181', []), undefined);
  assert.equal(zkDomainAndServersFinding('zk1', '/e', '', ['a:1']), undefined);
  assert.equal(
    zkDomainAndServersFinding('zk1', '/e', 'zk:2181', ['a:1', 'b:1'])?.code,
    'CACHEMON_DOCTOR_ZK_DOMAIN_AND_SERVERS',
  );
});

test('cache nodes down: a notice each, with the reason in words; past twenty, one line counts the rest', () => {
  const node = (n: number, up: number, reason?: string): Sample[] => {
    const labels = { ensemble: 'zk1', service_code: 'svc', node: `10.0.0.${n}:11211`, hostname: `cache-${n}` };
    return [
      { name: 'arcus_up', labels, value: up },
      ...(reason ? [{ name: 'arcus_node_last_error_info', labels: { ...labels, reason }, value: 1 }] : []),
    ];
  };
  const found = downNodeFindings('zk1', [...node(1, 1), ...node(2, 0, 'not_registered'), ...node(3, 0, 'timeout')]);
  assert.deepEqual(
    found.map((f) => [f.code, f.severity, f.instance]),
    [
      ['CACHEMON_DOCTOR_CACHE_NODE_DOWN', 'notice', 'zk1'],
      ['CACHEMON_DOCTOR_CACHE_NODE_DOWN', 'notice', 'zk1'],
    ],
  );
  assert.match(
    found[0]!.message,
    /^cache node 10\.0\.0\.2:11211 \(cache-2\) of service code svc is mapped .* not registered in cache_list/,
  );
  assert.match(found[0]!.fix, /start the cache node at 10\.0\.0\.2:11211/);
  assert.match(found[1]!.message, /10\.0\.0\.3:11211 .* did not answer stats in time/);
  assert.equal(exitStatus(found), 0);

  const many = downNodeFindings('zk1', Array.from({ length: 25 }, (_, i) => node(i + 1, 0, 'unreachable')).flat());
  assert.equal(many.length, 21);
  assert.equal(many.at(-1)!.message, '5 more cache nodes are down (25 in all)');
});
