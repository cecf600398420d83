/**
 * How the server's log reaches its standard output: JSON lines for whatever collects them (a file,
 * journald, a pipe), readable lines for a person at a terminal. `LOG_FORMAT=auto` decides by whether
 * standard output is a terminal; `pretty` and `json` force one (a tool that pipes the output and
 * shows it to a person wants `pretty`).
 *
 * The readable form is one line per request (status, method, path, time) instead of Fastify's two
 * objects, and a verification code sent through the embedded outbox gets a line of its own that
 * stands out, since a developer logging in reads it from here.
 */
import { prettyFactory } from 'pino-pretty';

export type LogFormat = 'auto' | 'pretty' | 'json';

/** What the log is written to: standard output, or a test's stand-in. */
export interface LogOutput {
  isTTY?: boolean;
  write(text: string): unknown;
}

/** Fastify's logger options: JSON straight to standard output (pino's default), or the readable stream. */
export function serverLoggerOptions(
  level: string,
  format: LogFormat,
  out: LogOutput = process.stdout,
): { level: string; stream?: { write(line: string): void } } {
  const readable = format === 'pretty' || (format === 'auto' && out.isTTY === true);
  return readable ? { level, stream: readableLog(out, out.isTTY === true) } : { level };
}

/** A request between its 'incoming request' and 'request completed' entries. */
interface OpenRequest {
  method: string;
  url: string;
}

/** Requests whose start was seen; bounded, so requests that never complete (aborted sockets) cannot grow it. */
const OPEN_REQUESTS_KEPT = 1000;

/** The outbox drivers' messages (drivers/outbox.ts): their `code` is the verification code. */
const OUTBOX_MESSAGE = /^\[(短信|邮件)发件箱\]/;

/** A pino destination that writes each JSON entry as one readable line. */
export function readableLog(out: LogOutput, colors: boolean): { write(line: string): void } {
  const pretty = prettyFactory({ colorize: colors, translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname,reqId,req,res,responseTime', singleLine: true });
  const open = new Map<string, OpenRequest>();
  const bold = (text: string) => (colors ? `\x1b[1;30;43m${text}\x1b[0m` : text);
  return {
    write(line: string) {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        out.write(line);
        return;
      }
      const reqId = typeof entry.reqId === 'string' ? entry.reqId : null;
      const req = entry.req as Partial<OpenRequest> | undefined;
      if (entry.msg === 'incoming request' && reqId && req) {
        if (open.size >= OPEN_REQUESTS_KEPT) open.delete(open.keys().next().value!);
        open.set(reqId, { method: String(req.method), url: String(req.url) });
        return;
      }
      const res = entry.res as { statusCode?: number } | undefined;
      if (entry.msg === 'request completed' && reqId && res) {
        const started = open.get(reqId);
        open.delete(reqId);
        const took = typeof entry.responseTime === 'number' ? ` ${Math.round(entry.responseTime)} ms` : '';
        entry = { ...entry, msg: `${res.statusCode} ${started ? `${started.method} ${started.url}` : '(请求开始未记录)'}${took}` };
      }
      out.write(pretty(entry));
      if (typeof entry.msg === 'string' && OUTBOX_MESSAGE.test(entry.msg) && typeof entry.code === 'string' && entry.code)
        out.write(`${bold(`  验证码 ${entry.code}  →  ${String(entry.to ?? '')}  `)}\n`);
    },
  };
}
