/**
 * /metrics of the coordination exporter. Names follow the widely used ZooKeeper exporter
 * (dabealu/zookeeper-exporter): every `mntr` key under its own name with a `zk_host` label,
 * `zk_up`, `zk_server_leader`, and `zk_version{version}`, so its dashboards and alerts work here.
 * On top of that: counters are typed as counters (mntr-catalog.ts), keys that carry labels keep them
 * (a server configured with ZooKeeper's Prometheus metrics provider prints `zk_readlatency{quantile="0.5"}`),
 * text values become labels of info-style gauges, and why a server is not read is a metric of its own.
 */
import {
  CachemonError,
  Errors,
  escapeHelp,
  formatValue,
  renderLabels,
  type ExpositionBuffer,
  type MetricType,
} from '@cachemon/core';
import { parseValue, type MntrEntry } from './mntr.js';
import { COUNTER_KEYS, COUNTER_SET_NAMES, SUMMARY_NAMES, SUMMARY_SET_NAMES, TEXT_KEYS } from './mntr-catalog.js';

/** What one server said this scrape. */
export type ServerStatus =
  'ok' | 'leader_only' | 'unreachable' | 'timeout' | 'not_whitelisted' | 'not_serving' | 'protocol' | 'unresolved';
export const SERVER_STATUSES: readonly ServerStatus[] = [
  'ok',
  'leader_only',
  'unreachable',
  'timeout',
  'not_whitelisted',
  'not_serving',
  'protocol',
  'unresolved',
];

/** Statuses of a server that is up: it answered mntr with metrics, or it is a leader that serves no clients. */
export function isUp(status: ServerStatus): boolean {
  return status === 'ok' || status === 'leader_only';
}

export interface ServerReading {
  /** `host:port` as the exporter addresses the server: the `zk_host` label. */
  readonly host: string;
  readonly status: ServerStatus;
  /** The mntr entries when status is ok. */
  readonly entries: readonly MntrEntry[];
}

/** Text keys rendered as info gauges, and the label their text goes to. */
const TEXT_LABEL: ReadonlyMap<string, string> = new Map([
  ['zk_version', 'version'],
  ['zk_server_state', 'state'],
  ['zk_peer_state', 'state'],
]);

/** Summary statistics that only grow (count and sum); the rest (avg, min, max, pNN) go up and down. */
const MONOTONIC_STATS = ['cnt', 'sum'];

/**
 * counter or gauge for a numeric mntr key (`name` without labels). ZooKeeper's default metrics
 * provider prints a counter as `zk_<name>`, a summary as `zk_{avg,min,max,cnt,sum}_<name>` (and
 * `zk_p{50,95,99,999}_<name>`), a summary set member as `zk_<stat>_<member>_<name>`, a counter set
 * member (3.9+) as `zk_<member>_<name>`; only counters and the cnt and sum of summaries only grow.
 */
export function metricType(name: string): MetricType {
  if (COUNTER_KEYS.has(name)) return 'counter';
  const rest = name.startsWith('zk_') ? name.slice(3) : name;
  // A server with ZooKeeper's Prometheus metrics provider prints Prometheus names: `_total` counters
  // (its JVM and process metrics), a summary as `<name>{quantile=...}`, `<name>_count`, `<name>_sum`.
  if (rest.endsWith('_total')) return 'counter';
  for (const suffix of ['_count', '_sum']) {
    if (!rest.endsWith(suffix)) continue;
    const base = rest.slice(0, -suffix.length);
    if (SUMMARY_NAMES.has(base) || SUMMARY_SET_NAMES.has(base)) return 'counter';
  }
  const underscore = rest.indexOf('_');
  if (underscore > 0 && MONOTONIC_STATS.includes(rest.slice(0, underscore))) {
    const base = rest.slice(underscore + 1);
    if (SUMMARY_NAMES.has(base) || endsWithMember(base, SUMMARY_SET_NAMES)) return 'counter';
  }
  return endsWithMember(rest, COUNTER_SET_NAMES) ? 'counter' : 'gauge';
}

