/**
 * Calls to the groups: one answer relayed as it is, or several merged (several groups, or a group's
 * replicas); timed, cancelled with the client.
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { errorMessage } from '@cachemon/core';
import type { FastifyReply, Logger } from '@cachemon/core';
import { ApiError, errorBody, JSON_TYPE, serverTiming, successBody } from './api-answers.js';
import type { Endpoint, Timing } from './api-answers.js';
import { mergesReplicas } from './config.js';
import type { ServerGroup } from './config.js';
import { groupWarnings, MergeError } from './merge.js';
import type { GroupAnswer, Merged, ReplicaAnswer, ReplicasMerged } from './merge.js';
import type { ProxyMetrics } from './self-metrics.js';
import { breakFailure, GroupCall, GroupFailure, REPLICA_BACKOFF_MS, replicaSaid } from './upstream.js';
import type { EachAnswer, JsonAnswer, UpstreamRequest, Upstreams } from './upstream.js';

/** Most of a store's answer held back, to be sent in one write with its length; past it, streamed. */
const RELAY_BUFFER_BYTES = 64 * 1024;

/** Calls to cancel when the client goes away before its answer is complete. */
function onClientGone(reply: FastifyReply, calls: readonly GroupCall[]): void {
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) for (const call of calls) call.cancel();
  });
}

function failureAnswer(failure: GroupFailure): ApiError {
  return new ApiError(
    failure.kind === 'timeout' ? 'timeout' : failure.kind === 'canceled' ? 'canceled' : 'unavailable',
    failure.message,
  );
}

/** The warning of an answer given without a group that failed (ignore_error). */
function missingPart(failure: GroupFailure): string {
  return `${failure.message}; its part of the result is missing (ignore_error)`;
}

/** How an endpoint's answers are merged: a group's replicas' into the group's, then the groups'. */
export interface AnswerMerge<T> {
  readonly replicas: (answers: readonly ReplicaAnswer[], group: ServerGroup) => ReplicasMerged;
  readonly groups: (answers: readonly GroupAnswer[]) => Merged<T>;
}

/** What a group gave on the merged path: its stores' answers (each replica's, if merged), or its failure. */
interface GroupResult {
  readonly group: ServerGroup;
  readonly answers?: readonly JsonAnswer[];
  readonly each?: EachAnswer;
  readonly failure?: GroupFailure;
}

/** A store's answer body, as far as the proxy reads it. */
interface StoreBody {
  status?: string;
  data?: unknown;
  warnings?: unknown;
  errorType?: string;
  error?: string;
}

/** Why a merged group's answer lacks some replicas: they failed, or were passed over after a failure. */
function replicaWarnings(group: ServerGroup, each: EachAnswer): string[] {
  const without = 'answered without it by the other replicas';
  return [
    ...each.problems.map((p) => `${group.name}: replica ${replicaSaid(p)}; ${without}`),
    ...each.passedOver.map(
      (t) =>
        `${group.name}: replica ${t} not asked, as it failed within the last ${REPLICA_BACKOFF_MS / 1000} s; ${without}`,
    ),
  ];
}

function storeWarnings(body: StoreBody): string[] {
  return Array.isArray(body.warnings) ? body.warnings.filter((w): w is string => typeof w === 'string') : [];
}

/** Runs a merge, its failure (answers the proxy cannot read) said as the API's error. */
function merging<R>(what: string, merge: () => R): R {
  try {
    return merge();
  } catch (err) {
    if (err instanceof MergeError) throw new ApiError('internal', `cannot merge ${what}: ${err.message}`, 502);
    throw err;
  }
}

export class Forwarder {
  constructor(
    private readonly upstreams: Upstreams,
    private readonly metrics: ProxyMetrics,
    private readonly logger: Logger,
    /** The server is closing: an answer relayed from now on says Connection: close, as the routes' do. */
    private readonly closing: () => boolean,
  ) {}

  /** A success in the API's shape, counted when it carries warnings. */
  success(reply: FastifyReply, endpoint: Endpoint, data: unknown, warnings: readonly string[]): FastifyReply {
    if (warnings.length > 0) this.metrics.warnings.inc({ endpoint });
    return reply.type(JSON_TYPE).send(successBody(data, warnings));
  }

