import {
  DAEMON_FLAGS,
  CHECK_CONFIG_FLAG,
  answeredHelpOrVersion,
  createLogger,
  createProcessMetrics,
  formatUsage,
  installSignalHandlers,
  loadWebConfig,
  packageVersion,
  parseFlags,
  runCli,
} from '@cachemon/core';
import type { FlagSpec } from '@cachemon/core';
import { loadTopologyProviderConfig } from './config.js';
import { DEFAULT_HOST_EXPORTER_PORT, startProviderServer } from './server.js';

const FLAGS = {
  'config-file': {
    type: 'string',
    description: 'Path of config.json (listen, ensembleByName, serviceCodesByEnsembleName, rawRetention, log).',
  },
  'host-exporter-port': {
    type: 'string',
    default: String(DEFAULT_HOST_EXPORTER_PORT),
    description:
      'Port of the host exporters, for the host_instances query (<hostname>:<port>, as in host_exporter.yml).',
  },
  'resolve-interval': {
    type: 'duration',
    default: '1m',
    range: { min: '1s', max: '1d' },
    description: 'How often every cache and coordination hostname is resolved again.',
  },
  'zk-session-timeout': {
    type: 'duration',
    default: '15s',
    range: { min: '1s', max: '10m' },
    description: 'ZooKeeper session timeout with each ensemble (the servers may bound it further).',
  },
  ...CHECK_CONFIG_FLAG,
  ...DAEMON_FLAGS,
} satisfies FlagSpec;

const PROGRAM = 'topology-provider';
const VERSION = packageVersion(import.meta.url);

async function main(argv: string[]): Promise<number> {
  const { values, help } = parseFlags(argv, FLAGS);
  if (answeredHelpOrVersion(PROGRAM, VERSION, FLAGS, { help, version: values.version }, import.meta.url)) return 0;
  const configFile = values['config-file'];
  if (!configFile) {
    process.stderr.write(`${PROGRAM}: -config-file=<path> is required\n\n${formatUsage(PROGRAM, FLAGS)}`);
    return 2;
  }
  const hostExporterPort = Number(values['host-exporter-port']);
  if (!/^\d{1,5}$/.test(values['host-exporter-port']) || hostExporterPort < 1 || hostExporterPort > 65535) {
    process.stderr.write(
      `${PROGRAM}: -host-exporter-port: "${values['host-exporter-port']}" is not a port (1-65535)\n`,
    );
    return 2;
  }
  const config = loadTopologyProviderConfig(configFile);
  // Checked with the config (and by -check-config): a web config that would refuse the start.
  const webConfig = values['web.config.file'] ? await loadWebConfig(values['web.config.file']) : undefined;
  if (values['check-config']) {
    process.stdout.write(
      `${configFile}: valid (ensembles ${config.ensembles.map((e) => e.name).join(', ') || 'none'}, listen ${config.listen})\n`,
    );
    return 0;
  }
  const logger = createLogger(config.log, { name: PROGRAM });
  const processMetrics = createProcessMetrics();
  const server = await startProviderServer(config, {
    logger,
    version: VERSION,
    loadConfig: () => loadTopologyProviderConfig(configFile),
    hostExporterPort,
    resolveIntervalMs: values['resolve-interval'],
    zkSessionTimeoutMs: values['zk-session-timeout'],
    processMetrics: () => processMetrics.metrics(),
    ...(webConfig ? { webConfig, webConfigFile: values['web.config.file'] } : {}),
  });

  installSignalHandlers({
    logger,
    onReload: async () => {
      await server.reload();
      await server.provider.resolveHostnames();
    },
    onShutdown: async () => {
      logger.info({}, 'shutting down');
      await server.close();
    },
  });
  return -1;
}

runCli(PROGRAM, main);
