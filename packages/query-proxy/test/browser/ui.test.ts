import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createWriteStream, existsSync } from 'node:fs';
import type { WriteStream } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser, Page, Request } from 'playwright-core';
import { createLoggerOn } from '@cachemon/core';
import { freePort, startVictoriaMetrics, tempDir } from '@cachemon/testkit';
import type { VictoriaMetrics } from '@cachemon/testkit';
import { parseQueryProxyConfig } from '../../src/config.js';
import { startQueryProxy } from '../../src/server.js';

const CHROMIUM = '/usr/bin/chromium';
const SERIES = [
  { instance: 'cache-a1:11211', value: '1' },
  { instance: 'cache-a2:11211', value: '0' },
];

/**
 * The web UI served by a real proxy in this process, in Debian's headless Chromium: one store
 * (VictoriaMetrics) holding the short-scrape series, and a long-scrape group nobody listens on.
 * The tests run in order on one page.
 */
describe('query proxy web UI in headless Chromium', () => {
  let store: VictoriaMetrics | undefined;
  let proxy: Awaited<ReturnType<typeof startQueryProxy>> | undefined;
  let browser: Browser | undefined;
  let log: WriteStream | undefined;
  let page: Page;
  const pageErrors: string[] = [];
  const requests: Request[] = [];

  /** Does `action` and waits until the run it starts has rendered (the UI counts finished runs). */
  const run = async (action: () => Promise<unknown>) => {
    const runs = Number((await page.getAttribute('body', 'data-runs')) ?? 0);
    await action();
    await page.waitForFunction(`Number(document.body.dataset.runs ?? 0) > ${runs}`);
  };
  const text = async (selector: string) => ((await page.locator(selector).textContent()) ?? '').replace(/\s+/g, ' ');

  before(async () => {
    assert.ok(
      existsSync(CHROMIUM),
      `${CHROMIUM} not found: install the Debian package "chromium" (apt-get install chromium) to run the UI test`,
    );
    const dir = await tempDir('query-proxy-ui-');
    store = await startVictoriaMetrics();
    const now = Date.now();
    const lines: string[] = [];
    for (let t = now - 30 * 60_000; t <= now; t += 60_000) {
      for (const s of SERIES)
        lines.push(`arcus_up{scrape="short",instance="${s.instance}",service_code="svc-a"} ${s.value} ${t}`);
    }
    await store.importPrometheus(lines.join('\n') + '\n');

    const config = parseQueryProxyConfig('promxy.yml', {
      promxy: {
        server_groups: [
          {
            static_configs: [{ targets: [`127.0.0.1:${store.port}`] }],
            label_filter: { static_labels_include: { scrape: ['short'] } },
            query_params: { nocache: 1 },
          },
          {
            static_configs: [{ targets: [`127.0.0.1:${await freePort()}`] }],
            label_filter: { static_labels_include: { scrape: ['long'] } },
          },
        ],
      },
    });
    log = createWriteStream(join(dir, 'query-proxy.log'));
    const logger = createLoggerOn(log, 'info', { name: 'query-proxy' });
    proxy = await startQueryProxy(config, { logger, version: 'test', listen: '127.0.0.1:0', loadConfig: () => config });

    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    page.setDefaultTimeout(5000);
    page.on('pageerror', (err) => pageErrors.push(err.message));
    page.on('console', (message) => {
      if (message.type() === 'error') pageErrors.push(message.text());
    });
    page.on('request', (request) => {
      if (request.url().includes('/api/v1/')) requests.push(request);
    });
    await page.goto(proxy.url + '/');
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await proxy?.close();
    await store?.stop();
    log?.end();
  });

  test('the page loads with its title, the query box and the tabs', async () => {
    assert.equal(await page.title(), 'cachemon query proxy');
    assert.equal(await page.locator('h1').textContent(), 'cachemon query proxy');
    assert.equal(await page.getAttribute('#tab-table', 'aria-selected'), 'true');
    assert.equal(await page.locator('label[for="query"]').count(), 1, 'the query box has a label');
  });

  test('Table: an instant query lists each series with its value, and the route panel says where it went', async () => {
    await page.fill('#query', 'arcus_up{scrape="short"}');
    await run(() => page.click('#execute'));
    const series = await page.locator('#result-table tbody td:nth-child(1)').allTextContents();
    const values = await page.locator('#result-table tbody td:nth-child(2)').allTextContents();
    assert.equal(series.length, SERIES.length, `rows: ${JSON.stringify(series)}`);
    for (const s of SERIES) {
      const row = series.findIndex((name) => name.includes(`instance="${s.instance}"`));
      assert.ok(row >= 0, `no row for ${s.instance}: ${JSON.stringify(series)}`);
      assert.match(series[row]!, /^arcus_up\{.*scrape="short"/);
      assert.match(series[row]!, /service_code="svc-a"/);
      assert.equal(values[row], s.value);
    }
    const route = await text('#route');
    assert.match(route, /\bsingle\b/);
    assert.match(route, /scrape=short/);
    assert.doesNotMatch(route, /scrape=long|failed/);
    assert.match(route, /round trip [\d.]+ m?s/);
    assert.match(route, /2 series/);
    assert.equal(await page.isVisible('#error'), false);
    assert.equal(await page.isVisible('#warnings'), false);
    const request = requests.at(-1)!;
    assert.match(request.url(), /\/api\/v1\/query$/);
    assert.equal(request.method(), 'POST');
    assert.equal(new URLSearchParams(request.postData() ?? '').get('query'), 'arcus_up{scrape="short"}');
  });

  test('Table: a range selector lists the samples as value @timestamp lines', async () => {
    await page.fill('#query', 'arcus_up{scrape="short",instance="cache-a1:11211"}[5m]');
    await run(() => page.click('#execute'));
    const values = await page.locator('#result-table tbody td:nth-child(2)').allTextContents();
    assert.equal(values.length, 1);
    const samples = values[0]!.split('\n');
    assert.ok(samples.length >= 4, `samples: ${values[0]}`);
    for (const sample of samples) assert.match(sample, /^1 @\d+(\.\d+)?$/);
    await page.fill('#query', 'arcus_up{scrape="short",instance="nowhere"}');
    await run(() => page.click('#execute'));
    assert.equal(await text('#result-table tbody'), 'No data');
  });

  test('Graph: a range query drawn by uPlot, with the series in the legend; the URL keeps the view', async () => {
    await page.fill('#query', 'arcus_up{scrape="short"}');
    await run(() => page.click('#tab-graph'));
    assert.equal(await page.isVisible('#error'), false, await text('#error'));
    const request = requests.at(-1)!;
    assert.match(request.url(), /\/api\/v1\/query_range$/);
    const params = new URLSearchParams(request.postData() ?? '');
    assert.equal(Number(params.get('end')) - Number(params.get('start')), 3600, 'the default range is 1h');
    assert.equal(params.get('step'), '15', 'ceil(3600 s / 250)');

    const canvas = await page.locator('#graph canvas').first().boundingBox();
    assert.ok(canvas && canvas.width > 0 && canvas.height > 0, `canvas: ${JSON.stringify(canvas)}`);
    const painted = await page.evaluate(`(() => {
      const c = document.querySelector('#graph canvas');
      const pixels = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      return pixels.some((v, i) => i % 4 === 3 && v !== 0);
    })()`);
    assert.equal(painted, true, 'something was drawn on the canvas');
    const legend = await page.locator('#graph .u-legend .u-series .u-label').allTextContents();
    for (const s of SERIES)
      assert.ok(
        legend.some((l) => l.includes(`instance="${s.instance}"`)),
        `legend: ${JSON.stringify(legend)}`,
      );
    assert.match(await text('#route'), /\bsingle\b.*scrape=short/);

    await run(() => page.selectOption('#range', '6h'));
    assert.equal(new URLSearchParams(requests.at(-1)!.postData() ?? '').get('step'), '87', 'ceil(21600 s / 250)');
    const link = new URL(page.url());
    assert.equal(link.searchParams.get('q'), 'arcus_up{scrape="short"}');
    assert.equal(link.searchParams.get('tab'), 'graph');
    assert.equal(link.searchParams.get('range'), '6h');

    // The link reproduces the view: it runs on load.
    const again = await browser!.newPage();
    try {
      await again.goto(link.href);
      await again.waitForFunction('Number(document.body.dataset.runs ?? 0) > 0', undefined, { timeout: 5000 });
      assert.equal(await again.inputValue('#query'), 'arcus_up{scrape="short"}');
      assert.equal(await again.inputValue('#range'), '6h');
      assert.equal(await again.getAttribute('#tab-graph', 'aria-selected'), 'true');
      assert.ok((await again.locator('#graph canvas').count()) > 0);
    } finally {
      await again.close();
    }
  });

  test('a syntax error shows the parse error with its position', async () => {
    await run(() => page.click('#tab-table'));
    await page.fill('#query', 'arcus_up{scrape=}');
    await run(() => page.press('#query', 'Control+Enter'));
    assert.equal(await page.isVisible('#error'), true);
    const error = await text('#error');
    assert.match(error, /bad_data/);
    assert.match(error, /1:17: parse error/);
    assert.equal(await page.isVisible('#route'), true, 'the route panel is shown after a failed run too');
  });

  test('a query for the long-scrape group, whose store is down, shows the error and the failed group', async () => {
    await page.fill('#query', 'arcus_up{scrape="long"}');
    await run(() => page.click('#execute'));
    assert.equal(await page.isVisible('#error'), true);
    assert.match(await text('#error'), /unavailable/);
    const route = await text('#route');
    assert.match(route, /scrape=long/);
    assert.match(route, /failed/);
    assert.doesNotMatch(route, /scrape=short/);
  });

  test('Server-Timing entries with quoted commas and semicolons are parsed', async () => {
    const header =
      'g0;desc="group 0 (scrape=short)";dur=3.12, g1;desc="group 1 (a=\\"x, y\\"; z) failed: dial: refused";dur=5001,total;dur=8.5';
    const parsed = await page.evaluate(
      `import(${JSON.stringify(proxy!.url + '/ui/app.js')}).then((m) => m.parseServerTiming(${JSON.stringify(header)}))`,
    );
    assert.deepEqual(parsed, [
      { name: 'g0', desc: 'group 0 (scrape=short)', dur: 3.12 },
      { name: 'g1', desc: 'group 1 (a="x, y"; z) failed: dial: refused', dur: 5001 },
      { name: 'total', desc: '', dur: 8.5 },
    ]);
  });

  test('no script errors on the page', () => {
    // A failed request (the 400 and 503 above) is logged to the console by Chromium: not a script error.
    assert.deepEqual(
      pageErrors.filter((e) => !/Failed to load resource/.test(e)),
      [],
    );
  });
});
