import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createLoggerOn } from '@cachemon/core';
import { freePort } from '@cachemon/testkit';
import { Registry } from 'prom-client';
import { CoordinationExporter } from '../../src/exporter.js';

const fixture = (name: string): string =>
  readFileSync(new URL(`../../../test/fixtures/${name}`, import.meta.url), 'utf8');

/**
 * A domain whose addresses are the ensemble's servers: three servers on one port at 127.0.0.1,
 * 127.0.0.2 and 127.0.0.3 (all loopback on Linux), answering mntr like a real leader and followers,
 * and a resolver the test controls (what DNS would answer).
 */
describe('a domain name in --zk-hosts', () => {
  let port: number;
  const servers: Server[] = [];
  let answers: string[] = [];
  let failing = false;
  let connections = 0;
  /** How long the servers take to answer. */
  let answerDelayMs = 0;
  /** Called as a server sends its answer. */
  let onAnswer: () => void = () => undefined;
  const logged: string[] = [];
  let exporter: CoordinationExporter;

  before(async () => {
    port = await freePort();
    const replies = ['mntr-3.8-leader.txt', 'mntr-3.8-follower.txt', 'mntr-3.8-follower.txt'].map(fixture);
    for (const [i, reply] of replies.entries()) {
      // Half-open: the exporter ends its side after the word, and a delayed answer must still go out.
      const server = createServer({ allowHalfOpen: true }, (socket) => {
        connections++;
        socket.once('data', () =>
          setTimeout(() => {
            onAnswer();
            socket.end(reply);
          }, answerDelayMs),
        );
      });
      await new Promise<void>((resolve) => server.listen(port, `127.0.0.${i + 1}`, resolve));
      servers.push(server);
    }
    const logger = createLoggerOn({ write: (line: string) => void logged.push(line) }, 'info');
    exporter = new CoordinationExporter([{ host: 'zk.ensemble.test', port }], {
      logger,
      registry: new Registry(),
      resolve: async (name) => {
        assert.equal(name, 'zk.ensemble.test');
        if (failing) throw new Error('queryA ETIMEOUT zk.ensemble.test');
        return answers;
      },
    });
  });
  after(() => {
    for (const server of servers) server.close();
  });

  const scrape = async (): Promise<string> => (await exporter.metrics(Date.now() + 2000)).bytes().toString('utf8');
  const hosts = (text: string): string[] => [...text.matchAll(/^zk_up\{zk_host="([^"]+)"\} 1$/gm)].map((m) => m[1]!);

  it('every address is reported as a server of its own, with its own role', async () => {
    answers = ['127.0.0.2', '127.0.0.1', '127.0.0.3'];
    await exporter.resolve();
    const text = await scrape();
    assert.deepEqual(hosts(text), [`127.0.0.1:${port}`, `127.0.0.2:${port}`, `127.0.0.3:${port}`]);
    assert.match(text, new RegExp(`^zk_server_state\\{zk_host="127\\.0\\.0\\.1:${port}",state="leader"\\} 1$`, 'm'));
    assert.match(text, new RegExp(`^zk_server_state\\{zk_host="127\\.0\\.0\\.3:${port}",state="follower"\\} 1$`, 'm'));
    assert.match(logged.join(''), /coordination servers resolved/);
  });

  it('a DNS change is picked up by the next resolution, without a restart', async () => {
    answers = ['127.0.0.1', '127.0.0.3'];
    await exporter.resolve();
    assert.deepEqual(hosts(await scrape()), [`127.0.0.1:${port}`, `127.0.0.3:${port}`]);
  });

  it('a failed resolution keeps the last addresses and says so', async () => {
    failing = true;
    await exporter.resolve();
    failing = false;
    const text = await scrape();
    assert.deepEqual(hosts(text), [`127.0.0.1:${port}`, `127.0.0.3:${port}`]);
    assert.match(
      logged.join(''),
      /"domain":"zk.ensemble.test","error":"queryA ETIMEOUT zk.ensemble.test".*cannot resolve coordination server name/,
    );
    assert.match(text, /^cachemon_zk_resolutions_total\{result="failed"\} 1$/m);
    assert.match(text, /^cachemon_zk_resolutions_total\{result="ok"\} 2$/m);
  });

  it('concurrent scrapes share one collection: one mntr per server', async () => {
    answers = ['127.0.0.1', '127.0.0.2', '127.0.0.3'];
    await exporter.resolve();
    const before = connections;
    const texts = await Promise.all([1, 2, 3, 4].map(() => scrape()));
    assert.equal(connections - before, 3);
    for (const text of texts)
      assert.deepEqual(hosts(text), [`127.0.0.1:${port}`, `127.0.0.2:${port}`, `127.0.0.3:${port}`]);
    assert.match(await scrape(), /^cachemon_scrapes_shared_total{path="\/metrics"} 3$/m);
    assert.equal(connections - before, 6, 'the next scrape reads again');
  });

  it('reads the process metrics once every server has been sent mntr, before the answers are in, once per collection', async () => {
    const events: string[] = [];
    const withProcess = new CoordinationExporter([{ host: 'zk.ensemble.test', port }], {
      logger: createLoggerOn({ write: () => undefined }, 'error'),
      registry: new Registry(),
      resolve: async () => ['127.0.0.1', '127.0.0.2', '127.0.0.3'],
      processMetrics: async () => {
        events.push('process metrics read');
        return 'process_marker 1\n';
      },
    });
    await withProcess.resolve();
    answerDelayMs = 300;
    onAnswer = () => events.push('answered');
    try {
      const scrapes = [1, 2].map((n) =>
        withProcess.metrics(Date.now() + 2000).then((body) => {
          events.push(`done ${n}`);
          return body.bytes().toString('utf8');
        }),
      );
      const bodies = await Promise.all(scrapes);
      assert.deepEqual(
        events.slice(0, 4),
        ['process metrics read', 'answered', 'answered', 'answered'],
        'read once, before any server answered',
      );
      assert.deepEqual(events.slice(4).sort(), ['done 1', 'done 2']);
      for (const body of bodies) {
        assert.match(body, /^process_marker 1$/m);
        assert.equal(hosts(body).length, 3);
      }
    } finally {
      answerDelayMs = 0;
      onAnswer = () => undefined;
    }
  });

  it('a name that resolves to no address is a server of its own, unresolved, and the process metrics are still read', async () => {
    let reads = 0;
    const lonely = new CoordinationExporter([{ host: 'gone.test', port }], {
      logger: createLoggerOn({ write: () => undefined }, 'error'),
      registry: new Registry(),
      resolve: async () => [],
      processMetrics: async () => {
        reads++;
        return 'process_marker 1\n';
      },
    });
    await lonely.resolve();
    const text = (await lonely.metrics(Date.now() + 2000)).bytes().toString('utf8');
    assert.equal(reads, 1);
    assert.match(text, /^process_marker 1$/m);
    assert.match(text, new RegExp(`^zk_up\\{zk_host="gone\\.test:${port}"\\} 0$`, 'm'));
    assert.match(text, new RegExp(`^zk_mntr_status\\{zk_host="gone\\.test:${port}",status="unresolved"\\} 1$`, 'm'));
  });
});

/**
 * Names in a list of servers (ZK_SERVERS): one that resolves to one address keeps its name as
 * zk_host; one that does not resolve is reported as unresolved, warned about once, until it does.
 */
describe('names in a server list', () => {
  let port: number;
  const servers: Server[] = [];
  const logged: string[] = [];
  const addresses = new Map<string, string[]>([['zk1.test', ['127.0.0.1']]]);
  let exporter: CoordinationExporter;

  before(async () => {
    port = await freePort();
    for (const [i, reply] of ['mntr-3.8-leader.txt', 'mntr-3.8-follower.txt'].map(fixture).entries()) {
      const server = createServer({ allowHalfOpen: true }, (socket) => socket.once('data', () => socket.end(reply)));
      await new Promise<void>((resolve) => server.listen(port, `127.0.0.${i + 1}`, resolve));
      servers.push(server);
    }
    exporter = new CoordinationExporter(
      [
        { host: 'zk1.test', port },
        { host: 'zk2.test', port },
      ],
      {
        logger: createLoggerOn({ write: (line: string) => void logged.push(line) }, 'info'),
        registry: new Registry(),
        resolve: async (name) => {
          const found = addresses.get(name);
          if (found === undefined) throw new Error(`getaddrinfo ENOTFOUND ${name}`);
          return found;
        },
      },
    );
  });
  after(() => {
    for (const server of servers) server.close();
  });

  const scrape = async (): Promise<string> => (await exporter.metrics(Date.now() + 2000)).bytes().toString('utf8');
  const warnings = (): string[] =>
    logged.filter((line) => line.includes('"level":"warn"') || line.includes('"level":40'));

  it('a name of one address is zk_host as given; one that does not resolve is up 0, unresolved, warned about once', async () => {
    for (let i = 0; i < 3; i++) await exporter.resolve();
    const text = await scrape();
    assert.match(text, new RegExp(`^zk_up\\{zk_host="zk1\\.test:${port}"\\} 1$`, 'm'));
    assert.match(text, new RegExp(`^zk_server_leader\\{zk_host="zk1\\.test:${port}"\\} 1$`, 'm'));
    assert.match(text, new RegExp(`^zk_up\\{zk_host="zk2\\.test:${port}"\\} 0$`, 'm'));
    assert.match(text, new RegExp(`^zk_mntr_status\\{zk_host="zk2\\.test:${port}",status="unresolved"\\} 1$`, 'm'));
    assert.match(text, new RegExp(`^zk_server_leader\\{zk_host="zk2\\.test:${port}"\\} 0$`, 'm'));
    assert.doesNotMatch(text, /zk_host="127\.0\.0\./, 'no address as zk_host');
    const unresolved = warnings().filter((line) => line.includes('zk2.test'));
    assert.equal(unresolved.length, 1, unresolved.join(''));
    assert.match(
      unresolved[0]!,
      /"error":"getaddrinfo ENOTFOUND zk2\.test".*cannot resolve coordination server name; reported as unresolved/,
    );
  });

  it('once the name resolves, the server is read under its name', async () => {
    addresses.set('zk2.test', ['127.0.0.2']);
    await exporter.resolve();
    const text = await scrape();
    assert.match(text, new RegExp(`^zk_up\\{zk_host="zk2\\.test:${port}"\\} 1$`, 'm'));
    assert.match(text, new RegExp(`^zk_server_state\\{zk_host="zk2\\.test:${port}",state="follower"\\} 1$`, 'm'));
    assert.match(text, new RegExp(`^zk_mntr_status\\{zk_host="zk2\\.test:${port}",status="unresolved"\\} 0$`, 'm'));
    addresses.delete('zk2.test');
    await exporter.resolve();
    assert.match(
      await scrape(),
      new RegExp(`^zk_up\\{zk_host="zk2\\.test:${port}"\\} 1$`, 'm'),
      'a failure keeps the last address',
    );
    assert.equal(
      warnings().filter((line) => line.includes('zk2.test')).length,
      2,
      'warned again: it had resolved in between',
    );
  });
});

/**
 * What the exporter resolved, and when: a tool comparing a name's current DNS answer with the
 * addresses the exporter reads (cachemon doctor) needs both.
 */
describe('the resolved addresses exposed', () => {
  let port: number;
  let server: Server;
  let answers: string[] = [];
  let failing = false;
  let exporter: CoordinationExporter;

  before(async () => {
    port = await freePort();
    const reply = fixture('mntr-3.8-follower.txt');
    server = createServer({ allowHalfOpen: true }, (socket) => socket.once('data', () => socket.end(reply)));
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    exporter = new CoordinationExporter(
      [
        { host: 'zk.ensemble.test', port },
        { host: '127.0.0.1', port },
      ],
      {
        logger: createLoggerOn({ write: () => undefined }, 'error'),
        registry: new Registry(),
        resolve: async () => {
          if (failing) throw new Error('getaddrinfo ENOTFOUND zk.ensemble.test');
          return answers;
        },
      },
    );
  });
  after(() => server.close());

  const scrape = async (): Promise<string> => (await exporter.metrics(Date.now() + 2000)).bytes().toString('utf8');
  const addresses = (text: string): string[] =>
    [...text.matchAll(/^zk_resolved_address_info\{name="([^"]+)",address="([^"]+)"\} 1$/gm)].map(
      (m) => `${m[1]} ${m[2]}`,
    );
  const resolvedAt = (text: string): number | undefined => {
    const value = new RegExp(
      `^zk_resolved_timestamp_seconds\\{name="zk\\.ensemble\\.test:${port}"\\} (\\S+)$`,
      'm',
    ).exec(text)?.[1];
    return value === undefined ? undefined : Number(value);
  };

  it('each name with every address of its last answer, and the time of that answer; an IP address is no name', async () => {
    answers = ['127.0.0.3', '127.0.0.2'];
    const before = Date.now() / 1000;
    await exporter.resolve();
    const after = Date.now() / 1000;
    const text = await scrape();
    assert.deepEqual(addresses(text), [
      `zk.ensemble.test:${port} 127.0.0.2:${port}`,
      `zk.ensemble.test:${port} 127.0.0.3:${port}`,
    ]);
    const at = resolvedAt(text)!;
    assert.ok(at >= before && at <= after, `${at} within [${before}, ${after}]`);
    assert.doesNotMatch(text, /name="127\.0\.0\.1/);
  });

  it('a new answer replaces the addresses; a failed one keeps them and their time', async () => {
    answers = ['127.0.0.2'];
    await exporter.resolve();
    const text = await scrape();
    assert.deepEqual(addresses(text), [`zk.ensemble.test:${port} 127.0.0.2:${port}`]);
    failing = true;
    try {
      await exporter.resolve();
    } finally {
      failing = false;
    }
    const later = await scrape();
    assert.deepEqual(addresses(later), [`zk.ensemble.test:${port} 127.0.0.2:${port}`]);
    assert.equal(resolvedAt(later), resolvedAt(text));
  });

  it('pass promtool check metrics', async () => {
    // The mntr keys keep the widely used exporter's names, which promtool's conventions predate.
    const families = (await scrape())
      .split('\n')
      .filter((line) => /^(# (HELP|TYPE) )?zk_resolved_/.test(line))
      .join('\n');
    assert.match(families, /^# HELP zk_resolved_address_info /m);
    assert.match(families, /^# HELP zk_resolved_timestamp_seconds /m);
    const result = spawnSync('promtool', ['check', 'metrics'], {
      input: `${families}\n`,
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.equal(result.error, undefined, 'promtool runs (Debian package prometheus)');
    assert.equal(result.status, 0, `promtool check metrics: ${result.stdout}${result.stderr}`);
  });
});
