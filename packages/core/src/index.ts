export { CachemonError, Errors, errorMessage, isCachemonError } from './errors.js';
export type { ErrorCode, ErrorDefinition } from './errors.js';

export { durationSchema, formatDuration, parseDuration, parseGoDuration } from './duration.js';

export {
  formatKeyPath,
  jsonLocator,
  loadJsonConfig,
  parseJsonWithComments,
  readConfigFile,
  validateConfig,
  yamlLocator,
} from './config.js';
export type {
  ConfigFileIdentity,
  ConfigFileRead,
  ConfigIssue,
  ConfigLocator,
  LoadedConfig,
  ValidateOptions,
} from './config.js';

export {
  closeLogger,
  createLogger,
  createLoggerOn,
  defaultLogBlock,
  logBlockSchema,
  logLevels,
  setLogLevel,
} from './log.js';
export type { LogBlock, Logger, LoggerOptions, LogLevel } from './log.js';

export { createRotatingFileStream } from './rotating-file.js';
export type { RotatingFileOptions, RotatingFileStream } from './rotating-file.js';

export { formatUsage, parseFlags } from './flags.js';
export type {
  BooleanFlag,
  DurationFlag,
  FlagDefinition,
  FlagSpec,
  FlagValues,
  ParsedFlags,
  StringFlag,
} from './flags.js';

export { clientAuthTypes, loadWebConfig } from './web-config.js';
export type { ClientAuthType, TlsSettings, TlsVersion, WebConfig } from './web-config.js';

export {
  formatHostPort,
  listenAddressSchema,
  parseListenAddress,
  serverAddressSchema,
  serverListSchema,
} from './listen-address.js';
export type { ListenAddress } from './listen-address.js';

export { createHttpServer, postWithoutBody, scrapeDeadline, serveExposition, toErrorAnswer } from './http.js';
export type { ExpositionSource } from './http.js';
export type {
  BoundAddress,
  ErrorAnswer,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HttpServer,
  HttpServerOptions,
} from './http.js';

export { installSignalHandlers, markReported, oneAtATime } from './signals.js';
export type { SignalHandlerOptions } from './signals.js';

export {
  acceptsGzip,
  escapeHelp,
  escapeLabelValue,
  EXPOSITION_CONTENT_TYPE,
  ExpositionBuffer,
  expositionBody,
  expositionPayload,
  ExpositionWriter,
  familyHead,
  formatValue,
  gzipBody,
  renderLabels,
  sendExposition,
} from './exposition.js';
export type { ExpositionBody, MetricType } from './exposition.js';

export {
  createReloadMetrics,
  createScrapeMetrics,
  loadForReload,
  registerBuildInfo,
  ReloadMetrics,
  reloadRefused,
  reloadWebConfigFor,
} from './self-metrics.js';
export { createProcessMetrics, ProcessMetrics } from './process-metrics.js';
export {
  answeredHelpOrVersion,
  CHECK_CONFIG_FLAG,
  DAEMON_FLAGS,
  documentationFile,
  documentationLine,
  packageVersion,
  runCli,
} from './cli.js';
