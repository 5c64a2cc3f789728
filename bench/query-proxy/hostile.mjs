// The hostile-neighbour row of the query proxy benchmark: a plain query timed back to back through
// a proxy (a) with no bursts at all, (b) while bursts of hostile queries go to a bare node:http
// refuser beside it, (c) while they go to the proxy itself. The refuser is there because on one
// machine a burst costs the kernel and the CPUs whoever receives it: (c) against (b) is what the
// proxy adds, (c) against (a) what a dashboard feels. See README.md.
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** The PID of a child of this process whose command line holds `script` followed by `role`. */
export function childPid(script, role) {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== process.pid) continue;
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'latin1').split('\0');
      const at = argv.findIndex((a) => a.endsWith(script));
      if (at !== -1 && argv[at + 1] === role) return Number(entry);
    } catch {
      // The process ended while the list was read.
    }
  }
  return undefined;
}

/**
 * Every answer of a burst must be a 400 in the Prometheus API's error shape; throws naming the first
 * that is not and how many are not. A connection that ended in an error with nothing read is lost,
 * not wrong: the server closed it with the body unread, and the reset made the neighbour's write
 * fail before it read the 400 (the caller counts those). Returns the distinct messages (numbers
 * elided) and the errors of the connections lost.
 */
export function checkRefusals(answers, expected, where) {
  const bad = [];
  const lost = [];
  const messages = new Set();
  for (const { status, body, error } of answers) {
    if (status === 0 && body === '' && error !== undefined) {
      lost.push(error);
      continue;
    }
    let parsed;
    try {
      parsed = JSON.parse(body);
    } catch {
      parsed = undefined;
    }
    const shaped =
      parsed !== null &&
      typeof parsed === 'object' &&
      Object.keys(parsed).join() === 'status,errorType,error' &&
      parsed.status === 'error' &&
      parsed.errorType === 'bad_data' &&
      typeof parsed.error === 'string';
    if (status !== 400 || !shaped) bad.push(`status ${status}${error ? ` (${error})` : ''}: ${body.slice(0, 200)}`);
    else messages.add(parsed.error.replace(/\d+/g, 'N'));
  }
  if (answers.length !== expected || bad.length > 0) {
    throw new Error(
      `hostile burst to ${where}: ${answers.length} answers of ${expected} sent, ${bad.length} not a 400 ` +
        `{"status":"error","errorType":"bad_data","error":...}${bad.length ? `; the first: ${bad[0]}` : ''}`,
    );
  }
  return { messages, lost };
}

const rotate = (list, by) => list.map((_, i) => list[(i + by) % list.length]);
const PHASES = ['idle', 'refuser', 'hostile'];

function newPhase() {
  return { ms: [], bursts: 0, wallMs: 0, cpu: { subject: 0, refuser: 0, neighbour: 0 } };
}

/**
 * Runs the rounds: in each, for each subject (a proxy), its three phases in an order rotated every
 * round. Idle lasts as long as the bursts so far took on average. A first round is not recorded
 * (the refusal's code runs for the first time there).
 *
 * subjects: [{ name, port, pid, target }]; plain(target): one plain query, resolves with its ms;
 * pids: { refuser, neighbour } (CPU read through `cpuMs`; a missing one reads as NaN).
 * Returns per subject { idle, refuser, hostile }, and by who answered (each subject, `refuser`):
 * { sent, messages, lost }.
 */
