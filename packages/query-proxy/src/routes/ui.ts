/** The UI: its page, script and style, and the uPlot files it draws with, read once at start. */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { FastifyInstance } from '@cachemon/core';

function uiFiles(): Map<string, { type: string; body: Buffer }> {
  const require = createRequire(import.meta.url);
  const ui = new URL('../../../ui/', import.meta.url);
  const uplot = require.resolve('uplot/dist/uPlot.iife.min.js').replace(/uPlot\.iife\.min\.js$/, '');
  const files = new Map<string, { type: string; body: Buffer }>();
  const add = (path: string, file: string | URL, type: string) => files.set(path, { type, body: readFileSync(file) });
  add('/', new URL('index.html', ui), 'text/html; charset=utf-8');
  add('/ui/app.js', new URL('app.js', ui), 'text/javascript; charset=utf-8');
  add('/ui/style.css', new URL('style.css', ui), 'text/css; charset=utf-8');
  add('/ui/vendor/uPlot.iife.min.js', `${uplot}uPlot.iife.min.js`, 'text/javascript; charset=utf-8');
  add('/ui/vendor/uPlot.min.css', `${uplot}uPlot.min.css`, 'text/css; charset=utf-8');
  return files;
}

export function installUiRoutes(app: FastifyInstance): void {
  for (const [path, file] of uiFiles()) {
    app.get(path, async (_request, reply) => reply.type(file.type).header('Cache-Control', 'no-cache').send(file.body));
  }
}
