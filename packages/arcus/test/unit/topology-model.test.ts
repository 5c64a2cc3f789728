import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  addLastJoins,
  buildTopology,
  mappingNodeAddress,
  parseMappingChild,
  parseRegistration,
  type ArcusRoot,
  type RootSnapshot,
} from '../../src/topology/index.js';

test('registration names: plain, replication, and names that are not registrations', () => {
  assert.deepEqual(parseRegistration('127.0.0.1:21211-localhost'), { node: '127.0.0.1:21211', hostname: 'localhost' });
  assert.deepEqual(parseRegistration('10.0.0.5:11211-cache-05.example.com'), {
    node: '10.0.0.5:11211',
    hostname: 'cache-05.example.com',
  });
  assert.deepEqual(parseRegistration('g1^M^10.0.0.1:11211-host1'), {
    node: '10.0.0.1:11211',
    hostname: 'host1',
    group: 'g1',
    role: 'master',
  });
  assert.equal(parseRegistration('g1^S^10.0.0.2:11211-host2')?.role, 'slave');
  // Addresses no connection can be made to (an unbracketed IPv6 address, odd host characters) too.
  for (const bad of [
    '',
    'garbage',
    '127.0.0.1-localhost',
    '127.0.0.1:99999-x',
    'g^X^1.2.3.4:1-h',
    '^M^1.2.3.4:1-h',
    'a^b',
    '::1:11211-host',
    'ho$t:11211-h',
    '127.0.0.1:0-h',
  ]) {
    assert.equal(parseRegistration(bad), undefined, bad);
  }
});

test('mapping children and keys', () => {
  assert.deepEqual(parseMappingChild('test'), { serviceCode: 'test' });
  assert.deepEqual(parseMappingChild('svc^g1^10.0.0.2:11211'), { serviceCode: 'svc', group: 'g1' });
  assert.equal(parseMappingChild(''), undefined);
  assert.equal(mappingNodeAddress('127.0.0.1:21211', undefined), '127.0.0.1:21211');
  assert.equal(mappingNodeAddress('10.0.0.9', '{"port":"21211","threads":"2"}'), '10.0.0.9:21211');
  assert.deepEqual(parseRegistration('[::1]:11211-host6'), { node: '[::1]:11211', hostname: 'host6' });
  for (const [key, data] of [
    ['::1:11211', undefined],
    ['ho$t:11211', undefined],
    ['ho$t', '{"port":"1"}'],
  ] as const) {
    assert.equal(mappingNodeAddress(key, data), undefined, key);
  }
  assert.equal(mappingNodeAddress('10.0.0.9', 'not json'), undefined);
  assert.equal(mappingNodeAddress('10.0.0.9', undefined), undefined);
});

function snapshot(cacheList: Record<string, string[]>, mapping: Record<string, string[]> = {}): RootSnapshot {
  return {
    cacheList: new Map(Object.entries(cacheList)),
    mapping: new Map(Object.entries(mapping).map(([k, children]) => [k, { children }])),
  };
}

test('topology of the sample znode tree: live nodes, a mapped node with no registration is down', () => {
  const roots = new Map<ArcusRoot, RootSnapshot>([
    [
      '/arcus',
      snapshot(
        { demo: ['127.0.0.1:21213-localhost'], test: ['127.0.0.1:21211-localhost', '127.0.0.1:21212-localhost'] },
        {
          '127.0.0.1:21211': ['test'],
          '127.0.0.1:21212': ['test'],
          '127.0.0.1:21213': ['demo'],
          '127.0.0.1:21214': ['test'],
        },
      ),
    ],
  ]);
  const topology = buildTopology(roots, {
    lastRegistrations: new Map([['127.0.0.1:21214', { node: '127.0.0.1:21214', hostname: 'oldhost' }]]),
  });
  assert.deepEqual(topology.serviceCodes, ['demo', 'test']);
  assert.deepEqual(
    topology.nodes.map((n) => [n.serviceCode, n.node, n.hostname, n.live, n.mapped]),
    [
      ['demo', '127.0.0.1:21213', 'localhost', true, true],
      ['test', '127.0.0.1:21211', 'localhost', true, true],
      ['test', '127.0.0.1:21212', 'localhost', true, true],
      ['test', '127.0.0.1:21214', 'oldhost', false, true],
    ],
  );
  assert.deepEqual(topology.problems, []);
});