/** True when `key` is `<member>_<name>` for one of `names`. */
function endsWithMember(key: string, names: ReadonlySet<string>): boolean {
  for (const name of names) if (key.length > name.length + 1 && key.endsWith(`_${name}`)) return true;
  return false;
}

/** A family: its name, type, and `# HELP` and `# TYPE` lines, encoded once. */
interface Family {
  readonly name: string;
  readonly header: Buffer;
  /** Place in the body being written (valid while `stamp` is that body's). */
  slot: number;
  stamp: number;
}

/** One server's series of this scrape, worked out as its answer arrives: families, encoded prefixes, values. */
export interface PreparedServer {
  readonly host: string;
  readonly status: ServerStatus;
  /** Its zk_server_state (leader, follower, observer, standalone) when it answered with metrics. */
  readonly state: string | undefined;
  readonly families: readonly Family[];
  readonly prefixes: readonly Buffer[];
  readonly values: readonly string[];
}

/**
 * How a server's last fully parsed reply was laid out, so that its next reply, when it prints the
 * same keys in the same order (as a server does scrape after scrape), is prepared from its values
 * alone: no line split, key parse or lookup, and the families and prefixes of the last one.
 */
interface Layout {
  /** Per line: its key. */
  readonly keys: readonly string[];
  /** Per line: the text a text line must repeat (its series are labelled with it); undefined for a number. */
  readonly texts: ReadonlyArray<string | undefined>;
  /** Per line: where its number goes in `values` (-1 for a text line). */
  readonly slots: Int32Array;
  readonly prepared: PreparedServer;
}

/** Past this many kept prefixes or families, a renderer starts over (keys that come and go). */
const CACHE_LIMIT = 100_000;

const HELP_UP = '1 when the server answered mntr with metrics, else 0.';
const HELP_STATUS =
  'Why the server was or was not read: 1 for its status of this scrape (ok, leader_only, unreachable, timeout, not_whitelisted, not_serving, protocol, unresolved).';
const HELP_LEADER = '1 when the server is the ensemble leader, else 0.';

/**
 * Renders servers' readings. Every series prefix (`name{zk_host="...",...} `) and family header is
 * encoded once and kept, so a scrape copies bytes and writes values. Each server is prepared as its
 * answer arrives (prepare), while the others are still awaited; write() then only interleaves the
 * prepared servers family by family. One renderer serves one collection at a time.
 */
export class ServerRenderer {
  /** Prefixes per `zk_host`, by mntr key as printed (and `\0`-keys for zk_up and friends). */
  readonly #prefixes = new Map<string, Map<string, Buffer>>();
  /** Families by name; the first type seen for a name stays. */
  readonly #families = new Map<string, Family>();
  /** Per `zk_host`: the layout of its last reply that parsed without a skipped line. */
  readonly #layouts = new Map<string, Layout>();
  #stamp = 0;

  /** The servers whose series prefixes are kept (those of the last body written, and any prepared since). */
  get keptHosts(): readonly string[] {
    return [...this.#prefixes.keys()];
  }

  /**
   * A reply of `host` prepared from its values alone, when it has the keys of the host's last
   * cleanly parsed reply (prepare with its text) in the same order, each line `key<TAB>value\n`,
   * the same text for text keys and a number for the rest; else undefined (parse it and prepare).
   * The series and values are exactly what parsing and preparing it would give.
   */
  prepareKnown(host: string, reply: string): PreparedServer | undefined {
    const layout = this.#layouts.get(host);
    if (layout === undefined) return undefined;
    const { keys, texts, slots } = layout;
    const values = layout.prepared.values.slice();
    let at = 0;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      if (!reply.startsWith(key, at) || reply.charCodeAt(at + key.length) !== TAB) return undefined;
      const start = at + key.length + 1;
      const end = reply.indexOf('\n', start);
      if (end < 0) return undefined;
      const text = reply.slice(start, end);
      const slot = slots[i]!;
      if (slot < 0) {
        if (text !== texts[i]) return undefined;
      } else if (isCanonicalInteger(text)) {
        values[slot] = text;
      } else {
        const value = parseValue(text);
        if (value === undefined) return undefined;
        values[slot] = formatValue(value);
      }
      at = end + 1;
    }
    if (at !== reply.length) return undefined;
    const { families, prefixes, state } = layout.prepared;
    return { host, status: 'ok', state, families, prefixes, values };
  }

