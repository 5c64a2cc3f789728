/**
 * A local mail server that accepts every message (no TLS, no authentication) on a loopback port:
 * where the alert router's mail receiver delivers in tests and in the demo.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SMTPServer } from 'smtp-server';
import { freePort } from './net-utils.js';

export interface ReceivedMail {
  readonly from: string;
  readonly to: readonly string[];
  /** The message as sent (headers and body), CRLF line ends. */
  readonly raw: string;
  /** Subject and body with quoted-printable undone, for assertions on the text. */
  readonly text: string;
  /** Where it was written, when the sink keeps mails in a folder. */
  readonly file?: string;
}

export interface SmtpSink {
  /** `127.0.0.1:<port>`, a mail server's host:port (Alertmanager's smtp_smarthost). */
  readonly address: string;
  readonly port: number;
  /** Mails received so far, oldest first. */
  readonly mails: readonly ReceivedMail[];
  stop(): Promise<void>;
}

export interface SmtpSinkOptions {
  /** Default: a free port. */
  readonly port?: number;
  /** Also write every mail to `<dir>/<time>-<n>.eml`. */
  readonly dir?: string;
  /** Larger mails are refused (default 1 MiB): bounds what one sender can make the sink hold. */
  readonly maxBytes?: number;
  /** At most this many are kept in memory (default 1000; the oldest go first). */
  readonly keep?: number;
}

/**
 * Undoes quoted-printable soft line breaks and `=XX` escapes, so a word split at a line end or an
 * escaped `=` reads as sent. Alertmanager sends its HTML and text parts quoted-printable.
 */
export function decodeQuotedPrintable(text: string): string {
  const joined = text.replace(/=\r?\n/g, '');
  const bytes: number[] = [];
  for (let i = 0; i < joined.length; i++) {
    const hex = joined[i] === '=' ? /^[0-9A-F]{2}$/i.exec(joined.slice(i + 1, i + 3)) : null;
    if (hex) {
      bytes.push(parseInt(hex[0], 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(joined[i]!, 'utf8'));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

export async function startSmtpSink(options: SmtpSinkOptions = {}): Promise<SmtpSink> {
  const port = options.port ?? (await freePort());
  const maxBytes = options.maxBytes ?? 1024 * 1024;
  const keep = options.keep ?? 1000;
  const mails: ReceivedMail[] = [];
  let count = 0;
  if (options.dir !== undefined) mkdirSync(options.dir, { recursive: true });
  const server = new SMTPServer({
    // Plain SMTP on loopback: nothing to encrypt, nobody to authenticate.
    disabledCommands: ['STARTTLS', 'AUTH'],
    size: maxBytes,
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        if (stream.sizeExceeded) {
          callback(Object.assign(new Error(`message larger than ${maxBytes} bytes`), { responseCode: 552 }));
          return;
        }
        const raw = Buffer.concat(chunks).toString('utf8');
        count++;
        let file: string | undefined;
        if (options.dir !== undefined) {
          file = join(options.dir, `${new Date().toISOString().replace(/[:.]/g, '-')}-${count}.eml`);
          writeFileSync(file, raw);
        }
        const from = session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address;
        mails.push({
          from,
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
          text: decodeQuotedPrintable(raw),
          ...(file === undefined ? {} : { file }),
        });
        if (mails.length > keep) mails.shift();
        callback();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  // A client's broken connection must not end the sink (smtp-server reports it as an error event).
  server.on('error', () => undefined);
  return {
    address: `127.0.0.1:${port}`,
    port,
    mails,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
