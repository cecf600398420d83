/**
 * Datasets (/sd/dataset): the real-name gate, uploads checked by content, the 512-image limit,
 * captions one by one and in bulk, zip import and the sd-scripts export, and each account's
 * datasets its own. A refusal writes nothing: neither a row nor a stored file.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { deflateRawSync } from 'node:zlib';
import { strToU8, unzipSync, zipSync } from 'fflate';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { API, type Dataset, type DatasetImage, type DatasetUploadResult, type PageOf, type datasetImageSchema } from '@console/contract';
import {
  certify,
  childAccount,
  countRows,
  del,
  get,
  json,
  multipartFiles,
  pngImage,
  post,
  put,
  registerUser,
  startTestServer,
  type TestServer,
} from '../../../test/harness.js';
import { zipOf } from '../../../test/zip-builder.js';
import { zipImportsAdmitted } from './zip-import.js';

/** A real JPEG of 64×48, and a PNG whose header is right but whose pixels are cut off. */
const JPEG = await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 10, g: 200, b: 90 } } })
  .jpeg()
  .toBuffer();
const TRUNCATED_PNG = pngImage(300, 300).subarray(0, 60);
/** An uncompressed 24-bit BMP of 3×2 (rows bottom-up, each padded to 4 bytes). */
function bmp24(width: number, height: number): Buffer {
  const stride = Math.ceil((width * 3) / 4) * 4;
  const b = Buffer.alloc(54 + stride * height, 0x80);
  b.write('BM', 0, 'latin1');
  b.writeUInt32LE(b.length, 2);
  b.writeUInt32LE(54, 10);
  b.writeUInt32LE(40, 14);
  b.writeInt32LE(width, 18);
  b.writeInt32LE(height, 22);
  b.writeUInt16LE(1, 26);
  b.writeUInt16LE(24, 28);
  b.writeUInt32LE(0, 30);
  return b;
}

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s.close());

const path_ = (p: string, id: string, imageId?: string) => p.replace(':id', id).replace(':imageId', imageId ?? '');
async function certifiedUser() {
  const u = await registerUser(s);
  await certify(s, u.token);
  return u;
}
async function dataset(token: string, body: Record<string, unknown> = {}) {
  const res = await post(s.app, API.sdDatasets, { name: '我的角色', kind: 'person', triggerWord: 'mychar', ...body }, token);
  expect(res.statusCode, res.body).toBe(200);
  return json<Dataset>(res);
}
async function upload(token: string, id: string, files: { name: string; content: Buffer }[]) {
  const { payload, headers } = multipartFiles(files);
  return s.app.inject({ method: 'POST', url: path_(API.sdDatasetImages, id), payload, headers: { ...headers, authorization: `Bearer ${token}` } });
}
const images = async (token: string, id: string, query = '') =>
  json<PageOf<typeof datasetImageSchema>>(await get(s.app, `${path_(API.sdDatasetImages, id)}?pageSize=100${query}`, token));
/** Images the storage driver holds for datasets (beside each: its thumbnail, and the local driver's `.type` files). */
function storedFiles(): number {
  const root = path.join(s.dataDir, 'files', 'datasets');
  if (!existsSync(root)) return 0;
  const files = readdirSync(root, { recursive: true, withFileTypes: true }).filter((e) => e.isFile() && !e.name.endsWith('.type'));
  const thumbs = files.filter((e) => e.name.endsWith('.thumb')).length;
  expect(thumbs * 2).toBe(files.length); // every image has its thumbnail, and no thumbnail is left alone
  return thumbs;
}

