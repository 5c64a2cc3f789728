/**
 * `cachemon doctor`: every check run against the installed tree and the running processes, each
 * bounded in time, their findings in one order.
 */
import { providerEnsembleConfig } from '../stack-state.js';
import { COMPONENTS } from '../tree.js';
import type { Tree } from '../tree.js';
import { finding, sortFindings } from './render.js';
import { hostInstallDirs } from './machines.js';
import { mntrChecks } from './mntr.js';
import { resolutionChecks } from './resolution.js';
import { RUNNING_CHECKS } from './running-checks.js';
import { TREE_CHECKS } from './tree-checks.js';
import type { Check, DoctorContext, Finding } from './types.js';

export { countText, doctorReport, exitStatus, renderFindings } from './render.js';
export type { DoctorReport } from './render.js';
export type { Check, DoctorContext, Finding, Severity } from './types.js';

/** Every check `cachemon doctor` runs. */
export const CHECKS: Check[] = [...TREE_CHECKS, ...RUNNING_CHECKS, ...mntrChecks, ...resolutionChecks, hostInstallDirs];

/** How long one check may take before it counts as failed. */
export const CHECK_TIMEOUT_MS = 30_000;

export interface DoctorOptions {
  readonly checks?: readonly Check[];
  readonly timeoutMs?: number;
  readonly machines?: DoctorContext['machines'];
}

function checkFailed(name: string, what: string): Finding {
  return finding(
    'CACHEMON_DOCTOR_CHECK_FAILED',
    'error',
    'cachemon',
    name,
    `the check ${name} ${what}; what it checks is unknown`,
    'correct what the message names, or, when the machine or a component was only slow, run cachemon doctor again',
  );
}

/** One check's findings; one that throws or overruns the bound is a finding of its own, naming it. */
async function bounded(check: Check, context: DoctorContext, timeoutMs: number, at: number): Promise<Finding[]> {
  const name = check.name || `number ${at + 1}`;
  let timer: NodeJS.Timeout | undefined;
  const overrun = new Promise<'overrun'>((resolve) => {
    timer = setTimeout(() => resolve('overrun'), timeoutMs);
  });
  try {
    const result = await Promise.race([check(context), overrun]);
    return result === 'overrun' ? [checkFailed(name, `took longer than ${timeoutMs / 1000} s`)] : result;
  } catch (error) {
    return [checkFailed(name, `failed: ${(error as Error).message}`)];
  } finally {
    clearTimeout(timer);
  }
}

/** The component a file path belongs to, for a tree that cannot be read. */
function componentOf(tree: Tree, message: string): string {
  return COMPONENTS.find((c) => message.includes(tree.path(c))) ?? 'cachemon';
}

/** Runs every check (all at once; each bounded), and gives their findings, errors first. */
export async function runDoctor(
  tree: Tree,
  ensembles: readonly string[],
  options: DoctorOptions = {},
): Promise<Finding[]> {
  let instances;
  try {
    instances = await tree.instances();
  } catch (error) {
    const message = (error as Error).message;
    return [
      finding(
        'CACHEMON_DOCTOR_CONFIG_UNREADABLE',
        'error',
        componentOf(tree, message),
        '',
        `${message}: no check can run until the tree's configs can be read`,
        'correct the file at the place named, then run cachemon doctor again',
      ),
    ];
  }
  const context: DoctorContext = { tree, instances, ensembles, machines: options.machines };
  const checks = options.checks ?? CHECKS;
  const results = await Promise.all(
    checks.map((check, at) => bounded(check, context, options.timeoutMs ?? CHECK_TIMEOUT_MS, at)),
  );
  return sortFindings(results.flat());
}

/** Every ensemble name the tree knows: its exporters' configs and the topology provider's. */
export function knownEnsembles(tree: Tree): Set<string> {
  let provider: string[] = [];
  try {
    provider = Object.keys(providerEnsembleConfig(tree));
  } catch {
    // An unreadable config.json is doctor's finding, not a reason to refuse the names.
  }
  return new Set([...tree.cacheExporterNames(), ...tree.coordinationExporterNames(), ...provider]);
}