test('service code filter, replication groups and roles, broken znodes reported not fatal', () => {
  const roots = new Map<ArcusRoot, RootSnapshot>([
    [
      '/arcus',
      snapshot({ a: ['1.1.1.1:1-h', 'junk'], b: ['2.2.2.2:2-h'] }, { '2.2.2.2:2': ['b'], '3.3.3.3:3': ['x', 'y'] }),
    ],
    [
      '/arcus_repl',
      snapshot(
        { r: ['g1^M^10.0.0.1:11211-m1', 'g1^S^10.0.0.2:11211-s1'] },
        { '10.0.0.1:11211': ['r^g1^10.0.0.2:11211'], '10.0.0.3:11211': ['r^g2^10.0.0.4:11211'] },
      ),
    ],
  ]);
  const topology = buildTopology(roots, { serviceCodes: new Set(['a', 'r']) });
  assert.deepEqual(topology.serviceCodes, ['a', 'r']);
  assert.deepEqual(
    topology.nodes.map((n) => [n.serviceCode, n.node, n.live, n.group, n.role]),
    [
      ['a', '1.1.1.1:1', true, undefined, undefined],
      ['r', '10.0.0.1:11211', true, 'g1', 'master'],
      ['r', '10.0.0.2:11211', true, 'g1', 'slave'],
      ['r', '10.0.0.3:11211', false, 'g2', undefined],
    ],
  );
  assert.equal(topology.problems.length, 2);
  assert.match(topology.problems.join('\n'), /cache_list\/a\/junk/);
  assert.match(topology.problems.join('\n'), /3\.3\.3\.3:3: 2 children/);
});

test('a replication node that is down keeps the role it last registered with; one never seen has none', () => {
  const roots = new Map<ArcusRoot, RootSnapshot>([
    [
      '/arcus_repl',
      snapshot(
        { r: ['g1^S^10.0.0.2:11211-s1'] },
        {
          '10.0.0.1:11211': ['r^g1^10.0.0.2:11211'],
          '10.0.0.2:11211': ['r^g1^10.0.0.1:11211'],
          '10.0.0.3:11211': ['r^g2^10.0.0.4:11211'],
        },
      ),
    ],
  ]);
  const topology = buildTopology(roots, {
    lastRegistrations: new Map([
      ['10.0.0.1:11211', { node: '10.0.0.1:11211', hostname: 'm1', group: 'g1', role: 'master' as const }],
      ['10.0.0.2:11211', { node: '10.0.0.2:11211', hostname: 'old-s1', group: 'g1', role: 'master' as const }],
    ]),
  });
  assert.deepEqual(
    topology.nodes.map((n) => [n.node, n.live, n.hostname, n.group, n.role]),
    [
      ['10.0.0.1:11211', false, 'm1', 'g1', 'master'],
      // Live: the role it registers with now, not the one remembered.
      ['10.0.0.2:11211', true, 's1', 'g1', 'slave'],
      ['10.0.0.3:11211', false, '', 'g2', undefined],
    ],
  );
});

test('a stray cache_list child with an address no connection can be made to is a problem, not a node', () => {
  const roots = new Map<ArcusRoot, RootSnapshot>([
    [
      '/arcus',
      snapshot({ s: ['10.1.1.1:11211-cache1', '::1:11211-v6host'] }, { '10.1.1.1:11211': ['s'], '::1:11212': ['s'] }),
    ],
  ]);
  const topology = buildTopology(roots);
  assert.deepEqual(
    topology.nodes.map((n) => n.node),
    ['10.1.1.1:11211'],
  );
  assert.equal(topology.problems.length, 2, topology.problems.join('; '));
  assert.ok(topology.problems.some((p) => p.includes('::1:11211-v6host')));
  assert.ok(topology.problems.some((p) => p.includes('cache_server_mapping/::1:11212')));
});

