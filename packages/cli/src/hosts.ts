/** `cachemon hosts add|remove`: host exporters on the cache machines. */
import type { Plan } from './ensemble.js';
import type { Tree } from './tree.js';

export interface HostsOptions {
  readonly pattern?: string;
  readonly seq?: readonly string[];
  readonly port: number;
  readonly yes?: boolean;
  readonly wait: number;
}

export async function planHosts(
  _tree: Tree,
  _op: 'add' | 'remove',
  _hosts: readonly string[],
  _o: HostsOptions,
): Promise<Plan> {
  throw new Error('hosts: not built yet');
}
