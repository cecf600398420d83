/**
 * The relay between the browser and a WebSocket of a machine's service holds neither side's flood in
 * the console's memory (the machine's root may run anything on the service's port): a service that
 * floods a browser that does not read is no longer read until the browser catches up, what the browser
 * sends before the service's handshake is bounded, and a service's frame over the limit is refused.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { pairSockets, serviceSocket, WS_MAX_MESSAGE, WS_WAITING_MAX } from './machine-proxy.js';

const MiB = 1024 * 1024;
const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

async function listening<T extends net.Server | WebSocketServer>(server: T): Promise<number> {
  await new Promise<void>((r) => server.once('listening', () => r()));
  const address = server.address() as AddressInfo;
  closers.push(() => server.close());
  return address.port;
}

/** The console's side: each browser connection relayed to the service at `port`, as machine-proxy does. */
async function consoleRelay(port: number) {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', maxPayload: WS_MAX_MESSAGE });
  const sides: WebSocket[] = [];
  const upstreams: WebSocket[] = [];
  wss.on('connection', (client) => {
    const upstream = serviceSocket(`ws://127.0.0.1:${port}/`);
    sides.push(client);
    upstreams.push(upstream);
    pairSockets(client, upstream);
  });
  const at = await listening(wss);
  closers.push(() => [...sides, ...upstreams].forEach((s) => s.terminate()));
  return { url: `ws://127.0.0.1:${at}/`, sides, upstreams };
}

function browser(url: string): Promise<WebSocket> {
  const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 64 * MiB });
  closers.push(() => ws.terminate());
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

function closed(ws: WebSocket): Promise<number> {
  return new Promise((r) => ws.once('close', (code) => r(code)));
}

describe('the WebSocket relay of a machine service', () => {
  it('does not read a flooding service faster than the browser reads', async () => {
    const TOTAL = 128;
    let sent = 0;
    let done = false;
    const service = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    // The service sends as fast as its socket takes it (its own memory stays small): 1 MiB frames.
    service.on('connection', (ws) => {
      const frame = Buffer.alloc(MiB, 7);
      const next = () => {
        if (sent === TOTAL) return void (done = true);
        ws.send(frame, { binary: true }, (err) => {
          if (err) return;
          sent++;
          next();
        });
      };
      next();
    });
    const relay = await consoleRelay(await listening(service));
    const reader = await browser(relay.url);
    reader.pause(); // the browser reads nothing
    const seen = { at: -1 };
    // Look once the service has been held for a while (or has sent it all: the relay read it whole).
    while (!done && seen.at !== sent) {
      seen.at = sent;
      await new Promise((r) => setTimeout(r, 300));
    }
    const held = relay.sides[0]!.bufferedAmount;
    expect(done, `the service sent ${sent} MiB`).toBe(false);
    expect(held).toBeLessThan(8 * MiB);

    // The browser reads again: everything comes through.
    let got = 0;
    const all = new Promise<void>((r) =>
      reader.on('message', (data: Buffer) => {
        got += data.length;
        if (got === TOTAL * MiB) r();
      }),
    );
    reader.resume();
    await all;
  }, 60_000);

  it('does not read a flooding browser faster than the service reads', async () => {
    const TOTAL = 128;
    const service = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    let read = 0;
    const reading = new Promise<WebSocket>((r) =>
      service.on('connection', (ws) => {
        ws.pause(); // the service reads nothing
        ws.on('message', (data: Buffer) => (read += data.length));
        r(ws);
      }),
    );
    const relay = await consoleRelay(await listening(service));
    const flooder = await browser(relay.url);
    const paused = await reading;
    await new Promise<void>((r) => (relay.upstreams[0]!.readyState === WebSocket.OPEN ? r() : relay.upstreams[0]!.once('open', () => r())));
    let sent = 0;
    let done = false;
    const frame = Buffer.alloc(MiB, 9);
    const next = () => {
      if (sent === TOTAL) return void (done = true);
      flooder.send(frame, { binary: true }, (err) => {
        if (err) return;
        sent++;
        next();
      });
    };
    next();
    const seen = { at: -1 };
    while (!done && seen.at !== sent) {
      seen.at = sent;
      await new Promise((r) => setTimeout(r, 300));
    }
    expect(done, `the browser sent ${sent} MiB`).toBe(false);
    expect(relay.upstreams[0]!.bufferedAmount).toBeLessThan(8 * MiB);

    const all = new Promise<void>((r) => paused.on('message', () => read === TOTAL * MiB && r()));
    paused.resume();
    await all;
  }, 60_000);

  it('closes a browser that sends more than it may while the service has not answered yet', async () => {
    // A "service" that takes the connection and never completes the handshake.
    const mute = net.createServer((socket) => closers.push(() => socket.destroy()));
    mute.listen(0, '127.0.0.1');
    const relay = await consoleRelay(await listening(mute));
    const ws = await browser(relay.url);
    const code = closed(ws);
    const chunk = Buffer.alloc(MiB, 1);
    for (let i = 0; i <= WS_WAITING_MAX / MiB; i++) ws.send(chunk);
    expect(await code).toBe(1013);
  });

  it("refuses a service's frame over the limit, which the browser never gets", async () => {
    const service = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    service.on('connection', (ws) => ws.send(Buffer.alloc(WS_MAX_MESSAGE + 1)));
    const relay = await consoleRelay(await listening(service));
    const ws = await browser(relay.url);
    let got = 0;
    ws.on('message', () => got++);
    expect(await closed(ws)).toBe(1011);
    expect(got).toBe(0);
  });
});
