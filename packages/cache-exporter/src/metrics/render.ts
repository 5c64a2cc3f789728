import { CachemonError, editsBetween, Errors, escapeLabelValue, ExpositionBuffer, familyHead, formatValue, GzipStream, LineDeflater, lineKeys } from '@cachemon/core';
import type { DeflatedBlock, KeyEdits, LineKeys } from '@cachemon/core';
import { scanStats } from '@cachemon/arcus';
import type { CacheNode } from '@cachemon/arcus';
import type { FamilySpec, SettingRule } from './catalog.js';
import {
  NODE_ERROR,
  NODE_REGISTERED,
  NODE_SCRAPE_DURATION,
  QOS_LATENCY,
  QOS_SUCCESS,
  QOS_TIMESTAMP,
  SETTINGS,
  STATS_TEXT_FIELDS,
  UP,
  VERSION_INFO,
  ZOOKEEPER_STATS,
  ruleForStat,
} from './catalog.js';
import { nodeLabelText, withLabel } from './labels.js';
import { sameItems } from '../lists.js';

export type StatsEntries = ReadonlyArray<readonly [string, string]>;

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
  /**
   * Per family index i of the plan, at segments[3i .. 3i + 2]: where its lines are in `bytes`
   * (start and end; equal: none) and how many samples they hold. Offsets rather than a view
   * (subarray) per family: at 500 nodes those were 17,000 objects kept, and made again whenever a
   * value's length moved the segments after it.
   */
  readonly segments: Uint32Array;
  /**
   * Per family index of the plan: a number that changes (to one never used before, by any node)
   * whenever the bytes of the family's lines change; equal numbers, equal bytes.
   */
  readonly changes: ArrayLike<number>;
  /** The node's keys of the plan (NodeKeys). */
  readonly keys: NodeKeys;
  /** Per rendered position k of the plan (StatsPlan.order): its line's value length, -1: no line. */
  readonly valueLengths: Int32Array;
  readonly version: string;
  readonly libevent: string;
}

/**
 * What a LineDeflater needs of one node's keys (`name{labels} `), per rendered position k of its
 * plan, made when the node takes the plan (core's LineKeys): each key's length and CRC register,
 * how many bytes it shares at its start and end with key k - 1 (0 for a family's first), and
 * where its node labels start (they end 2 bytes before the key's end). Keys do not change while
 * the plan stays, so a scrape reads none of them: a node's keys differ from another node's of
 * the same plan in the node labels only.
 */
interface NodeKeys extends LineKeys {
  /** The node's label text as bytes: every key ends with it and `} `. */
  readonly base: Buffer;
  /** The base of the node whose lines these keys last referred to, and how this base is written from it (editsBetween). */
  pairBase: Buffer | undefined;
  pairEdits: KeyEdits | undefined;
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
  /** Last `stats settings` / `stats zookeeper` (refreshed less often; kept while the node is up). */
  readonly settings?: StatsEntries;
  readonly zookeeper?: StatsEntries;
}

/*
 * How /metrics is written fast. A scrape of 500 nodes has ~87,000 series. Parsing every `stats`
 * reply into strings and building a string per sample cost more than talking to the nodes, and
 * the garbage (~450 objects per node per scrape, half of them kept until the next scrape) made
 * the young-generation collections copy megabytes on every scrape. Instead:
 *
 * - A *plan* per distinct `stats` field list (every node of one server version has the same list,
 *   in the same order): each line's `STAT <name>` head as bytes, which family each position
 *   belongs to, and its scale. Plans are shared by the nodes with that list.
 * - Per node, an *area*: its sample lines, family by family, as the last reply left them. A new
 *   reply is matched against the plan's heads byte for byte (matchPlan) and written into the area
 *   in place (writeSamples): a value of unchanged length is the only thing written; a length change
 *   moves the rest of the area once; a line appears or goes when a value becomes or stops being a
 *   number. Only a reply whose field list differs from the node's plan is parsed (once, to find or
 *   make its plan). Nothing per line is allocated.
 * - Per node and family, where its segment of the area starts and ends; the body is then, family
 *   by family and node by node, one copy of each segment.
 * - State, settings and QoS lines are kept encoded per node, re-encoded only when they change.
 */

