/**
 * The embedded ComfyUI's answers where ComfyUI's own rules decide: uploads keep both files when a
 * name is taken by other bytes (`name (1).png`), one with the same bytes is the same file, a name
 * leading out of its folder is refused, and everything is also under `/api`. What it holds of uploads
 * is bounded: the oldest go past 64 MiB, and at most two are read at once (others are told to retry).
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../clock.js';
import { EmbeddedComfy } from './embedded-comfy.js';

const comfy = new EmbeddedComfy(systemClock);
let base = '';
beforeAll(async () => void (base = await comfy.url()));
afterAll(() => comfy.close());

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==', 'base64');

async function upload(name: string, bytes: Buffer, fields: Record<string, string> = {}) {
  const form = new FormData();
  form.append('image', new Blob([bytes]), name);
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  const res = await fetch(`${base}/upload/image`, { method: 'POST', body: form });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('the embedded ComfyUI', () => {
  it('uploads as ComfyUI does: a taken name gets a number, the same bytes the same name, overwrite replaces', async () => {
    expect((await upload('a.png', PNG)).body).toEqual({ name: 'a.png', subfolder: '', type: 'input' });
    expect((await upload('a.png', PNG)).body.name).toBe('a.png');
    const other = Buffer.concat([PNG, Buffer.from([0])]);
    expect((await upload('a.png', other)).body.name).toBe('a (1).png');
    expect((await upload('a.png', other, { overwrite: 'true' })).body.name).toBe('a.png');
    const listed = await fetch(`${base}/api/internal/files/input`);
    expect(await listed.json()).toEqual(['a (1).png', 'a.png']);
    const view = await fetch(`${base}/api/view?filename=a.png&type=input`);
    expect(Buffer.from(await view.arrayBuffer()).equals(other)).toBe(true);
    expect((await upload('b.png', PNG, { subfolder: 'pets' })).body).toEqual({ name: 'b.png', subfolder: 'pets', type: 'input' });
    expect((await fetch(`${base}/view?filename=b.png&type=input&subfolder=pets`)).status).toBe(200);
  });

  it('refuses names that lead out of their folder, and what is not an upload', async () => {
    expect((await upload('../x.png', PNG)).status).toBe(400);
    expect((await upload('x.png', PNG, { subfolder: '../up' })).status).toBe(400);
    expect((await upload('x.png', PNG, { type: 'models' })).status).toBe(400);
    expect((await fetch(`${base}/upload/image`, { method: 'POST', body: 'x' })).status).toBe(400);
    expect((await fetch(`${base}/view?filename=..%2Fx.png&type=input`)).status).toBe(400);
    expect((await fetch(`${base}/view?filename=x.png&type=input&subfolder=..`)).status).toBe(400);
    expect((await fetch(`${base}/models/nope`)).status).toBe(404);
    expect(await (await fetch(`${base}/api/object_info/NoSuchNode`)).json()).toEqual({});
  });

  it('keeps at most 64 MiB of uploads, dropping the oldest', async () => {
    const big = (n: number) => Buffer.concat([PNG, Buffer.alloc(19 * 1024 * 1024, n)]);
    for (const n of [1, 2, 3, 4]) expect((await upload(`big-${n}.png`, big(n), { subfolder: 'big' })).status).toBe(200);
    const seen = async (n: number) => (await fetch(`${base}/view?filename=big-${n}.png&type=input&subfolder=big`)).status;
    expect(await seen(1)).toBe(404);
    expect(await seen(4)).toBe(200);
    expect(Buffer.from(await (await fetch(`${base}/view?filename=big-4.png&type=input&subfolder=big`)).arrayBuffer()).equals(big(4))).toBe(true);
  });

  it('reads two uploads at once; a third is told to retry, and the two go on', async () => {
    const boundary = 'held-upload';
    const head = Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="image"; filename="held.png"\r\ncontent-type: image/png\r\n\r\n`);
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    // An upload whose body stops half way, until `finish`; it is being read once the server asked for the body.
    const held = async () => {
      const req = http.request(`${base}/upload/image`, {
        method: 'POST',
        headers: {
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': head.length + PNG.length + tail.length,
          expect: '100-continue',
        },
      });
      const answer = new Promise<number>((resolve, reject) => {
        req.once('response', (res) => resolve(res.resume().statusCode!));
        req.once('error', reject);
      });
      req.flushHeaders();
      await new Promise((r) => req.once('continue', r));
      req.write(Buffer.concat([head, PNG.subarray(0, 10)]));
      return { answer, finish: () => req.end(Buffer.concat([PNG.subarray(10), tail])) };
    };
    const first = await held();
    const second = await held();
    const third = await upload('third.png', PNG);
    expect(third.status).toBe(503);
    expect(third.body).toEqual({ error: 'too many uploads at once' });
    first.finish();
    second.finish();
    expect([await first.answer, await second.answer]).toEqual([200, 200]);
    expect((await upload('third.png', PNG)).status).toBe(200);
  });
});
