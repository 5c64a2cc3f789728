/**
 * Runs the mntr and name checks against an installed tree and prints their findings as JSON: the
 * doctor-resolution test starts it in the mount namespace whose /etc/hosts it controls, where the
 * exporters run, so that it resolves names as they do.
 *   node doctor-names-runner.js <install dir>
 */
import { mntrChecks } from '../../src/doctor/mntr.js';
import { resolutionChecks } from '../../src/doctor/resolution.js';
import type { DoctorContext } from '../../src/doctor/types.js';
import { Tree } from '../../src/tree.js';

const tree = new Tree(process.argv[2]!);
const context: DoctorContext = { tree, instances: await tree.instances(), ensembles: [] };
const findings = (await Promise.all([...mntrChecks, ...resolutionChecks].map((check) => check(context)))).flat();
process.stdout.write(`${JSON.stringify(findings)}\n`);
