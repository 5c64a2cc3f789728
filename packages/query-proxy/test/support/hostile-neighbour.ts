/**
 * A hostile neighbour of the query proxy: bursts of concurrent, deeply nested queries, each POSTed
 * form-encoded as the dashboard server sends queries. It runs as a child process of its own, at the
 * lowest CPU priority, so that on one machine its own work (building and writing the requests) is
 * not counted against the proxy, as it would not be for a client on another machine.
 *
 *   const neighbour = await startHostileNeighbour({ connections: 200, queryLength: 200_000 });
 *   const answers = await neighbour.burst(port); // every answer, or the error its connection ended with
 *   await neighbour.close();
 *
 * startRefuser() is what such a burst costs a machine without the proxy: a bare node:http server in
 * a process of its own that refuses every request at once, closing its connection.
 */
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { setPriority } from 'node:os';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { fileURLToPath } from 'node:url';

export interface HostileOptions {
  /** Requests in flight at once, each on a connection of its own. */
  readonly connections: number;
  /** Characters of the query: half opening parentheses, `up`, half closing ones. */
  readonly queryLength: number;
}

/** One hostile request's end: the answer's status and body, or the error the connection ended with. */
export interface HostileAnswer {
  readonly status: number;
  readonly body: string;
  readonly error?: string;
}

export interface HostileNeighbour {
  /** Opens the connections to 127.0.0.1:port, then sends one request on each at once; resolves with every answer. */
  burst(port: number): Promise<HostileAnswer[]>;
  close(): Promise<void>;
}

export interface Refuser {
  readonly port: number;
  close(): Promise<void>;
}

type Message = { ready: true } | { answers: HostileAnswer[] } | { port: number };

const spawnSelf = (...args: string[]) =>
  fork(fileURLToPath(import.meta.url), args, { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });

export async function startRefuser(): Promise<Refuser> {
  const child = spawnSelf('refuser');
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the refuser exited (${code})`)));
    child.once('message', (message: { port: number }) => resolve(message.port));
  });
  return { port, close: () => stop(child) };
}

export async function startHostileNeighbour(options: HostileOptions): Promise<HostileNeighbour> {
  const child = spawnSelf('neighbour', String(options.connections), String(options.queryLength));
  setPriority(child.pid!, 19);
  const next = () =>
    new Promise<Message>((resolve, reject) => {
      const exited = (code: number | null) => reject(new Error(`the hostile neighbour exited (${code})`));
      child.once('exit', exited);
      child.once('message', (message: Message) => {
        child.off('exit', exited);
        resolve(message);
      });
    });
  return {
    async burst(port: number) {
      // Connections are opened first, so that the burst is the requests alone.
      let message = next();
      child.send({ connect: port });
      await message;
      message = next();
      child.send('fire');
      const answered = await message;
      if (!('answers' in answered)) throw new Error('the hostile neighbour answered out of turn');
      return answered.answers;
    },
    close: () => stop(child),
  };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/** The child's side: a prebuilt request written on raw sockets, each answer read to its end. */
function neighbour(connections: number, queryLength: number): void {
  const half = Math.floor((queryLength - 2) / 2);
  const body = new URLSearchParams({ query: `${'('.repeat(half)}up${')'.repeat(half)}` }).toString();
  const request = Buffer.from(
    'POST /api/v1/query HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/x-www-form-urlencoded\r\n' +
      `Content-Length: ${body.length}\r\n\r\n${body}`,
  );
  let sockets: Socket[] = [];
  const open = (port: number) =>
    new Promise<Socket>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => resolve(socket));
      socket.once('error', reject);
    });
  const answer = (socket: Socket) =>
    new Promise<HostileAnswer>((resolve) => {
      let received = '';
      let error: string | undefined;
      const done = () => {
        const head = received.indexOf('\r\n\r\n');
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0);
        resolve({ status, body: head === -1 ? '' : received.slice(head + 4), ...(error ? { error } : {}) });
      };
      socket.setEncoding('latin1');
      socket.on('data', (data: string) => {
        received += data;
        // A whole answer read: done, whether or not the proxy closes the connection after it.
        const head = received.indexOf('\r\n\r\n');
        const length = /\r\ncontent-length: (\d+)/i.exec(received.slice(0, head))?.[1];
        if (head !== -1 && length !== undefined && received.length >= head + 4 + Number(length)) socket.destroy();
      });
      socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
      socket.on('close', done);
      socket.write(request);
    });
  process.on('message', (command: 'fire' | { connect: number }) => {
    if (typeof command === 'object') {
      void Promise.all(Array.from({ length: connections }, () => open(command.connect))).then((opened) => {
        sockets = opened;
        process.send!({ ready: true });
      });
    } else if (command === 'fire') {
      void Promise.all(sockets.map(answer)).then((answers) => process.send!({ answers }));
    }
  });
  process.on('disconnect', () => process.exit(0));
}

function refuser(): void {
  const body = JSON.stringify({ status: 'error', errorType: 'bad_data', error: 'refused' });
  const server = createServer((_request, response) => {
    response.writeHead(400, { 'Content-Type': 'application/json', 'Content-Length': body.length, Connection: 'close' });
    response.end(body);
  });
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
  process.on('disconnect', () => process.exit(0));
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.send) {
  const [role, ...args] = process.argv.slice(2);
  if (role === 'refuser') refuser();
  else neighbour(Number(args[0]), Number(args[1]));
}
