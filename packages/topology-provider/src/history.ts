import type { EnsembleView } from './view.js';

/** [time ms, live, down] */
export type CountPoint = readonly [number, number, number];

/**
 * Live and down node counts per service code, one entry per change, since the provider started:
 * what `node_counts` draws. Bounded per service code; the oldest changes go first.
 */
export class NodeCountHistory {
  private readonly entries = new Map<string, CountPoint[]>();

  constructor(private readonly maxPerServiceCode = 2000) {}

  private static key(ensemble: string, svc: string): string {
    return `${ensemble}\u0000${svc}`;
  }

  /** Records the counts of every service code of the view; a service code that disappeared drops to 0/0. */
  record(view: EnsembleView, now: number): void {
    const seen = new Set<string>();
    for (const [svc, nodes] of view.nodesByServiceCode) {
      let live = 0;
      for (const node of nodes) if (node.live) live++;
      const key = NodeCountHistory.key(view.name, svc);
      seen.add(key);
      this.push(key, [now, live, nodes.length - live]);
    }
    const prefix = `${view.name}\u0000`;
    for (const key of this.entries.keys()) {
      if (key.startsWith(prefix) && !seen.has(key)) this.push(key, [now, 0, 0]);
    }
  }

  /** Forgets an ensemble removed from the config. */
  forget(ensemble: string): void {
    const prefix = `${ensemble}\u0000`;
    for (const key of [...this.entries.keys()]) if (key.startsWith(prefix)) this.entries.delete(key);
  }

  private push(key: string, point: CountPoint): void {
    let list = this.entries.get(key);
    if (list === undefined) this.entries.set(key, (list = []));
    const last = list.at(-1);
    if (last !== undefined && last[1] === point[1] && last[2] === point[2]) return;
    list.push(point);
    if (list.length > this.maxPerServiceCode) list.splice(0, list.length - this.maxPerServiceCode);
  }

  /**
   * The counts over [from, to]: the value in effect at `from` (stamped `from`), every change
   * inside, and the value at `to`. Empty before anything was recorded for the service code.
   */
  points(ensemble: string, svc: string, from: number, to: number): CountPoint[] {
    const list = this.entries.get(NodeCountHistory.key(ensemble, svc));
    if (list === undefined || list.length === 0) return [];
    const out: CountPoint[] = [];
    let current: CountPoint | undefined;
    for (const point of list) {
      if (point[0] <= from) current = point;
      else if (point[0] <= to) {
        if (out.length === 0 && current !== undefined) out.push([from, current[1], current[2]]);
        out.push(point);
        current = point;
      } else break;
    }
    if (out.length === 0 && current !== undefined) out.push([from, current[1], current[2]]);
    const last = out.at(-1);
    if (last !== undefined && last[0] < to) out.push([to, last[1], last[2]]);
    return out;
  }
}
