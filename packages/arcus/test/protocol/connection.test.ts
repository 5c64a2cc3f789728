import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import { CachemonError, Errors } from '@cachemon/core';
import { eventually } from '@cachemon/testkit';
import { AsciiConnection, parseStats } from '../../src/protocol/index.js';
import { fakeServer, freePort, onLines, sample, type FakeServer } from './fixtures.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function serve(
  onConnection: (socket: Socket, index: number) => void,
  listenOn?: { host?: string; port?: number },
): Promise<FakeServer> {
  const server = await fakeServer(onConnection, listenOn);
  cleanups.push(() => server.close());
  return server;
}

function connection(address: string, options?: ConstructorParameters<typeof AsciiConnection>[1]): AsciiConnection {
  const conn = new AsciiConnection(address, options);
  cleanups.push(() => conn.close());
  return conn;
}

async function rejection(promise: Promise<unknown>): Promise<CachemonError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof CachemonError, `expected CachemonError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a rejection');
}

const soon = (ms = 2000): number => Date.now() + ms;
/**
 * `count` servers, each answering `stats <n>` with reply(its index, n) in writes of `pieceBytes`
 * a millisecond apart, one reply after the other; and a connection to each.
 */
async function statsServers(
  count: number,
  reply: (conn: number, n: number) => string,
  pieceBytes: number,
): Promise<AsciiConnection[]> {
  const servers = await Promise.all(
    Array.from({ length: count }, (_, conn) =>
      serve((socket) => {
        let queue = Promise.resolve();
        onLines(socket, (line) => {
          queue = queue.then(async () => {
            const text = reply(conn, Number(line.split(' ')[1]));
            for (let at = 0; at < text.length; at += pieceBytes) {
              socket.write(text.slice(at, at + pieceBytes));
              await tick(1);
            }
          });
        });
      }),
    ),
  );
  return servers.map((server) => connection(server.address));
}

const tick = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
/**
 * The connection under test did not dial `server`: one dialled after it reaches the server, and
 * is the only one there (the server accepts in the order connections come).
 */
async function assertNotDialled(server: FakeServer): Promise<void> {
  const later = connection(server.address);
  assert.equal(await later.request('version', { deadline: soon(), reply: 'line' }), 'OK\r\n');
  assert.equal(server.sockets.length, 1, 'only the connection dialled after it');
}

/** Resolves once the client has closed its end of `socket` (read on: EOF is only seen after the data). */
const closed = (socket: Socket): Promise<void> =>
  new Promise((resolve) => {
    if (socket.destroyed) return resolve();
    socket.once('close', () => resolve());
    socket.resume();
  });

describe('AsciiConnection framing over a socket', () => {
  it('reassembles a stats reply the server sends one byte per write', async () => {
    const stats = sample('01-stats.raw');
    const writeSlowly = async (socket: Socket): Promise<void> => {
      for (const byte of stats) {
        socket.write(byte, 'latin1');
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    const server = await serve((socket) =>
      onLines(socket, (line) => {
        assert.equal(line, 'stats');
        void writeSlowly(socket);
      }),
    );
    const conn = connection(server.address);
    const reply = await conn.request('stats', { deadline: soon(5000), reply: 'multi' });
    assert.equal(reply, stats);
    assert.equal(parseStats(reply).length, 152);
    assert.equal(conn.connected, true);
  });

  it('pipelines: requests of one tick leave in one segment, replies resolve in order', async () => {
    const firstChunks: string[] = [];
    const server = await serve((socket) => {
      socket.setEncoding('latin1');
      socket.once('data', (chunk: string) => {
        firstChunks.push(chunk);
        // Answer all three at once, in one write: the framer must split them.
        socket.write('VALUE k 0 1\r\nx\r\nEND\r\nSTAT a 1\r\nEND\r\nSTORED\r\n');
      });
    });
    const conn = connection(server.address);
    const [get, stats, set] = await Promise.all([
      conn.request('get k', { deadline: soon(), reply: 'value' }),
      conn.request('stats', { deadline: soon(), reply: 'multi' }),
      conn.request('set k 0 0 1\r\nx', { deadline: soon(), reply: 'line' }),
    ]);
    assert.equal(get, 'VALUE k 0 1\r\nx\r\nEND\r\n');
    assert.equal(stats, 'STAT a 1\r\nEND\r\n');
    assert.equal(set, 'STORED\r\n');
    assert.deepEqual(firstChunks, ['get k\r\nstats\r\nset k 0 0 1\r\nx\r\n']);
    assert.equal(conn.pendingCount, 0);
  });

  it('byte replies of many connections read at once stay intact; pipelined ones until the next request', async () => {
    // Every connection reads into one shared buffer and copies out: interleave 20 connections'
    // replies in small writes and check each against what its server sent.
    const reply = (conn: number, n: number): string =>
      `STAT conn ${conn}\r\nSTAT n ${n}\r\nSTAT pad ${'x'.repeat(n * 97)}\r\nEND\r\n`;
    const conns = await statsServers(20, reply, 1000);
    for (let round = 0; round < 3; round++) {
      const replies = await Promise.all(
        conns.map((conn) =>
          Promise.all([
            conn.requestBytes(`stats ${round}`, { deadline: soon(), reply: 'multi' }),
            conn.requestBytes(`stats ${round + 40}`, { deadline: soon(), reply: 'multi' }),
          ]),
        ),
      );
      replies.forEach(([first, second], conn) => {
        assert.equal(first.toString('latin1'), reply(conn, round));
        assert.equal(second.toString('latin1'), reply(conn, round + 40));
      });
    }
  });

  it('large replies of many connections, released once read, pass pooled buffers around and stay intact', async () => {
    const reply = (conn: number, n: number): string =>
      `STAT conn ${conn}\r\nSTAT n ${n}\r\nSTAT pad ${String(conn % 10).repeat(n * 97)}\r\nEND\r\n`;
    const conns = await statsServers(12, reply, 8000);
    for (let round = 0; round < 6; round++) {
      // Four at a time, like the exporter's prefix workers: each reply is checked, then released.
      let next = 0;
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          while (next < conns.length) {
            const conn = next++;
            const n = 200 + round * 50 + conn; // 20-40 KB: above what a connection keeps
            const [first, second] = await Promise.all([
              conns[conn]!.requestBytes(`stats ${n}`, { deadline: soon(), reply: 'multi' }),
              conns[conn]!.requestBytes(`stats ${n + 1}`, { deadline: soon(), reply: 'multi' }),
            ]);
            assert.equal(first.toString('latin1'), reply(conn, n));
            assert.equal(second.toString('latin1'), reply(conn, n + 1));
            conns[conn]!.release();
          }
        }),
      );
      // Small replies afterwards, on the connections' own buffers again.
      const small = await Promise.all(
        conns.map((conn) => conn.requestBytes('stats 1', { deadline: soon(), reply: 'multi' })),
      );
      small.forEach((bytes, conn) => assert.equal(bytes.toString('latin1'), reply(conn, 1)));
    }
  });

  it('keeps one connection across many sequential and concurrent requests', async () => {
    const server = await serve((socket) => onLines(socket, (line) => socket.write(`${line.toUpperCase()}\r\n`)));
    const conn = connection(server.address);
    for (let i = 0; i < 20; i++)
      assert.equal(await conn.request(`ok${i}`, { deadline: soon(), reply: 'line' }), `OK${i}\r\n`);
    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, i) => conn.request(`n${i}`, { deadline: soon(), reply: 'line' })),
    );
    assert.deepEqual(
      replies,
      Array.from({ length: 200 }, (_, i) => `N${i}\r\n`),
    );
    assert.equal(server.sockets.length, 1);
  });

  it('swallows the reply memcached gives to the data line of an unknown command', async () => {
    // Like plain memcached: every line is a command, unknown ones get ERROR.
    const server = await serve((socket) =>
      onLines(socket, (line) => socket.write(line === 'version' ? 'VERSION 1.6.18\r\n' : 'ERROR\r\n')),
    );
    const conn = connection(server.address);
    const [insert, version] = await Promise.all([
      conn.request('lop insert k 0 4 create 0 3 10\r\nDATA', { deadline: soon(), reply: 'line' }),
      conn.request('version', { deadline: soon(), reply: 'line' }),
    ]);
    assert.equal(insert, 'ERROR\r\n');
    assert.equal(version, 'VERSION 1.6.18\r\n');
    // The connection goes on serving: the swallowed reply was not taken for one nobody asked for.
    assert.equal(await conn.request('version', { deadline: soon(), reply: 'line' }), 'VERSION 1.6.18\r\n');
    assert.equal(conn.connected, true);
    assert.equal(conn.lastError, undefined);
    assert.equal(server.sockets.length, 1);
  });

  it('works over IPv6 loopback', async () => {
    const server = await serve((socket) => onLines(socket, () => socket.end('OK\r\n')), { host: '::1' });
    const conn = connection(server.address);
    assert.equal(conn.address, `[::1]:${server.port}`);
    assert.equal(await conn.request('stats detail on', { deadline: soon(), reply: 'line' }), 'OK\r\n');
  });

  it('send(): each reply to its callback once, in order; a refused request is called back on the next tick', async () => {
    const server = await serve((socket) => onLines(socket, (line) => socket.write(`VALUE ${line}\r\nEND\r\n`)));
    const conn = connection(server.address);
    const got: string[] = [];
    await new Promise<void>((resolve, reject) => {
      let left = 3;
      for (const n of [1, 2, 3]) {
        conn.send(`get k${n}`, { deadline: soon(), reply: 'multi' }, (err, reply) => {
          if (err) return reject(err);
          got.push(reply!.toString('latin1'));
          if (--left === 0) resolve();
        });
      }
    });
    assert.deepEqual(got, ['VALUE get k1\r\nEND\r\n', 'VALUE get k2\r\nEND\r\n', 'VALUE get k3\r\nEND\r\n']);

    let called: CachemonError | undefined;
    let calls = 0;
    let calledBack!: () => void;
    const refused = new Promise<void>((resolve) => (calledBack = resolve));
    conn.send('bad\r', { deadline: soon(), reply: 'line' }, (err) => {
      called = err;
      calls++;
      calledBack();
    });
    assert.equal(calls, 0, 'not called back before send() returns');
    await refused;
    // A request after it is answered, and the refused one is not called back again.
    assert.equal(await conn.request('get k4', { deadline: soon(), reply: 'multi' }), 'VALUE get k4\r\nEND\r\n');
    assert.equal(calls, 1);
    assert.equal(called?.code, Errors.INTERNAL.code);
  });

  it('refuses malformed commands without sending anything', async () => {
    const server = await serve((socket) => onLines(socket, () => socket.write('OK\r\n')));
    const conn = connection(server.address);
    for (const command of ['', 'stats\r\n', 'get a\nget b', 'get a\rb']) {
      const err = await rejection(conn.request(command, { deadline: soon(), reply: 'line' }));
      assert.equal(err.code, Errors.INTERNAL.code);
    }
    await assertNotDialled(server);
  });
});

describe('AsciiConnection failures', () => {
  it('deadline passed: NODE_TIMEOUT within 50 ms, socket destroyed, all pending rejected, next request reconnects', async () => {
    const server = await serve((socket, index) => {
      // The first connection never answers; later ones do.
      if (index > 0) onLines(socket, () => socket.write('OK\r\n'));
    });
    const conn = connection(server.address);
    const deadline = Date.now() + 200;
    const first = conn.request('stats', { deadline, reply: 'multi' });
    const second = conn.request('stats settings', { deadline: deadline + 5000, reply: 'multi' });
    const err = await rejection(first);
    const late = Date.now() - deadline;
    assert.equal(err.code, Errors.NODE_TIMEOUT.code);
    // Within a second: the alternatives (the other request's deadline, the armed timer's) are seconds away
    // or before it, and a loaded machine may run a timer tens of ms late.
    assert.ok(late >= 0 && late < 1000, `rejected ${late} ms after the deadline`);
    assert.ok(err.message.includes('"stats"') && err.message.includes(server.address), err.message);
    const behind = await rejection(second);
    assert.equal(behind.code, Errors.NODE_TIMEOUT.code);
    assert.ok(behind.message.includes('abandoned'), behind.message);
    assert.equal(conn.connected, false);
    assert.ok(conn.retryAt > Date.now(), 'a failure pushes retryAt out');
    assert.equal(conn.lastError?.code, Errors.NODE_TIMEOUT.code);
    await closed(server.sockets[0]!);

    assert.equal(await conn.request('stats detail on', { deadline: soon(), reply: 'line' }), 'OK\r\n');
    assert.equal(server.sockets.length, 2);
    assert.equal(conn.retryAt, 0, 'a reply resets the backoff');
    assert.equal(conn.lastError, undefined);
  });

  it('a request after an answered one times out at its own deadline, later or earlier than the first', async () => {
    // Answers the first command only.
    const server = await serve((socket) => {
      let answered = false;
      onLines(socket, () => {
        if (!answered) socket.write('OK\r\n');
        answered = true;
      });
    });
    const conn = connection(server.address);
    assert.equal(await conn.request('first', { deadline: Date.now() + 150, reply: 'line' }), 'OK\r\n');
    // The first deadline passes before this one: the second request's own deadline counts.
    const later = Date.now() + 400;
    const err = await rejection(conn.request('second', { deadline: later, reply: 'line' }));
    const late = Date.now() - later;
    assert.equal(err.code, Errors.NODE_TIMEOUT.code);
    assert.ok(late >= 0 && late < 1000, `rejected ${late} ms after its deadline`);

    // And one whose deadline is earlier than the armed timer's.
    const conn2 = connection(server.address);
    const server2Sockets = server.sockets.length;
    conn2.send('first', { deadline: Date.now() + 5000, reply: 'line' }, () => undefined);
    const early = Date.now() + 100;
    const err2 = await rejection(conn2.request('second', { deadline: early, reply: 'line' }));
    const late2 = Date.now() - early;
    assert.equal(err2.code, Errors.NODE_TIMEOUT.code);
    assert.ok(late2 >= 0 && late2 < 1000, `rejected ${late2} ms after its deadline (the first one's is 5 s away)`);
    assert.equal(server.sockets.length, server2Sockets + 1);
  });

  it('an idle connection does not hold the process open', async () => {
    const server = await serve((socket) => onLines(socket, () => socket.write('OK\r\n')));
    const script = [
      `import { AsciiConnection } from ${JSON.stringify(new URL('../../src/protocol/index.js', import.meta.url).href)};`,
      `const conn = new AsciiConnection(${JSON.stringify(server.address)}, { connectTimeoutMs: 30000 });`,
      `const reply = await conn.request('version', { deadline: Date.now() + 40000, reply: 'line' });`,
      `process.stdout.write(reply);`,
    ].join('\n');
    const started = Date.now();
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(code, 0);
    assert.equal(out, 'OK\r\n');
    // Held open, it would run into the 30 s connect timeout.
    assert.ok(Date.now() - started < 20_000, `the process took ${Date.now() - started} ms to end`);
  });

  it('a deadline already past rejects at once without dialling', async () => {
    const server = await serve((socket) => onLines(socket, () => socket.write('OK\r\n')));
    const conn = connection(server.address);
    const err = await rejection(conn.request('stats', { deadline: Date.now() - 1, reply: 'multi' }));
    assert.equal(err.code, Errors.NODE_TIMEOUT.code);
    await assertNotDialled(server);
    assert.equal(conn.retryAt, 0, 'nothing was tried, so nothing failed');
  });

  it('peer closes with requests pending: NODE_CLOSED', async () => {
    const server = await serve((socket) => onLines(socket, () => socket.destroy()));
    const conn = connection(server.address);
    const err = await rejection(conn.request('stats', { deadline: soon(), reply: 'multi' }));
    assert.equal(err.code, Errors.NODE_CLOSED.code);
    assert.ok(conn.retryAt > 0);
  });

  it('peer closes mid-reply: NODE_CLOSED, the partial reply is dropped', async () => {
    const server = await serve((socket) => onLines(socket, () => socket.end('STAT pid 1\r\nSTAT upt')));
    const conn = connection(server.address);
    const err = await rejection(conn.request('stats', { deadline: soon(), reply: 'multi' }));
    assert.equal(err.code, Errors.NODE_CLOSED.code);
  });

  it('peer closes an idle connection: not a failure, the next request just reconnects', async () => {
    const server = await serve((socket) => onLines(socket, () => socket.end('OK\r\n')));
    const conn = connection(server.address);
    assert.equal(await conn.request('a', { deadline: soon(), reply: 'line' }), 'OK\r\n');
    await closed(server.sockets[0]!);
    await eventually(() => assert.equal(conn.connected, false));
    assert.equal(conn.retryAt, 0);
    assert.equal(await conn.request('b', { deadline: soon(), reply: 'line' }), 'OK\r\n');
    assert.equal(server.sockets.length, 2);
  });

  it('garbage: NODE_PROTOCOL naming the bytes, and the socket is closed', async () => {
    const server = await serve((socket) =>
      onLines(socket, () => socket.write(Buffer.from([0, 0xff, 0x13, 0x37, 13, 10]))),
    );
    const conn = connection(server.address);
    const err = await rejection(conn.request('stats', { deadline: soon(), reply: 'multi' }));
    assert.equal(err.code, Errors.NODE_PROTOCOL.code);
    assert.ok(err.message.includes('not a reply line'), err.message);
    await closed(server.sockets[0]!);
    assert.equal(conn.connected, false);
  });

  it('oversize reply: NODE_PROTOCOL and close, before the reply is complete', async () => {
    const stats = sample('01-stats.raw');
    const server = await serve((socket) => onLines(socket, () => socket.write(stats.slice(0, 2000))));
    const conn = connection(server.address, { maxReplyBytes: 1024 });
    const err = await rejection(conn.request('stats', { deadline: soon(), reply: 'multi' }));
    assert.equal(err.code, Errors.NODE_PROTOCOL.code);
    assert.ok(err.message.includes('larger than 1024 bytes'), err.message);
    await closed(server.sockets[0]!);
  });

  it('bytes nobody asked for: the answered request resolves, then NODE_PROTOCOL and close', async () => {
    const server = await serve((socket) => onLines(socket, () => socket.write('OK\r\nOK\r\n')));
    const conn = connection(server.address);
    assert.equal(await conn.request('stats detail on', { deadline: soon(), reply: 'line' }), 'OK\r\n');
    await closed(server.sockets[0]!);
    assert.equal(conn.connected, false);
    assert.equal(conn.lastError?.code, Errors.NODE_PROTOCOL.code);
  });

  it('connect refused: NODE_UNREACHABLE; retryAt follows the backoff and resets on success', async () => {
    const port = await freePort();
    const conn = connection(`127.0.0.1:${port}`, { backoff: { random: () => 0.5 } });
    const before = Date.now();
    const err = await rejection(conn.request('stats', { deadline: soon(), reply: 'multi' }));
    assert.equal(err.code, Errors.NODE_UNREACHABLE.code);
    assert.equal(err.details?.['errno'], 'ECONNREFUSED');
    assert.ok(
      conn.retryAt >= before + 100 && conn.retryAt <= Date.now() + 100,
      `retryAt ${conn.retryAt - before} ms ahead`,
    );

    const again = Date.now();
    await rejection(conn.request('stats', { deadline: soon(), reply: 'multi' }));
    assert.ok(
      conn.retryAt >= again + 200 && conn.retryAt <= Date.now() + 200,
      `retryAt ${conn.retryAt - again} ms ahead`,
    );
    const third = Date.now();
    await rejection(conn.request('stats', { deadline: soon(), reply: 'multi' }));
    assert.ok(conn.retryAt >= third + 400 && conn.retryAt <= Date.now() + 400);

    // The node comes back on the same port.
    await serve((socket) => onLines(socket, () => socket.write('OK\r\n')), { port });
    assert.equal(await conn.request('stats detail on', { deadline: soon(), reply: 'line' }), 'OK\r\n');
    assert.equal(conn.retryAt, 0);
    assert.equal(conn.lastError, undefined);
  });

  it('close(): pending requests get NODE_CLOSED, later ones are refused', async () => {
    const server = await serve(() => {});
    const conn = connection(server.address);
    const pending = conn.request('stats', { deadline: soon(), reply: 'multi' });
    // Pending on an open connection, not merely dialling.
    await eventually(() => assert.ok(conn.connected));
    conn.close();
    assert.equal((await rejection(pending)).code, Errors.NODE_CLOSED.code);
    assert.equal(
      (await rejection(conn.request('stats', { deadline: soon(), reply: 'multi' }))).code,
      Errors.NODE_CLOSED.code,
    );
    await closed(server.sockets[0]!);
    assert.equal(server.sockets.length, 1);
  });
});