/** How a node's `stats` field list is rendered. Shared by every node with the same list. */
interface StatsPlan {
  readonly names: readonly string[];
  /** `STAT <name>` of each position as the server sends it, `headOffsets[i]..headOffsets[i + 1]`. */
  readonly heads: Buffer;
  readonly headOffsets: Uint32Array;
  /** The plan's families, in the order of their first field. */
  readonly families: readonly FamilySpec[];
  readonly familyIndex: ReadonlyMap<FamilySpec, number>;
  /**
   * The plan's index of each family of its renderer's statsFamilyOrder (plans belong to one
   * renderer), by its position there (-1: not in this plan): render() looks families up for every
   * node without a map. Set again whenever that order grows.
   */
  byOrder: Int32Array;
  /** The rendered positions, family by family; family f is order[familyStarts[f]..familyStarts[f + 1]). */
  readonly order: Uint32Array;
  readonly familyStarts: Uint32Array;
  readonly scales: ReadonlyArray<number | undefined>;
  /** Positions of the text fields that make arcus_version_info, or -1. */
  readonly versionAt: number;
  readonly libeventAt: number;
  /** `name{labels} ` of a position for a node's label text ('' for a position not rendered). */
  readonly prefixText: (position: number, base: string, braced: string) => string;
}

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
  /**
   * Encoded length of the `name{labels} ` prefix of each position of the plan, and their sum. The
   * prefixes themselves are in the area, before each value; one is written only when its line
   * appears (plan.prefixText), so a node keeps no second copy of them.
   */
  prefixLengths: Uint32Array;
  prefixesLength: number;
  keys: NodeKeys;
  /** Value ranges in the reply being rendered: start and end per position. */
  values: Uint32Array;
  /**
   * The node's sample lines, family by family, as the last reply left them: area[0, areaLength).
   * valueLengths[k] is the value length of the k-th rendered position's line (-1: no line).
   */
  area: Buffer;
  areaLength: number;
  areaPlan: StatsPlan | undefined;
  valueLengths: Int32Array;
  segments: Uint32Array;
  /** RenderedStats.changes. */
  changes: Float64Array;
  versionLine: { version: string; libevent: string; line: Buffer } | undefined;
  /** Lines of settings and zookeeper (re-read every 30 s), and of QoS (every 5 s), kept while their sources are the same objects. */
  settingsLines: (EncodedLines & { readonly settings?: StatsEntries; readonly zookeeper?: StatsEntries }) | undefined;
  qosLines: (EncodedLines & { readonly qos: QosSnapshot }) | undefined;
}

/** A node's lines of a few families: per family, its lines (undefined: none) and their count. */
interface EncodedLines {
  readonly views: ReadonlyArray<Buffer | undefined>;
  readonly counts: readonly number[];
}

/**
 * A stats family compressed while a collection runs (NodeMetricsRenderer.beginCollection): from
 * the first reply that changes its lines on, each node's lines go to its deflater as the node's
 * reply is rendered, in the order the replies come. One per family, kept from one collection to
 * the next (with its deflater's output buffer).
 */
interface StreamedFamily {
  readonly spec: FamilySpec;
  /** Its position in the renderer's statsFamilyOrder (StatsPlan.byOrder). */
  readonly order: number;
  deflater: LineDeflater;
  /** The size of its deflater's output buffer (streamBufferSize). */
  size: number;
  /** The last node whose lines went to the deflater (the next node's lines refer to its lines). */
  readonly chain: SegmentChain;
  /** A reply changed the family's lines in this collection: its lines are being compressed. */
  started: boolean;
  /** A node's lines came twice: the family is compressed at render() as any other. */
  failed: boolean;
  /** The marks (RenderedStats.changes) of the node lines in the deflater. */
  readonly marks: Set<number>;
}

/**
 * The output buffer of a streamed family's deflater: an eighth of the family's bytes in the last
 * gzipped body (the encoder makes ~10 times fewer), within these bounds. A block that outgrows it
 * spills into parts of that size: a buffer too small for its family makes a block of many small
 * parts, so a deflater is made again when its family has grown to twice its buffer's measure.
 */
const STREAM_BUFFER_MIN = 1024;
const STREAM_BUFFER_MAX = 32 * 1024;

function streamBufferSize(familyBytes: number): number {
  return Math.min(STREAM_BUFFER_MAX, Math.max(STREAM_BUFFER_MIN, familyBytes >> 3));
}

/** Families of the settings and zookeeper lines, in the order they are written; then QoS. */
const SETTINGS_FAMILIES: readonly FamilySpec[] = [...new Set([...SETTINGS.values(), ...ZOOKEEPER_STATS.values()].map((rule) => rule.family))];
const QOS_FAMILIES: readonly FamilySpec[] = [QOS_SUCCESS, QOS_LATENCY, QOS_TIMESTAMP];

/**
 * Renders the node series of /metrics for one ensemble. Keeps, per node, what repeats from one
 * scrape to the next (label texts, the area its sample lines live in, encoded state, settings and
 * QoS lines); per distinct stats field list, the plan.
 */
export class NodeMetricsRenderer {
  private readonly plans = new Map<string, StatsPlan>();
  /** Stats families in the order they were first seen, across plans: each is written once. */
  private readonly statsFamilyOrder: FamilySpec[] = [];
  private readonly series = new WeakMap<CacheNode, NodeSeries>();
  /** Per family, its block in the last gzipped body and the marks of the lines in it (family()). */
  private readonly blocks = new Map<FamilySpec, { marks: unknown[]; block: DeflatedBlock | undefined }>();
  /**
   * Families of the last render() sent as kept blocks, made (compressed) at render(), and
   * compressed while the replies came (beginCollection).
   */
  readonly blockCounts = { kept: 0, made: 0, streamed: 0 };
  /** The families compressed during the running collection (beginCollection). */
  private readonly streamed: StreamedFamily[] = [];
  /** Each stats family's, by its position in statsFamilyOrder, made at its first gzipped collection. */
  private readonly streamedByOrder: Array<StreamedFamily | undefined> = [];
  /** The deflater of the stats families made at render(). */
  private readonly deflater = new LineDeflater();
  /** The replies rendered in the running collection, in the order they came. */
  private readonly arrived: RenderedStats[] = [];
  /** RenderedStats.changes numbers above this one were given in the running collection. */
  private changeAtStart = 0;
  /** True from beginCollection(true) to render(): prepareQos() has a body to prepare for. */
  private gzipCollection = false;
  /** Per group of familyGroup(), each node's lines in the group's kept blocks. */
  private readonly groupLines = new Map<readonly FamilySpec[], ReadonlyArray<EncodedLines | undefined>>();
  /** prepareQos()'s buffer, kept. */
  private prepareBacking: Buffer | undefined;

