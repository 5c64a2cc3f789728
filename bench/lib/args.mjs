// The benchmarks' command line: `--name=value` and bare `--flag` (read as 'true'); `--help` prints
// the comment at the top of the script and exits.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The options in `argv` as { name: value }. A word that is not `--name[=value]` is refused, naming
 * the script whose header lists the options. `scriptUrl`: the script's import.meta.url.
 */
export function parseArgs(argv, scriptUrl) {
  const file = fileURLToPath(scriptUrl);
  const args = {};
  for (const arg of argv) {
    const m = /^--([^=]+)(?:=(.*))?$/.exec(arg);
    if (!m) throw new Error(`unknown argument ${arg} (see the header of ${basename(file)}, or --help)`);
    args[m[1]] = m[2] ?? 'true';
  }
  if (args.help === 'true') {
    process.stdout.write(`${usage(file)}\n`);
    process.exit(0);
  }
  return args;
}

/** The `//` comment lines right after a script's first line, without the slashes. */
export function usage(file) {
  const header = readFileSync(file, 'utf8').split('\n').slice(1);
  const end = header.findIndex((l) => !l.startsWith('//'));
  return header
    .slice(0, end === -1 ? header.length : end)
    .map((l) => l.replace(/^\/\/ ?/, ''))
    .join('\n');
}
