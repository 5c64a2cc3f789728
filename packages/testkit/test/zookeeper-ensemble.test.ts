import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ArcusZk, eventually, fourLetterWord, startZooKeeperEnsemble, type ZooKeeperEnsemble } from '../src/index.js';

describe('startZooKeeperEnsemble (3 servers)', () => {
  let ensemble: ZooKeeperEnsemble;

  before(async () => {
    ensemble = await startZooKeeperEnsemble();
  });
  after(async () => {
    await ensemble?.stop();
  });

  test('has quorum: one leader, two followers', async () => {
    assert.equal(ensemble.servers.length, 3);
    assert.equal(ensemble.connectString, ensemble.servers.map((s) => s.address).join(','));
    const modes = (await Promise.all(ensemble.servers.map((s) => s.mode()))).sort();
    assert.deepEqual(modes, ['follower', 'follower', 'leader']);
    const leader = await ensemble.leader();
    assert.equal(await leader.mode(), 'leader');
    const mntr = await fourLetterWord(leader.address, 'mntr');
    assert.match(mntr, /^zk_server_state\tleader$/m);
    assert.match(mntr, /^zk_synced_followers\t2/m);
  });

  test('a killed leader is replaced and the data survives', async () => {
    const zk = await ArcusZk.connect(ensemble.connectString, { sessionTimeoutMs: 10_000 });
    try {
      await zk.createServiceCode('ensemble');
      const old = await ensemble.leader();
      const oldPid = old.pid as number;
      await old.kill();
      assert.equal(old.pid, undefined);
      assert.throws(() => process.kill(oldPid, 0), { code: 'ESRCH' });
      assert.equal(await old.mode(), undefined);

      const started = Date.now();
      const next = await ensemble.waitForLeader({ exclude: old, timeoutMs: 20_000 });
      assert.notEqual(next, old);
      assert.equal(await next.mode(), 'leader');
      assert.equal((await ensemble.leader()).address, next.address);
      assert.ok(Date.now() - started < 20_000);

      const survivor = await ArcusZk.connect(next.address);
      try {
        const children = await new Promise<string[]>((resolve, reject) =>
          survivor.client.getChildren('/arcus/cache_list', (err, c) => (err ? reject(err) : resolve(c))),
        );
        assert.deepEqual(children, ['ensemble']);
      } finally {
        await survivor.close();
      }

      // The killed server rejoins as a follower.
      await old.start();
      await eventually(async () => assert.equal(await old.mode(), 'follower'));
    } finally {
      await zk.close();
    }
  });
});
