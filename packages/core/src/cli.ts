/**
 * Every daemon's frame: `-help`, `-version` and the exit. main returns an exit code, or -1 once it
 * serves (until a signal); a thrown error is one line (`<program>: <message> [<code>]`), exit 1.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CachemonError, errorMessage } from './errors.js';
import { formatUsage, type FlagSpec } from './flags.js';

/**
 * The daemon's doc, docs/<program>.md at the root of the tree its main module is in: the checkout,
 * or the installed `cachemon/` (install.sh copies docs/ there). Undefined when that tree has none.
 */
export function documentationFile(program: string, moduleUrl: string): string | undefined {
  // <root>/packages/<package>/dist/src/main.js
  const file = fileURLToPath(new URL(`../../../../docs/${program}.md`, moduleUrl));
  return existsSync(file) ? file : undefined;
}

/** The `-help` text's last line: where the daemon's doc is. */
export function documentationLine(program: string, moduleUrl: string | undefined): string {
  const file = moduleUrl === undefined ? undefined : documentationFile(program, moduleUrl);
  return `Documentation: ${file ?? `docs/${program}.md in cachemon's source tree`}\n`;
}

/**
 * Prints the usage (ending with where the doc is, found from `main`, the daemon's
 * import.meta.url) for `help`, the version for `version`; true when it printed (exit 0 then).
 */
export function answeredHelpOrVersion(
  program: string,
  version: string,
  spec: FlagSpec,
  request: { help: boolean; version?: boolean | undefined },
  main?: string,
): boolean {
  if (request.help) {
    process.stdout.write(`${formatUsage(program, spec)}\n${documentationLine(program, main)}`);
    return true;
  }
  if (request.version) {
    process.stdout.write(`${program} ${version}\n`);
    return true;
  }
  return false;
}

/** Runs `main` with the command line's arguments and exits as its result says. */
export function runCli(program: string, main: (argv: string[]) => Promise<number>): void {
  main(process.argv.slice(2)).then(
    (code) => {
      if (code >= 0) process.exit(code);
    },
    (err: unknown) => {
      const message = err instanceof CachemonError ? `${err.message} [${err.code}]` : errorMessage(err);
      process.stderr.write(`${program}: ${message}\n`);
      process.exit(1);
    },
  );
}

/** The version in the package.json of a module built to `<package>/dist/src/`; else 'unknown'. */
export function packageVersion(moduleUrl: string): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', moduleUrl), 'utf8')) as { version?: string };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/** Flags every daemon takes, spread into its own spec: `-web.config.file` and `-version`. */
export const DAEMON_FLAGS = {
  'web.config.file': {
    type: 'string',
    description: 'Path of a web config file (TLS, basic auth) in the Prometheus exporters format.',
  },
  version: { type: 'boolean', description: 'Print the version and exit.' },
} as const satisfies FlagSpec;

/** `-check-config`, for the daemons started with a config file. */
export const CHECK_CONFIG_FLAG = {
  'check-config': {
    type: 'boolean',
    description: 'Validate the config file, print the result and exit (0 when valid).',
  },
} as const satisfies FlagSpec;