  /** The one-group path: the request forwarded untouched, the store's answer relayed as it is. */
  async forward(
    endpoint: Endpoint,
    group: ServerGroup,
    upstream: UpstreamRequest,
    reply: FastifyReply,
    empty: unknown,
  ): Promise<FastifyReply> {
    const started = performance.now();
    const call = new GroupCall(group.timeoutMs);
    onClientGone(reply, [call]);
    let answer;
    try {
      answer = await this.upstreams.send(group, upstream, call);
    } catch (err) {
      call.done();
      if (!(err instanceof GroupFailure)) throw err;
      reply.header('Server-Timing', serverTiming([this.recordGroup(endpoint, group, started, err)]));
      const failed = this.singleFailure(endpoint, group, err, empty);
      return reply.code(failed.status).type(JSON_TYPE).send(failed.text);
    }
    reply.header('Server-Timing', serverTiming([this.recordGroup(endpoint, group, started)]));
    reply.hijack();
    const own = reply.getHeaders() as OutgoingHttpHeaders;
    // The group's timeout holds until the answer has ended: a store that stops sending mid-answer
    // is cut off then, as one that never answers is.
    await relay(answer.status, { ...own, ...answer.headers }, answer.body, reply.raw, this.closing, (err, sent) => {
      if (call.canceled) return undefined;
      const failure = breakFailure(group, call.timedOut, errorMessage(err));
      this.brokeOff(endpoint, failure, sent);
      if (sent) return undefined;
      // Nothing of it has reached the client yet: say so in the API's shape, as for a failed group.
      return { ...this.singleFailure(endpoint, group, failure, empty), headers: { ...own, 'content-type': JSON_TYPE } };
    });
    call.done();
    return reply;
  }

  /**
   * The merged path: each group asked at once (each replica of a group that merges them), the
   * replicas' answers merged into their group's, the groups' answers merged.
   */
  async gather<T>(
    endpoint: Endpoint,
    groups: readonly ServerGroup[],
    requestFor: (group: ServerGroup) => UpstreamRequest,
    merge: AnswerMerge<T>,
    reply: FastifyReply,
  ): Promise<FastifyReply> {
    const timings: Timing[] = [];
    const calls: GroupCall[] = [];
    onClientGone(reply, calls);
    const results = await Promise.all(
      groups.map(async (group): Promise<GroupResult> => {
        const started = performance.now();
        const call = new GroupCall(group.timeoutMs);
        calls.push(call);
        try {
          let each: EachAnswer | undefined;
          let answers: readonly JsonAnswer[];
          if (mergesReplicas(group)) {
            each = await this.upstreams.jsonEach(group, requestFor(group), call);
            answers = each.answers;
          } else answers = [await this.upstreams.json(group, requestFor(group), call)];
          timings.push(this.recordGroup(endpoint, group, started));
          return { group, answers, ...(each ? { each } : {}) };
        } catch (err) {
          if (!(err instanceof GroupFailure)) throw err;
          timings.push(this.recordGroup(endpoint, group, started, err));
          return { group, failure: err };
        }
      }),
    );
    reply.header('Server-Timing', serverTiming(timings.sort((a, b) => a.group.index - b.group.index)));
    const warnings: string[] = [];
    const answers: GroupAnswer[] = [];
    for (const { group, answers: replies = [], each, failure } of results) {
      if (failure) {
        if (!group.ignoreError || failure.kind === 'canceled') throw failureAnswer(failure);
        warnings.push(missingPart(failure));
        continue;
      }
      const bodies = replies.map((r) => ({ ...r, parsed: r.body as StoreBody }));
      const refused = bodies.find((b) => b.status >= 400 || b.parsed.status !== 'success');
      if (refused) {
        // The store refused the request (a query it cannot run): the same for every group; say it as it did.
        const error = `${group.name}: ${refused.parsed.error ?? 'answered without data'}`;
        const refusal = JSON.stringify({ status: 'error', errorType: refused.parsed.errorType ?? 'execution', error });
        return reply
          .code(refused.status >= 400 ? refused.status : 502)
          .type(JSON_TYPE)
          .send(refusal);
      }
      if (each) warnings.push(...replicaWarnings(group, each));
      let data: unknown = bodies[0]?.parsed.data;
      if (bodies.length > 1) {
        const merged = merging(`the replicas' answers of ${group.name}`, () =>
          merge.replicas(
            bodies.map((b) => ({ replica: b.target, data: b.parsed.data })),
            group,
          ),
        );
        data = merged.data;
        if (merged.filled > 0) this.metrics.samplesFilled.inc({ group: group.name }, merged.filled);
      }
      const said = [...new Set(bodies.flatMap((b) => storeWarnings(b.parsed)))];
      answers.push({ group, data, ...(said.length > 0 ? { warnings: said } : {}) });
    }
    const merged = merging("the server groups' answers", () => merge.groups(answers));
    return this.success(reply, endpoint, merged.data, [...groupWarnings(answers), ...warnings, ...merged.warnings]);
  }