  constructor(readonly ensemble: string) {}

  /**
   * Starts a collection whose body is gzipped (`gzip`): the stats families are then compressed
   * while the replies come, each reply's lines as soon as it is rendered, instead of all at
   * render() after the last reply. What is left once the last node has answered is the few
   * families that are not stats (state, durations, settings, QoS); on two cores, compressing a
   * 100-node body was the largest part of the time a scrape takes beyond the slowest node's reply.
   * A family whose lines no reply changes is not compressed at all (its kept block is sent again,
   * see statsFamily()). Stats families are compressed by a LineDeflater, which writes each key
   * from the same key of the node before instead of searching for repeats (core's line-deflate).
   * render() ends the collection.
   */
  beginCollection(gzip: boolean): void {
    this.arrived.length = 0;
    this.streamed.length = 0;
    this.gzipCollection = gzip;
    if (!gzip) return;
    this.statsFamilyOrder.forEach((spec, order) => {
      let family = this.streamedByOrder[order];
      const size = streamBufferSize(this.blocks.get(spec)?.block?.length ?? 0);
      if (family === undefined) {
        family = { spec, order, deflater: new LineDeflater(size), size, chain: newChain(), started: false, failed: false, marks: new Set() };
        this.streamedByOrder[order] = family;
      } else {
        if (size >= 2 * family.size) {
          family.deflater = new LineDeflater(size);
          family.size = size;
        }
        family.deflater.begin();
        family.chain.stats = undefined;
        family.started = false;
        family.failed = false;
        family.marks.clear();
      }
      this.streamed.push(family);
    });
    this.changeAtStart = lastChange;
  }

  /**
   * Renders one node's `stats` reply (its bytes, as framed) into the node's own byte area and
   * returns it. Throws CachemonError NODE_ERROR_REPLY or NODE_PROTOCOL when the bytes are not a
   * stats reply; the node's previous rendering is then no longer valid.
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
    const stats = writeSamples(series, series.plan!, reply);
    if (this.streamed.length > 0) this.stream(stats);
    return stats;
  }

  /** A reply's lines of the streamed families, to their deflaters (beginCollection). */
  private stream(stats: RenderedStats): void {
    this.arrived.push(stats);
    for (const family of this.streamed) {
      const index = stats.plan.byOrder[family.order]!;
      if (index < 0 || family.failed) continue;
      try {
        if (family.started) {
          writeStreamed(family, stats, index);
        } else if (stats.changes[index]! > this.changeAtStart) {
          // The kept block will not do: compress the family from here on, the replies before this one first.
          family.started = true;
          for (const earlier of this.arrived) {
            const at = earlier.plan.byOrder[family.order]!;
            if (at >= 0) writeStreamed(family, earlier, at);
          }
        }
      } catch {
        family.failed = true;
      }
    }
  }

  /**
   * Writes the node series of /metrics: state, stats, settings and QoS (the latest results of the
   * node's probes, `qosOf`), family by family.
   */
  render(snapshots: readonly NodeSnapshot[], out: ExpositionBuffer, qosOf: (node: CacheNode) => QosSnapshot | undefined = () => undefined): void {
    const series = snapshots.map((snapshot) => this.nodeSeries(snapshot.node));
    const count = snapshots.length;
    this.blockCounts.kept = this.blockCounts.made = this.blockCounts.streamed = 0;

    // Lines kept as Buffers that are never rewritten are their own change marks.
    this.family(out, UP, (emit) => {
      for (let i = 0; i < count; i++) {
        const line = series[i]!.upLines[snapshots[i]!.up ? 1 : 0];
        emit(line, 0, line.length, 1, line);
      }
    });
    this.family(out, NODE_REGISTERED, (emit) => {
      for (let i = 0; i < count; i++) {
        const line = series[i]!.registeredLines[snapshots[i]!.node.live ? 1 : 0];
        emit(line, 0, line.length, 1, line);
      }
    });
    let family = new FamilyBlock(out, NODE_ERROR);
    for (let i = 0; i < count; i++) {
      const { up, reason } = snapshots[i]!;
      if (!up && reason !== undefined) family.text(`${labelledPrefix(series[i]!, NODE_ERROR, 'reason', reason)}1\n`);
    }
    family = new FamilyBlock(out, NODE_SCRAPE_DURATION);
    for (let i = 0; i < count; i++) {
      const seconds = snapshots[i]!.durationSeconds;
      if (seconds !== undefined) family.sample(series[i]!.durationPrefix, formatValue(seconds));
    }
    this.family(out, VERSION_INFO, (emit) => {
      for (let i = 0; i < count; i++) {
        const { up, stats } = snapshots[i]!;
        const line = up && stats ? versionLine(series[i]!, stats) : undefined;
        if (line !== undefined) emit(line, 0, line.length, 1, line);
      }
    });

    this.statsFamilyOrder.forEach((spec, order) => this.statsFamily(out, spec, order, snapshots));

    this.familyGroup(out, SETTINGS_FAMILIES, snapshots.map((snapshot, i) => settingsLines(series[i]!, snapshot)));
    this.familyGroup(out, QOS_FAMILIES, this.qosLinesOf(snapshots.map((snapshot) => snapshot.node), qosOf));
    this.streamed.length = 0;
    this.arrived.length = 0;
    this.gzipCollection = false;
  }

