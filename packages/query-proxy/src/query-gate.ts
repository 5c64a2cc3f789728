/**
 * At most `max` queries at once (--query.max-concurrency, as Prometheus has). Prometheus makes
 * every query past it wait for a slot until its timeout; here as many again may wait, each at most
 * the time given, and one past those is answered 503 at once: a flood costs memory in proportion
 * to the limit, not to the flood.
 */
import type { ServerResponse } from 'node:http';
import { ApiError } from './api-answers.js';

export const DEFAULT_MAX_CONCURRENCY = 20;

interface Waiter {
  admit(): void;
}

export class QueryGate {
  private running = 0;
  private readonly waiting: Waiter[] = [];

  constructor(readonly max: number) {}

  /** How many queries hold a slot now. */
  get active(): number {
    return this.running;
  }

  /** Takes a slot for the answer `res`, given back when it closes; waits at most `waitMs` for one. */
  async enter(res: ServerResponse, waitMs: number): Promise<void> {
    if (res.closed) throw new ApiError('canceled', 'the client went away');
    if (this.running < this.max) return this.hold(res);
    if (this.waiting.length >= this.max) {
      throw new ApiError(
        'unavailable',
        `the proxy is running ${this.max} queries (--query.max-concurrency) and ${this.waiting.length} more wait for their turn; try again later`,
      );
    }
    return new Promise<void>((resolve, reject) => {
      const leave = () => {
        clearTimeout(timer);
        res.off('close', gone);
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
      };
      const waiter: Waiter = {
        admit: () => {
          leave();
          this.hold(res);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        leave();
        reject(
          new ApiError(
            'unavailable',
            `the proxy is running ${this.max} queries (--query.max-concurrency) and none ended within ${waitMs} ms; try again later`,
          ),
        );
      }, waitMs);
      const gone = () => {
        leave();
        reject(new ApiError('canceled', 'the client went away'));
      };
      res.once('close', gone);
      this.waiting.push(waiter);
    });
  }

  private hold(res: ServerResponse): void {
    this.running++;
    res.once('close', () => {
      this.running--;
      this.waiting[0]?.admit();
    });
  }
}
