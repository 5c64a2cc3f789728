/** The proxy's HTTP server: wires the API (routes/api.ts, forward.ts), UI, own metrics and reload. */
import type { Server } from 'node:http';
import {
  createHttpServer,
  loadForReload,
  oneAtATime,
  postWithoutBody,
  reloadWebConfigFor,
  sendExposition,
} from '@cachemon/core';
import type { Logger, WebConfig } from '@cachemon/core';
import { Registry } from 'prom-client';
import { apiErrorHandler, apiShapedBody, JSON_TYPE } from './api-answers.js';
import type { QueryProxyConfig } from './config.js';
import { Forwarder } from './forward.js';
import { ParsePool } from './parse-pool.js';
import { DEFAULT_MAX_CONCURRENCY, QueryGate } from './query-gate.js';
import { rawBoundFor, refuseOversizedQueries } from './raw-bound.js';
import { installApiRoutes } from './routes/api.js';
import { installUiRoutes } from './routes/ui.js';
import { ProxyMetrics } from './self-metrics.js';
import { Upstreams } from './upstream.js';

/** Largest request body: a dashboard's POSTed query with every node of a variable in a regex. */
const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;
/** Longest query accepted; the stores have their own limit (VictoriaMetrics' -search.maxQueryLen). */
export const DEFAULT_MAX_QUERY_LENGTH = 256 * 1024;

export interface QueryProxyOptions {
  readonly logger: Logger;
  readonly version: string;
  /** `host:port` or `:port`. */
  readonly listen: string;
  /** Reads and validates the config file again (POST /-/reload, SIGHUP). */
  readonly loadConfig: () => QueryProxyConfig;
  readonly webConfig?: WebConfig;
  /** The file webConfig came from: read again at every reload. */
  readonly webConfigFile?: string;
  readonly bodyLimitBytes?: number;
  readonly maxQueryLength?: number;
  /** Queries answered at once (--query.max-concurrency). */
  readonly maxConcurrency?: number;
  /** The process_* and nodejs_* metrics, appended to GET /metrics. */
  readonly processMetrics?: () => Promise<string>;
}

export interface ReloadResult {
  readonly groups: readonly string[];
  readonly warnings: readonly string[];
}

export interface QueryProxy {
  readonly url: string;
  readonly metrics: ProxyMetrics;
  readonly config: () => QueryProxyConfig;
  /** Reloads the config file; throws (and keeps the running config) when it is invalid. */
  reload(): Promise<ReloadResult>;
  close(): Promise<void>;
}

export async function startQueryProxy(initial: QueryProxyConfig, options: QueryProxyOptions): Promise<QueryProxy> {
  const { logger } = options;
  let config = initial;
  const maxQueryLength = options.maxQueryLength ?? DEFAULT_MAX_QUERY_LENGTH;
  const bodyLimitBytes = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const registry = new Registry();
  const metrics = new ProxyMetrics(registry, () => config, options.version);
  const upstreams = new Upstreams({
    replicaFailed: (group, replica, kind) => metrics.replicaErrors.inc({ group: group.name, replica, kind }),
  });
  const parser = new ParsePool();
  let closing = false;

  const server = await createHttpServer({
    name: 'query proxy',
    logger,
    bodyLimitBytes,
    // The API reads its parameters from the URL itself, once their raw length has been judged.
    parseQueryString: false,
    errorBody: apiShapedBody,
    headersTooLargeAdvice: 'send a long query with POST, form-encoded',
    ...(options.webConfig
      ? {
          webConfig: options.webConfig,
          ...(options.webConfigFile === undefined ? {} : { webConfigFile: options.webConfigFile }),
        }
      : {}),
  });
  const { app } = server;
  const headers = allowLongRequestLines(app.server);
  // Room for the longest query any group accepts: a longer one is refused by its size alone.
  const fitHeaders = (c: QueryProxyConfig) => headers.setRoom(rawBoundFor(maxQueryLength, c.groups).bytes);
  fitHeaders(config);
  refuseOversizedQueries(
    app.server,
    () => rawBoundFor(maxQueryLength, config.groups),
    (endpoint) => metrics.requests.inc({ endpoint, decision: 'invalid' }),
  );
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) =>
    done(null, body),
  );

  const api = installApiRoutes(app, {
    config: () => config,
    forwarder: new Forwarder(upstreams, metrics, logger, () => closing),
    metrics,
    maxQueryLength,
    parser,
    gate: new QueryGate(options.maxConcurrency ?? DEFAULT_MAX_CONCURRENCY),
    version: options.version,
    errorHandler: apiErrorHandler(bodyLimitBytes),
  });
  installUiRoutes(app);

  app.get('/metrics', async (request, reply) => {
    const processText = options.processMetrics ? await options.processMetrics() : '';
    await sendExposition(request, reply, (await registry.metrics()) + processText);
  });

  // One at a time (SIGHUP and POST alike), so that the newest read of the files is applied last.
  const reload = oneAtATime(async (): Promise<ReloadResult> => {
    const next: QueryProxyConfig = loadForReload(options.loadConfig, metrics.reload, logger);
    // The web config after the config file is read, before anything is applied: refused, nothing changes.
    await reloadWebConfigFor(server, metrics.reload, logger);
    config = next;
    fitHeaders(next);
    api.clearPlans();
    metrics.reload.succeeded(next.file);
    for (const warning of next.warnings) logger.warn({ warning }, 'configuration warning');
    const result = { groups: next.groups.map((g) => `${g.name}: ${g.targets.join(', ')}`), warnings: next.warnings };
    logger.info({ groups: result.groups }, 'configuration reloaded');
    return result;
  });
  postWithoutBody(app, '/-/reload', async (_request, reply) =>
    reply.type(JSON_TYPE).send(JSON.stringify({ status: 'success', ...(await reload()) })),
  );

  let bound;
  try {
    bound = await server.listen(options.listen);
  } catch (err) {
    await upstreams.close();
    await parser.close();
    throw err;
  }
  server.setReady(true);
  for (const warning of config.warnings) logger.warn({ warning }, 'configuration warning');
  logger.info(
    {
      address: bound.url,
      version: options.version,
      groups: config.groups.map((g) => `${g.name}: ${g.targets.join(', ')}`),
    },
    'query proxy listening',
  );
  return {
    url: bound.url,
    metrics,
    config: () => config,
    reload,
    close: async () => {
      closing = true;
      await server.close();
      await upstreams.close();
      await parser.close();
    },
  };
}

/** Lets requests carry the room's bytes of headers (read by node:http for each new connection). */
function allowLongRequestLines(server: Server): { setRoom(maxHeaderBytes: number): void } {
  return {
    setRoom: (bytes: number) => {
      (server as Server & { maxHeaderSize?: number }).maxHeaderSize = bytes;
    },
  };
}
