import {
  DAEMON_FLAGS,
  CHECK_CONFIG_FLAG,
  answeredHelpOrVersion,
  createLogger,
  createProcessMetrics,
  defaultLogBlock,
  formatUsage,
  installSignalHandlers,
  loadWebConfig,
  logLevels,
  packageVersion,
  parseFlags,
  runCli,
} from '@cachemon/core';
import type { FlagSpec, LogLevel } from '@cachemon/core';
import { loadQueryProxyConfig } from './config.js';
import { DEFAULT_MAX_CONCURRENCY } from './query-gate.js';
import { DEFAULT_MAX_QUERY_LENGTH, startQueryProxy } from './server.js';

/** Where the proxy listens when neither --bind-addr nor PROXY_LISTEN_ADDRESS says. */
const DEFAULT_LISTEN_ADDRESS = ':8082';

const FLAGS = {
  config: {
    type: 'string',
    description: 'Path of promxy.yml (server_groups with their targets, timeout, query_params, label_filter).',
  },
  'bind-addr': {
    type: 'string',
    description: `Address to listen on, host:port or :port (default: $PROXY_LISTEN_ADDRESS, else ${DEFAULT_LISTEN_ADDRESS}).`,
  },
  'query.max-length': {
    type: 'string',
    default: String(DEFAULT_MAX_QUERY_LENGTH),
    description: 'Longest query accepted, in characters; longer ones get a 400.',
  },
  'query.max-concurrency': {
    type: 'string',
    default: String(DEFAULT_MAX_CONCURRENCY),
    description: 'Queries answered at once; as many more wait for a slot, past them a 503.',
  },
  'log.level': { type: 'string', default: 'info', description: `Log level: ${logLevels.join(', ')}.` },
  'log.file': {
    type: 'string',
    default: 'stdout',
    description: `Log file, or stdout; a file is rotated at ${defaultLogBlock.maxSize} MB keeping ${defaultLogBlock.maxBackups} backups for ${defaultLogBlock.maxAge} days.`,
  },
  ...CHECK_CONFIG_FLAG,
  ...DAEMON_FLAGS,
} satisfies FlagSpec;

const PROGRAM = 'query-proxy';
const VERSION = packageVersion(import.meta.url);

async function main(argv: string[]): Promise<number> {
  const { values, help } = parseFlags(argv, FLAGS);
  if (answeredHelpOrVersion(PROGRAM, VERSION, FLAGS, { help, version: values.version }, import.meta.url)) return 0;
  /** A usage error: said on stderr, exit status 2. */
  const refuse = (message: string): number => {
    process.stderr.write(`${PROGRAM}: ${message}\n`);
    return 2;
  };
  const configFile = values.config;
  if (!configFile) return refuse(`--config=<promxy.yml> is required\n\n${formatUsage(PROGRAM, FLAGS).slice(0, -1)}`);
  const level = values['log.level'] as LogLevel;
  if (!logLevels.includes(level))
    return refuse(`--log.level: "${values['log.level']}" is not one of ${logLevels.join(', ')}`);
  const maxQueryLength = Number(values['query.max-length']);
  if (!/^\d+$/.test(values['query.max-length']) || maxQueryLength < 1)
    return refuse(`--query.max-length: "${values['query.max-length']}" is not a positive number of characters`);
  const maxConcurrency = Number(values['query.max-concurrency']);
  if (!/^\d+$/.test(values['query.max-concurrency']) || maxConcurrency < 1)
    return refuse(`--query.max-concurrency: "${values['query.max-concurrency']}" is not a positive number of queries`);
  const listen = values['bind-addr'] ?? (process.env['PROXY_LISTEN_ADDRESS'] || DEFAULT_LISTEN_ADDRESS);
  const config = loadQueryProxyConfig(configFile);
  // Checked with the config (and by -check-config): a web config that would refuse the start.
  const webConfig = values['web.config.file'] ? await loadWebConfig(values['web.config.file']) : undefined;
  if (values['check-config']) {
    for (const warning of config.warnings) process.stdout.write(`${configFile}: warning: ${warning}\n`);
    process.stdout.write(
      `${configFile}: valid (${config.groups.map((g) => `${g.name}: ${g.targets.join(', ')}`).join('; ')})\n`,
    );
    return 0;
  }
  const logger = createLogger(
    { ...defaultLogBlock, level, filename: values['log.file'] || 'stdout' },
    { name: PROGRAM },
  );
  const processMetrics = createProcessMetrics();
  const proxy = await startQueryProxy(config, {
    logger,
    version: VERSION,
    listen,
    loadConfig: () => loadQueryProxyConfig(configFile),
    maxQueryLength,
    maxConcurrency,
    processMetrics: () => processMetrics.metrics(),
    ...(webConfig ? { webConfig, webConfigFile: values['web.config.file'] } : {}),
  });
  installSignalHandlers({
    logger,
    onReload: async () => {
      await proxy.reload();
    },
    onShutdown: async () => {
      logger.info({}, 'shutting down');
      await proxy.close();
    },
  });
  return -1;
}

runCli(PROGRAM, main);
