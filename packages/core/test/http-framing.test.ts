import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AnswerFramer, parseRequestHead } from '../src/http-framing.js';

/** Feeds `bytes` cut at `cuts`; returns the framer, the body and how many bytes it took. */
function feed(bytes: Buffer, cuts: number[], noBody = false): { framer: AnswerFramer; body: string; used: number } {
  const pieces: Buffer[] = [];
  const framer = new AnswerFramer((piece) => pieces.push(Buffer.from(piece)), noBody);
  let used = 0;
  let from = 0;
  for (const to of [...cuts, bytes.length]) {
    if (framer.done) break;
    used += framer.push(bytes.subarray(from, to));
    from = to;
  }
  return { framer, body: Buffer.concat(pieces).toString('latin1'), used };
}

describe('AnswerFramer', () => {
  const chunked = Buffer.from(
    'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n' +
      '5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: 1\r\n\r\n' +
      'HTTP/1.1 200 OK\r\n', // the next answer's first bytes: not this one's
  );
  const chunkedLength = chunked.length - 'HTTP/1.1 200 OK\r\n'.length;
  const fixed = Buffer.from('HTTP/1.1 404 Not Found\r\ncontent-length: 11\r\ncontent-encoding: gzip\r\n\r\nhello worldXYZ');

  it('reads a chunked answer cut at every byte, and at every pair of places: the body, the end, nothing of what follows', () => {
    for (let a = 0; a <= chunked.length; a++) {
      for (const b of a % 7 === 0 ? Array.from({ length: chunked.length - a + 1 }, (_, i) => a + i) : [a]) {
        const { framer, body, used } = feed(chunked, a === b ? [a] : [a, b]);
        assert.equal(framer.done, true, `cut at ${a}, ${b}`);
        assert.equal(body, 'hello, world');
        assert.equal(used, chunkedLength, `cut at ${a}, ${b}`);
        assert.equal(framer.status, 200);
        assert.equal(framer.headers.get('content-type'), 'application/json');
      }
    }
  });

  it('reads a Content-Length answer cut at every byte, leaving what follows', () => {
    for (let a = 0; a <= fixed.length; a++) {
      const { framer, body, used } = feed(fixed, [a]);
      assert.equal(framer.done, true);
      assert.equal(body, 'hello world');
      assert.equal(used, fixed.length - 3);
      assert.equal(framer.status, 404);
      assert.equal(framer.headers.get('content-encoding'), 'gzip');
    }
  });

  it('an answer to HEAD, a 204 and a 304 end with their head', () => {
    assert.equal(feed(Buffer.from('HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\n'), [], true).framer.done, true);
    assert.equal(feed(Buffer.from('HTTP/1.1 204 No Content\r\n\r\n'), []).framer.done, true);
    assert.equal(feed(Buffer.from('HTTP/1.1 304 Not Modified\r\ncontent-length: 9\r\n\r\n'), []).framer.done, true);
    assert.equal(feed(Buffer.from('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'), []).framer.done, true);
  });

  it('a cut answer is not done; garbage, a bad chunk size, chunk data longer than said and a body without length throw', () => {
    assert.equal(feed(chunked.subarray(0, 100), []).framer.done, false);
    assert.equal(feed(fixed.subarray(0, fixed.length - 5), []).framer.done, false);
    const bad = (text: string, message: RegExp) => assert.throws(() => feed(Buffer.from(text), []), message);
    bad('SSH-2.0-OpenSSH\r\n\r\n', /not an HTTP answer/);
    bad('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n', /bad chunk-size line/);
    bad('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabc\r\n', /longer than its size/);
    bad('HTTP/1.1 200 OK\r\n\r\nbody', /without a usable length/);
    bad('HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n', /transfer-encoding gzip/);
    bad('HTTP/1.1 100 Continue\r\n\r\n', /interim answer/);
    bad('HTTP/1.1 200 OK\r\nno colon\r\n\r\n', /malformed header line/);
    assert.throws(() => new AnswerFramer(() => undefined, false, 100).push(Buffer.alloc(200, 'a')), /head longer than 100 bytes/);
  });
});

describe('parseRequestHead', () => {
  it('takes a GET and a form POST, with their target, headers, length and keep-alive', () => {
    const post = parseRequestHead('POST /api/v1/query?x=1 HTTP/1.1\r\nHost: a\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 12');
    assert.deepEqual(post && { ...post, headers: Object.fromEntries(post.headers) }, {
      method: 'POST',
      target: '/api/v1/query?x=1',
      headers: { host: 'a', 'content-type': 'application/x-www-form-urlencoded', 'content-length': '12' },
      contentLength: 12,
      keepAlive: true,
    });
    assert.equal(parseRequestHead('GET / HTTP/1.1\r\nHost: a')?.contentLength, 0);
    assert.equal(parseRequestHead('GET / HTTP/1.1\r\nConnection: close')?.keepAlive, false);
    assert.equal(parseRequestHead('GET / HTTP/1.1\r\nConnection: keep-alive, Close')?.keepAlive, false);
  });

  it('leaves to node:http what it might read otherwise: other versions and methods, framing and upgrade headers, repeats, folds, bad lengths and bytes', () => {
    for (const head of [
      'GET / HTTP/1.0',
      'HEAD / HTTP/1.1',
      'PUT / HTTP/1.1',
      'GET  / HTTP/1.1',
      'GET http://a/ HTTP/1.1',
      'GET / HTTP/1.1\r\nTransfer-Encoding: chunked',
      'GET / HTTP/1.1\r\nExpect: 100-continue',
      'GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade',
      'GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1',
      'GET / HTTP/1.1\r\nContent-Length: -1',
      'GET / HTTP/1.1\r\nContent-Length: 1e3',
      'GET / HTTP/1.1\r\nX-A: 1\r\n  folded',
      'GET / HTTP/1.1\r\nBad Name: 1',
      'GET / HTTP/1.1\r\nX-A: a\x01b',
      'GET /\x7f HTTP/1.1',
    ]) {
      assert.equal(parseRequestHead(head), undefined, JSON.stringify(head));
    }
  });
});
