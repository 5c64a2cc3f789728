/**
 * One place that runs clean-ups when the test process goes away: on a normal exit and on the
 * usual termination signals. 'early' hooks (killing children) run before 'late' ones (removing
 * their temp dirs). Everything here must be synchronous: it runs inside process 'exit'.
 */

type Hook = () => void;
const early: Hook[] = [];
const late: Hook[] = [];
let installed = false;
let ran = false;

function runAll(): void {
  if (ran) return;
  ran = true;
  for (const hook of [...early, ...late]) {
    try {
      hook();
    } catch {
      // A clean-up that fails must not stop the others.
    }
  }
}

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', runAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = (): void => {
      // Someone else handles the signal (a daemon under test, say): the process lives on, and
      // if it exits later the 'exit' hook cleans up. Otherwise clean up and die of the signal.
      if (process.listenerCount(signal) > 0) return;
      runAll();
      process.kill(process.pid, signal);
    };
    process.once(signal, onSignal);
  }
}

export function onProcessExit(hook: Hook, phase: 'early' | 'late' = 'early'): void {
  install();
  (phase === 'early' ? early : late).push(hook);
}
