/**
 * Go-style flags (`-config-file=<path>`, `--web.listen-address=:9100`, bare `-flag`), as the spec's
 * Go daemons take them; util.parseArgs reads `-config-file` as short options, refuses `--flag=false`.
 */
import { CachemonError, Errors } from './errors.js';
import { parseDuration } from './duration.js';

interface FlagBase {
  readonly description: string;
  /** Environment variable read when the flag is absent from the command line. */
  readonly env?: string;
}

export interface StringFlag extends FlagBase {
  readonly type: 'string';
  readonly default?: string;
}

export interface BooleanFlag extends FlagBase {
  readonly type: 'boolean';
  readonly default?: boolean;
}

export interface DurationFlag extends FlagBase {
  readonly type: 'duration';
  /** Written as on the command line (`5s`); the parsed value is milliseconds. */
  readonly default?: string;
  /**
   * The values taken, written as durations (`1s`, `1d`); `zero`: 0 is taken too (it turns
   * something off). Without it any duration is; a timer cannot wait more than ~24 days, so a flag
   * that sets one should have it.
   */
  readonly range?: { readonly min: string; readonly max: string; readonly zero?: boolean };
}

export type FlagDefinition = StringFlag | BooleanFlag | DurationFlag;
export type FlagSpec = Readonly<Record<string, FlagDefinition>>;

type FlagValue<D extends FlagDefinition> = D extends BooleanFlag
  ? boolean
  : D extends DurationFlag
    ? D extends { readonly default: string }
      ? number
      : number | undefined
    : D extends { readonly default: string }
      ? string
      : string | undefined;

export type FlagValues<S extends FlagSpec> = { -readonly [K in keyof S]: FlagValue<S[K]> };

export interface ParsedFlags<S extends FlagSpec> {
  readonly values: FlagValues<S>;
  readonly help: boolean;
  readonly positionals: string[];
}

const HELP_NAMES = new Set(['h', 'help']);

function flagError(message: string): CachemonError {
  return new CachemonError(Errors.FLAG_INVALID, message);
}

function parseBoolean(text: string, flag: string, origin: string): boolean {
  const normalized = text.toLowerCase();
  if (['true', '1', 't', 'yes'].includes(normalized)) return true;
  if (['false', '0', 'f', 'no', ''].includes(normalized)) return false;
  throw flagError(`invalid boolean value "${text}" for ${origin} -${flag} (use true or false)`);
}

function convert(definition: FlagDefinition, name: string, text: string, origin: string): string | number | boolean {
  switch (definition.type) {
    case 'string':
      return text;
    case 'boolean':
      return parseBoolean(text, name, origin);
    case 'duration': {
      let ms: number;
      try {
        ms = parseDuration(text);
      } catch (err) {
        throw flagError(`invalid value for ${origin} -${name}: ${(err as Error).message}`);
      }
      const range = definition.range;
      if (range !== undefined && !(ms === 0 && range.zero === true)) {
        if (ms < parseDuration(range.min) || ms > parseDuration(range.max)) {
          throw flagError(`invalid value for ${origin} -${name}: ${text} is out of range (${describeRange(range)})`);
        }
      }
      return ms;
    }
  }
}

/** The values a ranged duration flag takes, as its error and its usage line say them. */
function describeRange(range: NonNullable<DurationFlag['range']>): string {
  return `${range.min} to ${range.max}${range.zero === true ? ', or 0 to turn it off' : ''}`;
}

function defaultValue(definition: FlagDefinition, name: string): string | number | boolean | undefined {
  if (definition.type === 'boolean') return definition.default ?? false;
  if (definition.default === undefined) return undefined;
  return convert(definition, name, definition.default, 'default of');
}

/** Splits `-name=value` / `--name` into its parts; undefined for arguments that are not flags. */
function splitFlag(arg: string): { name: string; inline: string | undefined } | undefined {
  if (arg.length < 2 || arg[0] !== '-') return undefined;
  const body = arg.startsWith('--') ? arg.slice(2) : arg.slice(1);
  if (body === '' || body.startsWith('-') || body.startsWith('=')) throw flagError(`bad flag syntax: ${arg}`);
  const eq = body.indexOf('=');
  return eq === -1 ? { name: body, inline: undefined } : { name: body.slice(0, eq), inline: body.slice(eq + 1) };
}

/**
 * Parses argv (without node and script) as Go's flag package does: flags stop at the first
 * non-flag argument or at `--`; the rest are positionals, refused unless `options.positionals`. Flags absent from argv take their
 * environment variable, then their default.
 */
export function parseFlags<const S extends FlagSpec>(
  argv: readonly string[],
  spec: S,
  env: Readonly<Record<string, string | undefined>> = process.env,
  options: { readonly positionals?: boolean } = {},
): ParsedFlags<S> {
  const given = new Map<string, string | number | boolean>();
  let help = false;
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      i++;
      break;
    }
    const flag = splitFlag(arg);
    if (flag === undefined) break;
    const definition = Object.hasOwn(spec, flag.name) ? spec[flag.name] : undefined;
    if (definition === undefined) {
      if (HELP_NAMES.has(flag.name)) {
        help = true;
        continue;
      }
      throw flagError(`flag provided but not defined: -${flag.name}`);
    }
    let text = flag.inline;
    if (text === undefined && definition.type === 'boolean') text = 'true';
    text ??= argv[++i];
    if (text === undefined) throw flagError(`flag needs an argument: -${flag.name}`);
    given.set(flag.name, convert(definition, flag.name, text, 'flag'));
  }

  const values: Record<string, string | number | boolean | undefined> = {};
  for (const [name, definition] of Object.entries(spec)) {
    const fromEnv = definition.env === undefined ? undefined : env[definition.env];
    if (given.has(name)) values[name] = given.get(name);
    else if (fromEnv !== undefined && fromEnv !== '') {
      values[name] = convert(definition, name, fromEnv, `environment variable ${definition.env} for flag`);
    } else values[name] = defaultValue(definition, name);
  }
  const positionals = argv.slice(i);
  // A daemon takes flags only: a word that is not one (a flag missing its dash) would be ignored.
  if (positionals.length > 0 && options.positionals !== true) {
    throw flagError(`unexpected argument "${positionals[0]}": flags are written -name=value`);
  }
  return { values: values as FlagValues<S>, help, positionals };
}

function typeHint(definition: FlagDefinition): string {
  return definition.type === 'boolean' ? '' : ` ${definition.type}`;
}

/** A ranged duration flag's values, for its usage line. */
function describeRangeOf(definition: FlagDefinition): string {
  return definition.type === 'duration' && definition.range !== undefined
    ? ` (${describeRange(definition.range)})`
    : '';
}

function describeDefault(definition: FlagDefinition): string {
  if (definition.default === undefined || definition.default === false) return '';
  return definition.type === 'boolean' ? ' (default true)' : ` (default ${JSON.stringify(definition.default)})`;
}

/** The `-help` text, laid out like Go's flag.PrintDefaults. */
export function formatUsage(program: string, spec: FlagSpec): string {
  const lines = [`Usage of ${program}:`];
  for (const name of Object.keys(spec).sort()) {
    const definition = spec[name] as FlagDefinition;
    lines.push(`  -${name}${typeHint(definition)}`);
    const env = definition.env === undefined ? '' : ` [env ${definition.env}]`;
    lines.push(`    \t${definition.description}${describeRangeOf(definition)}${describeDefault(definition)}${env}`);
  }
  return `${lines.join('\n')}\n`;
}
