import { strToU8, unzipSync, zipSync } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, type Dataset, type DatasetUploadResult } from '@console/contract';
import { certify, del, get, json, multipartFiles, pngImage, post, put, registerUser, startTestServer, type TestServer } from '../test/harness.js';

let s: TestServer;
beforeAll(async () => { s = await startTestServer(); });
afterAll(async () => s.close());
const P = (p: string, id: string, imageId?: string) => p.replace(':id', id).replace(':imageId', imageId ?? '');
async function setup() {
  const u = await registerUser(s); await certify(s, u.token);
  const d = json<Dataset>(await post(s.app, API.sdDatasets, { name: 'x', kind: 'person' }, u.token));
  return { u, d };
}
const up = (token: string, url: string, files: { name: string; content: Buffer }[]) => {
  const { payload, headers } = multipartFiles(files);
  return s.app.inject({ method: 'POST', url, payload, headers: { ...headers, authorization: `Bearer ${token}` } });
};
const show = (label: string, r: any) => console.log('##', label, r.statusCode, String(r.body).slice(0, 200));

describe('review', () => {
  it('dup stems and files limit', async () => {
    const sharp = (await import('sharp')).default;
    const JPEG = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#f00' } }).jpeg().toBuffer();
    const { u, d } = await setup();
    const t = u.token;
    show('two stems', await up(t, P(API.sdDatasetImages, d.id), [{ name: 'a.png', content: pngImage(4, 4) }, { name: 'a.jpg', content: JPEG }, { name: 'A.png', content: pngImage(5, 5) }]));
    const ex = await get(s.app, P(API.sdDatasetExport, d.id), t);
    const { unzipSync } = await import('fflate');
    // count raw central-directory names
    const raw = ex.rawPayload.toString('latin1');
    console.log('## export names', [...raw.matchAll(/PK\x01\x02[\s\S]{42}(10_dataset\/[^\x00-\x1f]*?\.(?:txt|png|jpg))/g)].map((m) => m[1]));
    console.log('## unzip keys', Object.keys(unzipSync(new Uint8Array(ex.rawPayload))));
    const { d: d2 } = await setup().then(async (x) => x);
    const many = Array.from({ length: 514 }, (_, i) => ({ name: `i${i}.png`, content: pngImage(1, 1) }));
    const { u: u3, d: d3 } = await setup();
    const r = await up(u3.token, P(API.sdDatasetImages, d3.id), many);
    show('514 files', r);
    show('count after', await get(s.app, P(API.sdDataset, d3.id), u3.token));
  }, 120000);
});
