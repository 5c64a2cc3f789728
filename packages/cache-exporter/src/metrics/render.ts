import { CachemonError, Errors, escapeLabelValue, formatValue } from '@cachemon/core';
import type { MetricType } from '@cachemon/core';
import { scanStats } from '@cachemon/arcus';
import type { CacheNode } from '@cachemon/arcus';
import type { FamilySpec } from './catalog.js';
import {
  NODE_ERROR,
  NODE_REGISTERED,
  NODE_SCRAPE_DURATION,
  OTHER_SETTING,
  OTHER_SLAB_CLASS_STAT,
  OTHER_SLAB_TOTAL,
  QOS_LATENCY,
  QOS_SUCCESS,
  QOS_TIMESTAMP,
  SETTINGS,
  SETTINGS_INFO,
  SLAB_CLASS_FIELDS,
  SLAB_TOTALS,
  UP,
  VERSION_INFO,
  ZOOKEEPER_CLIENT_INFO,
  ZOOKEEPER_STATS,
} from './catalog.js';
import { nodeLabelText } from './labels.js';
import { addSettings, addSlabs, labelledPrefix } from './node-lines.js';
import { isDecimal, makePlan, matchPlan, type StatsPlan } from './stats-plan.js';

export type StatsEntries = ReadonlyArray<readonly [string, string]>;

/** Where the node series are written: core's ExpositionBuffer, or a GzipBody (the same calls). */
export interface ExpositionSink {
  family(name: string, type: MetricType, help: string): unknown;
  bytes(source: Buffer, start: number, end: number, samples: number): unknown;
  sample(prefix: Buffer, start: number, end: number, valueText: string): unknown;
  text(value: string): unknown;
  countSamples(n: number): unknown;
}

export interface QosSnapshot {
  /** Date.now() when the probes ran. */
  readonly at: number;
  readonly results: ReadonlyArray<{ readonly probe: string; readonly ok: boolean; readonly seconds: number }>;
}

/**
 * One node's `stats` reply of the current scrape, rendered: its sample lines, family by family.
 * Made by NodeMetricsRenderer.acceptStats; the object is the node's own and is rewritten by the
 * node's next reply, so it is valid until then (one /metrics collection runs at a time).
 */
export interface RenderedStats {
  readonly plan: StatsPlan;
  /** The node's byte area, holding this reply's sample lines. */
  readonly bytes: Buffer;
  /** Per family index i of the plan, at segments[3i .. 3i + 2]: start and end of its lines in `bytes`, and their count. */
  readonly segments: Uint32Array;
  readonly version: string;
  readonly libevent: string;
}

/** What one scrape learned about one node. */
export interface NodeSnapshot {
  readonly node: CacheNode;
  readonly up: boolean;
  /** Why it is down: not_registered, timeout, unreachable, protocol, error_reply, closed. */
  readonly reason?: string;
  readonly durationSeconds?: number;
  /** Its `stats` reply of this scrape (acceptStats). */
  readonly stats?: RenderedStats;
  /** Its `stats slabs` reply of this scrape (acceptSlabs); none when the node did not answer it in time. */
  readonly slabs?: RenderedSlabs;
  /** Last `stats settings` / `stats zookeeper` (refreshed less often; kept while the node is up). */
  readonly settings?: StatsEntries;
  readonly zookeeper?: StatsEntries;
}

/*
 * How /metrics is written without garbage per sample: a *plan* per distinct `stats` field list
 * (shared by the nodes of one server version) holds each line's `STAT <name>` head, family and
 * scale. Per node, an *area* keeps its sample lines, family by family, as the last reply left
 * them; a new reply matched against the plan (matchPlan) is written into it in place
 * (writeSamples). The body is then one copy of each node's segment per family.
 */

