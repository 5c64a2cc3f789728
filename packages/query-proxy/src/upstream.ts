/**
 * A group's replicas, within its `timeout`. Either tried in turn from after the last used (`send`,
 * `json`): a failed or 5xx one is passed over a while; one silent for timeout / replicas is raced
 * by the next; the first 2xx or 4xx answers for the group. Or each asked at once (`jsonEach`), for
 * their answers to be merged.
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Readable } from 'node:stream';
import { errorMessage } from '@cachemon/core';
import type { ServerGroup } from './config.js';

/** How long a replica that failed is passed over while its group has others. */
export const REPLICA_BACKOFF_MS = 5000;
/** Most of a failed answer's body read into the error message. */
const ERROR_BODY_BYTES = 4096;
/** Connections per store; dashboards run a panel's queries at once, so not one. */
const CONNECTIONS_PER_STORE = 64;
const AGENT_OPTIONS = {
  keepAlive: true,
  maxSockets: CONNECTIONS_PER_STORE,
  maxFreeSockets: CONNECTIONS_PER_STORE,
  timeout: 60_000,
};
/** Answer headers from the store passed back to the client on the streamed path. */
const PASSED_HEADERS = ['content-type', 'content-encoding', 'content-length'] as const;

type GroupFailureKind = 'timeout' | 'unavailable' | 'canceled';
/** How one replica failed: no answer in its time, or refused, 5xx, broken off, not JSON. */
export type ReplicaFailureKind = 'timeout' | 'unavailable';

/** A group gave no usable answer: every replica failed, or the time ran out. */
export class GroupFailure extends Error {
  constructor(
    readonly group: ServerGroup,
    readonly kind: GroupFailureKind,
    /** What went wrong, without the group's name (the message has both). */
    readonly detail: string,
  ) {
    super(`${group.name}: ${detail}`);
    this.name = 'GroupFailure';
  }
}

export interface UpstreamRequest {
  /** /api/v1/query and the like; the group's path prefix goes before it. */
  readonly path: string;
  readonly method: 'GET' | 'POST';
  /** The client's query string, without `?`. */
  readonly search: string;
  /** A POST's form-encoded body, as the client sent it. */
  readonly body?: string;
  readonly acceptEncoding?: string;
}

/**
 * One request to one group, and the two ways it can end early: the group's timeout and the client
 * going away. Either destroys the requests under way (and with them the answer being read).
 */
export class GroupCall {
  private readonly timer: NodeJS.Timeout;
  /** The request to each replica asked. */
  private readonly requests: ClientRequest[] = [];
  private stopped = false;
  timedOut = false;
  canceled = false;

  constructor(readonly timeoutMs: number) {
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.stop();
    }, timeoutMs);
  }

  /** A request now under way: one a timeout or a cancel destroys. */
  attach(request: ClientRequest): void {
    this.requests.push(request);
    if (this.stopped) request.destroy(this.reason());
  }

  /** The client went away. */
  cancel(): void {
    if (this.stopped) return;
    this.canceled = true;
    clearTimeout(this.timer);
    this.stop();
  }

  /** The answer has been read or relayed to its end (or the call failed): the timeout is over. */
  done(): void {
    clearTimeout(this.timer);
  }

  private stop(): void {
    this.stopped = true;
    // A request whose answer was read to the end (its socket back with the agent) ignores this.
    for (const request of this.requests) request.destroy(this.reason());
  }

  private reason(): Error {
    return new Error(this.canceled ? 'the client went away' : `no answer within ${this.timeoutMs} ms`);
  }
}

interface UpstreamAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: Readable;
  /** The replica that answered. */
  readonly target: string;
}

export interface JsonAnswer {
  readonly status: number;
  readonly body: unknown;
  readonly target: string;
}

/** A replica of a merged group that gave no answer, and why. */
export interface ReplicaProblem {
  readonly target: string;
  readonly kind: ReplicaFailureKind;
  readonly detail: string;
}

