export { freePort, fourLetterWord } from './net-utils.js';
export { tempDir } from './temp.js';
export { TestkitError, TestkitErrors, isTestkitError } from './errors.js';
export type { TestkitErrorCode } from './errors.js';
export { startZooKeeper, startZooKeeperEnsemble } from './zookeeper.js';
export type { ZooKeeperEnsemble, ZooKeeperOptions, ZooKeeperServer } from './zookeeper.js';
export { startMemcached } from './memcached.js';
export type { Memcached } from './memcached.js';
export { ArcusZk, ARCUS_ROOT, ARCUS_REPL_ROOT, cacheListNodeName, mappingData, serviceCodeData } from './arcus-zk.js';
export type { NodeRegistration, RegisterNodeOptions, ReplicationMapping } from './arcus-zk.js';
export { ArcusDouble, startArcusDoubles } from './arcus-double/server.js';
export type {
  ArcusDoubleBehavior,
  ArcusDoubleOptions,
  ArcusRegisterOptions,
  PopulateKey,
} from './arcus-double/server.js';
export { ARCUS_SAMPLES_DIR, arcusSample, arcusSampleNames, arcusTranscriptCommands } from './samples.js';
export { seededRandom } from './random.js';
export { eventually, parseExposition, select, valueOf } from './assertions.js';
export type { Sample } from './assertions.js';
export { assertConfigReloadExposed } from './config-reload.js';
export type { ConfigReloadSubject } from './config-reload.js';
export { startVictoriaMetrics } from './victoria-metrics.js';
export type { VictoriaMetrics } from './victoria-metrics.js';
export { startSshd } from './sshd.js';
export type { Sshd } from './sshd.js';
export { runBash } from './run-script.js';
export type { ScriptRun } from './run-script.js';
export { decodeQuotedPrintable, startSmtpSink } from './smtp-sink.js';
export type { ReceivedMail, SmtpSink, SmtpSinkOptions } from './smtp-sink.js';
export { helpAndVersionTests, runProgram } from './program.js';
export { ManagedProcess } from './managed-process.js';
export type { ExitStatus } from './managed-process.js';
