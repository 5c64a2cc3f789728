import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { after, describe, it } from 'node:test';
import { ApiError } from '../../src/api-answers.js';
import { INLINE_PARSE_CHARS, ParsePool } from '../../src/parse-pool.js';
import { parseQuery, PromQLParseError } from '../../src/planner.js';
import { QueryGate } from '../../src/query-gate.js';

describe('ParsePool', () => {
  const pool = new ParsePool();
  after(() => pool.close());

  it('parses a long query in its thread as parseQuery would, errors included', async () => {
    const long = Array.from({ length: 300 }, (_, i) => `rate(m${i}{scrape="short"}[5m])`).join(' or ');
    assert.ok(long.length > INLINE_PARSE_CHARS);
    assert.deepEqual(await pool.parse(long), parseQuery(long));
    const broken = `${long} +`;
    await assert.rejects(pool.parse(broken), (err: unknown) => {
      assert.ok(err instanceof PromQLParseError);
      assert.equal(
        err.message,
        (() => {
          try {
            parseQuery(broken);
          } catch (e) {
            return (e as Error).message;
          }
          return '';
        })(),
      );
      return true;
    });
  });

  it('long parses do not hold up the event loop', async () => {
    // Long chains of binary operators take tens of milliseconds each to parse and walk.
    const heavy = [
      Array.from({ length: 2300 }, (_, i) => `m${i}`).join(' + '),
      Array.from({ length: 2700 }, () => 'up').join(' ^ '),
    ];
    await pool.parse(heavy[0]!); // the thread started and warm
    const delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    const started = performance.now();
    await Promise.all([...heavy, ...heavy, ...heavy].map((q) => pool.parse(q)));
    const took = performance.now() - started;
    delay.disable();
    const maxMs = delay.max / 1e6;
    // The same parses on the event loop, timed alike: what they would have held it up. A busy
    // machine slows both, so the one is judged against the other.
    const inlineStarted = performance.now();
    for (const q of [...heavy, ...heavy, ...heavy]) parseQuery(q);
    const inline = performance.now() - inlineStarted;
    assert.ok(
      maxMs < inline / 3,
      `the event loop was held up ${maxMs.toFixed(1)} ms (the parses took ${took.toFixed(0)} ms in the thread, ${inline.toFixed(0)} ms inline)`,
    );
  });
});

describe('QueryGate', () => {
  const answer = () => Object.assign(new EventEmitter(), { closed: false }) as unknown as ServerResponse;
  const close = (res: ServerResponse) => {
    (res as unknown as { closed: boolean }).closed = true;
    res.emit('close');
  };

  it('admits max at once, lets as many wait, and refuses past them with 503 unavailable', async () => {
    const gate = new QueryGate(2);
    const running = [answer(), answer()];
    for (const res of running) await gate.enter(res, 10_000);
    assert.equal(gate.active, 2);
    const waiting = [answer(), answer()];
    const admitted = waiting.map((res) => gate.enter(res, 10_000));
    await assert.rejects(gate.enter(answer(), 10_000), (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 503);
      assert.equal(err.errorType, 'unavailable');
      assert.match(err.message, /running 2 queries \(--query\.max-concurrency\) and 2 more wait/);
      return true;
    });
    close(running[0]!);
    await admitted[0];
    close(running[1]!);
    await admitted[1];
    assert.equal(gate.active, 2);
    for (const res of waiting) close(res);
    assert.equal(gate.active, 0);
  });

  it('a waiter gives up after its wait, and one whose client went away leaves the line', async () => {
    const gate = new QueryGate(1);
    const first = answer();
    await gate.enter(first, 1000);
    await assert.rejects(gate.enter(answer(), 20), /none ended within 20 ms/);
    const gone = answer();
    const waiting = gate.enter(gone, 10_000);
    close(gone);
    await assert.rejects(waiting, /the client went away/);
    close(first);
    assert.equal(gate.active, 0);
    await gate.enter(answer(), 1000);
    assert.equal(gate.active, 1);
  });
});
