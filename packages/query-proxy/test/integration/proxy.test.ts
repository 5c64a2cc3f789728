import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { createServer as createHttpServer, get } from 'node:http';
import { connect, createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { createLoggerOn } from '@cachemon/core';
import { eventually, freePort, parseExposition, startVictoriaMetrics, tempDir, valueOf } from '@cachemon/testkit';
import type { VictoriaMetrics } from '@cachemon/testkit';
import { loadQueryProxyConfig } from '../../src/config.js';
import { startQueryProxy } from '../../src/server.js';
import type { QueryProxy } from '../../src/server.js';

interface Answer {
  status: number;
  headers: Headers;
  body: { status: string; data?: unknown; warnings?: string[]; errorType?: string; error?: string };
}
interface Series {
  metric: Record<string, string>;
  value?: [number, string];
  values?: unknown[];
}
/** A query answer's data; other endpoints' data is cast where it is read. */
const dataOf = (body: Answer['body']) => body.data as { resultType: string; result: Series[] };

/** Two real stores: `short` holds scrape="short" series, `long` scrape="long" ones, as the stack does. */
describe('query proxy against two real VictoriaMetrics stores', () => {
  let short: VictoriaMetrics;
  let long: VictoriaMetrics;
  let proxy: QueryProxy;
  let configFile: string;
  let hung: Server;
  let hungPort: number;
  let deadPort: number;
  const sockets: Socket[] = [];
  const logLines: string[] = [];
  const now = Math.floor(Date.now() / 1000);
  const start = now - 600;
  const host = (vm: VictoriaMetrics) => `127.0.0.1:${vm.port}`;

  const group = (target: string | string[], scrape: string, extra: Record<string, unknown> = {}) => ({
    static_configs: [{ targets: Array.isArray(target) ? target : [target] }],
    label_filter: { static_labels_include: { scrape: [scrape] } },
    query_params: { nocache: 1 },
    timeout: '2s',
    ...extra,
  });
  const writeConfig = (groups: unknown[]) =>
    writeFileSync(configFile, JSON.stringify({ promxy: { server_groups: groups } }));
  const useGroups = async (groups: unknown[]) => {
    writeConfig(groups);
    const response = await fetch(`${proxy.url}/-/reload`, { method: 'POST' });
    assert.equal(response.status, 200, await response.text());
  };
  const normalGroups = () => [group(host(short), 'short'), group(host(long), 'long')];

  const api = async (
    path: string,
    params: Record<string, string | string[]> = {},
    method: 'GET' | 'POST' = 'POST',
    headers: Record<string, string> = {},
  ): Promise<Answer> => {
    const form = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) for (const one of Array.isArray(v) ? v : [v]) form.append(k, one);
    const response =
      method === 'GET'
        ? await fetch(`${proxy.url}${path}?${form.toString()}`, { headers })
        : await fetch(`${proxy.url}${path}`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
            body: form.toString(),
          });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: JSON.parse(text) as Answer['body'] };
  };
  const query = (q: string, method: 'GET' | 'POST' = 'POST') =>
    api('/api/v1/query', { query: q, time: String(now) }, method);
  const range = (q: string) =>
    api('/api/v1/query_range', { query: q, start: String(start), end: String(now), step: '60' });
  const seriesOf = (answer: Answer) =>
    dataOf(answer.body)
      .result.map(
        (s) =>
          `${s.metric['__name__'] ?? ''}{${Object.entries(s.metric)
            .filter(([k]) => k !== '__name__')
            .sort()
            .map(([k, v]) => `${k}=${v}`)
            .join(',')}}${s.value ? ` ${s.value[1]}` : ''}`,
      )
      .sort();

  before(async () => {
    [short, long] = await Promise.all([startVictoriaMetrics(), startVictoriaMetrics()]);
    const samples = (lines: string[]) =>
      lines
        .flatMap((line) => [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((i) => `${line} ${(now - 600 + i * 60) * 1000}`))
        .join('\n');
    await short.importPrometheus(
      samples([
        'arcus_up{scrape="short",service_code="svc-a",node="10.0.0.1:11211"} 1',
        'arcus_up{scrape="short",service_code="svc-a",node="10.0.0.2:11211"} 1',
        'arcus_items{scrape="short",service_code="svc-a",node="10.0.0.1:11211"} 100',
        'shared_name{node="n1"} 5',
      ]),
    );
    await long.importPrometheus(
      samples([
        'arcus_up{scrape="long",service_code="svc-a",node="10.0.0.1:11211"} 0',
        'arcus_items{scrape="long",service_code="svc-b",node="10.0.0.9:11211"} 40',
        'shared_name{node="n1"} 7',
      ]),
    );
    deadPort = await freePort();
    // A store that accepts connections and never answers.
    hung = createServer((socket) => sockets.push(socket));
    hungPort = await freePort();
    await new Promise<void>((resolve) => hung.listen(hungPort, '127.0.0.1', resolve));

    configFile = join(await tempDir('query-proxy-'), 'promxy.yml');
    writeConfig(normalGroups());
    const logger = createLoggerOn(
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          logLines.push(
            ...chunk
              .toString('utf8')
              .split('\n')
              .filter((l) => l !== ''),
          );
          done();
        },
      }),
      'info',
      { name: 'query-proxy' },
    );
    proxy = await startQueryProxy(loadQueryProxyConfig(configFile), {
      logger,
      version: 'test',
      listen: '127.0.0.1:0',
      loadConfig: () => loadQueryProxyConfig(configFile),
    });
  });

  after(async () => {
    await proxy?.close();
    for (const socket of sockets) socket.destroy();
    hung?.close();
    await Promise.all([short?.stop(), long?.stop()]);
  });

  test('a query one group can answer goes to that group only, forwarded and streamed untouched', async () => {
    const answer = await query('arcus_up{scrape="short"}');
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('x-cachemon-route'), 'single');
    assert.match(answer.headers.get('server-timing') ?? '', /^g0;desc="group 0 \(scrape=short\)";dur=\d+\.\d\d$/);
    assert.deepEqual(seriesOf(answer), [
      'arcus_up{node=10.0.0.1:11211,scrape=short,service_code=svc-a} 1',
      'arcus_up{node=10.0.0.2:11211,scrape=short,service_code=svc-a} 1',
    ]);
    assert.equal(answer.body.warnings, undefined);

    const fromLong = await query('rate(arcus_items{scrape=~"lo.*"}[5m])');
    assert.equal(fromLong.headers.get('x-cachemon-route'), 'single');
    assert.match(fromLong.headers.get('server-timing') ?? '', /^g1;/);
    assert.deepEqual(seriesOf(fromLong), ['{node=10.0.0.9:11211,scrape=long,service_code=svc-b} 0']);

    // The store's gzip passes through as is when the client accepts it.
    const raw = await new Promise<{
      encoding: string | undefined;
      length: string | undefined;
      chunked: string | undefined;
      body: Buffer;
    }>((resolve, reject) => {
      get(
        `${proxy.url}/api/v1/query?query=${encodeURIComponent('arcus_up{scrape="short"}')}&time=${now}`,
        { headers: { 'Accept-Encoding': 'gzip' } },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (c: Buffer) => chunks.push(c));
          response.on('end', () =>
            resolve({
              encoding: response.headers['content-encoding'],
              length: response.headers['content-length'],
              chunked: response.headers['transfer-encoding'],
              body: Buffer.concat(chunks),
            }),
          );
        },
      ).on('error', reject);
    });
    assert.equal(raw.encoding, 'gzip');
    assert.equal(dataOf(JSON.parse(gunzipSync(raw.body).toString('utf8')) as Answer['body']).result.length, 2);
    // The store sends it chunked; the proxy, having held the short answer whole, says its length.
    assert.equal(raw.length, String(raw.body.length));
    assert.equal(raw.chunked, undefined);
  });

  test('regular expressions are read as the stores read them (RE2): (?i) and \\Q..\\E route to the one group that holds the series', async () => {
    for (const q of [
      'arcus_up{scrape=~"(?i)SHORT"}',
      'arcus_up{scrape=~"\\\\Qshort\\\\E"}',
      'arcus_up{scrape!~"(?i)LONG"}',
    ]) {
      const answer = await query(q);
      assert.equal(answer.status, 200, q);
      assert.equal(answer.headers.get('x-cachemon-route'), 'single', q);
      assert.match(answer.headers.get('server-timing') ?? '', /^g0;/, q);
      // The store itself selects the same series with it.
      const direct = (await (
        await fetch(`http://${host(short)}/api/v1/query`, {
          method: 'POST',
          body: new URLSearchParams({ query: q, time: String(now) }),
        })
      ).json()) as Answer['body'];
      assert.equal(dataOf(direct).result.length, 2, q);
      assert.deepEqual(seriesOf(answer), seriesOf({ status: 200, headers: new Headers(), body: direct }), q);
    }
  });

  test('GET and POST forms answer alike, instant and range, as the dashboard server sends them', async () => {
    const get = await query('arcus_up{scrape="short", node="10.0.0.1:11211"}', 'GET');
    const post = await query('arcus_up{scrape="short", node="10.0.0.1:11211"}', 'POST');
    assert.deepEqual(get.body, post.body);
    const matrix = await range('arcus_up{scrape="short"}');
    assert.equal(matrix.status, 200);
    assert.equal(dataOf(matrix.body).resultType, 'matrix');
    assert.equal(dataOf(matrix.body).result.length, 2);
    assert.equal(dataOf(matrix.body).result[0]?.values?.length, 11);
    // The dashboard server's POST carries these beside the query.
    const grafana = await api('/api/v1/query_range', {
      query: 'sum by (scrape) (arcus_up)',
      start: String(start),
      end: String(now),
      step: '120',
      timeout: '30s',
    });
    assert.equal(grafana.status, 200);
    assert.deepEqual(
      dataOf(grafana.body)
        .result.map((s) => `${s.metric['scrape']}:${s.values?.length ?? 0}`)
        .sort(),
      ['long:6', 'short:6'],
    );
  });

  test('a query no group can answer gets an empty result, not an error', async () => {
    for (const q of ['arcus_up{scrape="medium"}', 'arcus_up{scrape=""}']) {
      const answer = await query(q);
      assert.equal(answer.status, 200);
      assert.equal(answer.headers.get('x-cachemon-route'), 'none');
      assert.deepEqual(answer.body, { status: 'success', data: { resultType: 'vector', result: [] } });
    }
    const matrix = await range('arcus_up{scrape="medium"}');
    assert.deepEqual(matrix.body.data, { resultType: 'matrix', result: [] });
  });

  test('a query both groups can answer is sent to both and merged by label set', async () => {
    const answer = await query('arcus_up');
    assert.equal(answer.headers.get('x-cachemon-route'), 'several');
    assert.match(
      answer.headers.get('server-timing') ?? '',
      /^g0;desc="group 0 \(scrape=short\)";dur=[\d.]+, g1;desc="group 1 \(scrape=long\)";dur=[\d.]+$/,
    );
    assert.deepEqual(seriesOf(answer), [
      'arcus_up{node=10.0.0.1:11211,scrape=long,service_code=svc-a} 0',
      'arcus_up{node=10.0.0.1:11211,scrape=short,service_code=svc-a} 1',
      'arcus_up{node=10.0.0.2:11211,scrape=short,service_code=svc-a} 1',
    ]);
    assert.equal(answer.body.warnings, undefined, 'distinct label sets: nothing to warn about');
    const matrix = await range('arcus_up');
    assert.equal(dataOf(matrix.body).result.length, 3);
    // Kept apart by the routing label: no warning.
    const apart = await query('sum by (scrape) (arcus_up)');
    assert.deepEqual(seriesOf(apart), ['{scrape=long} 0', '{scrape=short} 2']);
    assert.equal(apart.body.warnings, undefined);
  });

  test('the same label set from both groups, or an aggregation over both, is answered with warnings, never silently', async () => {
    const collision = await query('shared_name');
    assert.equal(collision.status, 200);
    assert.deepEqual(seriesOf(collision), ['shared_name{node=n1} 5'], 'shown once, from the first group');
    assert.equal(collision.body.warnings?.length, 1);
    assert.match(
      collision.body.warnings[0]!,
      /1 series returned by more than one server group \(shared_name\{node="n1"\}\); each is shown once, from group 0 \(scrape=short\)/,
    );

    const summed = await query('sum(arcus_up)');
    assert.deepEqual(seriesOf(summed), ['{} 2']);
    assert.equal(summed.body.warnings?.length, 2);
    assert.match(summed.body.warnings.join('\n'), /returned by more than one server group \(\{\}\)/);
    assert.match(
      summed.body.warnings.join('\n'),
      /"sum" at 1:1 combines series across the server groups .* keep the groups apart with by \(scrape\)/,
    );

    // topk over both: distinct label sets, but each group picked its own top: still a warning.
    const top = await query('topk(1, arcus_items)');
    assert.equal(dataOf(top.body).result.length, 2);
    assert.match(top.body.warnings?.[0] ?? '', /"topk" at 1:1 combines series/);
  });

  test('a query whose selectors need different groups is refused with a warning', async () => {
    const answer = await query('arcus_items{scrape="short"} / on(node) arcus_items{scrape="long"}');
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('x-cachemon-route'), 'spanning');
    assert.deepEqual(answer.body.data, { resultType: 'vector', result: [] });
    assert.match(
      answer.body.warnings?.[0] ?? '',
      /combines series that live in different server groups \(group 0 \(scrape=short\) and group 1 \(scrape=long\)\)/,
    );
    // The empty answer has the type the query answers.
    const scalar = await query('scalar(arcus_items{scrape="short"}) + scalar(arcus_items{scrape="long"})');
    assert.equal(scalar.headers.get('x-cachemon-route'), 'spanning');
    assert.equal(dataOf(scalar.body).resultType, 'scalar');
    assert.equal(dataOf(scalar.body).result[1], 'NaN');
  });

  test('selectors no group can answer select nothing: the rest of the query is answered as a store answers it', async () => {
    const zero = await query('count(arcus_up{scrape="medium"}) or vector(0)');
    assert.equal(zero.status, 200);
    assert.deepEqual(seriesOf(zero), ['{} 0']);
    const absent = await query('absent(arcus_up{scrape="medium"})');
    assert.deepEqual(seriesOf(absent), ['{scrape=medium} 1']);
    const either = await query('arcus_up{scrape="short"} or arcus_items{scrape="medium"}');
    assert.equal(either.headers.get('x-cachemon-route'), 'single');
    assert.deepEqual(seriesOf(either), [
      'arcus_up{node=10.0.0.1:11211,scrape=short,service_code=svc-a} 1',
      'arcus_up{node=10.0.0.2:11211,scrape=short,service_code=svc-a} 1',
    ]);
    const nothing = await query('sum(arcus_items{scrape="medium"}) * 2');
    assert.equal(nothing.headers.get('x-cachemon-route'), 'none');
    assert.deepEqual(nothing.body, { status: 'success', data: { resultType: 'vector', result: [] } });
  });

  test('a selector whose series other groups hold too: each group it needs is asked, or no number is given', async () => {
    // count(arcus_up) is 3 (2 short, 1 long): the short group alone would say 2 + 1.
    const combined = await query('count(arcus_up) + on() group_left count(arcus_items{scrape="short"})');
    assert.equal(combined.status, 200);
    assert.equal(combined.headers.get('x-cachemon-route'), 'spanning');
    assert.deepEqual(combined.body.data, { resultType: 'vector', result: [] });
    assert.match(
      combined.body.warnings?.[0] ?? '',
      /no single group can compute it, so no result is given \("count" at 1:1\)$/,
    );
    // Nothing combined across groups: each group's part is exact, the union is the answer.
    // (`or` keeps a right-hand series only when no left-hand one has its labels: node 10.0.0.2's.)
    const union = await query('arcus_items or arcus_up{scrape="short"}');
    assert.equal(union.headers.get('x-cachemon-route'), 'several');
    assert.deepEqual(seriesOf(union), [
      'arcus_items{node=10.0.0.1:11211,scrape=short,service_code=svc-a} 100',
      'arcus_items{node=10.0.0.9:11211,scrape=long,service_code=svc-b} 40',
      'arcus_up{node=10.0.0.2:11211,scrape=short,service_code=svc-a} 1',
    ]);
    assert.equal(union.body.warnings, undefined);
  });

  test('functions over every series, merged from several groups: sort() and sort_desc() sorted again, absent() and scalar() warned about', async () => {
    const ascending = await query('sort(arcus_up)');
    assert.deepEqual(
      dataOf(ascending.body).result.map((s) => `${s.metric['scrape']}:${s.value?.[1] ?? ''}`),
      ['long:0', 'short:1', 'short:1'],
    );
    const descending = await query('sort_desc(-arcus_items)');
    assert.deepEqual(
      dataOf(descending.body).result.map((s) => `${s.metric['scrape']}:${s.value?.[1] ?? ''}`),
      ['long:-40', 'short:-100'],
    );
    assert.equal(descending.body.warnings, undefined);
    // Only the long-term group has svc-b's items; the short-term one says they are absent.
    const absent = await query('absent(arcus_items{service_code="svc-b"})');
    assert.equal(absent.headers.get('x-cachemon-route'), 'several');
    assert.match(
      absent.body.warnings?.join('\n') ?? '',
      /"absent" at 1:1 combines series across the server groups group 0 \(scrape=short\) and group 1 \(scrape=long\)/,
    );
    const scaled = await query('arcus_items * scalar(arcus_up{node="10.0.0.2:11211"})');
    assert.match(scaled.body.warnings?.join('\n') ?? '', /"scalar" at 1:15 combines series/);
  });

  test('series, labels and label values are the union of the groups asked', async () => {
    const series = await api('/api/v1/series', {
      'match[]': ['arcus_items', 'shared_name'],
      start: String(start),
      end: String(now),
    });
    assert.equal(series.status, 200);
    assert.equal(series.headers.get('x-cachemon-route'), 'several');
    assert.deepEqual(
      (series.body.data as Array<Record<string, string>>).map((l) => `${l['__name__']}/${l['scrape'] ?? '-'}`).sort(),
      ['arcus_items/long', 'arcus_items/short', 'shared_name/-'],
    );
    const routed = await api(
      '/api/v1/series',
      { 'match[]': 'arcus_up{scrape="long"}', start: String(start), end: String(now) },
      'GET',
    );
    assert.equal(routed.headers.get('x-cachemon-route'), 'single');
    assert.equal((routed.body.data as unknown[]).length, 1);

    const labels = await api('/api/v1/labels', { start: String(start), end: String(now) }, 'GET');
    assert.deepEqual(labels.body.data, ['__name__', 'node', 'scrape', 'service_code']);
    const values = await api('/api/v1/label/scrape/values', {}, 'GET');
    assert.deepEqual(values.body.data, ['long', 'short']);
    const names = await api('/api/v1/label/__name__/values', {}, 'GET');
    assert.deepEqual(names.body.data, ['arcus_items', 'arcus_up', 'shared_name']);
    const nodes = await api('/api/v1/label/node/values', { 'match[]': 'arcus_items{scrape="long"}' }, 'GET');
    assert.equal(nodes.headers.get('x-cachemon-route'), 'single');
    assert.deepEqual(nodes.body.data, ['10.0.0.9:11211']);
    const nowhere = await api('/api/v1/label/node/values', { 'match[]': 'x{scrape="mid"}' }, 'GET');
    assert.deepEqual(nowhere.body, { status: 'success', data: [] });

    const metadata = await api('/api/v1/metadata', {}, 'GET');
    assert.equal(metadata.body.status, 'success');
    const build = await api('/api/v1/status/buildinfo', {}, 'GET');
    assert.equal((build.body.data as { version: string }).version, '2.24.0');
    assert.match((build.body.data as { revision: string }).revision, /cachemon query proxy test/);
  });

  test('a group that is down is an error, or a warning with partial data when ignore_error', async () => {
    try {
      await useGroups([group(host(short), 'short'), group(`127.0.0.1:${deadPort}`, 'long')]);
      const down = await query('arcus_up{scrape="long"}');
      assert.equal(down.status, 503);
      assert.equal(down.body.errorType, 'unavailable');
      assert.match(
        down.body.error ?? '',
        new RegExp(
          `^group 1 \\(scrape=long\\): no replica answered \\(http://127\\.0\\.0\\.1:${deadPort}: .*ECONNREFUSED`,
        ),
      );
      assert.match(
        down.headers.get('server-timing') ?? '',
        /g1;desc="group 1 \(scrape=long\) failed: no replica answered/,
      );
      const merged = await query('arcus_up');
      assert.equal(merged.status, 503, 'a merge missing a group would be wrong');

      await useGroups([group(host(short), 'short'), group(`127.0.0.1:${deadPort}`, 'long', { ignore_error: true })]);
      const partial = await query('arcus_up');
      assert.equal(partial.status, 200);
      assert.deepEqual(seriesOf(partial), [
        'arcus_up{node=10.0.0.1:11211,scrape=short,service_code=svc-a} 1',
        'arcus_up{node=10.0.0.2:11211,scrape=short,service_code=svc-a} 1',
      ]);
      assert.match(
        partial.body.warnings?.[0] ?? '',
        /^group 1 \(scrape=long\): no replica answered .*its part of the result is missing \(ignore_error\)$/,
      );
      const alone = await range('arcus_up{scrape="long"}');
      assert.equal(alone.status, 200);
      assert.deepEqual(alone.body.data, { resultType: 'matrix', result: [] });
      assert.equal(alone.body.warnings?.length, 1);

      // A dead replica beside a live one: the live one answers.
      await useGroups([group([`127.0.0.1:${deadPort}`, host(short)], 'short'), group(host(long), 'long')]);
      for (let i = 0; i < 3; i++) assert.equal(dataOf((await query('arcus_up{scrape="short"}')).body).result.length, 2);

      const exposition = parseExposition(await (await fetch(`${proxy.url}/metrics`)).text());
      assert.ok(
        valueOf(exposition, 'cachemon_query_proxy_group_errors_total', {
          group: 'group 1 (scrape=long)',
          kind: 'unavailable',
        })! >= 3,
      );
    } finally {
      await useGroups(normalGroups());
    }
  });

  test('a group slower than its timeout: a timeout error within the timeout, other groups unaffected', async () => {
    try {
      await useGroups([group(host(short), 'short'), group(`127.0.0.1:${hungPort}`, 'long', { timeout: '300ms' })]);
      const started = performance.now();
      const slow = await query('arcus_up{scrape="long"}');
      const took = performance.now() - started;
      assert.equal(slow.status, 503);
      assert.equal(slow.body.errorType, 'timeout');
      assert.match(slow.body.error ?? '', /^group 1 \(scrape=long\): no answer within the group's timeout of 300 ms/);
      assert.ok(took >= 290 && took < 1500, `answered after ${took} ms`);
      const merged = await query('arcus_up');
      assert.equal(merged.body.errorType, 'timeout');
      assert.equal((await query('arcus_up{scrape="short"}')).status, 200);
      // A client that gives up: the proxy cancels its request to the group at once.
      const gaveUp = fetch(`${proxy.url}/api/v1/query?query=${encodeURIComponent('arcus_up{scrape="long"}')}`, {
        signal: AbortSignal.timeout(50),
      });
      await assert.rejects(gaveUp);
      await eventually(
        async () => {
          const exposition = parseExposition(await (await fetch(`${proxy.url}/metrics`)).text());
          assert.equal(
            valueOf(exposition, 'cachemon_query_proxy_group_errors_total', {
              group: 'group 1 (scrape=long)',
              kind: 'canceled',
            }),
            1,
          );
        },
        { timeoutMs: 250 },
      );
    } finally {
      await useGroups(normalGroups());
    }
  });

  test("a replica that hangs beside a healthy one: the healthy one answers within the group's timeout, every time (replicas: any and merge)", async () => {
    for (const replicas of ['any', 'merge']) {
      // A hung store of its own for each mode: the other mode's has been passed over already.
      const silent = createServer((socket) => sockets.push(socket));
      const silentPort = await freePort();
      await new Promise<void>((resolve) => silent.listen(silentPort, '127.0.0.1', resolve));
      try {
        await useGroups([
          group([`127.0.0.1:${silentPort}`, host(short)], 'short', { timeout: '2s', replicas }),
          group(host(long), 'long'),
        ]);
        const took: number[] = [];
        for (let i = 0; i < 6; i++) {
          const started = performance.now();
          const answer = await query(i % 2 === 0 ? 'arcus_up{scrape="short"}' : 'arcus_up');
          took.push(performance.now() - started);
          assert.equal(answer.status, 200, JSON.stringify(answer.body));
          assert.equal(dataOf(answer.body).result.length, i % 2 === 0 ? 2 : 3);
        }
        assert.ok(
          took.every((ms) => ms < 1900),
          `${replicas}: within the timeout: ${took.map(Math.round).join(', ')} ms`,
        );
        // The hung replica, once it missed its share, is passed over: the next requests do not wait for it.
        assert.ok(
          took.slice(1).every((ms) => ms < 500),
          `${replicas}: passed over: ${took.map(Math.round).join(', ')} ms`,
        );
        const together = await Promise.all(Array.from({ length: 8 }, () => query('arcus_up{scrape="short"}')));
        assert.deepEqual(
          together.map((a) => a.status),
          Array(8).fill(200),
        );
      } finally {
        await useGroups(normalGroups());
        silent.close();
      }
    }
  });

  /** A store played by hand: answers every request with `answer(socket)`; closed by the returned function. */
  const handStore = async (
    answer: (socket: Socket) => void,
  ): Promise<{ target: string; close: () => Promise<void> }> => {
    const server = createServer((socket) => socket.once('data', () => answer(socket)));
    const port = await freePort();
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    return {
      target: `127.0.0.1:${port}`,
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    };
  };
  const headOf = (length: number) =>
    `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
  const longQuery = `/api/v1/query?query=${encodeURIComponent('arcus_up{scrape="long"}')}`;

  test('a store that breaks off early: nothing of it has been passed on, so the client gets a clear error (or, with ignore_error, a warning)', async () => {
    // Headers and the first bytes of a 100 KB answer, then the connection is closed.
    const store = await handStore((socket) => {
      socket.write(`${headOf(100_000)}{"status":"success","data":{"resultType":"vector","result":[`);
      setTimeout(() => socket.destroy(), 20);
    });
    try {
      await useGroups([group(host(short), 'short'), group(store.target, 'long')]);
      const logged = logLines.length;
      const failed = await query('arcus_up{scrape="long"}');
      assert.equal(failed.status, 503);
      assert.equal(failed.headers.get('x-cachemon-route'), 'single');
      assert.equal(failed.body.errorType, 'unavailable');
      assert.match(
        failed.body.error ?? '',
        /^group 1 \(scrape=long\): the store broke off its answer: the store closed the connection before the end of its answer$/,
      );
      await eventually(async () => {
        const warned = logLines.slice(logged).map((line) => JSON.parse(line) as Record<string, unknown>);
        assert.ok(
          warned.some(
            (line) =>
              line['msg'] === 'a streamed answer broke off' &&
              line['group'] === 'group 1 (scrape=long)' &&
              line['passedOn'] === false,
          ),
          JSON.stringify(warned),
        );
      });
      const exposition = parseExposition(await (await fetch(`${proxy.url}/metrics`)).text());
      assert.ok(
        valueOf(exposition, 'cachemon_query_proxy_group_errors_total', {
          group: 'group 1 (scrape=long)',
          kind: 'unavailable',
        })! >= 1,
      );

      await useGroups([group(host(short), 'short'), group(store.target, 'long', { ignore_error: true })]);
      const partial = await query('arcus_up{scrape="long"}');
      assert.equal(partial.status, 200);
      assert.deepEqual(partial.body.data, { resultType: 'vector', result: [] });
      assert.match(
        partial.body.warnings?.[0] ?? '',
        /^group 1 \(scrape=long\): the store broke off its answer: .*its part of the result is missing \(ignore_error\)$/,
      );
      assert.equal((await query('arcus_up{scrape="short"}')).status, 200);
    } finally {
      await useGroups(normalGroups());
      await store.close();
    }
  });

  test('a store that breaks off after part of a long answer was passed on: the client sees a cut connection, not a complete answer; the proxy keeps serving', async () => {
    // 100 KB of a 200 KB answer (more than the proxy holds back), then the connection is closed.
    const store = await handStore((socket) => {
      socket.write(`${headOf(200_000)}${' '.repeat(100_000)}`);
      setTimeout(() => socket.destroy(), 50);
    });
    try {
      await useGroups([group(host(short), 'short'), group(store.target, 'long')]);
      const logged = logLines.length;
      const started = performance.now();
      const response = await fetch(`${proxy.url}${longQuery}`, { signal: AbortSignal.timeout(5000) });
      assert.equal(response.status, 200, "the store's status was already passed on");
      assert.equal(response.headers.get('content-length'), '200000', 'and the length it announced');
      await assert.rejects(response.text(), 'reading the cut answer fails');
      const took = performance.now() - started;
      assert.ok(took < 3000, `the client's connection was closed at once, not left waiting (${Math.round(took)} ms)`);
      await eventually(async () => {
        const warned = logLines.slice(logged).map((line) => JSON.parse(line) as Record<string, unknown>);
        assert.ok(
          warned.some(
            (line) =>
              line['msg'] === 'a streamed answer broke off' &&
              line['group'] === 'group 1 (scrape=long)' &&
              line['passedOn'] === true,
          ),
          JSON.stringify(warned),
        );
      });
      assert.equal((await query('arcus_up{scrape="short"}')).status, 200);
    } finally {
      await useGroups(normalGroups());
      await store.close();
    }
  });

  test("a store that stops sending mid-answer: the group's timeout holds until the answer ends (an error, or a cut connection once part was passed on)", async () => {
    const early = await handStore((socket) => socket.write(`${headOf(1000)}{"status":"succ`));
    const late = await handStore((socket) => socket.write(`${headOf(200_000)}${' '.repeat(100_000)}`));
    try {
      await useGroups([group(host(short), 'short'), group(early.target, 'long', { timeout: '300ms' })]);
      let started = performance.now();
      const response = await fetch(`${proxy.url}${longQuery}`, { signal: AbortSignal.timeout(5000) });
      const failed = { status: response.status, body: (await response.json()) as Answer['body'] };
      let took = performance.now() - started;
      assert.equal(failed.status, 503);
      assert.deepEqual(failed.body, {
        status: 'error',
        errorType: 'timeout',
        error: "group 1 (scrape=long): the answer did not end within the group's timeout of 300 ms",
      });
      assert.ok(took >= 290 && took < 1500, `answered after ${Math.round(took)} ms`);
      const exposition = parseExposition(await (await fetch(`${proxy.url}/metrics`)).text());
      assert.ok(
        valueOf(exposition, 'cachemon_query_proxy_group_errors_total', {
          group: 'group 1 (scrape=long)',
          kind: 'timeout',
        })! >= 1,
      );

      await useGroups([group(host(short), 'short'), group(late.target, 'long', { timeout: '300ms' })]);
      started = performance.now();
      const cut = await fetch(`${proxy.url}${longQuery}`, { signal: AbortSignal.timeout(5000) });
      assert.equal(cut.status, 200, "the store's status was already passed on");
      await assert.rejects(cut.text(), 'reading the cut answer fails');
      took = performance.now() - started;
      assert.ok(
        took < 1500,
        `the client's connection was closed at the timeout, not left waiting (${Math.round(took)} ms)`,
      );
      assert.equal((await query('arcus_up{scrape="short"}')).status, 200);
    } finally {
      await useGroups(normalGroups());
      await Promise.all([early.close(), late.close()]);
    }
  });

  test('a long answer is streamed: the client reads its first part while the store is still writing the rest', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const store = await handStore((socket) => {
      socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`);
      const part = (text: string) => socket.write(`${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`);
      part(`{"status":"success","data":{"resultType":"vector","result":[]},"pad":"${'a'.repeat(100_000)}`);
      void released.then(() => {
        part(`${'b'.repeat(100_000)}"}`);
        socket.end('0\r\n\r\n');
      });
    });
    try {
      await useGroups([group(host(short), 'short'), group(store.target, 'long')]);
      const response = await fetch(`${proxy.url}${longQuery}`, { signal: AbortSignal.timeout(5000) });
      assert.equal(response.status, 200);
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      let first = '';
      while (first.length < 100_000) {
        const { value, done } = await reader.read();
        assert.ok(!done, 'the answer ended early');
        first += Buffer.from(value).toString('utf8');
      }
      assert.ok(first.startsWith('{"status":"success"'), 'the first part came while the store held the rest back');
      release();
      let rest = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        rest += Buffer.from(value).toString('utf8');
      }
      const whole = JSON.parse(first + rest) as { status: string; pad: string };
      assert.equal(whole.status, 'success');
      assert.equal(whole.pad.length, 200_000);
    } finally {
      release();
      await useGroups(normalGroups());
      await store.close();
    }
  });

  test('every error outside the API routes is in the API shape too: bad URLs, no route, not HTTP', async () => {
    const raw = (text: string) =>
      new Promise<{ status: number; body: unknown }>((resolve, reject) => {
        const socket = connect(Number(new URL(proxy.url).port), '127.0.0.1', () => socket.write(text));
        let received = '';
        socket.setEncoding('latin1');
        socket.on('data', (chunk: string) => (received += chunk));
        socket.on('error', reject);
        socket.on('close', () =>
          resolve({
            status: Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1]),
            body: JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4)),
          }),
        );
      });
    const get = (path: string) => raw(`GET ${path} HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n`);
    const bad = (error: string) => ({ status: 'error', errorType: 'bad_data', error });
    assert.deepEqual(await get('/api/v1/label/%ff/values'), {
      status: 400,
      body: bad("the URL is not valid: '/api/v1/label/%ff/values' is not a valid url component"),
    });
    // The store would answer these in plain text.
    assert.deepEqual(await get('/api/v1/label//values'), { status: 400, body: bad('invalid label name: ""') });
    assert.deepEqual(await get('/api/v1/label/%2f/values'), { status: 400, body: bad('invalid label name: "/"') });
    assert.deepEqual(await get('/nothing'), { status: 404, body: bad('no route for GET /nothing') });
    assert.deepEqual(await raw('DELETE /api/v1/query HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n'), {
      status: 404,
      body: bad('no route for DELETE /api/v1/query'),
    });
    assert.deepEqual(await raw('GARBAGE\r\n\r\n'), {
      status: 400,
      body: bad('the request is not valid HTTP: Invalid method encountered'),
    });
    assert.deepEqual(await raw('GET /api/v1/query?query=up HTTP/1.1\r\nHost: proxy\r\nContent-Length: x\r\n\r\n'), {
      status: 400,
      body: bad('the request is not valid HTTP: Invalid character in Content-Length'),
    });
    assert.equal((await query('up')).status, 200);
  });

  test('garbage, huge and wrong requests get clear 400s in the Prometheus shape, and the proxy keeps serving', async () => {
    const bad = await query('sum(rate(arcus_up[5m])');
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body, {
      status: 'error',
      errorType: 'bad_data',
      error: 'invalid parameter "query": 1:23: parse error: unexpected end of input',
    });
    const garbage = await query('\u0000\u00ff}{)(][');
    assert.equal(garbage.status, 400);
    assert.match(garbage.body.error ?? '', /^invalid parameter "query": 1:1: parse error: unexpected/);
    assert.equal((await api('/api/v1/query', {})).body.error, 'invalid parameter "query": the parameter is missing');
    const deep = await query(`${'('.repeat(50_000)}up${')'.repeat(50_000)}`);
    assert.ok(deep.status === 200 || deep.status === 400 || deep.status === 422, `nested: ${deep.status}`);
    const long = await query(`up{node=~"${'a|'.repeat(150_000)}a"}`);
    assert.equal(long.status, 400);
    // Refused by its size, before it is read: no group accepts a query that long.
    assert.equal(
      long.body.error,
      'the request body is 600047 bytes; a query of at most 16384 characters (max_query_length) needs at most 65536',
    );
    const longGet = await query(`up{node=~"${'a|'.repeat(30_000)}a"}`, 'GET');
    assert.equal(longGet.status, 431);
    assert.deepEqual(longGet.body, {
      status: 'error',
      errorType: 'bad_data',
      error: "the request's headers are larger than 65536 bytes; send a long query with POST, form-encoded",
    });
    const huge = await fetch(`${proxy.url}/api/v1/series`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: `match[]=${'x'.repeat(2 * 1024 * 1024)}`,
    });
    assert.equal(huge.status, 413);
    assert.deepEqual(await huge.json(), {
      status: 'error',
      errorType: 'bad_data',
      error: 'the request body is larger than 1048576 bytes',
    });
    const badMatch = await api('/api/v1/series', { 'match[]': 'sum(up)' }, 'GET');
    assert.equal(badMatch.status, 400);
    assert.match(badMatch.body.error ?? '', /match\[\] number 1 must be a single series selector/);
    assert.equal((await api('/api/v1/series', {}, 'GET')).body.error, 'no match[] parameter provided');
    const unknown = await api('/api/v1/targets', {}, 'GET');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.errorType, 'bad_data');
    // What the store refuses comes back as the store said it.
    const refused = await query('label_replace(arcus_up{scrape="short"}, "dst", "$1", "src", "(")');
    assert.equal(refused.status, 422);
    assert.equal(refused.body.status, 'error');
    assert.match(refused.body.error ?? '', /cannot compile regex/);
    const refusedByBoth = await query('label_replace(arcus_up, "dst", "$1", "src", "(")');
    assert.equal(refusedByBoth.status, 422);
    assert.match(refusedByBoth.body.error ?? '', /^group 0 \(scrape=short\): .*cannot compile regex/);
    assert.equal((await query('arcus_up{scrape="short"}')).status, 200, 'still serving');
    const exposition = parseExposition(await (await fetch(`${proxy.url}/metrics`)).text());
    assert.ok(
      valueOf(exposition, 'cachemon_query_proxy_requests_total', { endpoint: 'query', decision: 'invalid' })! >= 4,
    );
  });

  test("a group with labels: its series carry them, and matchers on them are the proxy's to apply", async () => {
    try {
      await useGroups([
        { static_configs: [{ targets: [host(short)] }], labels: { sg: 'a' }, query_params: { nocache: 1 } },
        { static_configs: [{ targets: [host(long)] }], labels: { sg: 'b' }, query_params: { nocache: 1 } },
      ]);
      const one = await query('arcus_up{sg="b"}');
      assert.equal(one.headers.get('x-cachemon-route'), 'single');
      assert.deepEqual(seriesOf(one), ['arcus_up{node=10.0.0.1:11211,scrape=long,service_code=svc-a,sg=b} 0']);
      const both = await query('shared_name');
      assert.deepEqual(seriesOf(both), ['shared_name{node=n1,sg=a} 5', 'shared_name{node=n1,sg=b} 7']);
      assert.equal(both.body.warnings, undefined, 'the group labels keep them apart');
      assert.deepEqual((await api('/api/v1/label/sg/values', {}, 'GET')).body.data, ['a', 'b']);
      assert.ok(((await api('/api/v1/labels', {}, 'GET')).body.data as string[]).includes('sg'));
      // A selector the other group cannot answer selects nothing there.
      const mixed = await query('arcus_items or arcus_up{sg="a"}');
      assert.deepEqual(seriesOf(mixed), [
        'arcus_items{node=10.0.0.1:11211,scrape=short,service_code=svc-a,sg=a} 100',
        'arcus_items{node=10.0.0.9:11211,scrape=long,service_code=svc-b,sg=b} 40',
        'arcus_up{node=10.0.0.2:11211,scrape=short,service_code=svc-a,sg=a} 1',
      ]);
    } finally {
      await useGroups(normalGroups());
    }
  });

  test('series, labels and label values of groups with labels: match[] on those labels routed and taken out, as for queries', async () => {
    try {
      await useGroups([
        { static_configs: [{ targets: [host(short)] }], labels: { sg: 'a' }, query_params: { nocache: 1 } },
        { static_configs: [{ targets: [host(long)] }], labels: { sg: 'b' }, query_params: { nocache: 1 } },
      ]);
      const labelSets = (answer: Answer) =>
        (answer.body.data as Array<Record<string, string>>)
          .map((l) => `${l['__name__']}/${l['scrape']}/${l['sg']}`)
          .sort();
      const one = await api(
        '/api/v1/series',
        { 'match[]': 'arcus_up{sg="a"}', start: String(start), end: String(now) },
        'GET',
      );
      assert.equal(one.status, 200);
      assert.deepEqual(labelSets(one), ['arcus_up/short/a', 'arcus_up/short/a']);
      const each = await api('/api/v1/series', {
        'match[]': ['arcus_items{sg="b"}', 'arcus_up{sg="a"}'],
        start: String(start),
        end: String(now),
      });
      assert.equal(each.headers.get('x-cachemon-route'), 'several');
      assert.deepEqual(labelSets(each), ['arcus_items/long/b', 'arcus_up/short/a', 'arcus_up/short/a']);
      const nodes = await api('/api/v1/label/node/values', { 'match[]': 'arcus_items{sg="b"}' }, 'GET');
      assert.deepEqual(nodes.body.data, ['10.0.0.9:11211']);
      const names = await api('/api/v1/labels', { 'match[]': '{sg="b", service_code="svc-b"}' }, 'GET');
      assert.deepEqual(names.body.data, ['__name__', 'node', 'scrape', 'service_code', 'sg']);
    } finally {
      await useGroups(normalGroups());
    }
  });

  test('a query of hundreds of terms (as a dashboard writes a variable with every node) is read, not refused', async () => {
    const terms = Array.from(
      { length: 240 },
      (_, i) => `arcus_up{scrape="short",node="10.0.${i >> 8}.${i & 255}:11211"}`,
    );
    const answer = await query(terms.join(' or '));
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.headers.get('x-cachemon-route'), 'single');
    assert.deepEqual(seriesOf(answer), [
      'arcus_up{node=10.0.0.1:11211,scrape=short,service_code=svc-a} 1',
      'arcus_up{node=10.0.0.2:11211,scrape=short,service_code=svc-a} 1',
    ]);
  });

  test("a parameter in both the form body and the URL: the body's is used, for routing as by the store", async () => {
    const response = await fetch(`${proxy.url}/api/v1/query?query=${encodeURIComponent('arcus_up{scrape="long"}')}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ query: 'arcus_up{scrape="short"}', time: String(now) }).toString(),
    });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('server-timing') ?? '', /^g0;desc="group 0 \(scrape=short\)"/);
    const body = (await response.json()) as Answer['body'];
    assert.deepEqual(
      dataOf(body)
        .result.map((s) => `${s.metric['scrape']} ${s.metric['node']}`)
        .sort(),
      ['short 10.0.0.1:11211', 'short 10.0.0.2:11211'],
    );
  });

  test("a GET carries a query as long as --query.max-length allows; past what the headers can hold, a 431 in the API's shape", async () => {
    const long = `arcus_up{scrape="medium",node=~"${Array.from({ length: 2600 }, (_, i) => `n${i}`).join('|')}"}`;
    // Under the groups' max_query_length (16384), over the small proxy's header room once encoded.
    assert.ok(long.length > 14_000 && long.length <= 16_384);
    assert.ok(encodeURIComponent(long).length > 19_384);
    const answer = await query(long, 'GET');
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body, { status: 'success', data: { resultType: 'vector', result: [] } });
    const small = await startQueryProxy(loadQueryProxyConfig(configFile), {
      logger: createLoggerOn(new Writable({ write: (_c, _e, done) => done() }), 'info', { name: 'query-proxy' }),
      version: 'test',
      listen: '127.0.0.1:0',
      loadConfig: () => loadQueryProxyConfig(configFile),
      maxQueryLength: 1000,
    });
    try {
      const tooLong = await fetch(`${small.url}/api/v1/query?query=${encodeURIComponent(long)}`);
      assert.equal(tooLong.status, 431);
      assert.deepEqual(await tooLong.json(), {
        status: 'error',
        errorType: 'bad_data',
        error: "the request's headers are larger than 19384 bytes; send a long query with POST, form-encoded",
      });
      const posted = await fetch(`${small.url}/api/v1/query`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ query: long }).toString(),
      });
      assert.equal(posted.status, 400);
      assert.match(
        ((await posted.json()) as { error: string }).error,
        /^the request body is \d+ bytes; a query of at most 1000 characters \(--query.max-length\) needs at most 19384$/,
      );
    } finally {
      await small.close();
    }
  });

  test("what a store receives: the group's path_prefix before the path, its query_params added or overriding the client's", async () => {
    const received: string[] = [];
    const recorder = createHttpServer((req, res) => {
      received.push(req.url ?? '');
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ status: 'success', data: { resultType: 'vector', result: [] } }));
    });
    const recorderPort = await freePort();
    await new Promise<void>((resolve) => recorder.listen(recorderPort, '127.0.0.1', resolve));
    try {
      await useGroups([
        {
          static_configs: [{ targets: [`127.0.0.1:${recorderPort}`] }],
          path_prefix: '/select/0/prometheus',
          query_params: { nocache: 1, extra: 'a b' },
        },
      ]);
      assert.equal((await api('/api/v1/query', { query: 'up', time: '100' }, 'GET')).status, 200);
      assert.equal((await api('/api/v1/query', { query: 'up', nocache: '0' }, 'GET')).status, 200);
      assert.equal((await query('up')).status, 200);
      assert.deepEqual(received, [
        '/select/0/prometheus/api/v1/query?query=up&time=100&nocache=1&extra=a+b',
        '/select/0/prometheus/api/v1/query?query=up&nocache=1&extra=a+b',
        '/select/0/prometheus/api/v1/query?nocache=1&extra=a+b',
      ]);
    } finally {
      recorder.close();
      await useGroups(normalGroups());
    }
  });

  test('reload: an invalid promxy.yml is refused with the key path, and the running config stays', async () => {
    writeFileSync(
      configFile,
      'promxy:\n  server_groups:\n    - static_configs: [{ targets: ["127.0.0.1:1"] }]\n      timeout: soon\n',
    );
    const refused = await fetch(`${proxy.url}/-/reload`, { method: 'POST' });
    assert.equal(refused.status, 400);
    assert.match(((await refused.json()) as { error: string }).error, /promxy\.server_groups\[0\]\.timeout/);
    assert.equal(dataOf((await query('arcus_up{scrape="short"}')).body).result.length, 2);
    const exposition = parseExposition(await (await fetch(`${proxy.url}/metrics`)).text());
    assert.equal(valueOf(exposition, 'cachemon_config_last_reload_successful', {}), 0);
    await useGroups(normalGroups());
  });
});
