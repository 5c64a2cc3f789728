import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HostnameChecker } from '../../src/index.js';
import type { HostnameTarget } from '../../src/index.js';

function resolverOf(table: Record<string, string[]>) {
  const calls: string[] = [];
  const resolver = async (name: string) => {
    calls.push(name);
    const found = table[name];
    if (found === undefined) throw new Error(`getaddrinfo ENOTFOUND ${name}`);
    return found;
  };
  return { resolver, calls, table };
}

const cache = (hostname: string, address: string): HostnameTarget => ({
  ensemble: 'prod',
  kind: 'cache',
  hostname,
  address,
  expected: address.split(':')[0]!,
});

describe('HostnameChecker', () => {
  it('reports names that do not resolve, resolve elsewhere, or are missing; logs each change once', async () => {
    const { resolver, calls, table } = resolverOf({
      good: ['10.0.0.1'],
      multi: ['10.0.0.9', '10.0.0.2'],
      moved: ['10.9.9.9'],
      'zk.prod': ['10.1.0.1'],
    });
    const lines: Array<[string, Record<string, unknown>, string]> = [];
    const logger = {
      info: (obj: object, msg: string) => lines.push(['info', obj as Record<string, unknown>, msg]),
      warn: (obj: object, msg: string) => lines.push(['warn', obj as Record<string, unknown>, msg]),
    };
    let changes = 0;
    const checker = new HostnameChecker({ resolver, intervalMs: 60_000, logger, onChange: () => changes++ });
    await checker.setTargets([
      cache('good', '10.0.0.1:11211'),
      cache('good', '10.0.0.1:11212'),
      cache('multi', '10.0.0.2:11211'),
      cache('moved', '10.0.0.3:11211'),
      cache('gone', '10.0.0.4:11211'),
      cache('', '10.0.0.5:11211'),
      cache('10.0.0.6', '10.0.0.6:11211'),
      { ensemble: 'prod', kind: 'coordination', hostname: 'zk.prod', address: 'zk.prod:2181' },
      { ensemble: 'prod', kind: 'coordination', hostname: 'zk.nowhere', address: 'zk.nowhere:2181' },
    ]);
    assert.deepEqual(
      calls.sort(),
      ['gone', 'good', 'moved', 'multi', 'zk.nowhere', 'zk.prod'],
      'each name once; IP literals not looked up',
    );
    assert.deepEqual(
      checker.problems.map((p) => [p.kind, p.hostname, p.address, p.problem, p.resolved.join(',')]),
      [
        ['cache', 'moved', '10.0.0.3:11211', 'mismatch', '10.9.9.9'],
        ['cache', 'gone', '10.0.0.4:11211', 'unresolved', ''],
        ['cache', '', '10.0.0.5:11211', 'no_hostname', ''],
        ['coordination', 'zk.nowhere', 'zk.nowhere:2181', 'unresolved', ''],
      ],
    );
    assert.equal(checker.problems[1]!.error, 'getaddrinfo ENOTFOUND gone');
    assert.deepEqual(checker.addressesOf('multi'), ['10.0.0.2', '10.0.0.9']);
    assert.equal(checker.addressesOf('gone'), undefined);
    assert.equal(lines.filter(([level]) => level === 'warn').length, 4);
    assert.ok(changes >= 1);
    assert.deepEqual(checker.lookups, { ok: 4, failed: 2 });

    // DNS fixed for one name, broken for another: one line each, nothing repeated.
    table['gone'] = ['10.0.0.4'];
    delete table['good'];
    lines.length = 0;
    await checker.resolveAll(true);
    assert.deepEqual(
      checker.problems.map((p) => [p.hostname, p.address, p.problem]),
      [
        ['good', '10.0.0.1:11211', 'unresolved'],
        ['good', '10.0.0.1:11212', 'unresolved'],
        ['moved', '10.0.0.3:11211', 'mismatch'],
        ['', '10.0.0.5:11211', 'no_hostname'],
        ['zk.nowhere', 'zk.nowhere:2181', 'unresolved'],
      ],
    );
    assert.deepEqual(
      lines.map(([level, obj]) => [level, obj['hostname']]),
      [
        ['warn', 'good'],
        ['warn', 'good'],
        ['info', 'gone'],
      ],
    );
    checker.stop();
  });

  it('resolves only new names when the targets change, and forgets names no longer used', async () => {
    const { resolver, calls } = resolverOf({ a: ['10.0.0.1'], b: ['10.0.0.2'] });
    const checker = new HostnameChecker({ resolver, intervalMs: 60_000 });
    await checker.setTargets([cache('a', '10.0.0.1:1')]);
    await checker.setTargets([cache('a', '10.0.0.1:1'), cache('b', '10.0.0.2:1')]);
    assert.deepEqual(calls, ['a', 'b']);
    await checker.setTargets([cache('b', '10.0.0.2:1')]);
    assert.equal(checker.addressesOf('a'), undefined);
    assert.deepEqual(checker.problems, []);
    checker.stop();
  });

  it('bounds the lookups in flight', async () => {
    let inFlight = 0;
    let most = 0;
    const resolver = async (name: string) => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((r) => setTimeout(r, 2));
      inFlight--;
      return [`10.0.${name.length}.1`];
    };
    const checker = new HostnameChecker({ resolver, intervalMs: 60_000, concurrency: 4 });
    await checker.setTargets(
      Array.from({ length: 50 }, (_, i) => ({
        ensemble: 'e',
        kind: 'coordination' as const,
        hostname: `host-${i}`,
        address: `host-${i}:2181`,
      })),
    );
    assert.equal(most, 4);
    checker.stop();
  });
});
