import { join } from 'node:path';
import { ManagedProcess, ProcessServer, startedOrKilled } from './managed-process.js';
import type { ManagedServer } from './managed-process.js';
import { exchange, freePort } from './net-utils.js';
import { tempDir } from './temp.js';

const MEMCACHED = process.env['CACHEMON_MEMCACHED'] ?? 'memcached';
const READY_TIMEOUT_MS = 10_000;

/** Ready when `version` answers. */
export interface Memcached extends ManagedServer {
  /** 127.0.0.1:port */
  readonly address: string;
  readonly port: number;
}

class MemcachedProcess extends ProcessServer implements Memcached {
  readonly address: string;

  constructor(
    readonly port: number,
    process: ManagedProcess,
  ) {
    super(process);
    this.address = `127.0.0.1:${port}`;
  }

  async start(): Promise<void> {
    this.process.start();
    await this.process.waitUntil(
      'ready (version answers)',
      async () => (await exchange(this.address, 'version\r\n', 1000)).startsWith('VERSION '),
      READY_TIMEOUT_MS,
      20,
    );
  }
}

/** Plain memcached (Debian 1.6.18) on a free loopback port: `-l 127.0.0.1 -p PORT -U 0 -m 64 -t 2`. */
export async function startMemcached(options: { extraArgs?: readonly string[] } = {}): Promise<Memcached> {
  const dir = await tempDir('cachemon-memcached-');
  const port = await freePort();
  const args = ['-l', '127.0.0.1', '-p', String(port), '-U', '0', '-m', '64', '-t', '2'];
  // memcached refuses to run as root without a user to switch to.
  if (process.getuid?.() === 0) args.push('-u', 'root');
  args.push(...(options.extraArgs ?? []));
  const server = new MemcachedProcess(
    port,
    new ManagedProcess(`memcached 127.0.0.1:${port}`, MEMCACHED, args, join(dir, 'memcached.log'), dir),
  );
  return startedOrKilled(server);
}