describe('datasets', () => {
  it('needs real-name certification to create one (40311001), and takes it after', async () => {
    const u = await registerUser(s);
    const refused = await post(s.app, API.sdDatasets, { name: '风景', kind: 'style' }, u.token);
    expect(refused.statusCode).toBe(403);
    expect(json(refused)).toMatchObject({ code: 40311001 });
    expect(await countRows(s, `sd_datasets where user_id = '${u.user.id}'`)).toBe(0);

    await certify(s, u.token);
    const made = await dataset(u.token, { name: ' 风景 ', kind: 'style', triggerWord: '', description: '山水' });
    expect(made).toMatchObject({ name: '风景', kind: 'style', description: '山水', imageCount: 0, uncaptioned: 0, coverImageId: null });
    expect(json(await get(s.app, `${API.sdDatasets}?page=1&pageSize=10`, u.token))).toMatchObject({ total: 1, items: [{ id: made.id }] });

    for (const bad of [
      { name: '', kind: 'person' },
      { name: 'x', kind: 'animal' },
      { name: 'x', kind: 'person', triggerWord: '触发 词' },
      { name: 'x'.repeat(41), kind: 'person' },
    ]) {
      const res = await post(s.app, API.sdDatasets, bad, u.token);
      expect(res.statusCode, JSON.stringify(bad)).toBe(400);
      expect(json(res).code).toBe(40000001);
    }
    expect(await countRows(s, `sd_datasets where user_id = '${u.user.id}'`)).toBe(1);
  });

  it('takes images by their content, names them by what they are, and refuses the rest file by file, storing nothing of them', async () => {
    const u = await certifiedUser();
    const d = await dataset(u.token);
    const before = storedFiles();
    const res = await upload(u.token, d.id, [
      { name: 'girl_01.png', content: pngImage(64, 96) },
      { name: 'girl_02.png', content: JPEG }, // a JPEG named .png: kept, as .jpg
      { name: 'notes.png', content: Buffer.from('just text, not an image') },
      { name: 'huge.png', content: Buffer.concat([pngImage(8, 8), Buffer.alloc(20 * 1024 * 1024)]) },
      { name: 'cut.png', content: TRUNCATED_PNG },
      { name: 'scan.bmp', content: bmp24(3, 2) },
    ]);
    expect(res.statusCode, res.body).toBe(200);
    const result = json<DatasetUploadResult>(res);
    expect(result.added).toMatchObject([
      { name: 'girl_01.png', format: 'png', width: 64, height: 96, caption: '' },
      { name: 'girl_02.jpg', format: 'jpeg', width: 64, height: 48 },
      { name: 'scan.bmp', format: 'bmp', width: 3, height: 2 },
    ]);
    expect(result.refused).toEqual([
      expect.objectContaining({ name: 'notes.png', code: 40050001 }),
      expect.objectContaining({ name: 'huge.png', code: 41350001 }),
      expect.objectContaining({ name: 'cut.png', code: 40050001 }),
    ]);
    expect(storedFiles()).toBe(before + 3);

    // The same name again is refused (a caption file pairs with one image).
    const again = json<DatasetUploadResult>(await upload(u.token, d.id, [{ name: 'girl_01.png', content: pngImage(10, 10) }]));
    expect(again.refused).toEqual([expect.objectContaining({ code: 40950001 })]);
    expect(storedFiles()).toBe(before + 3);

    const file = await get(s.app, path_(API.sdDatasetImageFile, d.id, result.added[0]!.id), u.token);
    expect(file.statusCode).toBe(200);
    expect(file.headers['content-type']).toBe('image/png');
    expect(file.rawPayload.equals(pngImage(64, 96))).toBe(true);
    // The thumbnail: WebP, the picture's proportions within 320 px (never enlarged).
    const thumb = await get(s.app, `${path_(API.sdDatasetImageFile, d.id, result.added[0]!.id)}?thumb=1`, u.token);
    expect(thumb.headers['content-type']).toBe('image/webp');
    expect(await sharp(thumb.rawPayload).metadata()).toMatchObject({ format: 'webp', width: 64, height: 96 });
    expect(await get(s.app, path_(API.sdDataset, d.id), u.token).then(json)).toMatchObject({
      imageCount: 3,
      uncaptioned: 3,
      coverImageId: result.added[0]!.id,
    });
  });

  it('holds at most 512 images: the 513th is refused and nothing of it stays', async () => {
    const u = await certifiedUser();
    const d = await dataset(u.token);
    const tiny = pngImage(1, 1);
    const batch = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ name: `img_${from + i}.png`, content: tiny }));
    for (let i = 0; i < 512; i += 128) expect(json<DatasetUploadResult>(await upload(u.token, d.id, batch(i, 128))).added).toHaveLength(128);
    const stored = storedFiles();
    const over = json<DatasetUploadResult>(await upload(u.token, d.id, batch(512, 2)));
    expect(over).toMatchObject({ added: [], refused: [{ code: 40050002 }, { code: 40050002 }] });
    expect(storedFiles()).toBe(stored);
    expect((await images(u.token, d.id)).total).toBe(512);
    // Room again after a deletion.
    const first = (await images(u.token, d.id)).items[0]!;
    expect((await del(s.app, path_(API.sdDatasetImage, d.id, first.id), u.token)).statusCode).toBe(200);
    expect(json<DatasetUploadResult>(await upload(u.token, d.id, batch(600, 1))).added).toHaveLength(1);
  });

  it('edits captions one by one and in bulk: set several, put a trigger word in front once, find and replace', async () => {
    const u = await certifiedUser();
    const d = await dataset(u.token);
    const added = json<DatasetUploadResult>(
      await upload(u.token, d.id, [
        { name: 'a.png', content: pngImage(4, 4) },
        { name: 'b.png', content: pngImage(4, 4) },
        { name: 'c.png', content: pngImage(4, 4) },
      ]),
    ).added;
    const [a, b, c] = added as [DatasetImage, DatasetImage, DatasetImage];
    expect(json(await put(s.app, path_(API.sdDatasetImage, d.id, a.id), { caption: '1girl, red hair' }, u.token))).toMatchObject({
      caption: '1girl, red hair',
    });
    const set = await post(s.app, path_(API.sdDatasetCaptions, d.id), { op: 'set', captions: [{ id: b.id, caption: 'red dress' }] }, u.token);
    expect(json(set)).toEqual({ changed: 1 });
    expect((await images(u.token, d.id, '&uncaptioned=true')).items.map((i) => i.name)).toEqual(['c.png']);

    const prefix = () => post(s.app, path_(API.sdDatasetCaptions, d.id), { op: 'prefix', text: 'mychar' }, u.token);
    expect(json(await prefix())).toEqual({ changed: 3 });
    expect(json(await prefix())).toEqual({ changed: 0 }); // already there
    expect(json(await post(s.app, path_(API.sdDatasetCaptions, d.id), { op: 'replace', find: 'red', replace: 'blue' }, u.token))).toEqual({ changed: 2 });
    expect(Object.fromEntries((await images(u.token, d.id)).items.map((i) => [i.name, i.caption]))).toEqual({
      'a.png': 'mychar, 1girl, blue hair',
      'b.png': 'mychar, blue dress',
      'c.png': 'mychar',
    });

    // An id that is not this dataset's: nothing changes.
    const other = await dataset(u.token, { name: '另一个' });
    const foreign = await post(s.app, path_(API.sdDatasetCaptions, other.id), { op: 'set', captions: [{ id: c.id, caption: 'x' }] }, u.token);
    expect(json(foreign)).toMatchObject({ code: 40450002 });
    for (const bad of [{ op: 'prefix', text: '' }, { op: 'rotate' }, { op: 'set', captions: [] }, { op: 'replace', find: '', replace: 'x' }]) {
      expect(json(await post(s.app, path_(API.sdDatasetCaptions, d.id), bad, u.token)).code, JSON.stringify(bad)).toBe(40000001);
    }
    expect(json(await put(s.app, path_(API.sdDatasetImage, d.id, a.id), { caption: 'x'.repeat(2001) }, u.token)).code).toBe(40000001);
  });

  it('imports a zip of images with same-name .txt captions and exports the sd-scripts layout', async () => {
    const u = await certifiedUser();
    const d = await dataset(u.token, { triggerWord: 'ohwx' });
    const a = pngImage(32, 32, [255, 0, 0]);
    const zip = zipSync({
      'set/a.png': a,
      'set/a.txt': strToU8('\uFEFFohwx, smiling\n'),
      'set/b.jpg': JPEG,
      'set/readme.md': strToU8('ignored'),
      'set/broken.png': strToU8('not an image'),
      '__MACOSX/set/._a.png': strToU8('resource fork'),
    });
    const { payload, headers } = multipartFiles([{ name: 'set.zip', content: Buffer.from(zip) }]);
    const imported = await s.app.inject({
      method: 'POST',
      url: path_(API.sdDatasetImport, d.id),
      payload,
      headers: { ...headers, authorization: `Bearer ${u.token}` },
    });
    expect(imported.statusCode, imported.body).toBe(200);
    const result = json<DatasetUploadResult>(imported);
    expect(result.added.map((i) => [i.name, i.caption])).toEqual([
      ['a.png', 'ohwx, smiling'],
      ['b.jpg', ''],
    ]);
    expect(result.refused).toEqual([expect.objectContaining({ name: 'set/broken.png', code: 40050001 })]);

    const notZip = multipartFiles([{ name: 'x.zip', content: Buffer.from('PK but not really') }]);
    const refused = await s.app.inject({
      method: 'POST',
      url: path_(API.sdDatasetImport, d.id),
      payload: notZip.payload,
      headers: { ...notZip.headers, authorization: `Bearer ${u.token}` },
    });
    expect(json(refused)).toMatchObject({ code: 40050004 });

    const exported = await get(s.app, `${path_(API.sdDatasetExport, d.id)}?repeats=15`, u.token);
    expect(exported.statusCode).toBe(200);
    expect(exported.headers['content-type']).toBe('application/zip');
    const files = unzipSync(new Uint8Array(exported.rawPayload));
    expect(Object.keys(files).sort()).toEqual(['15_ohwx/a.png', '15_ohwx/a.txt', '15_ohwx/b.jpg', '15_ohwx/b.txt']);
    expect(Buffer.from(files['15_ohwx/a.png']!).equals(a)).toBe(true);
    expect(Buffer.from(files['15_ohwx/a.txt']!).toString()).toBe('ohwx, smiling');
    for (const bad of ['0', '101', 'x', '1.5'])
      expect(json(await get(s.app, `${path_(API.sdDatasetExport, d.id)}?repeats=${bad}`, u.token)).code, bad).toBe(40000001);
    const empty = await dataset(u.token, { name: '空的' });
    expect(json(await get(s.app, path_(API.sdDatasetExport, empty.id), u.token))).toMatchObject({ code: 40050005 });
  });

  it('refuses what would break the data or the server with a clear code: NUL, a cut-off upload, one caption file for two images, a zip that lies about its sizes', async () => {
    const u = await certifiedUser();
    const d = await dataset(u.token);
    expect(json(await post(s.app, API.sdDatasets, { name: 'a\u0000b', kind: 'person' }, u.token)).code).toBe(40000001);
    const [img] = json<DatasetUploadResult>(await upload(u.token, d.id, [{ name: 'a.png', content: pngImage(4, 4) }])).added;
    expect(json(await put(s.app, path_(API.sdDatasetImage, d.id, img!.id), { caption: 'x\u0000' }, u.token)).code).toBe(40000001);
    expect(json(await post(s.app, path_(API.sdDatasetCaptions, d.id), { op: 'replace', find: 'x', replace: '\u0000' }, u.token)).code).toBe(40000001);

    const cut = await s.app.inject({
      method: 'POST',
      url: path_(API.sdDatasetImages, d.id),
      payload: '--b\r\nContent-Disposition: form-data; name="file"; filename="b.png"\r\n\r\nabc',
      headers: { 'content-type': 'multipart/form-data; boundary=b', authorization: `Bearer ${u.token}` },
    });
    expect(cut.statusCode).toBe(400);
    expect(json(cut).code).toBe(40010011);

    // a.jpg and A.PNG would share a.txt with a.png in an export.
    const same = json<DatasetUploadResult>(
      await upload(u.token, d.id, [
        { name: 'a.jpg', content: JPEG },
        { name: 'A.PNG', content: pngImage(4, 4) },
      ]),
    );
    expect(same.refused.map((r) => r.code)).toEqual([40950001, 40950001]);

    // A stored entry whose central directory says it unpacks to nothing (what an overlapping-entries bomb relies on).
    const zip = Buffer.from(zipSync({ 'c.png': [pngImage(4, 4), { level: 0 }] }));
    const central = zip.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    zip.writeUInt32LE(0, central + 24);
    const { payload, headers } = multipartFiles([{ name: 'bomb.zip', content: zip }]);
    const bomb = await s.app.inject({
      method: 'POST',
      url: path_(API.sdDatasetImport, d.id),
      payload,
      headers: { ...headers, authorization: `Bearer ${u.token}` },
    });
    expect(json(bomb).code).toBe(40050004);
    expect((await images(u.token, d.id)).total).toBe(1);

    expect((await del(s.app, path_(API.sdDataset, d.id), u.token)).statusCode).toBe(200);
    expect(json(await put(s.app, path_(API.sdDataset, d.id), { name: '改名' }, u.token)).code).toBe(40450001);
  });

  it('refuses a zip bomb that declares small sizes with the unpacked-size code, and lists unsafe entry paths as refused', async () => {
    const u = await certifiedUser();
    const d = await dataset(u.token);
    const importZip = (zip: Buffer) => {
      const { payload, headers } = multipartFiles([{ name: 'set.zip', content: zip }]);
      return s.app.inject({ method: 'POST', url: path_(API.sdDatasetImport, d.id), payload, headers: { ...headers, authorization: `Bearer ${u.token}` } });
    };
    // 320 MB of zeros in a zip of about 330 KB, each entry declaring 26 KB.
    const zeros = deflateRawSync(Buffer.alloc(16 * 1024 * 1024));
    const bomb = await importZip(zipOf(Array.from({ length: 20 }, (_, i) => ({ name: `${i}.png`, deflated: zeros, size: 26 * 1024 }))));
    expect(bomb.statusCode).toBe(413);
    expect(json(bomb)).toMatchObject({ code: 41350003 });
    expect(json<{ message: string }>(bomb).message).toContain('解压后超过 256MB');
    expect((await images(u.token, d.id)).total).toBe(0);

    const png = pngImage(4, 4);
    const unsafe = ['../../x.png', '/abs/x.png', '..\\..\\x.png', 'C:\\x.png'];
    const res = await importZip(zipOf([...unsafe, 'x.png'].map((name) => ({ name, stored: png }))));
    expect(res.statusCode, res.body).toBe(200);
    const result = json<DatasetUploadResult>(res);
    expect(result.added.map((i) => i.name)).toEqual(['x.png']);
    expect(result.refused.map((r) => [r.name, r.code])).toEqual(unsafe.map((name) => [name, 40050011]));
    for (const r of result.refused) expect(r.message).toContain('路径不安全');
  });

  it('lets each account import one zip at a time and the server a bounded line of them, refusing the rest before their uploads are read', async () => {
    const { payload, headers } = multipartFiles([{ name: 'set.zip', content: zipOf([{ name: 'x.png', stored: pngImage(4, 4) }]) }]);
    /** An import whose upload has sent its first bytes and goes on only at `finish` (a slow link). */
    const slowImport = (token: string, id: string) => {
      const body = new PassThrough();
      body.write(payload.subarray(0, 100));
      const answer = (async () =>
        s.app.inject({ method: 'POST', url: path_(API.sdDatasetImport, id), payload: body, headers: { ...headers, authorization: `Bearer ${token}` } }))();
      return { answer, finish: () => body.end(payload.subarray(100)), body };
    };
    const users = await Promise.all([0, 1, 2, 3].map(() => certifiedUser()));
    const sets = await Promise.all(users.map((u) => dataset(u.token)));
    const admitted = (n: number) => vi.waitFor(() => expect(zipImportsAdmitted()).toBe(n), { timeout: 20_000 });

    const first = slowImport(users[0]!.token, sets[0]!.id);
    await admitted(1);
    // The same account again, with an upload that never ends: answered at once, its body never read.
    const again = slowImport(users[0]!.token, sets[0]!.id);
    const ongoing = await again.answer;
    expect(ongoing.statusCode).toBe(429);
    expect(json(ongoing)).toMatchObject({ code: 42950001, message: '已有一个压缩包正在导入，请等它完成后再导入下一个' });
    expect(ongoing.headers.connection).toBe('close');
    again.body.destroy();

    const waiting = [1, 2].map((i) => slowImport(users[i]!.token, sets[i]!.id));
    await admitted(3);
    const beyond = slowImport(users[3]!.token, sets[3]!.id);
    const busy = await beyond.answer;
    expect(busy.statusCode).toBe(503);
    expect(json(busy)).toMatchObject({ code: 50350003, message: '导入繁忙，请稍后再试' });
    beyond.body.destroy();

    for (const x of [first, ...waiting]) x.finish();
    for (const x of [first, ...waiting]) {
      const res = await x.answer;
      expect(res.statusCode, res.body).toBe(200);
      expect(json<DatasetUploadResult>(res).added.map((i) => i.name)).toEqual(['x.png']);
    }
    await admitted(0);
    // Once the line has room, the refused account imports.
    const later = slowImport(users[3]!.token, sets[3]!.id);
    later.finish();
    expect((await later.answer).statusCode).toBe(200);
    expect((await images(users[3]!.token, sets[3]!.id)).total).toBe(1);
  });

  it("keeps each account's datasets its own, lets a child with gpu work on its parent's, and deletes a dataset with its files", async () => {
    const owner = await certifiedUser();
    const d = await dataset(owner.token);
    await upload(owner.token, d.id, [{ name: 'a.png', content: pngImage(4, 4) }]);
    const stranger = await certifiedUser();
    for (const res of [
      await get(s.app, path_(API.sdDataset, d.id), stranger.token),
      await get(s.app, path_(API.sdDatasetImages, d.id), stranger.token),
      await upload(stranger.token, d.id, [{ name: 'b.png', content: pngImage(4, 4) }]),
      await get(s.app, path_(API.sdDatasetExport, d.id), stranger.token),
      await del(s.app, path_(API.sdDataset, d.id), stranger.token),
    ]) {
      expect(res.statusCode).toBe(404);
      expect(json(res).code).toBe(40450001);
    }
    expect((await images(owner.token, d.id)).total).toBe(1);

    const noGpu = await childAccount(s, owner, 'sd_none', { usingLLM: true });
    expect(json(await get(s.app, API.sdDatasets, noGpu.token))).toMatchObject({ code: 40300002 });
    const gpu = await childAccount(s, owner, 'sd_gpu', { gpu: true });
    expect(json(await get(s.app, API.sdDatasets, gpu.token))).toMatchObject({ total: 1, items: [{ id: d.id }] });

    const stored = storedFiles();
    expect((await del(s.app, path_(API.sdDataset, d.id), owner.token)).statusCode).toBe(200);
    expect(storedFiles()).toBe(stored - 1);
    expect(json(await get(s.app, path_(API.sdDataset, d.id), owner.token))).toMatchObject({ code: 40450001 });
    expect(json(await get(s.app, path_(API.sdDataset, 'not-a-uuid'), owner.token))).toMatchObject({ code: 40000001 });
  });
});
