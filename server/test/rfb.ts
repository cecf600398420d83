/**
 * A VNC (RFB 3.8) client for tests, over the console's desktop WebSocket, that speaks what noVNC
 * speaks for the clipboard: the extended clipboard (pseudo-encoding 0xC0A1E5CE), whose text is
 * UTF-8, so Chinese crosses it. It asks for no screen updates: only clipboard messages arrive.
 */
import { inflateSync, deflateSync, constants } from 'node:zlib';
import WebSocket from 'ws';

const EXTENDED_CLIPBOARD = 0xc0a1e5ce | 0;
const CAPS = 1 << 24;
const REQUEST = 1 << 25;
const NOTIFY = 1 << 27;
const PROVIDE = 1 << 28;
const TEXT = 1;

export interface RfbClipboard {
  /** Makes text the browser's clipboard, as noVNC does: announced (notify), handed over when the desktop asks for it. */
  paste(text: string): void;
  /** The next clipboard text the desktop hands over. */
  nextCopy(): Promise<string>;
  close(): void;
}

/** Connects (security type None), shares the desktop and announces the extended clipboard; resolves once the server answered with its own. */
export async function rfbClipboard(url: string, headers: Record<string, string>): Promise<RfbClipboard> {
  const ws = new WebSocket(url, { headers });
  let buf = Buffer.alloc(0);
  const waiters: { n: number; resolve: (b: Buffer) => void }[] = [];
  const pump = () => {
    while (waiters.length && buf.length >= waiters[0]!.n) {
      const w = waiters.shift()!;
      w.resolve(buf.subarray(0, w.n));
      buf = buf.subarray(w.n);
    }
  };
  ws.on('message', (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    pump();
  });
  const read = (n: number) => new Promise<Buffer>((resolve) => (waiters.push({ n, resolve }), pump()));
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));

  await read(12);
  ws.send(Buffer.from('RFB 003.008\n'));
  const types = await read((await read(1))[0]!);
  if (!types.includes(1)) throw new Error(`the server offers no security type None: ${[...types].join(',')}`);
  ws.send(Buffer.from([1]));
  await read(4);
  ws.send(Buffer.from([1])); // shared
  const init = await read(24);
  await read(init.readUInt32BE(20));
  const encodings = Buffer.alloc(12);
  encodings[0] = 2;
  encodings.writeUInt16BE(2, 2);
  encodings.writeInt32BE(0, 4);
  encodings.writeInt32BE(EXTENDED_CLIPBOARD, 8);
  ws.send(encodings);

  /** Reads server messages until an extended clipboard one: its flags and payload. */
  async function nextExtended(): Promise<{ flags: number; payload: Buffer }> {
    for (;;) {
      const type = (await read(1))[0];
      if (type === 2) continue; // bell
      if (type !== 3) throw new Error(`unexpected server message ${type}`);
      const length = (await read(7)).readInt32BE(3);
      const body = await read(Math.abs(length));
      if (length < 0) return { flags: body.readUInt32BE(0), payload: body.subarray(4) };
    }
  }
  if (!((await nextExtended()).flags & CAPS)) throw new Error('the server did not announce the extended clipboard');
  // Our capabilities, noVNC's: text up to 1 MB; asking, announcing and handing over.
  const size = Buffer.alloc(4);
  size.writeUInt32BE(1 << 20);
  ws.send(extended(CAPS | REQUEST | NOTIFY | PROVIDE | TEXT, size));

  let pasted = '';
  const copies: string[] = [];
  const copyWaiters: ((text: string) => void)[] = [];
  void (async () => {
    for (;;) {
      const m = await nextExtended();
      if (m.flags & REQUEST && m.flags & TEXT) ws.send(extended(PROVIDE | TEXT, textPayload(pasted)));
      else if (m.flags & NOTIFY && m.flags & TEXT) ws.send(extended(REQUEST | TEXT, Buffer.alloc(0)));
      else if (m.flags & PROVIDE && m.flags & TEXT) {
        const data = inflateSync(m.payload, { finishFlush: constants.Z_SYNC_FLUSH });
        const text = data
          .subarray(4, 4 + data.readUInt32BE(0))
          .toString('utf8')
          .replace(/\0$/, '')
          .replace(/\r\n/g, '\n');
        const waiter = copyWaiters.shift();
        if (waiter) waiter(text);
        else copies.push(text);
      }
    }
  })().catch(() => {}); // the connection closed

  return {
    paste(text) {
      pasted = text;
      ws.send(extended(NOTIFY | TEXT, Buffer.alloc(0)));
    },
    nextCopy: () => (copies.length ? Promise.resolve(copies.shift()!) : new Promise((resolve) => copyWaiters.push(resolve))),
    close: () => ws.close(),
  };
}

/** A provide's payload: the text's length and the text (UTF-8, NUL-terminated), deflated. */
function textPayload(text: string): Buffer {
  const utf8 = Buffer.from(`${text}\0`);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(utf8.length);
  return deflateSync(Buffer.concat([length, utf8]));
}

/** An extended clipboard message of the client: a cut text message with a negative length, then flags and payload. */
function extended(flags: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(12);
  head[0] = 6;
  head.writeInt32BE(-(4 + payload.length), 4);
  head.writeUInt32BE(flags >>> 0, 8);
  return Buffer.concat([head, payload]);
}
