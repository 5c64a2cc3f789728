/**
 * The host exporter install directories on the cache machines, looked at over SSH: what the next
 * `cachemon hosts add` (batch_install.sh) would delete there.
 */
import { existsSync, readFileSync } from 'node:fs';
import { readTargets } from '../edits.js';
import { inspectInstallDirs, isThisMachine, lossText } from '../machines.js';
import { finding } from './render.js';
import type { Check, DoctorContext, Finding } from './types.js';

/** How long the SSH round may take in all, inside the check's own bound. */
const SSH_BUDGET_MS = 20_000;
const NAMED = 10;

const hostOf = (target: string) => target.slice(0, target.lastIndexOf(':')).replace(/^\[|\]$/g, '');

export const hostInstallDirs: Check = async function hostInstallDirs(context: DoctorContext): Promise<Finding[]> {
  const remote = context.machines;
  if (remote === false) return [];
  const file = context.tree.path('short_term_store/conf/exporter/host_exporter.yml');
  if (!existsSync(file)) return [];
  const remoteDir = remote?.remoteDir ?? context.tree.dir;
  const exporterDir = `${remoteDir}/host_exporter`;
  let machines = [...new Set(readTargets(file, readFileSync(file, 'utf8')).flatMap((e) => e.targets.map(hostOf)))];
  // This tree's own host exporter is installed by install.sh, and hosts add refuses to batch
  // install over it: only another directory on this machine is a batch install's.
  if (remoteDir === context.tree.dir)
    machines = (await Promise.all(machines.map(async (m) => ((await isThisMachine(m)) ? '' : m)))).filter(Boolean);
  if (machines.length === 0) return [];
  const dirs = await inspectInstallDirs(machines, exporterDir, context.tree.path('host_exporter/host_exporter.env'), {
    deadline: Date.now() + SSH_BUDGET_MS,
  });
  const out: Finding[] = [];
  for (const d of dirs) {
    const loss = lossText(d, exporterDir);
    if (loss)
      out.push(
        finding(
          'CACHEMON_DOCTOR_HOST_DIR_NOT_EMPTY',
          'warning',
          'host_exporter',
          d.machine,
          `${loss}: the next cachemon hosts add (host_exporter/batch_install.sh) of ${d.machine} deletes and recreates ${exporterDir}, and these are lost`,
          `move them out of ${exporterDir} on ${d.machine}` +
            (d.envEdited
              ? `; make the edits to host_exporter.env in ${context.tree.path('host_exporter/host_exporter.env')} here, which every machine gets`
              : ''),
        ),
      );
  }
  const unreachable = dirs.filter((d) => d.state === 'unreachable');
  if (unreachable.length > 0) {
    const named = unreachable.slice(0, NAMED).map((d) => `${d.machine} (${d.reason})`);
    if (unreachable.length > NAMED) named.push(`${unreachable.length - NAMED} more`);
    out.push(
      finding(
        'CACHEMON_DOCTOR_HOST_DIR_UNCHECKED',
        'warning',
        'host_exporter',
        '',
        `${exporterDir} could not be looked at over SSH on ${unreachable.length} of ${dirs.length} machines in host_exporter.yml: ${named.join(', ')}; what a reinstall there would delete is unknown`,
        `let this machine SSH to them without a prompt (set SSH, as for cachemon hosts add); give --remote-dir when they are installed elsewhere than ${remoteDir}; pass --no-hosts when their host exporters are not installed from here`,
      ),
    );
  }
  return out;
};
