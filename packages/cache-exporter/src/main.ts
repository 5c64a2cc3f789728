import {
  DAEMON_FLAGS,
  CHECK_CONFIG_FLAG,
  answeredHelpOrVersion,
  createHttpServer,
  runCli,
  createLogger,
  createProcessMetrics,
  formatUsage,
  installSignalHandlers,
  loadWebConfig,
  oneAtATime,
  parseFlags,
  postWithoutBody,
  scrapeDeadline,
  serveExposition,
} from '@cachemon/core';
import type { ExpositionSource, FlagSpec } from '@cachemon/core';
import { Registry } from 'prom-client';
import { loadCacheExporterConfig } from './config.js';
import { CacheExporter } from './exporter.js';
import { VERSION } from './version.js';

const FLAGS = {
  'config-file': {
    type: 'string',
    description: 'Path of the JSON config (listen, ensembleByName, serviceCodes, ...).',
  },
  'scrape-timeout': {
    type: 'duration',
    default: '4s',
    range: { min: '100ms', max: '5m' },
    description: 'Scrape deadline when the scraper sends no X-Prometheus-Scrape-Timeout-Seconds header.',
  },
  'qos-interval': {
    type: 'duration',
    default: '5s',
    range: { min: '100ms', max: '1d', zero: true },
    description: 'How often the QoS probes of each node run.',
  },
  'zk-session-timeout': {
    type: 'duration',
    default: '15s',
    range: { min: '1s', max: '10m' },
    description: 'ZooKeeper session timeout of the exporter (the servers may bound it further).',
  },
  ...CHECK_CONFIG_FLAG,
  ...DAEMON_FLAGS,
} satisfies FlagSpec;

const PROGRAM = 'cache-exporter';

async function main(argv: string[]): Promise<number> {
  const { values, help } = parseFlags(argv, FLAGS);
  if (answeredHelpOrVersion(PROGRAM, VERSION, FLAGS, { help, version: values.version }, import.meta.url)) return 0;
  const configFile = values['config-file'];
  if (!configFile) {
    process.stderr.write(`${PROGRAM}: -config-file=<path> is required\n\n${formatUsage(PROGRAM, FLAGS)}`);
    return 2;
  }
  const config = loadCacheExporterConfig(configFile);
  // Checked with the config (and by -check-config): a web config that would refuse the start.
  const webConfig = values['web.config.file'] ? await loadWebConfig(values['web.config.file']) : undefined;
  if (values['check-config']) {
    process.stdout.write(`${configFile}: valid (ensemble ${config.ensemble.name}, listen ${config.listen})\n`);
    return 0;
  }
  // Every line names the ensemble whose topology is served: after a reload that renames it, the new name.
  const served: { exporter?: CacheExporter } = {};
  const logger = createLogger(config.log, {
    name: PROGRAM,
    mixin: () => ({ ensemble: served.exporter?.ensembleName ?? config.ensemble.name }),
  });

  const registry = new Registry();
  const processMetrics = createProcessMetrics();
  const exporter = new CacheExporter(config, {
    logger,
    registry,
    qosIntervalMs: values['qos-interval'],
    zkSessionTimeoutMs: values['zk-session-timeout'],
    processMetrics: () => processMetrics.metrics(),
  });
  served.exporter = exporter;

  const webConfigFile = values['web.config.file'] || undefined;
  const server = await createHttpServer({
    name: 'cache exporter',
    logger,
    ...(webConfig ? { webConfig, webConfigFile } : {}),
  });
  const { app } = server;

  const deadline = (timeoutHeader: string | string[] | undefined) =>
    scrapeDeadline(timeoutHeader, values['scrape-timeout']);
  serveExposition(
    server,
    new Map<string, ExpositionSource>([
      ['/metrics', (timeoutHeader) => exporter.metrics(deadline(timeoutHeader))],
      ['/metrics/prefixes', (timeoutHeader) => exporter.prefixMetrics(deadline(timeoutHeader))],
    ]),
  );

  // One at a time (SIGHUP and POST /-/reload alike), so that the newest read of the file is applied last.
  const reload = oneAtATime(async (): Promise<{ restartNeeded: string[] }> => {
    try {
      const next = loadCacheExporterConfig(configFile);
      // The web config first: when it is refused, nothing of the reload has been applied.
      await server.reloadWebConfig();
      const result = exporter.reload(next);
      logger.info({ restartNeeded: result.restartNeeded }, 'configuration reloaded');
      if (result.restartNeeded.length > 0) {
        logger.warn({ keys: result.restartNeeded }, 'these changes take effect only after a restart');
      }
      return result;
    } catch (err) {
      exporter.reloadFailed(err);
      throw err;
    }
  });
  postWithoutBody(app, '/-/reload', async () => ({ status: 'success', ...(await reload()) }));
  app.get('/', async (_request, reply) => {
    reply.type('text/html; charset=utf-8');
    return landingPage(exporter.ensembleName);
  });

  exporter.start();
  void exporter.serving().then(() => server.setReady(true));
  const address = await server.listen(config.listen);
  logger.info({ address: address.url, version: VERSION, config: configFile }, 'cache exporter listening');

  installSignalHandlers({
    logger,
    onReload: async () => {
      await reload();
    },
    onShutdown: async () => {
      logger.info({}, 'shutting down');
      exporter.endCollections();
      await server.close();
      exporter.close();
    },
  });
  return -1;
}

function landingPage(ensemble: string): string {
  const escaped = ensemble.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>cachemon cache exporter</title></head>
<body><h1>cachemon cache exporter</h1><p>Ensemble <b>${escaped}</b>, version ${VERSION}.</p>
<ul><li><a href="metrics">/metrics</a>: node stats, QoS, exporter health</li>
<li><a href="metrics/prefixes">/metrics/prefixes</a>: prefix statistics per service code</li>
<li><a href="-/healthy">/-/healthy</a>, <a href="-/ready">/-/ready</a></li></ul>
<p>POST /-/reload (or SIGHUP) reloads the config file.</p></body></html>
`;
}

runCli(PROGRAM, main);
