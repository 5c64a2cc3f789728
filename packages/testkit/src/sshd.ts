import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { ManagedProcess, ProcessServer, startedOrKilled } from './managed-process.js';
import type { ManagedServer } from './managed-process.js';
import { freePort } from './net-utils.js';
import { tempDir } from './temp.js';

const SSHD = process.env['CACHEMON_SSHD'] ?? '/usr/sbin/sshd';
const READY_TIMEOUT_MS = 10_000;

/** Ready when the port answers with an SSH banner. */
export interface Sshd extends ManagedServer {
  readonly port: number;
  /** The client's private key, the only one authorized. */
  readonly identity: string;
  /** An ssh command line (no host) that logs in as the current user without a prompt. */
  readonly ssh: string;
  /** The scp command line that goes with `ssh`. */
  readonly scp: string;
}

class SshdProcess extends ProcessServer implements Sshd {
  readonly ssh: string;
  readonly scp: string;

  constructor(
    readonly port: number,
    readonly identity: string,
    process: ManagedProcess,
  ) {
    super(process);
    // A fresh host key each run: nothing to remember, nothing to ask.
    const options = `-i ${identity} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR`;
    this.ssh = `ssh -p ${port} ${options}`;
    this.scp = `scp -q -P ${port} ${options}`;
  }

  async start(): Promise<void> {
    this.process.start();
    await this.process.waitUntil('ready (SSH banner)', () => banner(this.port), READY_TIMEOUT_MS, 20);
  }
}

function banner(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('data', (data) => done(data.toString('latin1').startsWith('SSH-')));
    socket.once('error', () => done(false));
  });
}

/**
 * Debian's OpenSSH server on a free loopback port, for the current user: its own host key, one
 * client key pair in authorized_keys, no PAM (no system login setup needed), `StrictModes no`
 * (the temp dir's modes are not a home's). Commands run as the current user on this machine.
 */
export async function startSshd(): Promise<Sshd> {
  const dir = await tempDir('cachemon-sshd-');
  const port = await freePort();
  const hostKey = join(dir, 'host_ed25519');
  const identity = join(dir, 'client_ed25519');
  for (const key of [hostKey, identity])
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'cachemon-test', '-f', key]);
  const authorized = join(dir, 'authorized_keys');
  writeFileSync(authorized, readFileSync(`${identity}.pub`), { mode: 0o600 });
  // The privilege separation directory sshd insists on.
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const config = join(dir, 'sshd_config');
  writeFileSync(
    config,
    [
      `ListenAddress 127.0.0.1`,
      `Port ${port}`,
      `HostKey ${hostKey}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${authorized}`,
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PermitRootLogin prohibit-password',
      'StrictModes no',
      'UsePAM no',
      'UseDNS no',
      'PrintMotd no',
      // scp speaks SFTP.
      'Subsystem sftp internal-sftp',
      'LogLevel INFO',
      '',
    ].join('\n'),
  );
  const server = new SshdProcess(
    port,
    identity,
    new ManagedProcess(`sshd 127.0.0.1:${port}`, SSHD, ['-D', '-e', '-f', config], join(dir, 'sshd.log'), dir),
  );
  return startedOrKilled(server);
}
