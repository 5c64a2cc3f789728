/** What a running component says of itself over HTTP, each request bounded in time and size. */
import { readFileSync } from 'node:fs';

export interface Answer {
  readonly status: number;
  readonly text: string;
}

const MAX_BODY = 32 << 20;

/** One HTTP request to `http://<address><path>`; rejects with a reason an operator can read. */
export async function request(
  address: string,
  path: string,
  options: { method?: string; timeoutMs?: number } = {},
): Promise<Answer> {
  const url = `http://${address}${path}`;
  let response: Response;
  try {
    response = await fetch(url, {
      method: options.method ?? 'GET',
      signal: AbortSignal.timeout(options.timeoutMs ?? 5_000),
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    const name = (error as Error).name;
    throw new Error(
      `${options.method ?? 'GET'} ${url}: ${cause === 'ECONNREFUSED' ? 'connection refused' : name === 'TimeoutError' ? 'no answer in time' : (cause ?? (error as Error).message)}`,
    );
  }
  const length = Number(response.headers.get('content-length') ?? 0);
  if (length > MAX_BODY) {
    await response.body?.cancel();
    throw new Error(`${url}: answer of ${length} bytes is too large`);
  }
  return { status: response.status, text: await response.text() };
}

/** A POST that must answer 2xx: the reload endpoints. */
export async function post(address: string, path: string, timeoutMs = 30_000): Promise<string> {
  const answer = await request(address, path, { method: 'POST', timeoutMs });
  if (answer.status < 200 || answer.status > 299)
    throw new Error(`POST http://${address}${path}: ${answer.status} ${answer.text.trim().slice(0, 500)}`);
  return answer.text;
}

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** The samples of a text exposition whose names are wanted (all when none). */
export function parseMetrics(text: string, wanted?: ReadonlySet<string>): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = LINE.exec(line);
    if (!match || (wanted && !wanted.has(match[1]!))) continue;
    const labels: Record<string, string> = {};
    for (const l of (match[2] ?? '').matchAll(LABEL))
      labels[l[1]!] = l[2]!.replace(/\\n/g, '\n').replace(/\\(["\\])/g, '$1');
    out.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return out;
}

/** When a process started, in unix seconds (undefined when /proc cannot tell). */
export function processStart(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    const ticks = Number(fields[19]);
    // The boot time from the uptime, not /proc/stat's btime: btime is cut to whole seconds, which
    // put a start up to a second early, before the config it was started with was written.
    const uptime = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
    // Linux's USER_HZ is 100 on every architecture the stack runs on.
    return Number.isFinite(uptime) && Number.isFinite(ticks) ? Date.now() / 1000 - uptime + ticks / 100 : undefined;
  } catch {
    return undefined;
  }
}
