/**
 * Test helpers for the payment drivers: a throwaway HTTP server on 127.0.0.1 playing a gateway.
 * Not used by production code.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StubRequest {
  method: string;
  /** Path and query, exactly as sent. */
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface StubAnswer {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface Stub {
  url: string;
  requests: StubRequest[];
  close(): Promise<void>;
}

export async function startStub(handle: (req: StubRequest) => StubAnswer | Promise<StubAnswer>): Promise<Stub> {
  const requests: StubRequest[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const r: StubRequest = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(r);
      try {
        const a = await handle(r);
        res.writeHead(a.status ?? 200, a.headers ?? {});
        res.end(a.body ?? '');
      } catch (e) {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(String(e));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
