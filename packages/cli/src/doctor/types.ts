/** What `cachemon doctor` finds: one finding per condition, each with a stable code and its fix. */
import type { Instance, Tree } from '../tree.js';

/**
 * An error is a fault of the stack that loses or falsifies data; a warning, one that will; a
 * notice, what is wrong in the fleet itself (a cache node down), not in the stack: it leaves the
 * exit status alone.
 */
export type Severity = 'error' | 'warning' | 'notice';

export interface Finding {
  /** Stable, `CACHEMON_DOCTOR_<WHAT>`: scripts and the docs' table key on it. */
  readonly code: string;
  readonly severity: Severity;
  /** The component (folder name) and instance (ensemble, store role; "" for single ones) concerned. */
  readonly component: string;
  readonly instance: string;
  /** What is wrong, in an operator's words, naming the file, host or address. */
  readonly message: string;
  /** The fix: the command to run, or the file and key to change. */
  readonly fix: string;
}

export interface DoctorContext {
  readonly tree: Tree;
  /** Every instance of the tree, in start order. */
  readonly instances: readonly Instance[];
  /** The ensembles asked about (empty: all). A check about one ensemble skips the others. */
  readonly ensembles: readonly string[];
  /**
   * The cache machines' host exporter install directories: looked at over SSH under remoteDir
   * (default: the tree's directory), or not at all (false).
   */
  readonly machines?: { readonly remoteDir?: string } | false;
}

/** One check: looks at the tree and the running processes, bounded in time, and says what it found. */
export type Check = (context: DoctorContext) => Promise<Finding[]>;

/** Whether a check about this ensemble runs under the context's selection. */
export function wanted(context: DoctorContext, ensemble: string): boolean {
  return context.ensembles.length === 0 || context.ensembles.includes(ensemble);
}
