import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { LOG_SERIALIZERS } from './http/log.js';
import { serverLoggerOptions, type LogOutput } from './log-format.js';

/** A stand-in for standard output: a terminal or not. */
function output(isTTY: boolean): LogOutput & { text: () => string } {
  const chunks: string[] = [];
  return { isTTY, write: (t: string) => chunks.push(t), text: () => chunks.join('') };
}

/** A server logging as main.ts sets it up: one request, one SMS code as the outbox driver logs it. */
async function logSession(out: LogOutput, format: 'auto' | 'pretty' | 'json') {
  const options = serverLoggerOptions('info', format, out);
  // Without a stream pino writes to file descriptor 1: the stand-in is handed over as the stream to read what it wrote.
  const app = Fastify({ logger: { ...options, stream: options.stream ?? out, serializers: LOG_SERIALIZERS } });
  app.get('/api/page', async () => ({ ok: true }));
  await app.inject({ url: '/api/page?x=1' });
  app.log.info({ to: '13800000000', code: '482913', scene: 'login' }, '[短信发件箱] 发往 13800000000：您的验证码是 482913');
  await app.close();
  return options;
}

describe('the server log', () => {
  it('at a terminal: readable lines, one per request, and the verification code on a line of its own', async () => {
    const out = output(true);
    const options = await logSession(out, 'auto');
    expect(options.stream).toBeDefined();
    const lines = out.text().split('\n').filter(Boolean);
    // No JSON objects as lines; the request is one line with its status, method, path and time.
    expect(lines.every((l) => !l.trimStart().startsWith('{'))).toBe(true);
    const requestLines = lines.filter((l) => l.includes('/api/page'));
    expect(requestLines).toHaveLength(1);
    expect(requestLines[0]).toMatch(/200 GET \/api\/page\?x=1 \d+ ms/);
    expect(lines.some((l) => l.includes('incoming request'))).toBe(false);
    expect(lines.find((l) => l.includes('验证码 482913 ') && l.includes('→  13800000000'))).toBeDefined();
  });

  it('into a pipe or a file: JSON lines, unless LOG_FORMAT=pretty asks for the readable form', async () => {
    const piped = output(false);
    expect((await logSession(piped, 'auto')).stream).toBeUndefined();
    const entries = piped
      .text()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { msg: string; code?: string });
    expect(entries.map((e) => e.msg)).toContain('incoming request');
    expect(entries.find((e) => e.code === '482913')).toBeDefined();

    const forced = output(false);
    await logSession(forced, 'pretty');
    expect(forced.text()).toMatch(/200 GET \/api\/page\?x=1/);
    // Without a terminal there are no colour codes.
    expect(forced.text()).not.toContain('\x1b[');

    const terminalJson = output(true);
    expect((await logSession(terminalJson, 'json')).stream).toBeUndefined();
  });
});
