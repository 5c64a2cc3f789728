/** Exponential backoff, jittered so that many nodes failing at once do not retry in lock step. */

export interface BackoffOptions {
  /** First delay. Default 100 ms; no delay is ever shorter. */
  minMs?: number;
  /** Cap. Default 30 000 ms; no delay is ever longer. */
  maxMs?: number;
  /** Growth per failure. Default 2. */
  factor?: number;
  /** Spread as a fraction of the delay, 0..1. Default 0.2 (+-20%). */
  jitter?: number;
  /** Source of randomness in [0, 1); tests pass a fixed one. */
  random?: () => number;
}

export class Backoff {
  private readonly minMs: number;
  private readonly maxMs: number;
  private readonly factor: number;
  private readonly jitter: number;
  private readonly random: () => number;
  private base: number;
  private failures = 0;

  constructor(options: BackoffOptions = {}) {
    this.minMs = options.minMs ?? 100;
    this.maxMs = Math.max(this.minMs, options.maxMs ?? 30_000);
    this.factor = options.factor ?? 2;
    this.jitter = Math.min(1, Math.max(0, options.jitter ?? 0.2));
    this.random = options.random ?? Math.random;
    this.base = this.minMs;
  }

  /** Number of next() calls since the last reset(). */
  get attempts(): number {
    return this.failures;
  }

  /** Delay before the next attempt, in ms; each call grows the next one. */
  next(): number {
    const base = this.base;
    this.base = Math.min(this.maxMs, base * this.factor);
    this.failures++;
    const spread = base * this.jitter * (2 * this.random() - 1);
    return Math.round(Math.min(this.maxMs, Math.max(this.minMs, base + spread)));
  }

  /** Back to the first delay, after a success. */
  reset(): void {
    this.base = this.minMs;
    this.failures = 0;
  }
}
