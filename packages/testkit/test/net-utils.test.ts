import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { freePort } from '../src/index.js';

describe('freePort', () => {
  it('hands out distinct ports below the ephemeral range, each one a daemon can listen on', async () => {
    const [ephemeralLow] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    const ports = [];
    for (let i = 0; i < 40; i++) ports.push(await freePort());
    assert.equal(new Set(ports).size, ports.length, 'no port twice');
    for (const port of ports)
      assert.ok(port >= 10000 && port < ephemeralLow!, `${port} is outside [10000, ${ephemeralLow})`);
    for (const port of ports.slice(0, 5)) {
      const server = createServer();
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', resolve);
      });
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
