/** Calls to the groups: one answer relayed as it is, or several merged; timed, cancelled with the client. */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { errorMessage } from '@cachemon/core';
import type { FastifyReply, Logger } from '@cachemon/core';
import { ApiError, errorBody, JSON_TYPE, serverTiming, successBody } from './api-answers.js';
import type { Endpoint, Timing } from './api-answers.js';
import type { ServerGroup } from './config.js';
import { groupWarnings, MergeError } from './merge.js';
import type { GroupAnswer, Merged } from './merge.js';
import type { ProxyMetrics } from './self-metrics.js';
import { breakFailure, GroupCall, GroupFailure } from './upstream.js';
import type { UpstreamRequest, Upstreams } from './upstream.js';

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

  /** The several-group path: each group asked at once, the answers merged. */
  async gather<T>(
    endpoint: Endpoint,
    groups: readonly ServerGroup[],
    requestFor: (group: ServerGroup) => UpstreamRequest,
    merge: (answers: readonly GroupAnswer[]) => Merged<T>,
    reply: FastifyReply,
  ): Promise<FastifyReply> {
    const timings: Timing[] = [];
    const calls: GroupCall[] = [];
    onClientGone(reply, calls);
    const results = await Promise.all(
      groups.map(async (group) => {
        const started = performance.now();
        const call = new GroupCall(group.timeoutMs);
        calls.push(call);
        try {
          const answer = await this.upstreams.json(group, requestFor(group), call);
          timings.push(this.recordGroup(endpoint, group, started));
          return { group, answer };
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
    for (const result of results) {
      if (result.failure) {
        if (!result.group.ignoreError || result.failure.kind === 'canceled') throw failureAnswer(result.failure);
        warnings.push(missingPart(result.failure));
        continue;
      }
      const { status, body } = result.answer;
      const parsed = body as {
        status?: string;
        data?: unknown;
        warnings?: string[];
        errorType?: string;
        error?: string;
      };
      if (status >= 400 || parsed.status !== 'success') {
        // The store refused the request (a query it cannot run): the same for every group; say it as it did.
        const error = `${result.group.name}: ${parsed.error ?? 'answered without data'}`;
        const refusal = JSON.stringify({ status: 'error', errorType: parsed.errorType ?? 'execution', error });
        return reply
          .code(status >= 400 ? status : 502)
          .type(JSON_TYPE)
          .send(refusal);
      }
      answers.push({
        group: result.group,
        data: parsed.data,
        ...(Array.isArray(parsed.warnings) ? { warnings: parsed.warnings } : {}),
      });
    }
    let merged: Merged<T>;
    try {
      merged = merge(answers);
    } catch (err) {
      if (err instanceof MergeError)
        throw new ApiError('internal', `cannot merge the server groups' answers: ${err.message}`, 502);
      throw err;
    }
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