/** What each replica of a merged group answered, in config order. */
export interface EachAnswer {
  readonly answers: readonly JsonAnswer[];
  /** Replicas asked that failed. */
  readonly problems: readonly ReplicaProblem[];
  /** Replicas not asked: they failed a moment ago, and others were left. */
  readonly passedOver: readonly string[];
}

export interface UpstreamsOptions {
  readonly now?: () => number;
  /** Told of every replica that failed a request, whether or not another answered for it. */
  readonly replicaFailed?: (group: ServerGroup, target: string, kind: ReplicaFailureKind) => void;
}

/**
 * The query string a group's stores receive: the client's with the group's query_params. When the
 * client set none of them (the usual case) they are appended, leaving its string as it was.
 */
function groupSearch(group: ServerGroup, search: string): string {
  const own = Object.entries(group.queryParams);
  if (own.length === 0) return search;
  const merged = new URLSearchParams(search);
  if (own.some(([name]) => merged.has(name))) {
    for (const [name, value] of own) merged.set(name, value);
    return merged.toString();
  }
  const encoded = new URLSearchParams(own).toString();
  return search === '' ? encoded : `${search}&${encoded}`;
}

/** A replica's answer, with the headers passed on. */
function answerOf(answer: IncomingMessage, status: number, target: string): UpstreamAnswer {
  const passed: Record<string, string> = {};
  for (const name of PASSED_HEADERS) {
    const value = answer.headers[name];
    if (value !== undefined) passed[name] = value;
  }
  return { status, headers: passed, body: answer, target };
}

/** A replica's base URL (a group's target), parsed; `prefix` is the group's path_prefix. */
function storeTarget(base: string): { https: boolean; hostname: string; port: number; prefix: string } {
  const url = new URL(base);
  const https = url.protocol === 'https:';
  return {
    https,
    hostname: url.hostname.replace(/^\[|\]$/g, ''),
    port: Number(url.port) || (https ? 443 : 80),
    prefix: url.pathname.replace(/\/$/, ''),
  };
}

async function readPrefix(body: Readable, limit: number): Promise<string> {
  let text = '';
  try {
    for await (const chunk of body) {
      text += String(chunk);
      if (text.length >= limit) break;
    }
  } catch {
    // what was read is what there is
  }
  body.destroy();
  return text.slice(0, limit);
}

export class Upstreams {
  private readonly http = new HttpAgent(AGENT_OPTIONS);
  private readonly https = new HttpsAgent(AGENT_OPTIONS);
  private readonly failedAt = new Map<string, number>();
  /** Per group (a reload makes new ones): the next replica to start with. */
  private readonly next = new WeakMap<ServerGroup, number>();

  private readonly now: () => number;
  private readonly replicaFailed: NonNullable<UpstreamsOptions['replicaFailed']>;

  constructor(options: UpstreamsOptions = {}) {
    this.now = options.now ?? Date.now;
    this.replicaFailed = options.replicaFailed ?? (() => undefined);
  }

  /** A replica failed: passed over for a while, and counted. */
  private failed(group: ServerGroup, target: string, kind: ReplicaFailureKind): void {
    this.failedAt.set(target, this.now());
    this.replicaFailed(group, target, kind);
  }

  private healthy(target: string, now: number): boolean {
    return now - (this.failedAt.get(target) ?? -Infinity) >= REPLICA_BACKOFF_MS;
  }

