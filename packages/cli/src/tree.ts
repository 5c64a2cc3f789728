/**
 * The installed tree as the single source of truth: which components and instances it holds, where
 * each one listens and which files configure it, read from the files the spec names.
 */
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseJsonc } from 'jsonc-parser';
import type { ParseError } from 'jsonc-parser';
import { readEnv } from './sh.js';

/** What serves an instance: decides where its health, version and reload state are read. */
export type Kind = 'cachemon' | 'store' | 'vmagent' | 'vmalert' | 'alertmanager' | 'node_exporter' | 'grafana';

export interface Instance {
  readonly component: string;
  /** The instance's name for multi-instance components (an ensemble, a store role, an ini). */
  readonly name: string | undefined;
  /** `component` or `component:name`, as commands take it. */
  readonly id: string;
  readonly kind: Kind;
  readonly startArgs: readonly string[];
  readonly pidfile: string;
  /** The listen address as configured (`0.0.0.0:9151`, `:8082`). */
  readonly listen: string;
  /** Files whose content the running process should have loaded (reloadable without a restart). */
  readonly reloadable: readonly string[];
  /** Files read only at start (a change needs a restart). */
  readonly startFiles: readonly string[];
  /** Path answered 200 when the process is healthy. */
  readonly healthPath: string;
}

/**
 * Start order: stores, the collector's shards (which write to the short-term store), exporters,
 * topology provider, query proxy, rule evaluator, alert router, dashboard server.
 */
export const COMPONENTS = [
  'short_term_store',
  'collector',
  'host_exporter',
  'cache_exporter',
  'coordination_exporter',
  'topology_provider',
  'query_proxy',
  'rule_evaluator',
  'alert_router',
  'dashboard_server',
] as const;

export class TreeError extends Error {
  override readonly name = 'TreeError';
}

/** The install directory: the option, else CACHEMON_INSTALL_DIR, else the tree this program is installed in. */
export function installDir(option: string | undefined): string {
  const given = option ?? process.env['CACHEMON_INSTALL_DIR'];
  if (given) {
    const dir = resolve(given);
    if (!existsSync(join(dir, 'lib/daemon.sh')))
      throw new TreeError(
        `${dir} is not an installed cachemon tree (no lib/daemon.sh); install it with stack/install.sh`,
      );
    return dir;
  }
  // <INSTALL_DIR>/cachemon/packages/cli/dist/src/tree.js
  const own = resolve(dirname(realpathSync(fileURLToPath(import.meta.url))), '../../../../..');
  if (existsSync(join(own, 'lib/daemon.sh')) && existsSync(join(own, 'cachemon'))) return own;
  throw new TreeError('no install directory: give --install-dir <dir> or set CACHEMON_INSTALL_DIR');
}

