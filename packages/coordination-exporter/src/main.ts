import {
  DAEMON_FLAGS,
  packageVersion,
  answeredHelpOrVersion,
  CachemonError,
  Errors,
  createHttpServer,
  runCli,
  createLogger,
  createProcessMetrics,
  registerBuildInfo,
  defaultLogBlock,
  errorMessage,
  formatUsage,
  installSignalHandlers,
  loadWebConfig,
  parseFlags,
  parseListenAddress,
  scrapeDeadline,
  serveExposition,
} from '@cachemon/core';
import type { FlagSpec } from '@cachemon/core';
import { Registry } from 'prom-client';
import { CoordinationExporter, formatEndpoint, parseServerList } from './exporter.js';
import { DEFAULT_MAX_KEYS } from './mntr.js';

const VERSION = packageVersion(import.meta.url);
const PROGRAM = 'coordination-exporter';
/** A scrape's longest wait, whatever its timeout: slower is down, and a shutdown's grace lets it finish. */
const MAX_WAIT_MS = 8_000;

const FLAGS = {
  listen: { type: 'string', default: '0.0.0.0:9141', description: 'Address to listen on, <host>:<port>.' },
  'zk-hosts': {
    type: 'string',
    description:
      'Comma separated coordination servers, <host>:<port> each. A name is resolved to all its addresses, and each address is reported as a server of its own.',
  },
  timeout: {
    type: 'duration',
    default: '3s',
    range: { min: '0s', max: '5m' },
    description:
      "Deadline of one server's mntr answer when the scraper sends no X-Prometheus-Scrape-Timeout-Seconds header (else that, less 10%). A scrape never waits more than 8s.",
  },
  'resolve-interval': {
    type: 'duration',
    default: '60s',
    range: { min: '1s', max: '1d', zero: true },
    description: 'How often names in --zk-hosts are resolved again (0: only at start and on SIGHUP).',
  },
  'mntr.max-keys': {
    type: 'string',
    default: String(DEFAULT_MAX_KEYS),
    description:
      'mntr keys read of each server at most (1 to 100000); more are counted in cachemon_zk_mntr_keys_dropped_total, not read. ZooKeeper 3.8 prints about 500.',
  },
  'log.level': { type: 'string', default: 'info', description: 'debug, info, warn, error.' },
  'check-config': {
    type: 'boolean',
    description:
      'Validate the flags (and the web config file), print the result and exit (0 when valid); nothing is listened on or read.',
  },
  ...DAEMON_FLAGS,
} satisfies FlagSpec;

async function main(argv: string[]): Promise<number> {
  const { values, help } = parseFlags(argv, FLAGS);
  if (answeredHelpOrVersion(PROGRAM, VERSION, FLAGS, { help, version: values.version }, import.meta.url)) return 0;
  if (!values['zk-hosts']) {
    process.stderr.write(`${PROGRAM}: --zk-hosts=<host:port,...> is required\n\n${formatUsage(PROGRAM, FLAGS)}`);
    return 2;
  }
  const servers = parseServerList(values['zk-hosts']);
  if (!(values.timeout > 0)) throw new CachemonError(Errors.CONFIG_INVALID, '--timeout: must be more than 0 (e.g. 3s)');
  try {
    parseListenAddress(values.listen);
  } catch (err) {
    throw new CachemonError(Errors.CONFIG_INVALID, `--listen: ${errorMessage(err)}`);
  }
  const maxKeysText = values['mntr.max-keys'].trim();
  const maxKeys = Number(maxKeysText);
  if (!/^\d+$/.test(maxKeysText) || !(maxKeys >= 1 && maxKeys <= 100_000))
    throw new CachemonError(
      Errors.CONFIG_INVALID,
      `--mntr.max-keys: "${values['mntr.max-keys']}" is not a whole number from 1 to 100000`,
    );
  const level = values['log.level'];
  if (!['debug', 'info', 'warn', 'error'].includes(level))
    throw new CachemonError(Errors.CONFIG_INVALID, `--log.level: "${level}" is not debug, info, warn or error`);
  // Checked with the flags (and by --check-config): a web config that would refuse the start.
  const webConfig = values['web.config.file'] ? await loadWebConfig(values['web.config.file']) : undefined;
  if (values['check-config']) {
    process.stdout.write(
      `${PROGRAM} flags: valid (servers ${servers.map(formatEndpoint).join(',')}, listen ${values.listen})\n`,
    );
    return 0;
  }
  const logger = createLogger({ ...defaultLogBlock, level: level as typeof defaultLogBlock.level }, { name: PROGRAM });

  const registry = new Registry();
  registerBuildInfo(registry, () => ({ version: VERSION, component: 'coordination-exporter' }));
  const processMetrics = createProcessMetrics();
  const exporter = new CoordinationExporter(servers, {
    logger,
    registry,
    processMetrics: () => processMetrics.metrics(),
    maxKeys,
  });
  await exporter.resolve();

  const webConfigFile = values['web.config.file'] || undefined;
  const server = await createHttpServer({
    name: 'coordination exporter',
    logger,
    ...(webConfig ? { webConfig, webConfigFile } : {}),
  });
  const { app } = server;
  serveExposition(
    server,
    new Map([
      [
        '/metrics',
        (timeoutHeader) =>
          exporter.metrics(Math.min(scrapeDeadline(timeoutHeader, values.timeout), Date.now() + MAX_WAIT_MS)),
      ],
    ]),
  );
  app.get('/', async (_request, reply) => {
    reply.type('text/html; charset=utf-8');
    const list = exporter.endpoints
      .map((e) => `<li>${formatEndpoint(e).replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`)}</li>`)
      .join('');
    return `<!doctype html><html><head><meta charset="utf-8"><title>cachemon coordination exporter</title></head><body><h1>cachemon coordination exporter</h1><p>Version ${VERSION}. <a href="metrics">/metrics</a></p><ul>${list}</ul></body></html>\n`;
  });
  const address = await server.listen(values.listen);
  server.setReady(true);
  logger.info(
    { address: address.url, version: VERSION, servers: exporter.endpoints.map(formatEndpoint) },
    'coordination exporter listening',
  );

  const interval = values['resolve-interval'];
  const timer = interval > 0 ? setInterval(() => void exporter.resolve(), interval) : undefined;
  timer?.unref();
  installSignalHandlers({
    logger,
    onReload: async () => {
      // The server list comes from the command line: SIGHUP resolves its names again, and reads
      // the web config file again.
      await exporter.resolve();
      await server.reloadWebConfig();
      logger.info({ servers: exporter.endpoints.map(formatEndpoint) }, 'server names resolved again');
    },
    onShutdown: async () => {
      if (timer) clearInterval(timer);
      logger.info({}, 'shutting down');
      await server.close();
    },
  });
  return -1;
}

runCli(PROGRAM, main);