interface NodeSeries {
  readonly base: string;
  readonly braced: string;
  /** `arcus_up{...} 0\n` and `... 1\n`; the same for arcus_node_registered; the duration's prefix. */
  readonly upLines: readonly [Buffer, Buffer];
  readonly registeredLines: readonly [Buffer, Buffer];
  readonly durationPrefix: Buffer;
  /** Prefixes of the series with one extra label (reason, probe, setting type). */
  readonly labelled: Map<string, string>;
  plan: StatsPlan | undefined;
  /** Encoded length of the `name{labels} ` prefix of each position of the plan (written in the area), and their sum. */
  prefixLengths: Uint32Array;
  prefixesLength: number;
  /** Value ranges in the reply being rendered: start and end per position. */
  values: Uint32Array;
  /** The node's sample lines, area[0, areaLength); valueLengths[k]: the k-th position's value length (-1: no line). */
  area: Buffer;
  areaLength: number;
  areaPlan: StatsPlan | undefined;
  valueLengths: Int32Array;
  segments: Uint32Array;
  versionLine: { version: string; libevent: string; line: Buffer } | undefined;
  /** Lines of settings and zookeeper (re-read every 30 s), and of QoS (every 5 s), kept while their sources are the same objects. */
  settingsLines: (EncodedLines & { readonly settings?: StatsEntries; readonly zookeeper?: StatsEntries }) | undefined;
  qosLines: (EncodedLines & { readonly qos: QosSnapshot }) | undefined;
  /** The last `stats slabs` reply (a copy) and its lines: an idle node's unchanged reply is not encoded again. */
  slabsLines: { readonly reply: Buffer; readonly perClass: boolean; readonly lines: RenderedSlabs } | undefined;
}

/** A node's `stats slabs` lines, family by family (SLAB_FAMILIES). */
export type RenderedSlabs = EncodedLines;

/** A node's lines of a few families: per family, its lines (undefined: none) and their count. */
interface EncodedLines {
  readonly views: ReadonlyArray<Buffer | undefined>;
  readonly counts: readonly number[];
}

/** Families of the settings and zookeeper lines, in the order they are written; then QoS. */
const SETTINGS_FAMILIES: readonly FamilySpec[] = [
  ...new Set([...SETTINGS.values()].map((rule) => rule.family)),
  OTHER_SETTING,
  SETTINGS_INFO,
  ...new Set([...ZOOKEEPER_STATS.values()].map((rule) => rule.family)),
  ZOOKEEPER_CLIENT_INFO,
];
/** Families of the `stats slabs` lines: node totals, then per slab class. */
const SLAB_FAMILIES: readonly FamilySpec[] = [
  ...SLAB_TOTALS.values(),
  OTHER_SLAB_TOTAL,
  ...SLAB_CLASS_FIELDS.values(),
  OTHER_SLAB_CLASS_STAT,
];
const QOS_FAMILIES: readonly FamilySpec[] = [QOS_SUCCESS, QOS_LATENCY, QOS_TIMESTAMP];

/** Renders the node series of /metrics for one ensemble, keeping per node what repeats from scrape to scrape. */
export class NodeMetricsRenderer {
  private readonly plans = new Map<string, StatsPlan>();
  /** Stats families in the order they were first seen, across plans: each is written once. */
  private readonly statsFamilyOrder: FamilySpec[] = [];
  private readonly series = new WeakMap<CacheNode, NodeSeries>();

  constructor(readonly ensemble: string) {}

  /**
   * Renders one node's `stats` reply into the node's own byte area. Throws NODE_ERROR_REPLY or
   * NODE_PROTOCOL when it is not a stats reply; the node's previous rendering is then invalid.
   */
  acceptStats(node: CacheNode, reply: Buffer): RenderedStats {
    const series = this.nodeSeries(node);
    if (series.plan === undefined || !matchPlan(series.plan, reply, series.values)) {
      // A new node or a field list of its own: parse once (this also checks the whole reply).
      this.usePlan(series, this.findPlan(reply));
      if (!matchPlan(series.plan!, reply, series.values)) {
        throw new CachemonError(Errors.INTERNAL, `${node.node}: stats plan does not match the reply it was made from`);
      }
    }
    return writeSamples(series, series.plan!, reply);
  }

