#!/usr/bin/env node
/** cachemon: the installed stack started, stopped, checked and changed, one command per procedure. */
import { Command, InvalidArgumentError, Option } from 'commander';
import { Change, renderDiff, StepError, withTreeLock } from './change.js';
import { countText, doctorReport, exitStatus, knownEnsembles, renderFindings, runDoctor } from './doctor/index.js';
import { listEnsembles, planAdd, planRemove } from './ensemble.js';
import type { Plan } from './ensemble.js';
import { machineList, planHosts, UsageError } from './hosts.js';
import { SCP_DEFAULT, SSH_DEFAULT } from './machines.js';
import { planServiceCodes } from './service-codes.js';
import type { ServiceCodesOp } from './service-codes.js';
import { runComponents } from './run.js';
import { allWell, renderStatus, treeStatus } from './status.js';
import { installDir, Tree } from './tree.js';

const program = new Command('cachemon')
  .description('Runs and changes an installed cachemon tree: one command per procedure.')
  .option(
    '--install-dir <dir>',
    'the installed tree (default: CACHEMON_INSTALL_DIR, else the tree cachemon is installed in)',
  )
  .showHelpAfterError('(add --help for the usage)')
  // A usage error exits 2, apart from failures (1); help and version exit 0.
  .exitOverride((error) => {
    process.exit(['commander.helpDisplayed', 'commander.help', 'commander.version'].includes(error.code) ? 0 : 2);
  });

const HOSTS_HELP = `
Machines: HOST..., or --pattern with --seq (--pattern cache-%02d --seq 1 40: cache-01 .. cache-40).

SSH and SCP: the commands that reach the machines are the environment variables SSH and SCP, as
host_exporter/batch_install.sh takes them (default: "${SSH_DEFAULT}" and
"${SCP_DEFAULT}"). Options go there:
  SSH='ssh -p 2222 -i ~/.ssh/monitoring -l arcus -o BatchMode=yes' \\
  SCP='scp -q -P 2222 -i ~/.ssh/monitoring -o User=arcus -o BatchMode=yes' cachemon hosts add ...
Each machine must take SSH from here without a prompt.

hosts add deletes and recreates <remote dir>/host_exporter on each machine (files there are lost):
it asks on the terminal first; --yes goes ahead without asking, and without a terminal it refuses
unless --yes.`;

const tree = () => new Tree(installDir(program.opts<{ installDir?: string }>().installDir));
const say = (line: string) => process.stderr.write(`${line}\n`);

const integer = (what: string) => (value: string) => {
  if (!/^[0-9]+$/.test(value)) throw new InvalidArgumentError(`${what} is a whole number`);
  return Number(value);
};
const list = (value: string) =>
  value
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '');

const waitOption = () =>
  new Option('--wait <seconds>', 'how long to wait for the verification').default(120).argParser(integer('--wait'));
const lockOption = () =>
  new Option('--lock-wait <seconds>', 'how long to wait for another cachemon command that changes the tree')
    .default(600)
    .argParser(integer('--lock-wait'));

interface ChangeOptions {
  readonly dryRun?: boolean;
  readonly json?: boolean;
  readonly lockWait: number;
}

/**
 * A procedure under the tree's lock: planned (every file read and checked, nothing changed), then
 * shown (--dry-run) or run step by step, rolled back whole when a step fails.
 */