  /**
   * One server's series. `reply`: the text its entries were parsed from, given when every line of
   * it was an entry, so that its next reply can be prepared from its values (prepareKnown).
   */
  prepare(reading: ServerReading, reply?: string): PreparedServer {
    const host = reading.host;
    const families: Family[] = [];
    const prefixes: Buffer[] = [];
    const values: string[] = [];
    const add = (family: Family, prefix: Buffer, value: string): void => {
      families.push(family);
      prefixes.push(prefix);
      values.push(value);
    };
    let cached = this.#prefixes.get(host);
    if (cached === undefined) this.#prefixes.set(host, (cached = new Map<string, Buffer>()));
    const own = (key: string, name: string, labels: Record<string, string>): Buffer => {
      let prefix = cached.get(key);
      if (prefix === undefined) cached.set(key, (prefix = encodePrefix(name, labels)));
      return prefix;
    };

    add(
      this.#family('zk_up', 'gauge', HELP_UP),
      own('\0up', 'zk_up', { zk_host: host }),
      isUp(reading.status) ? '1' : '0',
    );
    const statusFamily = this.#family('zk_mntr_status', 'gauge', HELP_STATUS);
    for (const status of SERVER_STATUSES) {
      add(
        statusFamily,
        own(`\0status ${status}`, 'zk_mntr_status', { zk_host: host, status }),
        reading.status === status ? '1' : '0',
      );
    }
    const leader = (isLeader: boolean): void =>
      add(
        this.#family('zk_server_leader', 'gauge', HELP_LEADER),
        own('\0leader', 'zk_server_leader', { zk_host: host }),
        isLeader ? '1' : '0',
      );
    if (reading.status !== 'ok') {
      // Written for every server, so that `max(zk_server_leader) == 0` also holds when no server answers.
      leader(reading.status === 'leader_only');
      this.#layouts.delete(host);
      return {
        host,
        status: reading.status,
        state: reading.status === 'leader_only' ? 'leader' : undefined,
        families,
        prefixes,
        values,
      };
    }
    let state: string | undefined;
    const entries = reading.entries;
    const slots = new Int32Array(entries.length);
    const texts: Array<string | undefined> = [];
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i]!;
      // Text keys stay labels even when their text looks like a number (zk_observer_master_id).
      if (entry.value !== undefined && !TEXT_KEYS.has(entry.name)) {
        const family =
          this.#families.get(entry.name) ??
          this.#family(entry.name, metricType(entry.name), `ZooKeeper mntr ${entry.name}.`);
        let prefix = cached.get(entry.key);
        if (prefix === undefined)
          cached.set(entry.key, (prefix = encodePrefix(entry.name, withEntryLabels(host, entry))));
        slots[i] = values.length;
        texts.push(undefined);
        add(family, prefix, formatValue(entry.value));
        continue;
      }
      slots[i] = -1;
      texts.push(entry.text);
      const label = TEXT_LABEL.get(entry.name) ?? 'value';
      const family = this.#family(
        entry.name,
        'gauge',
        `ZooKeeper mntr ${entry.name}, as the ${label} label; always 1.`,
      );
      add(
        family,
        encodePrefix(entry.name, { ...withEntryLabels(host, entry), ...textLabels(entry.name, label, entry.text) }),
        '1',
      );
      if (entry.name === 'zk_server_state' && state === undefined) {
        state = entry.text;
        leader(state === 'leader');
      }
    }
    if (state === undefined) leader(false);
    const prepared = { host, status: 'ok' as const, state, families, prefixes, values };
    if (reply !== undefined)
      this.#layouts.set(host, { keys: entries.map((entry) => entry.key), texts, slots, prepared });
    else this.#layouts.delete(host);
    return prepared;
  }

  /** Writes prepared servers' series family by family, families in the order they first appear. */
  write(servers: readonly PreparedServer[], out: ExpositionBuffer): void {
    const stamp = ++this.#stamp;
    const order: Family[] = [];
    /** Per family in `order`: pairs of (server index, sample index). */
    const slots: number[][] = [];
    for (let s = 0; s < servers.length; s++) {
      const families = servers[s]!.families;
      for (let i = 0; i < families.length; i++) {
        const family = families[i]!;
        if (family.stamp !== stamp) {
          family.stamp = stamp;
          family.slot = order.length;
          order.push(family);
          slots.push([]);
        }
        slots[family.slot]!.push(s, i);
      }
    }
    for (let f = 0; f < order.length; f++) {
      out.bytes(order[f]!.header);
      const slot = slots[f]!;
      for (let j = 0; j < slot.length; j += 2) {
        const server = servers[slot[j]!]!;
        const prefix = server.prefixes[slot[j + 1]!]!;
        out.sample(prefix, 0, prefix.length, server.values[slot[j + 1]!]!);
      }
    }
    // Between collections (never within one, whose prepared servers refer to these families): a
    // server no longer read (a name that now resolves elsewhere) takes its prefixes along.
    // Layouts refer to families and prefixes, so they go with them.
    if (this.#families.size >= CACHE_LIMIT) {
      this.#families.clear();
      this.#layouts.clear();
    }
    const hosts = new Set(servers.map((server) => server.host));
    for (const [host, prefixes] of this.#prefixes) {
      if (!hosts.has(host) || prefixes.size >= CACHE_LIMIT) {
        this.#prefixes.delete(host);
        this.#layouts.delete(host);
      }
    }
  }

  #family(name: string, type: MetricType, help: string): Family {
    let family = this.#families.get(name);
    if (family === undefined) {
      if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name))
        throw new CachemonError(Errors.INTERNAL, `invalid metric name "${name}"`);
      family = {
        name,
        header: Buffer.from(`# HELP ${name} ${escapeHelp(help)}\n# TYPE ${name} ${type}\n`, 'utf8'),
        slot: 0,
        stamp: 0,
      };
      this.#families.set(name, family);
    }
    return family;
  }
}