  /**
   * Renders one node's `stats slabs` reply (bytes valid only during the call): the node totals,
   * and with `perClass` the series of every slab class. Throws NODE_ERROR_REPLY or NODE_PROTOCOL
   * when it is not a stats reply. A reply equal to the node's last one gives the last lines again.
   */
  acceptSlabs(node: CacheNode, reply: Buffer, perClass: boolean): RenderedSlabs {
    const series = this.nodeSeries(node);
    const cached = series.slabsLines;
    if (cached !== undefined && cached.perClass === perClass && cached.reply.equals(reply)) return cached.lines;
    const lines = encodeLines(SLAB_FAMILIES, (add) => addSlabs(add, series, reply, perClass));
    series.slabsLines = { reply: Buffer.from(reply), perClass, lines };
    return lines;
  }

  /** Writes the node series of /metrics (state, stats, settings, QoS), family by family, node by node. */
  render(
    snapshots: readonly NodeSnapshot[],
    out: ExpositionSink,
    qosOf: (node: CacheNode) => QosSnapshot | undefined = () => undefined,
  ): void {
    const series = snapshots.map((snapshot) => this.nodeSeries(snapshot.node));
    const count = snapshots.length;

    let family = new FamilyBlock(out, UP);
    for (let i = 0; i < count; i++) family.line(series[i]!.upLines[snapshots[i]!.up ? 1 : 0]);
    family = new FamilyBlock(out, NODE_REGISTERED);
    for (let i = 0; i < count; i++) family.line(series[i]!.registeredLines[snapshots[i]!.node.live ? 1 : 0]);
    family = new FamilyBlock(out, NODE_ERROR);
    for (let i = 0; i < count; i++) {
      const { up, reason } = snapshots[i]!;
      if (!up && reason !== undefined) family.text(`${labelledPrefix(series[i]!, NODE_ERROR, 'reason', reason)}1\n`);
    }
    family = new FamilyBlock(out, NODE_SCRAPE_DURATION);
    for (let i = 0; i < count; i++) {
      const seconds = snapshots[i]!.durationSeconds;
      if (seconds !== undefined) family.sample(series[i]!.durationPrefix, formatValue(seconds));
    }
    family = new FamilyBlock(out, VERSION_INFO);
    for (let i = 0; i < count; i++) {
      const { up, stats } = snapshots[i]!;
      const line = up && stats ? versionLine(series[i]!, stats) : undefined;
      if (line !== undefined) family.line(line);
    }

    this.statsFamilyOrder.forEach((spec, order) => {
      const block = new FamilyBlock(out, spec);
      for (const snapshot of snapshots) {
        const stats = snapshot.up ? snapshot.stats : undefined;
        const index = stats === undefined ? -1 : stats.plan.byOrder[order]!;
        if (index >= 0)
          block.lines(
            stats!.bytes,
            stats!.segments[index * 3]!,
            stats!.segments[index * 3 + 1]!,
            stats!.segments[index * 3 + 2]!,
          );
      }
    });

    encodedFamilies(
      out,
      SLAB_FAMILIES,
      snapshots.map((snapshot) => (snapshot.up ? snapshot.slabs : undefined)),
    );
    encodedFamilies(
      out,
      SETTINGS_FAMILIES,
      snapshots.map((snapshot, i) => settingsLines(series[i]!, snapshot)),
    );
    encodedFamilies(
      out,
      QOS_FAMILIES,
      snapshots.map((snapshot, i) => (snapshot.node.live ? qosLines(series[i]!, qosOf(snapshot.node)) : undefined)),
    );
  }

