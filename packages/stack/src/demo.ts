/**
 * `npm run demo`: a demo ARCUS cluster and the whole stack in ./demo (DEMO_DIR overrides), on the
 * shipped ports; prints every URL. `npm run demo:stop` stops it; a rerun keeps the data.
 */
import { join } from 'node:path';
import { startDemo, stopDemo } from './demo-stack.js';
import { REPO_ROOT } from './index.js';

const dir = process.env['DEMO_DIR'] ?? join(REPO_ROOT, 'demo');

const command = process.argv[2];
if (command === 'start') {
  const started = await startDemo({ dir });
  (started.ok ? process.stdout : process.stderr).write(`${started.message}\n`);
  process.exitCode = started.ok ? 0 : 1;
} else if (command === 'stop') {
  await stopDemo(dir);
} else {
  process.stderr.write('usage: demo.js start|stop\n');
  process.exitCode = 2;
}
