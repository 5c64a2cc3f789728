import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually, freePort, ManagedProcess, startVictoriaMetrics, tempDir } from '@cachemon/testkit';
import type { VictoriaMetrics } from '@cachemon/testkit';
import { startHostileNeighbour, startRefuser } from '../support/hostile-neighbour.js';
import type { HostileNeighbour, Refuser } from '../support/hostile-neighbour.js';

const BURSTS = 20;
const AT_ONCE = 200;
const QUERY_LENGTH = 200_000;

const sorted = (values: readonly number[]) => [...values].sort((a, b) => a - b);
const quantile = (values: readonly number[], q: number) => sorted(values)[Math.floor(q * (values.length - 1))]!;

/**
 * Bursts of 200 deeply nested 200 KB queries (600 KB form-encoded), sent at once from another
 * process, while a plain query is timed back to back. The store groups accept 16 KiB
 * (VictoriaMetrics' default), so every hostile query is refused by its length.
 *
 * The proxy is the daemon (bin/query-proxy), a process of its own. "Idle" is the proxy receiving
 * nothing hostile while the same bursts go to a bare node:http server beside it: on one machine a
 * burst's 120 MB cost the kernel and the CPUs whoever receives them, and that is not the proxy's
 * doing. Bursts to the proxy and to the bare server alternate.
 */
const BIN = fileURLToPath(new URL('../../../../../bin/query-proxy', import.meta.url));

describe('a hostile neighbour: 200 nested 200 KB queries at once beside a plain one', () => {
  let vm: VictoriaMetrics;
  let proxy: ManagedProcess;
  let proxyUrl: string;
  let neighbour: HostileNeighbour;
  let refuser: Refuser;

  before(async () => {
    vm = await startVictoriaMetrics();
    const dir = await tempDir('query-proxy-hostile-');
    const configFile = join(dir, 'promxy.yml');
    writeFileSync(
      configFile,
      JSON.stringify({ promxy: { server_groups: [{ static_configs: [{ targets: [`127.0.0.1:${vm.port}`] }] }] } }),
    );
    const port = await freePort();
    proxyUrl = `http://127.0.0.1:${port}`;
    proxy = new ManagedProcess(
      'query proxy',
      process.execPath,
      [BIN, `--bind-addr=127.0.0.1:${port}`, `--config=${configFile}`, '--log.level=warn'],
      join(dir, 'query-proxy.log'),
    );
    proxy.start();
    await eventually(async () => assert.equal((await fetch(`${proxyUrl}/-/ready`)).status, 200), {
      timeoutMs: 20_000,
    });
    neighbour = await startHostileNeighbour({ connections: AT_ONCE, queryLength: QUERY_LENGTH });
    refuser = await startRefuser();
  });

  after(async () => {
    await neighbour?.close();
    await refuser?.close();
    await proxy?.stop();
    await vm?.stop();
  });

  /** The plain query's time to its whole answer, in ms; the store answers it. */
  const plain = async (): Promise<number> => {
    const started = performance.now();
    const response = await fetch(`${proxyUrl}/api/v1/query?query=vector(1)`);
    const body = (await response.json()) as { data: { result: Array<{ value: [number, string] }> } };
    const took = performance.now() - started;
    assert.equal(response.status, 200);
    assert.equal(body.data.result[0]?.value[1], '1');
    return took;
  };

  test('the plain query stays within 2x of its idle latency; every hostile query gets its 400 in the API shape', async (t) => {
    for (let i = 0; i < 20; i++) await plain();
    const idle: number[] = [];
    const loaded: number[] = [];
    const answers = [];
    const during = async (port: number, times: number[]) => {
      let answered = false;
      const burst = neighbour.burst(port).finally(() => (answered = true));
      while (!answered) times.push(await plain());
      return burst;
    };
    for (let round = 0; round < BURSTS; round++) {
      await during(refuser.port, idle);
      answers.push(...(await during(Number(new URL(proxyUrl).port), loaded)));
    }

    assert.equal(answers.length, BURSTS * AT_ONCE);
    for (const { status, body, error } of answers) {
      assert.equal(status, 400, `status ${status}, ${error ?? body.slice(0, 200)}`);
      const answer = JSON.parse(body) as Record<string, unknown>;
      assert.deepEqual(Object.keys(answer), ['status', 'errorType', 'error']);
      assert.equal(answer['status'], 'error');
      assert.equal(answer['errorType'], 'bad_data');
      assert.match(
        answer['error'] as string,
        /^the request body is 600\d{3} bytes; a query of at most 16384 characters \(max_query_length\) needs at most 65536$/,
      );
    }
    const figures = (values: number[]) =>
      `p50 ${quantile(values, 0.5).toFixed(2)} ms, p99 ${quantile(values, 0.99).toFixed(2)} ms (${values.length})`;
    t.diagnostic(`idle (bursts to the bare server): ${figures(idle)}; under hostile bursts: ${figures(loaded)}`);
    assert.ok(
      quantile(loaded, 0.5) <= 2 * quantile(idle, 0.5),
      `the plain query took ${figures(loaded)} under hostile bursts, ${figures(idle)} idle`,
    );
  });
});