async function changeTree(what: string, options: ChangeOptions, plan: (t: Tree) => Promise<Plan>): Promise<void> {
  const t = tree();
  const run = async () => {
    let planned: Plan;
    try {
      planned = await plan(t);
    } catch (error) {
      throw new StepError('plan', (error as Error).message, [], [], '');
    }
    if (options.dryRun) {
      const report = {
        dryRun: true,
        files: planned.edits.map((e) => ({ path: e.path, diff: renderDiff(e) })),
        actions: planned.actions,
      };
      if (options.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      else {
        for (const f of report.files) process.stdout.write(f.diff);
        process.stdout.write(
          `\nthen:\n${planned.actions.map((a) => `  ${a}`).join('\n')}\n\n--dry-run: nothing was changed\n`,
        );
      }
      return;
    }
    const change = new Change(options.json ? () => undefined : say);
    await planned.run(change);
    if (options.json) process.stdout.write(`${JSON.stringify({ ok: true, steps: change.log }, null, 2)}\n`);
    else process.stdout.write(`${what}: done\n`);
  };
  try {
    await withTreeLock(
      t.path('run/cachemon'),
      options.lockWait,
      () => say(`${what}: waiting for another cachemon command to finish`),
      run,
    );
  } catch (error) {
    process.exitCode = 1;
    if (!(error instanceof StepError)) {
      if (options.json) process.stdout.write(`${JSON.stringify({ ok: false, error: (error as Error).message })}\n`);
      else say(`${what}: ${(error as Error).message}`);
      return;
    }
    const nothing = error.rollbackFailures.length === 0;
    if (options.json) {
      process.stdout.write(
        `${JSON.stringify({ ok: false, step: error.step, error: error.reason, rolledBack: error.rolledBack, rollbackFailures: error.rollbackFailures }, null, 2)}\n`,
      );
      return;
    }
    say(`${what}: failed at step "${error.step}": ${error.reason}`);
    if (error.rolledBack.length > 0) say(`rolled back: ${error.rolledBack.join('; ')}`);
    for (const f of error.rollbackFailures) say(`NOT rolled back: ${f}`);
    say(
      nothing
        ? 'every file is as it was before, and nothing this command started is running.'
        : 'the tree may be half-changed: fix what is named above by hand (docs/operations.md says each step).',
    );
    if (error.advice) say(error.advice);
  }
}

for (const action of ['start', 'stop', 'restart'] as const)
  program
    .command(`${action} [component...]`)
    .description(`${action} every component in dependency order, or the ones named (component or component:name)`)
    .action(async (ids: string[]) => {
      const ok = await runComponents(tree(), action, ids, (line) => process.stdout.write(`${line}\n`));
      if (!ok) process.exitCode = 1;
    });

program
  .command('status')
  .description("every component: pid, address, health, version, loaded config, and the stores' scrape targets")
  .option('--json', 'as JSON')
  .argument('[component...]')
  .action(async (ids: string[], options: { json?: boolean }) => {
    const t = tree();
    const selected = await t.select(ids);
    // The machines over SSH are doctor's alone: status stays quick and local.
    const [rows, all] = await Promise.all([treeStatus(t, selected), runDoctor(t, [], { machines: false })]);
    // Of the findings, those about what is shown: every one when nothing is named.
    const findings =
      ids.length === 0
        ? all
        : all.filter((f) =>
            selected.some((i) => i.component === f.component && (f.instance === '' || f.instance === (i.name ?? ''))),
          );
    process.stdout.write(
      options.json
        ? `${JSON.stringify({ instances: rows, doctor: doctorReport(findings) }, null, 2)}\n`
        : `${renderStatus(rows)}\n\ndoctor: ${countText(findings)} (cachemon doctor)\n`,
    );
    if (!allWell(rows)) process.exitCode = 1;
  });

program
  .command('doctor')
  .description(
    'every check of the tree and the running processes: one line per finding with its code and fix; exit status 0 clean, 1 warnings only, 2 errors',
  )
  .option('--json', 'as JSON: {findings, errors, warnings, notices}')
  .option(
    '--remote-dir <dir>',
    "where the cache machines' host exporters are installed, as given to cachemon hosts add (default: this tree's directory)",
  )
  .option('--no-hosts', "do not look at the cache machines' install directories over SSH")
  .argument('[ensemble...]', 'only the checks of these ensembles, and those of the whole tree')
  .action(async (ensembles: string[], options: { json?: boolean; remoteDir?: string; hosts: boolean }) => {
    try {
      const t = tree();
      const known = knownEnsembles(t);
      const unknown = ensembles.filter((e) => !known.has(e));
      if (unknown.length > 0)
        throw new Error(
          `no ensemble ${unknown.join(', ')} in ${t.dir} (there are: ${[...known].sort().join(', ') || 'none'})`,
        );
      if (options.remoteDir !== undefined && !options.remoteDir.startsWith('/'))
        throw new Error(`--remote-dir ${options.remoteDir} is not an absolute path`);
      const findings = await runDoctor(t, ensembles, {
        machines: options.hosts && { remoteDir: options.remoteDir?.replace(/(.)\/+$/, '$1') },
      });
      process.stdout.write(
        options.json ? `${JSON.stringify(doctorReport(findings), null, 2)}\n` : `${renderFindings(findings)}\n`,
      );
      process.exitCode = exitStatus(findings);
    } catch (error) {
      say(`doctor: ${(error as Error).message}`);
      // Not 1: that would read as "warnings only".
      process.exitCode = 2;
    }
  });

const ensemble = program.command('ensemble').description('add, remove and list the ensembles collected');
ensemble
  .command('add <name>')
  .description('add a collection target: exporters started, store and topology provider told, verified')
  .addOption(
    new Option('--servers <host:port,...>', "the ensemble's coordination servers").argParser(list).conflicts('domain'),
  )
  .option('--domain <domain:port>', 'a domain resolving to every coordination server')
  .option('--allow-merged', '--domain: keep the name even when it resolves to several servers')
  .option('--service-codes <a,b>', 'collect only these service codes', list)
  .option(
    '--cache-port <port>',
    "the cache exporter's port (default: the first free from 9151)",
    integer('--cache-port'),
  )
  .option(
    '--coordination-port <port>',
    "the coordination exporter's port (default: the first free from 9141)",
    integer('--coordination-port'),
  )
  .option('--listen-host <host>', "the host of the cache exporter's listen address (default: as in conf/example.json)")
  .option('--dry-run', "print each file's diff and the actions; change nothing")
  .option('--json', 'the outcome as JSON')
  .addOption(waitOption())
  .addOption(lockOption())
  .action(
    async (
      name: string,
      o: ChangeOptions & {
        servers?: string[];
        domain?: string;
        allowMerged?: boolean;
        serviceCodes?: string[];
        cachePort?: number;
        coordinationPort?: number;
        listenHost?: string;
        wait: number;
      },
    ) => {
      await changeTree(`ensemble add ${name}`, o, (t) => planAdd(t, name, o, o.json ? () => undefined : say));
    },
  );
ensemble
  .command('remove <name>')
  .description('remove a collection target: provider and store told, exporters stopped, verified')
  .option('--dry-run', "print each file's diff and the actions; change nothing")
  .option('--json', 'the outcome as JSON')
  .addOption(waitOption())
  .addOption(lockOption())
  .action(async (name: string, o: ChangeOptions & { wait: number }) => {
    await changeTree(`ensemble remove ${name}`, o, (t) => planRemove(t, name, o));
  });
ensemble
  .command('list')
  .description('every ensemble: servers, exporters, ports, running and scraped')
  .option('--json', 'as JSON')
  .action(async (o: { json?: boolean }) => {
    const rows = await listEnsembles(tree());
    if (o.json) {
      process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
      return;
    }
    for (const r of rows) {
      const exporter = (what: string, e: (typeof r)['cacheExporter']) =>
        e ? `  ${what} ${e.address} ${e.running ? 'running' : 'NOT running'}; ${e.scraped}` : `  ${what}: none`;
      process.stdout.write(
        [
          `${r.name}: ${r.servers.join(',')}${r.serviceCodes ? ` (service codes ${r.serviceCodes.join(',')})` : ''}${r.inTopologyProvider ? '' : ' (not in the topology provider)'}`,
          exporter('cache exporter', r.cacheExporter),
          exporter('coordination exporter', r.coordinationExporter),
        ].join('\n') + '\n',
      );
    }
    if (rows.length === 0) process.stdout.write('no ensembles\n');
  });

program
  .command('service-codes <name> <operation> [codes]')
  .description('collect only some service codes of an ensemble: set a,b | add a | remove a | all')
  .option('--dry-run', "print each file's diff and the actions; change nothing")
  .option('--json', 'the outcome as JSON')
  .addOption(waitOption())
  .addOption(lockOption())
  .action(async (name: string, operation: string, codes: string | undefined, o: ChangeOptions & { wait: number }) => {
    if (!['set', 'add', 'remove', 'all'].includes(operation))
      program.error(`service-codes: operation is set, add, remove or all (got ${operation})`, { exitCode: 2 });
    if (operation === 'all' && codes) program.error('service-codes all takes no service codes', { exitCode: 2 });
    await changeTree(`service-codes ${name} ${operation}`, o, (t) =>
      planServiceCodes(t, name, operation as ServiceCodesOp, list(codes ?? ''), o),
    );
  });

const hosts = program
  .command('hosts')
  .description('host exporters on the cache machines: installed over SSH, scraped')
  .addHelpText('after', HOSTS_HELP);
for (const op of ['add', 'remove'] as const)
  hosts
    .command(`${op} [host...]`)
    .description(
      op === 'add'
        ? 'install and start a host exporter on each machine over SSH (host_exporter/batch_install.sh), add its target to host_exporter.yml, reload the store, verify it is scraped'
        : "take each machine's targets out of host_exporter.yml, reload the store, stop its host exporter over SSH (stop.sh; a systemd socket and service disabled and removed), verify",
    )
    .option('--pattern <pattern>', 'machine names with %s (or %02d) for the number, with --seq')
    .option('--seq <first-and-last...>', 'the range of machine numbers: --seq 1 40')
    .option(
      '--port <port>',
      op === 'add'
        ? "the host exporters' port (default, and it must be: the port of host_exporter/host_exporter.env, which each machine gets)"
        : "only the targets on this port (default: every target of the machines); the exporters' port",
      integer('--port'),
    )
    .option(
      '--remote-dir <dir>',
      "the install directory on the machines, holding host_exporter/ (default: this tree's)",
    )
    .option('--yes', op === 'add' ? 'do not ask before the destructive install' : 'accepted; remove asks nothing')
    .option('--dry-run', "print each file's diff and the actions; change nothing")
    .option('--json', 'the outcome as JSON')
    .addOption(waitOption())
    .addOption(lockOption())
    .addHelpText('after', HOSTS_HELP)
    .action(
      async (
        names: string[],
        o: ChangeOptions & {
          pattern?: string;
          seq?: string[];
          port?: number;
          remoteDir?: string;
          yes?: boolean;
          wait: number;
        },
        command: Command,
      ) => {
        let machines: string[];
        try {
          machines = machineList(names, o.pattern, o.seq);
        } catch (error) {
          if (error instanceof UsageError) command.error(`hosts ${op}: ${error.message}`, { exitCode: 2 });
          throw error;
        }
        await changeTree(`hosts ${op}`, o, (t) => planHosts(t, op, machines, o, o.json ? () => undefined : say));
      },
    );

program.parseAsync().catch((error: Error) => {
  say(`cachemon: ${error.message}`);
  process.exitCode = process.exitCode || 1;
});