test('a mapping keyed by hostname:port matches the live node registered with that hostname', () => {
  const roots = new Map<ArcusRoot, RootSnapshot>([
    ['/arcus', snapshot({ s: ['10.1.1.1:11211-cache1'] }, { 'cache1:11211': ['s'] })],
  ]);
  const topology = buildTopology(roots);
  assert.equal(topology.nodes.length, 1);
  assert.deepEqual(
    [topology.nodes[0]!.node, topology.nodes[0]!.live, topology.nodes[0]!.mapped],
    ['10.1.1.1:11211', true, true],
  );
});

test('a down node mapped by hostname:port carries that hostname; one mapped by address has none', () => {
  const roots = new Map<ArcusRoot, RootSnapshot>([
    ['/arcus', snapshot({ s: [] }, { 'cache9:11211': ['s'], '10.1.1.2:11211': ['s'] })],
  ]);
  const topology = buildTopology(roots);
  assert.deepEqual(
    topology.nodes.map((n) => [n.node, n.live, n.hostname]),
    [
      ['10.1.1.2:11211', false, ''],
      ['cache9:11211', false, 'cache9'],
    ],
  );
});

test('a down node mapped by hostname:port keeps the ip:port and hostname it was registered with', () => {
  const roots = new Map<ArcusRoot, RootSnapshot>([
    ['/arcus', snapshot({ s: [] }, { 'cache1:11211': ['s'], 'cache2:11211': ['s'] })],
  ]);
  const lastRegistrations = new Map([
    ['10.1.1.1:11211', { node: '10.1.1.1:11211', hostname: 'cache1' }],
    ['10.1.1.5:11212', { node: '10.1.1.5:11212', hostname: 'cache2' }], // another port: not cache2:11211
  ]);
  const topology = buildTopology(roots, { lastRegistrations });
  assert.deepEqual(
    topology.nodes.map((n) => [n.node, n.live, n.mapped, n.hostname]),
    [
      ['10.1.1.1:11211', false, true, 'cache1'],
      ['cache2:11211', false, true, 'cache2'],
    ],
  );
});

test('join log entries: the highest sequence of the newest day folder that has the node', () => {
  const wanted = new Set(['10.0.0.1:11211', '10.0.0.2:11211', '10.0.0.3:11211', '10.0.0.4:11211']);
  const found = new Map<string, ReturnType<typeof parseRegistration> & object>();
  // Newest day first. Its entries come in no particular order (as ZooKeeper lists them).
  addLastJoins(
    found,
    [
      '10.0.0.1:11211-a-new-0000000012',
      'garbage',
      '10.0.0.1:11211-a-old-0000000003',
      '10.0.0.9:11211-other-0000000004',
      '10.0.0.1:11211-a-mid-0000000010',
    ],
    wanted,
  );
  addLastJoins(
    found,
    [
      '10.0.0.1:11211-a-older-day-0000000099',
      '10.0.0.2:11211-b-0000000001',
      '10.0.0.2:11211-b-host-2-0000000002',
      'g1^M^10.0.0.3:11211-c-repl-0000000005',
      '10.0.0.4:11211-0000000001',
    ],
    wanted,
  );
  assert.deepEqual(Object.fromEntries([...found].map(([node, r]) => [node, r.hostname])), {
    '10.0.0.1:11211': 'a-new',
    '10.0.0.2:11211': 'b-host-2',
    '10.0.0.3:11211': 'c-repl',
  });
  assert.equal(found.get('10.0.0.3:11211')!.role, 'master');
  assert.equal(found.has('10.0.0.9:11211'), false, 'only wanted nodes');
  assert.equal(found.has('10.0.0.4:11211'), false, 'an entry without a hostname is no registration');
});