/** The text of a JSON-with-comments file parsed, or an error naming the file and the place. */
export function readJsonc(path: string, text = readFileSync(path, 'utf8')): Record<string, unknown> {
  const errors: ParseError[] = [];
  const value: unknown = parseJsonc(text, errors, { allowTrailingComma: true });
  if (errors.length > 0) {
    const at = errors[0]!.offset;
    const line = text.slice(0, at).split('\n').length;
    throw new TreeError(`${path}: not valid JSON at line ${line}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new TreeError(`${path}: not a JSON object`);
  return value as Record<string, unknown>;
}

/** Instance names of a component: conf/<name>.<ext>, the shipped example left out. */
function confNames(dir: string, ext: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(ext) && f !== `example${ext}`)
    .map((f) => f.slice(0, -ext.length))
    .sort();
}

function stringField(object: Record<string, unknown>, key: string): string {
  const value = object[key];
  return typeof value === 'string' ? value : '';
}

function envString(values: Map<string, string | string[]>, name: string): string | undefined {
  const value = values.get(name);
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The collector's shards as collector.env configures them to run (collector/collector.sh). */
export interface Collector {
  readonly shards: number;
  /** Listen address of shard i. */
  readonly listen: (shard: number) => string;
  /** The scrape config the shards run, absolute. */
  readonly scrapeConfig: string;
}

export class Tree {
  constructor(readonly dir: string) {}

  path(...parts: string[]): string {
    return join(this.dir, ...parts);
  }

  /** Whether Grafana, which the dashboard server runs, is installed (config.sh's DASHBOARD_INSTALL_DIR). */
  async dashboardServerInstalled(): Promise<boolean> {
    const config = this.path('config.sh');
    const home = existsSync(config)
      ? envString(await readEnv(config, ['DASHBOARD_INSTALL_DIR'], { INSTALL_DIR: this.dir }), 'DASHBOARD_INSTALL_DIR')
      : undefined;
    return existsSync(join(home ?? this.path('grafana'), 'bin/grafana'));
  }

  cacheExporterNames(): string[] {
    return confNames(this.path('cache_exporter/conf'), '.json');
  }

  coordinationExporterNames(): string[] {
    return confNames(this.path('coordination_exporter/conf'), '.env');
  }

  /**
   * The collector when it is installed and configured to run (STORE_SHARDS above 1, or
   * STORE_WRITE_URL set), else undefined: then the short-term store scrapes itself.
   */
  async collector(): Promise<Collector | undefined> {
    const env = this.path('collector/collector.env');
    if (!existsSync(this.path('collector/start.sh')) || !existsSync(env)) return undefined;
    const values = await readEnv(env, [
      'STORE_SHARDS',
      'STORE_WRITE_URL',
      'COLLECTOR_LISTEN_ADDRESS',
      'COLLECTOR_SCRAPE_CONFIG',
    ]);
    const shardsText = envString(values, 'STORE_SHARDS') ?? '1';
    const shards = Number(shardsText);
    if (!/^[1-9][0-9]{0,2}$/.test(shardsText))
      throw new TreeError(`${env}: STORE_SHARDS=${shardsText}: a whole number from 1 (no shards) to 999`);
    if (shards === 1 && (envString(values, 'STORE_WRITE_URL') ?? '').trim() === '') return undefined;
    const listen = envString(values, 'COLLECTOR_LISTEN_ADDRESS') ?? '';
    const match = /^(.*):([0-9]{1,5})$/.exec(listen);
    if (!match || Number(match[2]) + shards - 1 > 65535)
      throw new TreeError(
        `${env}: COLLECTOR_LISTEN_ADDRESS=${listen}: host:port or :port, the port + STORE_SHARDS - 1 at most 65535`,
      );
    const scrape = envString(values, 'COLLECTOR_SCRAPE_CONFIG');
    if (!scrape) throw new TreeError(`${env}: COLLECTOR_SCRAPE_CONFIG not set`);
    return {
      shards,
      listen: (i) => `${match[1]!}:${Number(match[2]) + i}`,
      scrapeConfig: resolve(this.path('collector'), scrape),
    };
  }

  /** Every instance of the tree, in start order. */
  async instances(): Promise<Instance[]> {
    const out: Instance[] = [];
    const collector = await this.collector();
    const single = (
      component: string,
      kind: Kind,
      listen: string,
      healthPath: string,
      reloadable: string[],
      startFiles: string[],
    ): Instance => ({
      component,
      name: undefined,
      id: component,
      kind,
      startArgs: [],
      pidfile: this.path(component, 'run', `${component}.pid`),
      listen,
      reloadable,
      startFiles,
      healthPath,
    });
    /** An instance of a component that has several, named by start.sh's one argument. */
    const named = (
      component: string,
      name: string,
      kind: Kind,
      listen: string,
      healthPath: string,
      reloadable: string[],
      startFiles: string[],
    ): Instance => ({
      component,
      name,
      id: `${component}:${name}`,
      kind,
      startArgs: [name],
      pidfile: this.path(component, 'run', `${name}.pid`),
      listen,
      reloadable,
      startFiles,
      healthPath,
    });
    for (const component of COMPONENTS) {
      const base = this.path(component);
      if (!existsSync(join(base, 'start.sh'))) continue;
      switch (component) {
        case 'short_term_store':
          for (const role of ['short', 'long']) {
            const env = this.path(component, `${role}.env`);
            if (!existsSync(env)) continue;
            const values = await readEnv(env, ['TS_LISTEN_ADDRESS', 'TS_PROMSCRAPE_CONFIG']);
            const given = envString(values, 'TS_PROMSCRAPE_CONFIG');
            const scrape = given ? resolve(base, given) : undefined;
            // Scraped by the collector's shards: the store runs without it (its start.sh).
            const scraped = scrape !== undefined && collector?.scrapeConfig !== scrape;
            out.push(
              named(
                component,
                role,
                'store',
                envString(values, 'TS_LISTEN_ADDRESS') ?? '',
                '/health',
                scraped ? [scrape] : [],
                [env],
              ),
            );
          }
          break;
        case 'collector':
          // One instance per shard, named by its number as start.sh and stop.sh take it.
          for (let i = 0; i < (collector?.shards ?? 0); i++)
            out.push({
              component,
              name: String(i),
              id: `${component}:${i}`,
              kind: 'vmagent',
              startArgs: [String(i)],
              pidfile: this.path(component, 'run', `shard-${i}.pid`),
              listen: collector!.listen(i),
              reloadable: [collector!.scrapeConfig],
              startFiles: [this.path(component, 'collector.env')],
              healthPath: '/health',
            });
          break;
        case 'host_exporter': {
          const env = this.path(component, 'host_exporter.env');
          const values = existsSync(env)
            ? await readEnv(env, ['HOST_EXPORTER_LISTEN_ADDRESS'])
            : new Map<string, string | string[]>();
          const listen = envString(values, 'HOST_EXPORTER_LISTEN_ADDRESS') ?? '0.0.0.0:9100';
          out.push(single(component, 'node_exporter', listen, '/metrics', [], [env]));
          break;
        }
        case 'cache_exporter':
          for (const name of this.cacheExporterNames()) {
            const conf = this.path(component, 'conf', `${name}.json`);
            out.push(
              named(component, name, 'cachemon', stringField(readJsonc(conf), 'listen'), '/-/healthy', [conf], []),
            );
          }
          break;
        case 'coordination_exporter':
          for (const name of this.coordinationExporterNames()) {
            const env = this.path(component, 'conf', `${name}.env`);
            const values = await readEnv(env, ['LISTEN_PORT']);
            out.push(
              named(
                component,
                name,
                'cachemon',
                `0.0.0.0:${envString(values, 'LISTEN_PORT') ?? ''}`,
                '/-/healthy',
                [],
                [env],
              ),
            );
          }
          break;
        case 'topology_provider': {
          const conf = this.path(component, 'conf/config.json');
          const listen = stringField(readJsonc(conf), 'listen');
          out.push(
            single(
              component,
              'cachemon',
              listen,
              '/-/healthy',
              [conf],
              [this.path(component, 'conf/topology_provider.env')],
            ),
          );
          break;
        }
        case 'query_proxy': {
          const env = this.path(component, 'conf/query_proxy.env');
          const values = await readEnv(env, ['PROXY_LISTEN_ADDRESS']);
          const conf = this.path(component, 'conf/promxy.yml');
          out.push(
            single(component, 'cachemon', envString(values, 'PROXY_LISTEN_ADDRESS') ?? '', '/-/healthy', [conf], [env]),
          );
          break;
        }
        case 'rule_evaluator': {
          const env = this.path(component, 'rule_evaluator.env');
          const values = await readEnv(env, ['RULER_LISTEN_ADDRESS']);
          const rules = this.path(component, 'conf/rules');
          const files = existsSync(rules)
            ? readdirSync(rules)
                .filter((f) => f.endsWith('.yml'))
                .map((f) => join(rules, f))
            : [];
          out.push(
            single(component, 'vmalert', envString(values, 'RULER_LISTEN_ADDRESS') ?? '', '/health', files, [env]),
          );
          break;
        }
        case 'alert_router': {
          const env = this.path(component, 'alert_router.env');
          const values = await readEnv(env, ['ALERTROUTER_LISTEN_ADDRESS']);
          const listen = envString(values, 'ALERTROUTER_LISTEN_ADDRESS') ?? '';
          out.push(
            single(component, 'alertmanager', listen, '/-/healthy', [this.path(component, 'alert_router.yml')], [env]),
          );
          break;
        }
        case 'dashboard_server':
          if (!(await this.dashboardServerInstalled())) break;
          for (const name of confNames(this.path(component, 'conf'), '.ini')) {
            const ini = this.path(component, 'conf', `${name}.ini`);
            out.push(named(component, name, 'grafana', iniListen(readFileSync(ini, 'utf8')), '/api/health', [], [ini]));
          }
          break;
      }
    }
    return out;
  }

  /** The instances named by `component` or `component:name` (every one when none is given), in start order. */
  async select(ids: readonly string[]): Promise<Instance[]> {
    const all = await this.instances();
    if (ids.length === 0) return all;
    const picked = new Set<Instance>();
    for (const id of ids) {
      const found = all.filter((i) => i.id === id || i.component === id);
      if (found.length === 0) {
        const known = [...new Set(all.flatMap((i) => [i.component, i.id]))].join(', ');
        throw new TreeError(`no component or instance ${id} in ${this.dir} (there are: ${known})`);
      }
      for (const i of found) picked.add(i);
    }
    return all.filter((i) => picked.has(i));
  }
}

/** Grafana's `[server] http_addr:http_port` from an ini text (3000 when unset). */
function iniListen(text: string): string {
  let section = '';
  const values: Record<string, string> = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) section = header[1]!.trim();
    else if (section === 'server') {
      const eq = line.indexOf('=');
      if (eq > 0) values[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
    }
  }
  return `${values['http_addr'] || '0.0.0.0'}:${values['http_port'] || '3000'}`;
}

/** Where to connect to a listen address: the wildcard hosts become loopback. */
export function connectAddress(listen: string): string {
  const at = listen.lastIndexOf(':');
  const host = listen.slice(0, at).replace(/^\[|\]$/g, '');
  const port = listen.slice(at + 1);
  const local = host === '' || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return local.includes(':') ? `[${local}]:${port}` : `${local}:${port}`;
}

/** The port of a listen address, or undefined. */
export function portOf(listen: string): number | undefined {
  const port = Number(listen.slice(listen.lastIndexOf(':') + 1));
  return Number.isInteger(port) && port > 0 && port < 65536 ? port : undefined;
}
