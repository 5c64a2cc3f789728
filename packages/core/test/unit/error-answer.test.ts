import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CachemonError, Errors, toErrorAnswer } from '../../src/index.js';

function fastifyLike(statusCode: number, code: string, message: string): Error {
  return Object.assign(new Error(message), { statusCode, code });
}

describe('toErrorAnswer', () => {
  it('uses a CachemonError as it is', () => {
    assert.deepEqual(toErrorAnswer(new CachemonError(Errors.NODE_TIMEOUT, 'node a:1 did not answer')), {
      status: 504,
      body: { status: 'error', code: 'CACHEMON_NODE_TIMEOUT', error: 'node a:1 did not answer' },
    });
  });

  const table: Array<[Error, number, string]> = [
    [fastifyLike(413, 'FST_ERR_CTP_BODY_TOO_LARGE', 'Request body is too large'), 413, Errors.BODY_TOO_LARGE.code],
    [fastifyLike(400, 'FST_ERR_CTP_INVALID_JSON_BODY', 'bad json'), 400, Errors.BAD_REQUEST.code],
    [
      fastifyLike(415, 'FST_ERR_CTP_INVALID_MEDIA_TYPE', 'Unsupported Media Type'),
      415,
      Errors.UNSUPPORTED_MEDIA_TYPE.code,
    ],
    [fastifyLike(404, 'X', 'gone'), 404, Errors.NOT_FOUND.code],
    [new Error('boom'), 500, Errors.INTERNAL.code],
  ];
  for (const [err, status, code] of table) {
    it(`maps ${err.message} to ${status} ${code}`, () => {
      const answer = toErrorAnswer(err);
      assert.equal(answer.status, status);
      assert.equal(answer.body.code, code);
      assert.equal(answer.body.status, 'error');
      assert.ok(answer.body.error.includes(err.message));
    });
  }

  it('describes a thrown non-error', () => {
    assert.deepEqual(toErrorAnswer('oops').body, {
      status: 'error',
      code: 'CACHEMON_INTERNAL',
      error: 'internal error: oops',
    });
  });
});
