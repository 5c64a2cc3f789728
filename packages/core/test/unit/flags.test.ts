import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Errors, formatUsage, isCachemonError, parseFlags } from '../../src/index.js';

const spec = {
  'config-file': { type: 'string', description: 'Path to the JSON config file.', env: 'CACHEMON_CONFIG_FILE' },
  'web.listen-address': { type: 'string', default: ':8084', description: 'Address to listen on.' },
  verbose: { type: 'boolean', description: 'Log more.' },
  timeout: { type: 'duration', default: '5s', description: 'Scrape deadline.' },
  retry: { type: 'duration', description: 'Retry pause.', env: 'RETRY' },
} as const;

function flagError(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(isCachemonError(err, Errors.FLAG_INVALID), String(err));
    assert.match(err.message, pattern);
    return true;
  });
}

describe('parseFlags', () => {
  it('gives defaults when no flag is given', () => {
    const { values, help, positionals } = parseFlags([], spec, {});
    assert.deepEqual(values, {
      'config-file': undefined,
      'web.listen-address': ':8084',
      verbose: false,
      timeout: 5000,
      retry: undefined,
    });
    assert.equal(help, false);
    assert.deepEqual(positionals, []);
  });

  const forms: Array<[string[], string]> = [
    [['-config-file=/a.json'], '-name=value'],
    [['--config-file=/a.json'], '--name=value'],
    [['-config-file', '/a.json'], '-name value'],
    [['--config-file', '/a.json'], '--name value'],
  ];
  for (const [argv, form] of forms) {
    it(`accepts ${form}`, () => assert.equal(parseFlags(argv, spec, {}).values['config-file'], '/a.json'));
  }

  it('keeps "=" inside a value', () => {
    assert.equal(parseFlags(['-config-file=a=b'], spec, {}).values['config-file'], 'a=b');
  });

  it('reads booleans bare or with =true/=false, never taking the next argument', () => {
    assert.equal(parseFlags(['-verbose'], spec, {}).values.verbose, true);
    assert.equal(parseFlags(['--verbose=true'], spec, {}).values.verbose, true);
    assert.equal(parseFlags(['-verbose=false'], spec, {}).values.verbose, false);
    const parsed = parseFlags(['-verbose', 'false'], spec, {}, { positionals: true });
    assert.equal(parsed.values.verbose, true);
    assert.deepEqual(parsed.positionals, ['false']);
  });

  it('types each value after its definition', () => {
    const { values } = parseFlags(['-timeout=2s'], spec, {});
    // Compile-time checks: a default makes the value always present.
    const timeout: number = values.timeout;
    const listen: string = values['web.listen-address'];
    const verbose: boolean = values.verbose;
    const configFile: string | undefined = values['config-file'];
    const retry: number | undefined = values.retry;
    assert.deepEqual([timeout, listen, verbose, configFile, retry], [2000, ':8084', false, undefined, undefined]);
  });

  it('parses durations to milliseconds', () => {
    assert.equal(parseFlags(['-timeout=1m30s'], spec, {}).values.timeout, 90_000);
  });

  it('falls back to the environment variable, flag first', () => {
    const env = { CACHEMON_CONFIG_FILE: '/env.json', RETRY: '2s' };
    assert.equal(parseFlags([], spec, env).values['config-file'], '/env.json');
    assert.equal(parseFlags([], spec, env).values.retry, 2000);
    assert.equal(parseFlags(['-config-file=/flag.json'], spec, env).values['config-file'], '/flag.json');
  });

  it('sets help for -h, -help and --help', () => {
    for (const arg of ['-h', '-help', '--help']) assert.equal(parseFlags([arg], spec, {}).help, true, arg);
  });

  it('stops at the first non-flag argument and after --', () => {
    const taking = { positionals: true };
    assert.deepEqual(parseFlags(['-verbose', 'run', '-x'], spec, {}, taking).positionals, ['run', '-x']);
    assert.deepEqual(parseFlags(['--', '-verbose'], spec, {}, taking).positionals, ['-verbose']);
    assert.deepEqual(parseFlags(['-'], spec, {}, taking).positionals, ['-']);
  });

  it('refuses arguments that are not flags unless asked to take them, naming the first', () => {
    flagError(
      () => parseFlags(['-verbose', 'timeout=2s', '-x'], spec, {}),
      /unexpected argument "timeout=2s": flags are written -name=value/,
    );
    assert.deepEqual(parseFlags([], spec, {}).positionals, []);
  });

  it('refuses a duration out of the range of its flag, naming both', () => {
    const ranged = {
      every: {
        type: 'duration',
        default: '5s',
        range: { min: '1s', max: '1d', zero: true },
        description: 'Probe interval.',
      },
      wait: { type: 'duration', range: { min: '100ms', max: '5m' }, description: 'Deadline.', env: 'WAIT' },
    } as const;
    assert.equal(parseFlags(['-every=1d'], ranged, {}).values.every, 86_400_000);
    assert.equal(parseFlags(['-every=0'], ranged, {}).values.every, 0);
    assert.equal(parseFlags(['-wait=100ms'], ranged, {}).values.wait, 100);
    flagError(
      () => parseFlags(['-every=30d'], ranged, {}),
      /-every: 30d is out of range \(1s to 1d, or 0 to turn it off\)/,
    );
    flagError(() => parseFlags(['-every=500ms'], ranged, {}), /-every: 500ms is out of range/);
    flagError(() => parseFlags(['-wait=0s'], ranged, {}), /-wait: 0s is out of range \(100ms to 5m\)$/);
    flagError(
      () => parseFlags([], ranged, { WAIT: '1h' }),
      /environment variable WAIT for flag -wait: 1h is out of range/,
    );
  });

  it('refuses an unknown flag naming it', () =>
    flagError(() => parseFlags(['-nope=1'], spec, {}), /not defined: -nope$/));
  it('refuses a missing value naming the flag', () =>
    flagError(() => parseFlags(['-config-file'], spec, {}), /needs an argument: -config-file$/));
  it('refuses a bad boolean', () => flagError(() => parseFlags(['-verbose=maybe'], spec, {}), /"maybe".*-verbose/));
  it('refuses a bad duration naming the flag', () =>
    flagError(() => parseFlags(['-timeout=soon'], spec, {}), /-timeout: invalid duration "soon"/));
  it('refuses a bad duration in the environment naming the variable', () =>
    flagError(() => parseFlags([], spec, { RETRY: 'x' }), /environment variable RETRY .*-retry/));
  it('refuses bad syntax', () => flagError(() => parseFlags(['---x'], spec, {}), /bad flag syntax: ---x/));
});

describe('formatUsage', () => {
  it('gives the range of a ranged duration flag, as its error does', () => {
    const ranged = {
      every: {
        type: 'duration',
        default: '5s',
        range: { min: '1s', max: '1d', zero: true },
        description: 'Probe interval.',
      },
    } as const;
    assert.equal(
      formatUsage('x', ranged),
      'Usage of x:\n  -every duration\n    \tProbe interval. (1s to 1d, or 0 to turn it off) (default "5s")\n',
    );
  });

  it('lists every flag with type, description, default and env', () => {
    assert.equal(
      formatUsage('cache-exporter', spec),
      [
        'Usage of cache-exporter:',
        '  -config-file string',
        '    \tPath to the JSON config file. [env CACHEMON_CONFIG_FILE]',
        '  -retry duration',
        '    \tRetry pause. [env RETRY]',
        '  -timeout duration',
        '    \tScrape deadline. (default "5s")',
        '  -verbose',
        '    \tLog more.',
        '  -web.listen-address string',
        '    \tAddress to listen on. (default ":8084")',
        '',
      ].join('\n'),
    );
  });
});
