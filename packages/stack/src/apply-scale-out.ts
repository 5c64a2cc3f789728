/**
 * install.sh's step for the scale-out settings of config.sh (docs/scaling.md), given in the
 * environment: `node apply-scale-out.js [--check] <INSTALL_DIR>`. --check only says whether they
 * are valid (before anything is installed); without it they are written into the installed tree.
 * Exit status 1 with every problem named.
 */
import { applyScaleOut, ScaleOutError, scaleOutSettingsFor } from './scale-out.js';

const args = process.argv.slice(2);
const check = args[0] === '--check';
const dir = check ? args[1] : args[0];
if (dir === undefined || args.length !== (check ? 2 : 1)) {
  process.stderr.write('usage: apply-scale-out.js [--check] <INSTALL_DIR>\n');
  process.exit(2);
}
try {
  if (check) scaleOutSettingsFor(dir, process.env);
  else for (const line of applyScaleOut(dir, process.env)) process.stdout.write(`install: ${line}\n`);
} catch (error) {
  if (!(error instanceof ScaleOutError)) throw error;
  process.stderr.write(`install: ${error.message}\n`);
  process.exitCode = 1;
}