  private nodeSeries(node: CacheNode): NodeSeries {
    let series = this.series.get(node);
    if (series === undefined) {
      const base = nodeLabelText(this.ensemble, node);
      const braced = `{${base}}`;
      series = {
        base,
        braced,
        upLines: [Buffer.from(`${UP.name}${braced} 0\n`), Buffer.from(`${UP.name}${braced} 1\n`)],
        registeredLines: [
          Buffer.from(`${NODE_REGISTERED.name}${braced} 0\n`),
          Buffer.from(`${NODE_REGISTERED.name}${braced} 1\n`),
        ],
        durationPrefix: Buffer.from(`${NODE_SCRAPE_DURATION.name}${braced} `),
        labelled: new Map(),
        plan: undefined,
        prefixLengths: new Uint32Array(0),
        prefixesLength: 0,
        values: new Uint32Array(0),
        area: EMPTY,
        areaLength: 0,
        areaPlan: undefined,
        valueLengths: new Int32Array(0),
        segments: new Uint32Array(0),
        versionLine: undefined,
        settingsLines: undefined,
        qosLines: undefined,
        slabsLines: undefined,
      };
      this.series.set(node, series);
    }
    return series;
  }

  /** The plan of a reply's field list (made on first sight). Parses the reply: throws for garbage. */
  private findPlan(reply: Buffer): StatsPlan {
    const heads: Buffer[] = [];
    scanStats(reply, (nameStart, nameEnd) => void heads.push(reply.subarray(nameStart - 5, nameEnd)));
    // latin1 maps bytes to characters one to one: equal keys, equal bytes.
    const key = heads.map((head) => head.toString('latin1')).join('\n');
    let plan = this.plans.get(key);
    if (plan === undefined) {
      plan = makePlan(heads);
      this.plans.set(key, plan);
      for (const family of plan.families)
        if (!this.statsFamilyOrder.includes(family)) this.statsFamilyOrder.push(family);
      // The order may have grown: every plan's positions in it, again.
      for (const each of this.plans.values())
        each.byOrder = Int32Array.from(this.statsFamilyOrder, (family) => each.familyIndex.get(family) ?? -1);
    }
    return plan;
  }

  private usePlan(series: NodeSeries, plan: StatsPlan): void {
    const lengths = new Uint32Array(plan.names.length);
    let total = 0;
    for (let position = 0; position < lengths.length; position++) {
      total += lengths[position] = Buffer.byteLength(plan.prefixText(position, series.base, series.braced));
    }
    series.plan = plan;
    series.prefixLengths = lengths;
    series.prefixesLength = total;
    series.values = new Uint32Array(plan.names.length * 2);
  }
}

const EMPTY = Buffer.alloc(0);
const LF = 0x0a;
/** Longest text formatValue gives a finite float (`-1.2345678901234567e-308`: 24). */
const MAX_SCALED_TEXT = 32;

/**
 * The samples of a matched reply, family by family, in the node's area, over the last reply's
 * lines: a value of unchanged length is the only thing written; a length change moves the rest.
 */
