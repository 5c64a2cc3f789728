/** The provider's HTTP server: the JSON datasource protocol, its own metrics, reload. */
import {
  createHttpServer,
  errorMessage,
  loadForReload,
  oneAtATime,
  postWithoutBody,
  reloadWebConfigFor,
  sendExposition,
} from '@cachemon/core';
import type { FastifyReply, FastifyRequest, Logger, WebConfig } from '@cachemon/core';
import type { Resolver } from '@cachemon/arcus';
import { Registry } from 'prom-client';
import type { TopologyProviderConfig } from './config.js';
import {
  answerMetrics,
  answerPayloadOptions,
  answerQuery,
  answerTagKeys,
  answerTagValues,
  answerVariable,
} from './plugin.js';
import type { ProtocolContext } from './plugin.js';
import { TopologyProvider } from './provider.js';
import type { ReloadResult } from './provider.js';
import { ProviderMetrics } from './self-metrics.js';

export const DEFAULT_HOST_EXPORTER_PORT = 9100;
/** Largest request body; a dashboard's /query carries every variable's values, so not tiny. */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

export interface ProviderServerOptions {
  readonly logger: Logger;
  readonly version: string;
  /** Reads and validates the config file again (POST /reload/config, SIGHUP). */
  readonly loadConfig: () => TopologyProviderConfig;
  readonly webConfig?: WebConfig;
  /** The file webConfig came from: read again at every reload. */
  readonly webConfigFile?: string;
  readonly resolver?: Resolver;
  readonly resolveIntervalMs?: number;
  readonly zkSessionTimeoutMs?: number;
  readonly debounceMs?: number;
  readonly hostExporterPort?: number;
  readonly bodyLimitBytes?: number;
  /** The process_* and nodejs_* metrics, appended to GET /metrics. */
  readonly processMetrics?: () => Promise<string>;
  readonly now?: () => number;
  /** Longest wait for every ensemble's first read before /-/ready says ready anyway. */
  readonly readyTimeoutMs?: number;
}

export interface ProviderServer {
  readonly url: string;
  readonly provider: TopologyProvider;
  readonly metrics: ProviderMetrics;
  /** Reloads the config file; throws (and keeps the running config) when it is invalid. */
  reload(): Promise<ReloadResult>;
  close(): Promise<void>;
}

const JSON_TYPE = 'application/json; charset=utf-8';

