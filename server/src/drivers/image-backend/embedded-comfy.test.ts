/**
 * The embedded ComfyUI's answers where ComfyUI's own rules decide: uploads keep both files when a
 * name is taken by other bytes (`name (1).png`), one with the same bytes is the same file, a name
 * leading out of its folder is refused, and everything is also under `/api`.
 */
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
});