  /**
   * One HTTP request to a replica; resolves with the answer's head, its body unread. `started`
   * is given the request, for the caller to give it up. A request that went out on a kept
   * connection the store had just closed (its idle timeout) is sent again on another: that store
   * has not failed.
   */
  private requestOnce(
    base: string,
    pathAndQuery: string,
    method: string,
    headers: Record<string, string>,
    body: string | undefined,
    call: GroupCall,
    started: (request: ClientRequest) => void,
  ): Promise<IncomingMessage> {
    const { https, hostname, port, prefix } = storeTarget(base);
    return new Promise((resolve, reject) => {
      const send = https ? httpsRequest : httpRequest;
      const attempt = (): void => {
        let answered = false;
        const req = send(
          { hostname, port, path: prefix + pathAndQuery, method, headers, agent: https ? this.https : this.http },
          (answer) => {
            answered = true;
            resolve(answer);
          },
        );
        req.once('error', (err: NodeJS.ErrnoException) => {
          if (!answered && req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) attempt();
          else reject(err);
        });
        call.attach(req);
        started(req);
        req.end(body);
      };
      attempt();
    });
  }

  /** The group's replicas in the order to try them: rotating start, recently failed ones last. */
  private order(group: ServerGroup): readonly string[] {
    if (group.targets.length === 1) return group.targets;
    const start = this.next.get(group) ?? 0;
    this.next.set(group, (start + 1) % group.targets.length);
    const rotated = group.targets.map((_, i) => group.targets[(start + i) % group.targets.length]!);
    const now = this.now();
    const healthy = (t: string) => this.healthy(t, now);
    return [...rotated.filter(healthy), ...rotated.filter((t) => !healthy(t))];
  }

  /**
   * Sends the request to the group's replicas in turn: the next at once when one fails, or beside
   * the ones still waiting when they have had their share of the timeout. Resolves with the first
   * 2xx or 4xx answer, its body unread (the caller reads it, and says when the call is done); the
   * requests still waiting are given up, and those asked before the winner passed over for a while.
   */
  /** A function asking one replica for `req`, within `call`. */
  private asker(group: ServerGroup, req: UpstreamRequest, call: GroupCall) {
    const search = groupSearch(group, req.search);
    const pathAndQuery = search === '' ? req.path : `${req.path}?${search}`;
    const headers: Record<string, string> = {};
    if (req.acceptEncoding) headers['accept-encoding'] = req.acceptEncoding;
    if (req.method === 'POST') headers['content-type'] = 'application/x-www-form-urlencoded';
    const body = req.method === 'POST' ? (req.body ?? '') : undefined;
    return (target: string, started: (request: ClientRequest) => void) =>
      this.requestOnce(target, pathAndQuery, req.method, headers, body, call, started);
  }

  send(group: ServerGroup, req: UpstreamRequest, call: GroupCall): Promise<UpstreamAnswer> {
    const ask = this.asker(group, req, call);
    const targets = this.order(group);
    return new Promise((resolve, reject) => {
      const share = group.timeoutMs / targets.length;
      const problems: string[] = [];
      const waiting = new Map<string, ClientRequest | undefined>();
      let next = 0;
      let settled = false;
      let besides: NodeJS.Timeout | undefined;
      const settle = (): void => {
        settled = true;
        clearTimeout(besides);
      };
      const askNext = (): void => {
        const target = targets[next++];
        if (target === undefined) {
          if (waiting.size === 0) {
            settle();
            reject(callFailure(group, call, problems));
          }
          return;
        }
        clearTimeout(besides);
        besides = next < targets.length ? setTimeout(askNext, share) : undefined;
        waiting.set(target, undefined);
        ask(target, (request) => waiting.set(target, request)).then(
          async (answer) => {
            const status = answer.statusCode ?? 0;
            if (settled) {
              answer.destroy();
              return;
            }
            if (status >= 500) {
              waiting.delete(target);
              this.failed(group, target, 'unavailable');
              const text = await readPrefix(answer, ERROR_BODY_BYTES);
              problems.push(`${target} answered ${status}: ${errorText(text)}`);
              if (!settled) askNext();
              return;
            }
            settle();
            waiting.delete(target);
            // Give up the others; the ones asked before it had longer and gave nothing: pass them over.
            const rank = targets.indexOf(target);
            for (const [other, request] of waiting) {
              if (targets.indexOf(other) < rank) this.failed(group, other, 'timeout');
              request?.destroy();
            }
            if (this.failedAt.size > 0) this.failedAt.delete(target);
            resolve(answerOf(answer, status, target));
          },
          (err: unknown) => {
            waiting.delete(target);
            if (call.timedOut && !call.canceled) this.replicaFailed(group, target, 'timeout');
            if (settled) return;
            if (call.canceled || call.timedOut) {
              settle();
              reject(callFailure(group, call, problems));
              return;
            }
            this.failed(group, target, 'unavailable');
            problems.push(`${target}: ${errorMessage(err)}`);
            askNext();
          },
        );
      };
      askNext();
    });
  }

