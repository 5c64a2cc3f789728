import { request as httpRequest, type Agent, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';

export interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  readonly text: string;
}

export interface RequestOptions {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string | Buffer;
  readonly agent?: Agent;
  /** TLS: trust this CA; without it certificates are not checked. */
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
  readonly maxVersion?: 'TLSv1.2' | 'TLSv1.3';
}

/** Raw request: no decompression and no redirects, so tests see exactly what the server sent. */
export function fetchRaw(url: string, options: RequestOptions = {}): Promise<Answer> {
  const target = new URL(url);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      target,
      {
        method: options.method ?? 'GET',
        headers: options.headers ?? {},
        ...(options.agent === undefined ? {} : { agent: options.agent }),
        ...(target.protocol === 'https:'
          ? {
              rejectUnauthorized: options.ca !== undefined,
              ...(options.ca === undefined ? {} : { ca: options.ca }),
              ...(options.cert === undefined ? {} : { cert: options.cert, key: options.key }),
              ...(options.maxVersion === undefined ? {} : { maxVersion: options.maxVersion }),
            }
          : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text: body.toString('utf8') });
        });
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

export function parseJson(answer: Answer): Record<string, unknown> {
  return JSON.parse(answer.text) as Record<string, unknown>;
}
