/** Writes the shipped dashboards into stack/dashboard_server/dashboards (npm run dashboards:generate). */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderDashboards } from './index.js';

export const DASHBOARDS_DIR = fileURLToPath(new URL('../../../../stack/dashboard_server/dashboards', import.meta.url));

mkdirSync(DASHBOARDS_DIR, { recursive: true });
const files = renderDashboards();
// A dashboard removed from the code leaves the directory too.
for (const name of readdirSync(DASHBOARDS_DIR))
  if (name.endsWith('.json') && !files.has(name)) rmSync(join(DASHBOARDS_DIR, name));
for (const [name, text] of files) writeFileSync(join(DASHBOARDS_DIR, name), text);
process.stdout.write(`wrote ${files.size} dashboards into ${DASHBOARDS_DIR}\n`);