/** Writes every server's series, family by family (a renderer of its own: nothing kept). */
export function renderServers(readings: readonly ServerReading[], out: ExpositionBuffer): void {
  const renderer = new ServerRenderer();
  renderer.write(
    readings.map((reading) => renderer.prepare(reading)),
    out,
  );
}

const TAB = 9;

/**
 * True for the text of an integer as formatValue writes it (`0`, `-12`, no leading zeros, at most
 * 15 digits, so exact as a double): such a value is written as it was read.
 */
function isCanonicalInteger(text: string): boolean {
  const n = text.length;
  let i = text.charCodeAt(0) === 45 /* - */ ? 1 : 0;
  if (n === i || n - i > 15) return false;
  const first = text.charCodeAt(i);
  if (first === 48 /* 0 */) return n === 1;
  for (; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/**
 * The labels of a text key's series. zk_version's `version` is the release alone (`3.8.0`), as the
 * widely used ZooKeeper exporter has it, so its dashboards group servers by it; `build` keeps the
 * whole text (`3.8.0-<commit>, built on <date>`).
 */
function textLabels(name: string, label: string, text: string): Record<string, string> {
  if (name !== 'zk_version') return { [label]: text };
  return { [label]: /^(\d+\.\d+\.\d+)/.exec(text)?.[1] ?? text, build: text };
}

function encodePrefix(name: string, labels: Readonly<Record<string, string>>): Buffer {
  return Buffer.from(`${name}${renderLabels(labels)} `, 'utf8');
}

function withEntryLabels(host: string, entry: MntrEntry): Record<string, string> {
  const labels: Record<string, string> = { zk_host: host };
  for (const [name, value] of entry.labels) if (name !== 'zk_host') labels[name] = value;
  return labels;
}