  /**
   * Compresses the QoS families ahead of render(), for `nodes` in this order (the collection's,
   * whose snapshots render() gets) with the probes' results as they are now: render() then sends
   * them as kept blocks. Called while the nodes are asked: their replies take a few ms to start,
   * and the QoS results do not depend on them (no probe starts during a collection). Every node's
   * probes run once an interval, so at a scrape every 5 s every node's QoS lines are new, and
   * compressing them (~0.5 ms at 100 nodes) was the largest part of render() after the last
   * reply. A result that comes in meanwhile (a probe that was running) is found at render(), whose
   * family is then compressed there as before. Only in a gzipped collection (beginCollection);
   * otherwise, or after render(), nothing is done.
   */
  prepareQos(nodes: readonly CacheNode[], qosOf: (node: CacheNode) => QosSnapshot | undefined): void {
    if (!this.gzipCollection) return;
    const stream = new GzipStream();
    if (!stream.blocks) return;
    // The blocks are kept; the stream they are appended to here is dropped.
    const out = new ExpositionBuffer(PREPARE_PIECE_BYTES, (this.prepareBacking ??= Buffer.allocUnsafeSlow(PREPARE_PIECE_BYTES)), stream);
    this.familyGroup(out, QOS_FAMILIES, this.qosLinesOf(nodes, qosOf));
  }

  /** The QoS lines of `nodes` (undefined: not live, or no results yet). */
  private qosLinesOf(nodes: readonly CacheNode[], qosOf: (node: CacheNode) => QosSnapshot | undefined): Array<EncodedLines | undefined> {
    return nodes.map((node) => (node.live ? qosLines(this.nodeSeries(node), qosOf(node)) : undefined));
  }

  /**
   * Writes the families of a group whose lines come per node as EncodedLines (settings, QoS), each
   * through family(). When the sink makes blocks and every node's lines are the same objects as
   * in the group's last blocks, in the same order, every family's kept block is sent again at once,
   * without a look at each family's lines (the 12 families of settings mostly stay).
   */
  private familyGroup(out: ExpositionBuffer, families: readonly FamilySpec[], encoded: ReadonlyArray<EncodedLines | undefined>): void {
    const blocks = out.blocks;
    if (blocks) {
      const kept = sameItems(this.groupLines.get(families), encoded) ? families.map((spec) => this.blocks.get(spec)?.block) : undefined;
      if (kept !== undefined && kept.every((block) => block !== undefined)) {
        families.forEach((spec, index) => {
          if (kept[index]!.length > 0) out.replay(spec.name, kept[index]!);
        });
        this.blockCounts.kept += families.length;
        return;
      }
      // Until every family's block has been made again, the blocks are not all of one scrape's lines.
      this.groupLines.delete(families);
    }
    families.forEach((spec, index) => {
      this.family(out, spec, (emit) => {
        for (const lines of encoded) {
          const view = lines?.views[index];
          if (view !== undefined) emit(view, 0, view.length, lines!.counts[index]!, view);
        }
      });
    });
    // What the kept blocks now hold (a body without blocks changes none).
    if (blocks) this.groupLines.set(families, encoded);
  }

  /**
   * Writes one family that is not stats, whose lines `each` gives, node by node: bytes
   * [start, end) of a buffer (none when equal), their sample count, and a mark that is the same
   * object only while the bytes are the same.
   * When the sink makes blocks, the family is one block, kept: if every mark is what it was in the
   * last body, in the same order, the block is sent again as it was, neither copied nor compressed.
   * Families of settings, state and versions mostly stay; on a machine with 2 cores, compressing
   * the whole body (2 MB at 100 nodes) was the largest part of a scrape's own time. A block made
   * again goes through the body's zlib stream.
   */
  private family(
    out: ExpositionBuffer,
    spec: FamilySpec,
    each: (emit: (bytes: Buffer, start: number, end: number, samples: number, mark: unknown) => void) => void,
  ): void {
    if (!out.blocks) {
      const block = new FamilyBlock(out, spec);
      each((bytes, start, end, samples) => block.lines(bytes, start, end, samples));
      return;
    }
    const kept = this.keptOf(spec);
    const marks = kept.marks;
    let count = 0;
    let same = kept.block !== undefined;
    if (same) {
      each((_bytes, start, end, _samples, mark) => {
        if (start === end) return;
        if (same && marks[count] !== mark) same = false;
        count++;
      });
      if (same && count === marks.length) {
        if (kept.block!.length > 0) out.replay(spec.name, kept.block!);
        this.blockCounts.kept++;
        return;
      }
    }
    count = 0;
    out.beginBlock();
    const block = new FamilyBlock(out, spec);
    each((bytes, start, end, samples, mark) => {
      if (start === end) return;
      marks[count++] = mark;
      block.lines(bytes, start, end, samples);
    });
    marks.length = count;
    kept.block = out.endBlock();
    this.blockCounts.made++;
  }