function writeSamples(series: NodeSeries, plan: StatsPlan, reply: Buffer): RenderedStats {
  const { prefixLengths, values } = series;
  const order = plan.order;
  let area = series.area;
  let length = series.areaLength;
  let valueLengths = series.valueLengths;
  // While rewriting, the area holds new lines before `at` and old ones after: room for every new value and line.
  const samePlan = series.areaPlan === plan;
  let valueBytes = 0;
  let appearing = 0;
  for (let k = 0; k < order.length; k++) {
    const position = order[k]!;
    valueBytes +=
      plan.scales[position] === undefined ? values[position * 2 + 1]! - values[position * 2]! : MAX_SCALED_TEXT;
    if (samePlan && valueLengths[k]! < 0) appearing += prefixLengths[position]! + 1;
  }
  const fresh = !samePlan || area.length < length + valueBytes + appearing;
  if (fresh) {
    // Every line, plus room for the next rewrites in place.
    const lines = series.prefixesLength + order.length + valueBytes;
    if (area.length < lines + valueBytes) area = Buffer.allocUnsafeSlow(lines + valueBytes + (lines >> 4));
    length = 0;
    valueLengths = valueLengths.length === order.length ? valueLengths.fill(-1) : new Int32Array(order.length).fill(-1);
    series.segments = new Uint32Array(plan.families.length * 3);
    series.areaPlan = plan;
  }
  const segments = series.segments;
  let at = 0;
  for (let f = 0; f < plan.families.length; f++) {
    segments[f * 3] = at;
    let samples = 0;
    for (let k = plan.familyStarts[f]!; k < plan.familyStarts[f + 1]!; k++) {
      const position = order[k]!;
      const valueStart = values[position * 2]!;
      const valueEnd = values[position * 2 + 1]!;
      const prefixLength = prefixLengths[position]!;
      const old = valueLengths[k]!;
      // The server's own number text is valid exposition as it is; what is not a number has no line.
      if (!isDecimal(reply, valueStart, valueEnd)) {
        if (old >= 0) {
          const line = prefixLength + old + 1;
          area.copyWithin(at, at + line, length);
          length -= line;
          valueLengths[k] = -1;
        }
        continue;
      }
      const scale = plan.scales[position];
      const text =
        scale === undefined ? undefined : formatValue(Number(reply.toString('latin1', valueStart, valueEnd)) * scale);
      const valueLength = text === undefined ? valueEnd - valueStart : text.length;
      if (old < 0) {
        const line = prefixLength + valueLength + 1;
        if (at < length) area.copyWithin(at + line, at, length);
        length += line;
        area.write(plan.prefixText(position, series.base, series.braced), at, 'utf8');
      } else if (old !== valueLength) {
        area.copyWithin(at + prefixLength + valueLength, at + prefixLength + old, length);
        length += valueLength - old;
      }
      let w = at + prefixLength;
      if (text === undefined) {
        for (let i = valueStart; i < valueEnd; i++) area[w++] = reply[i]!;
      } else {
        for (let i = 0; i < text.length; i++) area[w++] = text.charCodeAt(i);
      }
      area[w] = LF;
      valueLengths[k] = valueLength;
      at = w + 1;
      samples++;
    }
    segments[f * 3 + 1] = at;
    segments[f * 3 + 2] = samples;
  }
  series.area = area;
  series.areaLength = length;
  series.valueLengths = valueLengths;
  const text = (position: number) =>
    position < 0 ? '' : reply.toString('utf8', values[position * 2], values[position * 2 + 1]);
  return { plan, bytes: area, segments, version: text(plan.versionAt), libevent: text(plan.libeventAt) };
}

function versionLine(series: NodeSeries, stats: RenderedStats): Buffer | undefined {
  const { version, libevent } = stats;
  if (version === '' && libevent === '') return undefined;
  const cached = series.versionLine;
  if (cached !== undefined && cached.version === version && cached.libevent === libevent) return cached.line;
  const line = Buffer.from(
    `${VERSION_INFO.name}{version="${escapeLabelValue(version)}",libevent="${escapeLabelValue(libevent)}",${series.base}} 1\n`,
  );
  series.versionLine = { version, libevent, line };
  return line;
}

/** A node's settings and zookeeper lines; encoded again only when one of them changed. */
function settingsLines(series: NodeSeries, snapshot: NodeSnapshot): EncodedLines | undefined {
  const settings = snapshot.up ? snapshot.settings : undefined;
  const zookeeper = snapshot.up ? snapshot.zookeeper : undefined;
  if (settings === undefined && zookeeper === undefined) return undefined;
  const cached = series.settingsLines;
  if (cached !== undefined && cached.settings === settings && cached.zookeeper === zookeeper) return cached;
  const lines = encodeLines(SETTINGS_FAMILIES, (add) => {
    if (settings) addSettings(add, series, SETTINGS, settings, true);
    if (zookeeper) {
      addSettings(add, series, ZOOKEEPER_STATS, zookeeper, false);
      const libversion = zookeeper.find(([name]) => name === 'zk_libversion')?.[1];
      if (libversion !== undefined && libversion !== '')
        add(ZOOKEEPER_CLIENT_INFO, `${labelledPrefix(series, ZOOKEEPER_CLIENT_INFO, 'version', libversion)}1\n`);
    }
  });
  series.settingsLines = { ...lines, ...(settings ? { settings } : {}), ...(zookeeper ? { zookeeper } : {}) };
  return series.settingsLines;
}