export async function measureHostile({ subjects, neighbour, refuser, connections, bursts, plain, cpuMs, pids, log }) {
  const read = (pid) => {
    try {
      return pid === undefined ? NaN : cpuMs(pid);
    } catch {
      return NaN;
    }
  };
  const snapshot = (subject) => ({
    subject: read(subject.pid),
    refuser: read(pids.refuser),
    neighbour: read(pids.neighbour),
  });
  const stats = Object.fromEntries(
    subjects.map((s) => [s.name, { idle: newPhase(), refuser: newPhase(), hostile: newPhase() }]),
  );
  /** By who answered (a subject's name or `refuser`): queries sent, the refusals' distinct messages, the errors of the connections lost. */
  const refusals = Object.fromEntries(
    [...subjects.map((s) => s.name), 'refuser'].map((who) => [who, { sent: 0, messages: new Set(), lost: [] }]),
  );
  let burstMs = 0;
  let burstCount = 0;

  const phase = async (subject, kind, into) => {
    const before = snapshot(subject);
    const t0 = performance.now();
    const ms = [];
    if (kind === 'idle') {
      const until = t0 + (burstCount > 0 ? burstMs / burstCount : 500);
      while (performance.now() < until) ms.push(await plain(subject.target));
    } else {
      const port = kind === 'hostile' ? subject.port : refuser.port;
      let over = false;
      const burst = neighbour.burst(port);
      burst.then(
        () => (over = true),
        () => (over = true),
      );
      while (!over) ms.push(await plain(subject.target));
      const answers = await burst;
      const who = kind === 'hostile' ? subject.name : 'refuser';
      const checked = checkRefusals(answers, connections, who);
      refusals[who].sent += answers.length;
      for (const m of checked.messages) refusals[who].messages.add(m);
      refusals[who].lost.push(...checked.lost);
      burstMs += performance.now() - t0;
      burstCount++;
    }
    const wallMs = performance.now() - t0;
    const after = snapshot(subject);
    if (!into) return;
    into.ms.push(...ms);
    into.wallMs += wallMs;
    if (kind !== 'idle') into.bursts++;
    for (const k of Object.keys(into.cpu)) into.cpu[k] += after[k] - before[k];
  };

  for (let round = -1; round < bursts; round++) {
    for (const subject of subjects) {
      for (const kind of rotate(PHASES, Math.max(0, round))) {
        await phase(subject, kind, round >= 0 ? stats[subject.name][kind] : undefined);
        // A moment for the sockets of the burst to close before the next phase starts.
        await sleep(20);
      }
    }
    if (round >= 0 && (round + 1) % 5 === 0) log(`  hostile: ${round + 1} of ${bursts} rounds`);
  }
  return {
    stats,
    answered: Object.fromEntries(
      Object.entries(refusals).map(([who, a]) => [who, { sent: a.sent, messages: [...a.messages], lost: a.lost }]),
    ),
  };
}

/**
 * The figures of one subject: p50/p99 and samples per phase, the ratios, and the CPU per burst.
 * The proxy's own cost of refusing a burst: its CPU in (c) less its plain queries at the CPU per
 * plain query it used in (b).
 */
export function summarizeHostile(s, pct) {
  const lat = (p) => ({ p50: pct(p.ms, 50), p99: pct(p.ms, 99), n: p.ms.length });
  const a = lat(s.idle);
  const b = lat(s.refuser);
  const c = lat(s.hostile);
  const plainCpu = s.refuser.cpu.subject / s.refuser.ms.length;
  return {
    idle: a,
    refuser: b,
    hostile: c,
    ratios: { c_a: { p50: c.p50 / a.p50, p99: c.p99 / a.p99 }, c_b: { p50: c.p50 / b.p50, p99: c.p99 / b.p99 } },
    perBurst: {
      bursts: s.hostile.bursts,
      refuserBurstMs: s.refuser.wallMs / s.refuser.bursts,
      proxyBurstMs: s.hostile.wallMs / s.hostile.bursts,
      proxyCpuMs: s.hostile.cpu.subject / s.hostile.bursts,
      proxyRefusingCpuMs: (s.hostile.cpu.subject - plainCpu * s.hostile.ms.length) / s.hostile.bursts,
      proxyCpuAtRefuserMs: s.refuser.cpu.subject / s.refuser.bursts,
      refuserCpuMs: s.refuser.cpu.refuser / s.refuser.bursts,
      neighbourCpuMs: (s.refuser.cpu.neighbour + s.hostile.cpu.neighbour) / (s.refuser.bursts + s.hostile.bursts),
      plainCpuMs: plainCpu,
    },
  };
}