  /** Sends the request and reads the answer as JSON, all within the group's timeout. */
  async json(group: ServerGroup, req: UpstreamRequest, call: GroupCall): Promise<JsonAnswer> {
    try {
      const answer = await this.send(group, { ...req, acceptEncoding: 'identity' }, call);
      let text: string;
      try {
        text = await answer.body.setEncoding('utf8').reduce((all: string, chunk: string) => all + chunk, '');
      } catch (err) {
        if (call.canceled) throw new GroupFailure(group, 'canceled', 'the client went away');
        const timeout = `the answer did not arrive within the group's timeout of ${group.timeoutMs} ms`;
        if (call.timedOut) throw new GroupFailure(group, 'timeout', timeout);
        throw new GroupFailure(group, 'unavailable', `${answer.target}: the answer broke off: ${errorMessage(err)}`);
      }
      try {
        return { status: answer.status, body: JSON.parse(text) as unknown, target: answer.target };
      } catch {
        const problem = `${answer.target} answered ${answer.status} with a body that is not JSON: ${errorText(text)}`;
        throw new GroupFailure(group, 'unavailable', problem);
      }
    } finally {
      call.done();
    }
  }

  /**
   * Asks every replica of the group at once and reads each answer as JSON, for the caller to merge.
   * Replicas that failed a moment ago are passed over, and asked only if all the others fail. Each
   * has until the group's timeout; but once one has answered, the others only until their share of
   * it (timeout / replicas asked), or as long again as the first took if that is later: a hung
   * replica costs its share, not the answer. Those that fail are passed over for a while. Rejects
   * when none answered.
   */
  async jsonEach(group: ServerGroup, req: UpstreamRequest, call: GroupCall): Promise<EachAnswer> {
    const ask = this.asker(group, { ...req, acceptEncoding: 'identity' }, call);
    const now = this.now();
    let passedOver = group.targets.filter((t) => !this.healthy(t, now));
    const answers = new Map<string, JsonAnswer>();
    const problems = new Map<string, ReplicaProblem>();
    const round = async (targets: readonly string[]): Promise<void> => {
      const started = performance.now();
      const share = group.timeoutMs / targets.length;
      const requests = new Map<string, ClientRequest>();
      const cut = new Set<string>();
      let rest: NodeJS.Timeout | undefined;
      /** Gives up the replicas still asked, once one has answered and they have had their time. */
      const cutTheRest = (took: number) => {
        rest = setTimeout(
          () => {
            for (const target of targets) {
              if (answers.has(target) || problems.has(target)) continue;
              cut.add(target);
              requests.get(target)?.destroy(new Error('given up'));
            }
          },
          Math.max(share, 2 * took) - took,
        );
      };
      const askOne = async (target: string): Promise<void> => {
        let status = 0;
        let text = '';
        const problem = (kind: ReplicaFailureKind, detail: string) => problems.set(target, { target, kind, detail });
        try {
          const answer = await ask(target, (request) => requests.set(target, request));
          status = answer.statusCode ?? 0;
          if (status >= 500) {
            problem('unavailable', `answered ${status}: ${errorText(await readPrefix(answer, ERROR_BODY_BYTES))}`);
            return;
          }
          text = await answer.setEncoding('utf8').reduce((all: string, chunk: string) => all + chunk, '');
        } catch (err) {
          if (call.canceled) return;
          if (cut.has(target)) {
            const waited = Math.round(performance.now() - started);
            problem('timeout', `no answer within ${waited} ms, while another replica had answered`);
          } else if (call.timedOut) problem('timeout', `no answer within the group's timeout of ${group.timeoutMs} ms`);
          else problem('unavailable', errorMessage(err));
          return;
        }
        try {
          answers.set(target, { status, body: JSON.parse(text) as unknown, target });
        } catch {
          problem('unavailable', `answered ${status} with a body that is not JSON: ${errorText(text)}`);
          return;
        }
        if (rest === undefined && targets.length > 1) cutTheRest(performance.now() - started);
      };
      try {
        await Promise.all(targets.map(askOne));
      } finally {
        clearTimeout(rest);
      }
    };
    try {
      const healthy = group.targets.filter((t) => !passedOver.includes(t));
      await round(healthy.length > 0 ? healthy : passedOver);
      if (healthy.length === 0) passedOver = [];
      else if (answers.size === 0 && passedOver.length > 0 && !call.canceled && !call.timedOut) {
        await round(passedOver);
        passedOver = [];
      }
    } finally {
      call.done();
    }
    if (call.canceled) throw new GroupFailure(group, 'canceled', 'the client went away');
    for (const problem of problems.values()) this.failed(group, problem.target, problem.kind);
    for (const target of answers.keys()) this.failedAt.delete(target);
    if (answers.size === 0) {
      // The group's timeout says itself; what else went wrong is told beside it.
      const said = [...problems.values()].filter((p) => !(call.timedOut && p.kind === 'timeout')).map(replicaSaid);
      throw callFailure(group, { canceled: false, timedOut: call.timedOut }, said);
    }
    const inOrder = <V>(found: Map<string, V>) => group.targets.filter((t) => found.has(t)).map((t) => found.get(t)!);
    return { answers: inOrder(answers), problems: inOrder(problems), passedOver };
  }