/** A node's QoS lines; encoded again only when it has new results. */
function qosLines(series: NodeSeries, qos: QosSnapshot | undefined): EncodedLines | undefined {
  if (qos === undefined) return undefined;
  if (series.qosLines?.qos === qos) return series.qosLines;
  const lines = encodeLines(QOS_FAMILIES, (add) => {
    for (const result of qos.results) {
      add(QOS_SUCCESS, `${labelledPrefix(series, QOS_SUCCESS, 'probe', result.probe)}${result.ok ? 1 : 0}\n`);
      if (result.ok)
        add(
          QOS_LATENCY,
          `${labelledPrefix(series, QOS_LATENCY, 'probe', result.probe)}${formatValue(result.seconds)}\n`,
        );
    }
    add(QOS_TIMESTAMP, `${QOS_TIMESTAMP.name}${series.braced} ${formatValue(qos.at / 1000)}\n`);
  });
  series.qosLines = { ...lines, qos };
  return series.qosLines;
}

const familyIndexes = new WeakMap<readonly FamilySpec[], ReadonlyMap<FamilySpec, number>>();

/** Each family's position in `families` (made once per list). */
function familyIndexOf(families: readonly FamilySpec[]): ReadonlyMap<FamilySpec, number> {
  let index = familyIndexes.get(families);
  if (index === undefined) {
    index = new Map(families.map((family, i) => [family, i]));
    familyIndexes.set(families, index);
  }
  return index;
}

/** Lines of `families`, as `write` adds them, encoded one Buffer per family. */
function encodeLines(
  families: readonly FamilySpec[],
  write: (add: (family: FamilySpec, line: string) => void) => void,
): EncodedLines {
  const lines: string[][] = families.map(() => []);
  const index = familyIndexOf(families);
  write((family, line) => lines[index.get(family)!]!.push(line));
  return {
    views: lines.map((family) => (family.length > 0 ? Buffer.from(family.join('')) : undefined)),
    counts: lines.map((family) => family.length),
  };
}

/** Families whose lines come per node as EncodedLines (settings, QoS): each family, node by node. */
function encodedFamilies(
  out: ExpositionSink,
  families: readonly FamilySpec[],
  encoded: ReadonlyArray<EncodedLines | undefined>,
): void {
  families.forEach((spec, index) => {
    const block = new FamilyBlock(out, spec);
    for (const lines of encoded) {
      const view = lines?.views[index];
      if (view !== undefined) block.lines(view, 0, view.length, lines!.counts[index]!);
    }
  });
}

/** One family's block of the body: HELP and TYPE before its first sample, none when it has none. */
class FamilyBlock {
  private headed = false;

  constructor(
    private readonly out: ExpositionSink,
    private readonly family: FamilySpec,
  ) {}

  /** One encoded sample line. */
  line(bytes: Buffer): void {
    this.head().bytes(bytes, 0, bytes.length, 1);
  }

  /** An encoded `name{labels} ` prefix and the value's text. */
  sample(prefix: Buffer, value: string): void {
    this.head().sample(prefix, 0, prefix.length, value);
  }

  /** Whole lines as text. */
  text(lines: string): void {
    const out = this.head();
    out.text(lines);
    out.countSamples(1);
  }

  /** A node's lines of this family: bytes [start, end), `samples` of them (none when empty). */
  lines(bytes: Buffer, start: number, end: number, samples: number): void {
    if (end > start) this.head().bytes(bytes, start, end, samples);
  }

  private head(): ExpositionSink {
    if (!this.headed) {
      this.out.family(this.family.name, this.family.type, this.family.help);
      this.headed = true;
    }
    return this.out;
  }
}