  /**
   * Writes one stats family (position `order` of statsFamilyOrder): the lines of the nodes that
   * are up and have it, node by node, each node's marked by its RenderedStats.changes number. As
   * family() does, with two more ways to the block: the one compressed while the replies came
   * (beginCollection), when it holds the lines of exactly these nodes (in the order they
   * answered, which is as good as any); else, when a line changed, the family compressed here on
   * the renderer's LineDeflater. Plain loops rather than family()'s callbacks: at 100 nodes this
   * runs ~60 times a scrape after the last reply.
   */
  private statsFamily(out: ExpositionBuffer, spec: FamilySpec, order: number, snapshots: readonly NodeSnapshot[]): void {
    const count = snapshots.length;
    if (!out.blocks) {
      const block = new FamilyBlock(out, spec);
      for (let i = 0; i < count; i++) {
        const stats = statsOf(snapshots[i]!);
        const index = stats === undefined ? -1 : stats.plan.byOrder[order]!;
        if (index >= 0) block.lines(stats!.bytes, stats!.segments[index * 3]!, stats!.segments[index * 3 + 1]!, stats!.segments[index * 3 + 2]!);
      }
      return;
    }
    const kept = this.keptOf(spec);
    const marks = kept.marks;
    const streamed = this.streamed.length > 0 ? this.streamedByOrder[order] : undefined;
    if (streamed !== undefined && streamed.started && !streamed.failed) {
      let lines = 0;
      let all = true;
      for (let i = 0; i < count && all; i++) {
        const stats = statsOf(snapshots[i]!);
        const index = linesAt(stats, order);
        if (index < 0) continue;
        if (streamed.marks.has(stats!.changes[index]!)) lines++;
        else all = false;
      }
      if (all && lines === streamed.marks.size) {
        const block = streamed.deflater.end();
        recordMarks(marks, snapshots, order);
        kept.block = block;
        if (block.length > 0) out.replay(spec.name, block);
        this.blockCounts.streamed++;
        return;
      }
    }
    if (kept.block !== undefined) {
      let lines = 0;
      let same = true;
      for (let i = 0; i < count && same; i++) {
        const stats = statsOf(snapshots[i]!);
        const index = linesAt(stats, order);
        if (index >= 0) same = marks[lines++] === stats!.changes[index];
      }
      if (same && lines === marks.length) {
        if (kept.block.length > 0) out.replay(spec.name, kept.block);
        this.blockCounts.kept++;
        return;
      }
    }
    if (recordMarks(marks, snapshots, order) > 0) this.deflater.literals(headOf(spec));
    const chain = newChain();
    for (let i = 0; i < count; i++) {
      const stats = statsOf(snapshots[i]!);
      const index = stats === undefined ? -1 : stats.plan.byOrder[order]!;
      if (index >= 0) deflateSegment(this.deflater, chain, stats!, index);
    }
    kept.block = this.deflater.end();
    if (kept.block.length > 0) out.replay(spec.name, kept.block);
    this.blockCounts.made++;
  }

  /** A family's block in the last gzipped body, with the marks of its lines (made empty at first). */
  private keptOf(spec: FamilySpec): { marks: unknown[]; block: DeflatedBlock | undefined } {
    let kept = this.blocks.get(spec);
    if (kept === undefined) {
      kept = { marks: [], block: undefined };
      this.blocks.set(spec, kept);
    }
    return kept;
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
        registeredLines: [Buffer.from(`${NODE_REGISTERED.name}${braced} 0\n`), Buffer.from(`${NODE_REGISTERED.name}${braced} 1\n`)],
        durationPrefix: Buffer.from(`${NODE_SCRAPE_DURATION.name}${braced} `),
        labelled: new Map(),
        plan: undefined,
        prefixLengths: new Uint32Array(0),
        prefixesLength: 0,
        keys: NO_KEYS,
        values: new Uint32Array(0),
        area: EMPTY,
        areaLength: 0,
        areaPlan: undefined,
        valueLengths: new Int32Array(0),
        segments: new Uint32Array(0),
        changes: new Float64Array(0),
        versionLine: undefined,
        settingsLines: undefined,
        qosLines: undefined,
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
      for (const family of plan.families) if (!this.statsFamilyOrder.includes(family)) this.statsFamilyOrder.push(family);
      // The order may have grown: every plan's positions in it, again.
      for (const each of this.plans.values()) each.byOrder = Int32Array.from(this.statsFamilyOrder, (family) => each.familyIndex.get(family) ?? -1);
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
    series.keys = nodeKeys(plan, series.base, series.braced);
    series.values = new Uint32Array(plan.names.length * 2);
  }
}

/** A node's lines of a streamed family to its deflater, after the family's HELP and TYPE. */
function writeStreamed(family: StreamedFamily, stats: RenderedStats, index: number): void {
  const start = stats.segments[index * 3]!;
  const end = stats.segments[index * 3 + 1]!;
  if (start === end) return;
  const mark = stats.changes[index]!;
  // A node's lines twice in one collection would pass render()'s check of the marks: refuse.
  if (family.marks.has(mark)) throw new CachemonError(Errors.INTERNAL, `${family.spec.name}: the same lines twice in one collection`);
  if (family.deflater.length === 0) family.deflater.literals(headOf(family.spec));
  deflateSegment(family.deflater, family.chain, stats, index);
  family.marks.add(mark);
}

