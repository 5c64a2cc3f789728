import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startVictoriaMetrics } from '../src/index.js';

test('a real VictoriaMetrics: imported samples are queryable at once; stopped by pid', async () => {
  const vm = await startVictoriaMetrics();
  try {
    const now = Date.now();
    await vm.importPrometheus(
      `arcus_up{node="127.0.0.1:11211",scrape="short"} 1 ${now}\narcus_up{node="127.0.0.2:11211",scrape="short"} 0 ${now}\n`,
    );
    const response = await fetch(
      `${vm.url}/api/v1/query?query=${encodeURIComponent('sum(arcus_up)')}&time=${now / 1000}`,
    );
    const body = (await response.json()) as { status: string; data: { result: Array<{ value: [number, string] }> } };
    assert.equal(body.status, 'success');
    assert.equal(body.data.result[0]?.value[1], '1');
    const pid = vm.pid!;
    await vm.stop();
    assert.throws(() => process.kill(pid, 0), /ESRCH/);
  } finally {
    await vm.kill();
  }
});
