/**
 * Any ModelUpstream as an OpenAI-compatible HTTP server (`/v1/models`, `/v1/chat/completions`,
 * `/v1/completions`, `/v1/embeddings`; streams as SSE ending in `data: [DONE]`). The tests' fake
 * upstreams and the gateway benchmark's upstream are the embedded model served through this, so the
 * gateway meets it the way it meets a real provider: over HTTP.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isUpstreamStream, type ModelUpstream, type UpstreamError, type UpstreamStream } from './types.js';

/** Answers one request from the upstream. */
export async function answerFromUpstream(upstream: ModelUpstream, req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
  const abort = new AbortController();
  res.on('close', () => {
    if (!res.writableEnded) abort.abort();
  });
  try {
    if (req.method === 'GET' && req.url === '/v1/models') return sendJson(res, 200, { object: 'list', data: await upstream.models() });
    const result =
      req.url === '/v1/chat/completions'
        ? await upstream.chat(body as never, abort.signal)
        : req.url === '/v1/completions'
          ? await upstream.completion(body as never, abort.signal)
          : req.url === '/v1/embeddings'
            ? await upstream.embeddings(body as never, abort.signal)
            : null;
    if (result === null) return sendJson(res, 404, { error: { message: `unknown path ${req.url}`, type: 'invalid_request_error', code: 'unknown_url' } });
    if (!isUpstreamStream(result)) return sendJson(res, 200, result);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for await (const c of result as UpstreamStream<unknown>) {
      if (abort.signal.aborted) break;
      res.write(`data: ${JSON.stringify(c)}\n\n`);
    }
    res.end('data: [DONE]\n\n');
  } catch (err) {
    const e = err as Partial<UpstreamError>;
    if (!res.headersSent) sendJson(res, e.status ?? 500, e.body ?? { error: { message: String(err), type: 'server_error' } });
    else res.destroy();
  }
}

/** Serves the upstream on a free loopback port; resolves to the server and its base URL (…/v1). */
export async function serveUpstream(
  upstream: ModelUpstream,
  host = '127.0.0.1',
  port = 0,
): Promise<{ server: Server; baseUrl: string; close: () => Promise<void> }> {
  const server = createServer(async (req, res) => {
    let raw = '';
    for await (const part of req) raw += part;
    let body: unknown;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      return sendJson(res, 400, { error: { message: 'request body is not JSON', type: 'invalid_request_error', code: 'invalid_json' } });
    }
    await answerFromUpstream(upstream, req, res, body);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const baseUrl = `http://${host}:${(server.address() as AddressInfo).port}/v1`;
  return {
    server,
    baseUrl,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function sendJson(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