/** A snapshot's rendered stats reply when the node is up. */
function statsOf(snapshot: NodeSnapshot): RenderedStats | undefined {
  return snapshot.up ? snapshot.stats : undefined;
}

/** The index in `stats`'s plan of stats family `order` (statsFamilyOrder) when the node has lines of it, else -1. */
function linesAt(stats: RenderedStats | undefined, order: number): number {
  if (stats === undefined) return -1;
  const index = stats.plan.byOrder[order]!;
  return index >= 0 && stats.segments[index * 3] !== stats.segments[index * 3 + 1] ? index : -1;
}

/** Sets `marks` to those of stats family `order`'s lines, node by node (statsFamily()); their count. */
function recordMarks(marks: unknown[], snapshots: readonly NodeSnapshot[], order: number): number {
  let lines = 0;
  for (const snapshot of snapshots) {
    const stats = statsOf(snapshot);
    const index = linesAt(stats, order);
    if (index >= 0) marks[lines++] = stats!.changes[index];
  }
  marks.length = lines;
  return lines;
}

/** The last node whose lines of a family went to a LineDeflater: the next node's lines refer to its lines. */
interface SegmentChain {
  stats: RenderedStats | undefined;
}

function newChain(): SegmentChain {
  return { stats: undefined };
}

/**
 * A node's lines of family `index` (of its plan) to a LineDeflater, each key written as what it
 * shares with the same key of the node before (`chain`), which differs in the node labels only;
 * without one (the first node, or one of another plan), with the key of its line before.
 */
function deflateSegment(deflater: LineDeflater, chain: SegmentChain, stats: RenderedStats, index: number): void {
  const { plan, keys, segments } = stats;
  // A node without lines in the family is not a run: the next node refers to the one before.
  if (segments[index * 3 + 1]! === segments[index * 3]!) return;
  const before = chain.stats;
  let ref: NodeKeys | undefined;
  if (before !== undefined && before.plan === plan) {
    ref = before.keys;
    if (keys.pairBase !== ref.base) {
      keys.pairBase = ref.base;
      keys.pairEdits = editsBetween(ref.base, keys.base);
    }
  }
  deflater.run(stats.bytes, segments[index * 3]!, keys, stats.valueLengths, plan.familyStarts[index]!, plan.familyStarts[index + 1]!, ref, keys.pairEdits);
  chain.stats = stats;
}

const heads = new Map<FamilySpec, Buffer>();
/** A family's HELP and TYPE lines, as ExpositionBuffer.family() writes them. */
function headOf(spec: FamilySpec): Buffer {
  let head = heads.get(spec);
  if (head === undefined) heads.set(spec, (head = Buffer.from(familyHead(spec.name, spec.type, spec.help))));
  return head;
}

const EMPTY = Buffer.alloc(0);
const NO_KEYS: NodeKeys = { table: new Int32Array(0), tail: 2, base: EMPTY, pairBase: undefined, pairEdits: undefined };

/** A node's NodeKeys of a plan: every key ends with the node labels and `} `. */
function nodeKeys(plan: StatsPlan, base: string, braced: string): NodeKeys {
  const baseBytes = Buffer.from(base);
  const keys = Array.from(plan.order, (position) => Buffer.from(plan.prefixText(position, base, braced)));
  return { ...lineKeys(keys, baseBytes.length, 2, plan.familyStarts), base: baseBytes, pairBase: undefined, pairEdits: undefined };
}

/** The last number given to a changed family of a node (RenderedStats.changes); 2^53 is far. */
let lastChange = 0;
const STAT_HEAD = 5; // `STAT `
/** Longest text formatValue gives a finite float (`-1.2345678901234567e-308`: 24). */
const MAX_SCALED_TEXT = 32;

/** A plan from the `STAT <name>` heads of a reply's lines, as bytes. */
function makePlan(heads: readonly Buffer[]): StatsPlan {
  const names = heads.map((head) => head.toString('utf8', STAT_HEAD));
  const families: FamilySpec[] = [];
  const familyIndex = new Map<FamilySpec, number>();
  const positions: number[][] = [];
  const scales: Array<number | undefined> = [];
  const rules = names.map((name) => ruleForStat(name));
  const seen = new Set<string>();
  rules.forEach((rule, position) => {
    const name = names[position]!;
    scales.push(rule.kind === 'field' ? rule.scale : undefined);
    // Text fields go to arcus_version_info; a field the server repeats is rendered once.
    if (STATS_TEXT_FIELDS.has(name) || seen.has(name)) return;
    seen.add(name);
    let index = familyIndex.get(rule.family);
    if (index === undefined) {
      index = families.length;
      families.push(rule.family);
      familyIndex.set(rule.family, index);
      positions.push([]);
    }
    positions[index]!.push(position);
  });
  const order = Uint32Array.from(positions.flat());
  const familyStarts = new Uint32Array(families.length + 1);
  positions.forEach((list, f) => (familyStarts[f + 1] = familyStarts[f]! + list.length));
  const rendered = new Set(order);
  const headOffsets = new Uint32Array(heads.length + 1);
  heads.forEach((head, i) => (headOffsets[i + 1] = headOffsets[i]! + head.length));
  return {
    names,
    heads: Buffer.concat(heads),
    headOffsets,
    families,
    familyIndex,
    byOrder: new Int32Array(0),
    order,
    familyStarts,
    scales,
    versionAt: names.indexOf('version'),
    libeventAt: names.indexOf('libevent'),
    prefixText: (position, base, braced) => {
      if (!rendered.has(position)) return '';
      const rule = rules[position]!;
      return rule.kind === 'field' ? `${rule.family.name}${braced} ` : `${rule.family.name}${withLabel(base, rule.label, rule.value)} `;
    },
  };
}