  async close(): Promise<void> {
    this.http.destroy();
    this.https.destroy();
  }
}

/** A replica's problem as a phrase naming it: `http://a:8428 answered 500: ...`, `http://a:8428: connect ECONNREFUSED ...`. */
export function replicaSaid(problem: ReplicaProblem): string {
  return problem.detail.startsWith('answered ')
    ? `${problem.target} ${problem.detail}`
    : `${problem.target}: ${problem.detail}`;
}

/** Why a call failed before its answer began: the client gone, the timeout, or (when neither) every replica's problem. */
function callFailure(
  group: ServerGroup,
  ended: { readonly canceled: boolean; readonly timedOut: boolean },
  problems: readonly string[],
): GroupFailure {
  if (ended.canceled) return new GroupFailure(group, 'canceled', 'the client went away');
  const said = problems.length > 0 ? ` (${problems.join('; ')})` : '';
  if (ended.timedOut)
    return new GroupFailure(group, 'timeout', `no answer within the group's timeout of ${group.timeoutMs} ms${said}`);
  return new GroupFailure(group, 'unavailable', `no replica answered${said}`);
}

/** Why an answer that had begun did not end: the group's timeout, or the store breaking it off (`problem`). */
export function breakFailure(group: ServerGroup, timedOut: boolean, problem: string): GroupFailure {
  return timedOut
    ? new GroupFailure(group, 'timeout', `the answer did not end within the group's timeout of ${group.timeoutMs} ms`)
    : new GroupFailure(group, 'unavailable', `the store broke off its answer: ${problem}`);
}

/** A store's error body, short: the Prometheus `error` field when it is one. */
function errorText(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: unknown };
    if (typeof parsed.error === 'string') return parsed.error;
  } catch {
    // not JSON
  }
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat || '(empty body)';
}