export async function startProviderServer(
  config: TopologyProviderConfig,
  options: ProviderServerOptions,
): Promise<ProviderServer> {
  const { logger } = options;
  const now = options.now ?? Date.now;
  const provider = new TopologyProvider(config, {
    logger,
    now,
    ...(options.resolver ? { resolver: options.resolver } : {}),
    ...(options.resolveIntervalMs !== undefined ? { resolveIntervalMs: options.resolveIntervalMs } : {}),
    ...(options.zkSessionTimeoutMs !== undefined ? { zkSessionTimeoutMs: options.zkSessionTimeoutMs } : {}),
    ...(options.debounceMs !== undefined ? { debounceMs: options.debounceMs } : {}),
  });
  const registry = new Registry();
  const metrics = new ProviderMetrics(registry, () => provider, {
    version: options.version,
    now,
    configFile: config.file,
  });
  const server = await createHttpServer({
    name: 'topology provider',
    logger,
    bodyLimitBytes: options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES,
    ...(options.webConfig
      ? {
          webConfig: options.webConfig,
          ...(options.webConfigFile === undefined ? {} : { webConfigFile: options.webConfigFile }),
        }
      : {}),
  });
  const { app } = server;
  // The datasource sends Content-Type: application/json on every request, bodiless ones too, and
  // operators `curl -X POST -H 'Content-Type: application/json' .../reload/config`: an empty body
  // is no body. Anything else must be JSON, and a parse error says so.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, text, done) => {
    if (typeof text !== 'string' || text.trim() === '') {
      done(null, undefined);
      return;
    }
    try {
      done(null, JSON.parse(text));
    } catch (err) {
      done(
        Object.assign(new Error(`the request body is not valid JSON: ${errorMessage(err)}`), { statusCode: 400 }),
        undefined,
      );
    }
  });

  app.addHook('onResponse', async (request, reply) => {
    const path = request.routeOptions.url ?? 'unmatched';
    const labels = { method: request.method, path };
    metrics.requests.inc({ ...labels, status: String(reply.statusCode) });
    metrics.requestDuration.observe(labels, reply.elapsedTime / 1000);
  });

  const context = (): ProtocolContext => ({
    now: now(),
    rawRetentionMs: provider.currentConfig.rawRetentionMs,
    hostExporterPort: options.hostExporterPort ?? DEFAULT_HOST_EXPORTER_PORT,
    history: provider.history,
  });
  /** Answers a protocol request; says in a header which ensembles are served from a stale topology. */
  const protocol = (answer: (body: unknown) => unknown) => async (request: FastifyRequest, reply: FastifyReply) => {
    const result = answer(request.body);
    const stale = provider.fleet.ensembles.filter((e) => e.status !== 'current').map((e) => e.name);
    if (stale.length > 0) reply.header('X-Cachemon-Stale-Ensembles', stale.join(','));
    return reply.type(JSON_TYPE).send(JSON.stringify(result));
  };

  // GET / is the plugin's "Test connection": any 200 passes. A browser gets a page.
  app.get('/', async (request, reply) => {
    const ensembles = provider.fleet.ensembles.map((e) => ({
      name: e.name,
      topology: e.status,
      serviceCodes: e.serviceCodes.length,
      nodes: e.nodeCount,
    }));
    if ((request.headers.accept ?? '').includes('text/html'))
      return reply.type('text/html; charset=utf-8').send(landingPage(options.version, ensembles));
    return reply
      .type(JSON_TYPE)
      .send(JSON.stringify({ status: 'ok', component: 'topology-provider', version: options.version, ensembles }));
  });
  // The JSON datasource protocol.
  const answers: Record<string, (body: unknown) => unknown> = {
    '/variable': (body) => answerVariable(body, provider.fleet, context()),
    '/query': (body) => answerQuery(body, provider.fleet, context()),
    '/metrics': () => answerMetrics(),
    '/metric-payload-options': (body) => answerPayloadOptions(body, provider.fleet, context()),
    '/tag-keys': () => answerTagKeys(),
    '/tag-values': (body) => answerTagValues(body, provider.fleet, context()),
  };
  for (const [path, answer] of Object.entries(answers)) app.post(path, protocol(answer));

  app.get('/metrics', async (request, reply) => {
    const processText = options.processMetrics ? await options.processMetrics() : '';
    await sendExposition(request, reply, (await registry.metrics()) + processText);
  });

  // One at a time (SIGHUP and POST alike), so that the newest read of the files is applied last.
  const reload = oneAtATime(async (): Promise<ReloadResult> => {
    const next: TopologyProviderConfig = loadForReload(options.loadConfig, metrics.reload, logger);
    // The web config after the config file is read, before anything is applied: refused, nothing changes.
    await reloadWebConfigFor(server, metrics.reload, logger);
    const result = provider.reload(next);
    metrics.reload.succeeded(next.file, now());
    logger.info({ ...result }, 'configuration reloaded');
    if (result.restartNeeded.length > 0)
      logger.warn({ keys: result.restartNeeded }, 'these changes take effect only after a restart');
    return result;
  });
  const reloadRoute = async (_request: FastifyRequest, reply: FastifyReply) =>
    reply.type(JSON_TYPE).send(JSON.stringify({ status: 'success', ...(await reload()) }));
  postWithoutBody(app, '/reload/config', reloadRoute);
  postWithoutBody(app, '/-/reload', reloadRoute);

  provider.start();
  const readyAfter = new Promise<void>((resolve) => setTimeout(resolve, options.readyTimeoutMs ?? 10_000).unref());
  void Promise.race([provider.synced(24 * 3600 * 1000).catch(() => undefined), readyAfter]).then(() =>
    server.setReady(true),
  );
  let bound;
  try {
    bound = await server.listen(config.listen);
  } catch (err) {
    provider.close();
    throw err;
  }
  logger.info(
    { address: bound.url, version: options.version, ensembles: config.ensembles.map((e) => e.name) },
    'topology provider listening',
  );
  return {
    url: bound.url,
    provider,
    metrics,
    reload,
    close: async () => {
      await server.close();
      provider.close();
    },
  };
}

function landingPage(
  version: string,
  ensembles: ReadonlyArray<{ name: string; topology: string; serviceCodes: number; nodes: number }>,
): string {
  const escape = (text: string) => text.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
  const rows = ensembles
    .map(
      (e) => `<tr><td>${escape(e.name)}</td><td>${e.topology}</td><td>${e.serviceCodes}</td><td>${e.nodes}</td></tr>`,
    )
    .join('');
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>cachemon topology provider</title></head>
<body><h1>cachemon topology provider</h1><p>Version ${escape(version)}. Datasource URL for the dashboard server's JSON datasource: this address.</p>
<table border="1" cellpadding="4"><tr><th>ensemble</th><th>topology</th><th>service codes</th><th>nodes</th></tr>${rows}</table>
<ul><li><a href="metrics">/metrics</a>: the provider's own metrics</li><li><a href="-/healthy">/-/healthy</a>, <a href="-/ready">/-/ready</a></li></ul>
<p>POST /variable, /query, /metrics, /metric-payload-options, /tag-keys, /tag-values: the JSON datasource protocol. POST /reload/config (or SIGHUP) reloads config.json.</p></body></html>
`;
}