/**
 * Checks that a reply has exactly the plan's lines (`STAT <name>` heads, byte for byte, in order,
 * then END) and records where each value is. Accepts every reply scanStats accepts with these
 * names; false for anything else, which then goes to the parser.
 */
function matchPlan(plan: StatsPlan, reply: Buffer, values: Uint32Array): boolean {
  const heads = plan.heads;
  const headOffsets = plan.headOffsets;
  const count = plan.names.length;
  const length = reply.length;
  let pos = 0;
  for (let position = 0; position < count; position++) {
    const headStart = headOffsets[position]!;
    const headLength = headOffsets[position + 1]! - headStart;
    if (pos + headLength > length) return false;
    for (let i = 0; i < headLength; i++) if (reply[pos + i] !== heads[headStart + i]) return false;
    const after = pos + headLength;
    // Values are a few bytes: a loop beats a native indexOf call per line.
    let nl = after;
    while (nl < length && reply[nl] !== LF) nl++;
    if (nl === length) return false;
    const end = nl > after && reply[nl - 1] === CR ? nl - 1 : nl;
    if (after === end) {
      values[position * 2] = end; // `STAT <name>`: no value
    } else if (reply[after] === SPACE) {
      values[position * 2] = after + 1;
    } else {
      return false; // a longer name
    }
    values[position * 2 + 1] = end;
    pos = nl + 1;
  }
  const rest = length - pos;
  return (
    (rest === 5 || (rest === 4 && reply[pos + 3] === LF)) &&
    reply[pos] === 0x45 &&
    reply[pos + 1] === 0x4e &&
    reply[pos + 2] === 0x44 &&
    (rest === 4 || (reply[pos + 3] === CR && reply[pos + 4] === LF))
  );
}

/**
 * The samples of a matched reply, family by family, in the node's area. The area holds the last
 * reply's lines with the same prefixes in the same places, so a value of unchanged length (most
 * of them: counters rarely gain a digit) is the only thing written; a length change moves the
 * rest of the area once (a native memmove); a line appears or goes when a value becomes or stops
 * being a number.
 */
function writeSamples(series: NodeSeries, plan: StatsPlan, reply: Buffer): RenderedStats {
  const { prefixLengths, values } = series;
  const order = plan.order;
  let area = series.area;
  let length = series.areaLength;
  let valueLengths = series.valueLengths;
  // While rewriting, the area holds new lines before `at` and old ones after it: at most the old
  // length plus every new value (a scaled one at most a float's shortest text) plus the prefix
  // and newline of every line that appears.
  const samePlan = series.areaPlan === plan;
  let valueBytes = 0;
  let appearing = 0;
  for (let k = 0; k < order.length; k++) {
    const position = order[k]!;
    valueBytes += plan.scales[position] === undefined ? values[position * 2 + 1]! - values[position * 2]! : MAX_SCALED_TEXT;
    if (samePlan && valueLengths[k]! < 0) appearing += prefixLengths[position]! + 1;
  }
  const fresh = !samePlan || area.length < length + valueBytes + appearing;
  if (fresh) {
    // Every line, plus room for the next rewrites in place (a reply's values once more, and a
    // sixteenth): ~23 KB for an ARCUS node, 500 nodes ~11 MB.
    const lines = series.prefixesLength + order.length + valueBytes;
    if (area.length < lines + valueBytes) area = Buffer.allocUnsafeSlow(lines + valueBytes + (lines >> 4));
    length = 0;
    valueLengths = valueLengths.length === order.length ? valueLengths.fill(-1) : new Int32Array(order.length).fill(-1);
    series.segments = new Uint32Array(plan.families.length * 3);
    if (series.changes.length !== plan.families.length) series.changes = new Float64Array(plan.families.length);
    series.areaPlan = plan;
  }
  const { segments, changes } = series;
  let at = 0;
  for (let f = 0; f < plan.families.length; f++) {
    segments[f * 3] = at;
    let samples = 0;
    let changed = fresh;
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
          changed = true;
        }
        continue;
      }
      const scale = plan.scales[position];
      const text = scale === undefined ? undefined : formatValue(Number(reply.toString('latin1', valueStart, valueEnd)) * scale);
      const valueLength = text === undefined ? valueEnd - valueStart : text.length;
      if (old < 0) {
        const line = prefixLength + valueLength + 1;
        if (at < length) area.copyWithin(at + line, at, length);
        length += line;
        area.write(plan.prefixText(position, series.base, series.braced), at, 'utf8');
        changed = true;
      } else if (old !== valueLength) {
        area.copyWithin(at + prefixLength + valueLength, at + prefixLength + old, length);
        length += valueLength - old;
        changed = true;
      }
      let w = at + prefixLength;
      // Written only where it differs: a family whose bytes stay is sent as it was (render()).
      if (text === undefined) {
        for (let i = valueStart; i < valueEnd; i++, w++) {
          const c = reply[i]!;
          if (area[w] !== c) {
            area[w] = c;
            changed = true;
          }
        }
      } else {
        for (let i = 0; i < text.length; i++, w++) {
          const c = text.charCodeAt(i);
          if (area[w] !== c) {
            area[w] = c;
            changed = true;
          }
        }
      }
      area[w] = LF;
      valueLengths[k] = valueLength;
      at = w + 1;
      samples++;
    }
    segments[f * 3 + 1] = at;
    segments[f * 3 + 2] = samples;
    if (changed) changes[f] = ++lastChange;
  }
  series.area = area;
  series.areaLength = length;
  series.valueLengths = valueLengths;
  const text = (position: number) => (position < 0 ? '' : reply.toString('utf8', values[position * 2], values[position * 2 + 1]));
  return { plan, bytes: area, segments, changes, keys: series.keys, valueLengths, version: text(plan.versionAt), libevent: text(plan.libeventAt) };
}