  private recordGroup(endpoint: Endpoint, group: ServerGroup, started: number, failure?: GroupFailure): Timing {
    const ms = performance.now() - started;
    this.metrics.groupDuration.observe({ group: group.name, endpoint }, ms / 1000);
    if (failure) this.metrics.groupErrors.inc({ group: group.name, kind: failure.kind });
    return { group, ms, ...(failure ? { failure: failure.kind === 'timeout' ? 'timeout' : failure.detail } : {}) };
  }

  /** An answer that broke off after it began: logged and counted (`passedOn`: part of it reached the client). */
  private brokeOff(endpoint: Endpoint, failure: GroupFailure, passedOn: boolean): void {
    this.logger.warn(
      { group: failure.group.name, endpoint, error: failure.detail, passedOn },
      'a streamed answer broke off',
    );
    this.metrics.groupErrors.inc({ group: failure.group.name, kind: failure.kind });
  }

  /** The answer for the one group of a query that failed: an empty result and a warning (ignore_error), or the error. */
  private singleFailure(
    endpoint: Endpoint,
    group: ServerGroup,
    failure: GroupFailure,
    empty: unknown,
  ): { status: number; text: string } {
    if (group.ignoreError && failure.kind !== 'canceled') {
      this.metrics.warnings.inc({ endpoint });
      return { status: 200, text: successBody(empty, [missingPart(failure)]) };
    }
    const error = failureAnswer(failure);
    return { status: error.status, text: errorBody(error) };
  }
}

/** What the client is told instead of an answer that broke off before any of it was passed on. */
type EarlyAnswer = { readonly status: number; readonly headers: OutgoingHttpHeaders; readonly text: string };

/**
 * Relays a store's answer to the client, resolving once it is all written or either side is
 * gone. The client going away drops the store's answer. The store breaking off mid-answer is
 * reported to `onBreak`, told whether any of it was passed on: if not, the client gets what
 * onBreak returns; if so, its connection is closed, since a cut answer must not look complete.
 * An answer that ends within RELAY_BUFFER_BYTES is written once, with its Content-Length; a longer
 * one is streamed, as a reverse proxy such as nginx does by default.
 */
async function relay(
  status: number,
  headers: OutgoingHttpHeaders,
  body: Readable,
  raw: ServerResponse,
  closing: () => boolean,
  onBreak: (err: Error, sent: boolean) => EarlyAnswer | undefined,
): Promise<void> {
  const writeHead = (code: number, fields: OutgoingHttpHeaders): void => {
    if (closing()) raw.shouldKeepAlive = false;
    raw.writeHead(code, fields);
  };
  const finished = new Promise((resolve) => {
    raw.once('finish', resolve);
    raw.once('close', resolve);
  });
  let clientGone = false;
  raw.once('close', () => {
    if (raw.writableFinished) return;
    clientGone = true;
    body.destroy();
  });
  /** The answer so far, until it is too long to hold (then undefined: streaming). */
  let held: Buffer[] | undefined = [];
  let heldBytes = 0;
  try {
    for await (const read of body as AsyncIterable<Buffer>) {
      let chunk = read;
      if (held !== undefined) {
        held.push(read);
        heldBytes += read.length;
        if (heldBytes <= RELAY_BUFFER_BYTES) continue;
        // Too long to hold: stream it (chunked, unless the store said its length).
        writeHead(status, headers);
        chunk = Buffer.concat(held, heldBytes);
        held = undefined;
      }
      if (!raw.write(chunk)) await Promise.race([new Promise((resolve) => raw.once('drain', resolve)), finished]);
    }
  } catch (err) {
    if (clientGone) return;
    // node:http says `aborted` (ECONNRESET) when the store's connection ends mid-answer.
    const code = (err as NodeJS.ErrnoException).code;
    const closedEarly = code === 'ECONNRESET' || code === 'ERR_STREAM_PREMATURE_CLOSE';
    const early = onBreak(
      closedEarly ? new Error('the store closed the connection before the end of its answer') : (err as Error),
      held === undefined,
    );
    if (early === undefined) raw.destroy();
    else {
      writeHead(early.status, { ...early.headers, 'content-length': Buffer.byteLength(early.text) });
      raw.end(early.text);
    }
    await finished;
    return;
  }
  if (held === undefined) raw.end();
  else {
    const whole = Buffer.concat(held, heldBytes);
    writeHead(status, { ...headers, 'content-length': whole.length });
    raw.end(whole);
  }
  await finished;
}