/**
 * True when bytes [start, end) are a decimal number as servers print them and the exposition
 * format takes them: `-?digits[.digits][e[+-]digits]` (`.5` and `5.` too).
 */
export function isDecimal(bytes: Buffer, start: number, end: number): boolean {
  let i = start;
  if (i < end && bytes[i] === 0x2d) i++;
  let digits = 0;
  while (i < end && bytes[i]! >= 0x30 && bytes[i]! <= 0x39) {
    i++;
    digits++;
  }
  if (i < end && bytes[i] === 0x2e) {
    i++;
    while (i < end && bytes[i]! >= 0x30 && bytes[i]! <= 0x39) {
      i++;
      digits++;
    }
  }
  if (digits === 0) return false;
  if (i < end && (bytes[i] === 0x65 || bytes[i] === 0x45)) {
    i++;
    if (i < end && (bytes[i] === 0x2b || bytes[i] === 0x2d)) i++;
    const exponentStart = i;
    while (i < end && bytes[i]! >= 0x30 && bytes[i]! <= 0x39) i++;
    if (i === exponentStart) return false;
  }
  return i === end;
}

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;

function labelledPrefix(series: NodeSeries, family: FamilySpec, label: string, value: string): string {
  const key = `${family.name}\u0000${label}\u0000${value}`;
  let prefix = series.labelled.get(key);
  if (prefix === undefined) {
    prefix = `${family.name}${withLabel(series.base, label, value)} `;
    series.labelled.set(key, prefix);
  }
  return prefix;
}

function versionLine(series: NodeSeries, stats: RenderedStats): Buffer | undefined {
  const { version, libevent } = stats;
  if (version === '' && libevent === '') return undefined;
  const cached = series.versionLine;
  if (cached !== undefined && cached.version === version && cached.libevent === libevent) return cached.line;
  const line = Buffer.from(`${VERSION_INFO.name}{version="${escapeLabelValue(version)}",libevent="${escapeLabelValue(libevent)}",${series.base}} 1\n`);
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
    if (settings) addSettings(add, series, SETTINGS, settings);
    if (zookeeper) addSettings(add, series, ZOOKEEPER_STATS, zookeeper);
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
      if (result.ok) add(QOS_LATENCY, `${labelledPrefix(series, QOS_LATENCY, 'probe', result.probe)}${formatValue(result.seconds)}\n`);
    }
    add(QOS_TIMESTAMP, `${QOS_TIMESTAMP.name}${series.braced} ${formatValue(qos.at / 1000)}\n`);
  });
  series.qosLines = { ...lines, qos };
  return series.qosLines;
}

/** Piece size of prepareQos()'s buffer: the QoS families of 100 nodes are ~60 KB. */
const PREPARE_PIECE_BYTES = 16 * 1024;

/** Lines of `families`, as `write` adds them, encoded one Buffer per family. */
function encodeLines(families: readonly FamilySpec[], write: (add: (family: FamilySpec, line: string) => void) => void): EncodedLines {
  const lines: string[][] = families.map(() => []);
  write((family, line) => lines[families.indexOf(family)]!.push(line));
  return {
    views: lines.map((family) => (family.length > 0 ? Buffer.from(family.join('')) : undefined)),
    counts: lines.map((family) => family.length),
  };
}

function addSettings(
  add: (family: FamilySpec, line: string) => void,
  series: NodeSeries,
  rules: ReadonlyMap<string, SettingRule>,
  entries: StatsEntries,
): void {
  for (const [name, raw] of entries) {
    const rule = rules.get(name);
    if (!rule) continue;
    const value = rule.parse(raw);
    if (value === undefined) continue;
    const prefix = rule.label ? labelledPrefix(series, rule.family, rule.label[0], rule.label[1]) : `${rule.family.name}${series.braced} `;
    add(rule.family, `${prefix}${formatValue(value)}\n`);
  }
}

/** One family's block of the body: HELP and TYPE before its first sample, none when it has none. */
class FamilyBlock {
  private headed = false;

  constructor(
    private readonly out: ExpositionBuffer,
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
    this.head().text(lines).countSamples(1);
  }

  /** A node's lines of this family: bytes [start, end), `samples` of them (none when empty). */
  lines(bytes: Buffer, start: number, end: number, samples: number): void {
    if (end > start) this.head().bytes(bytes, start, end, samples);
  }

  private head(): ExpositionBuffer {
    if (!this.headed) {
      this.out.family(this.family.name, this.family.type, this.family.help);
      this.headed = true;
    }
    return this.out;
  }
}
