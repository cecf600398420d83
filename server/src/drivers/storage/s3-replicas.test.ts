/**
 * Two console replicas (two buildApps on one database, each with its own DATA_DIR) with
 * STORAGE_DRIVER=s3 on a real S3 server: what is uploaded through one is served by the other, and a
 * large download through either is a redirect to a signed URL, given only after the access check.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, loraPreset, type LoraJob, type LoraParams } from '@console/contract';
import { certify, fundedUser, get, json, multipart, multipartFiles, PNG, pngImage, post, registerUser } from '../../../test/harness.js';
import { twoReplicas, type Replicas } from '../../../test/replicas.js';
import { startTestS3, type TestS3 } from '../../../test/s3-server.js';
import { SIGNED_DOWNLOAD_MIN_BYTES } from '../../http/send-file.js';

let s3: TestS3;
let r: Replicas;
beforeAll(async () => {
  s3 = await startTestS3();
  r = await twoReplicas({ env: s3.env() });
});
afterAll(async () => {
  await r?.close();
  await s3?.close();
});

const fill = (p: string, ...ids: (string | number)[]) => ids.reduce<string>((path, id) => path.replace(/:[a-zA-Z]+/, String(id)), p);

describe('STORAGE_DRIVER=s3 across replicas', () => {
  it('serves through replica B an avatar and a dataset image uploaded through replica A', async () => {
    expect(r.a.ctx.drivers.storage.name).toBe('s3');
    const u = await registerUser(r.a);
    const auth = { authorization: `Bearer ${u.token}` };
    const logo = multipart('me.png', PNG, 'image/png');
    const up = await r.a.app.inject({ method: 'PUT', url: API.meLogo, payload: logo.payload, headers: { ...logo.headers, ...auth } });
    expect(up.statusCode).toBe(200);
    const url = json<{ logo: string }>(up).logo;
    const served = await r.b.app.inject({ method: 'GET', url });
    expect(served.statusCode).toBe(200);
    expect(served.headers['content-type']).toBe('image/png');
    expect(served.rawPayload.equals(PNG)).toBe(true);

    await certify(r.a, u.token); // datasets need a certified account
    const dataset = json<{ id: string }>(await post(r.a.app, API.sdDatasets, { name: '共享', kind: 'person', triggerWord: 'sks' }, u.token)).id;
    const image = pngImage(48, 32, [10, 200, 30]);
    const files = multipartFiles([{ name: 'green.png', content: image, type: 'image/png' }]);
    const added = await r.a.app.inject({
      method: 'POST',
      url: fill(API.sdDatasetImages, dataset),
      payload: files.payload,
      headers: { ...files.headers, ...auth },
    });
    expect(added.statusCode, added.body).toBe(200);
    const imageId = json<{ added: { id: string }[] }>(added).added[0]!.id;
    const file = await get(r.b.app, fill(API.sdDatasetImageFile, dataset, imageId), u.token);
    expect(file.statusCode).toBe(200);
    expect(file.rawPayload.equals(image)).toBe(true);
    // Another account does not get it through B either.
    const stranger = await registerUser(r.b);
    expect((await get(r.b.app, fill(API.sdDatasetImageFile, dataset, imageId), stranger.token)).statusCode).toBe(404);
  });

  it('answers a large LoRA download through replica B with a signed URL of the file trained on replica A, to its owner only', async () => {
    const u = await fundedUser(r.a, '100');
    await certify(r.a, u.token);
    const auth = { authorization: `Bearer ${u.token}` };
    const dataset = json<{ id: string }>(await post(r.a.app, API.sdDatasets, { name: '训练集', kind: 'person', triggerWord: 'sks' }, u.token)).id;
    const files = multipartFiles([0, 1].map((i) => ({ name: `img${i}.png`, content: pngImage(32, 32, [200, 20, 20 + i]), type: 'image/png' })));
    expect(
      (await r.a.app.inject({ method: 'POST', url: fill(API.sdDatasetImages, dataset), payload: files.payload, headers: { ...files.headers, ...auth } }))
        .statusCode,
    ).toBe(200);
    const params: LoraParams = { ...loraPreset('person', 'sd15'), repeats: 1, epochs: 1, batchSize: 1 };
    const started = await post(
      r.a.app,
      API.sdTrainJobs,
      { datasetId: dataset, baseModel: 'sd15', params, name: 'shared_lora', requestId: randomUUID() },
      u.token,
    );
    expect(started.statusCode).toBe(200);
    const jobId = json<LoraJob>(started).id;
    let job: LoraJob | undefined;
    for (let i = 0; i < 40 && job?.status !== 'done'; i++) {
      r.a.clock.advance(5_000);
      await r.a.ctx.training.tick();
      job = json<LoraJob>(await get(r.b.app, fill(API.sdTrainJob, jobId), u.token));
    }
    expect(job?.status).toBe('done');

    // The embedded trainer's file is small; a real one is tens of MB: put one of that size in its place.
    const rows = (await r.a.ctx.db.execute(sql`select lora_key from sd_train_epochs where job_id = ${jobId}`)) as unknown as { rows: { lora_key: string }[] };
    const key = rows.rows[0]!.lora_key;
    const large = Buffer.alloc(SIGNED_DOWNLOAD_MIN_BYTES + 1, 3);
    await r.a.ctx.drivers.storage.put(key, large, 'application/octet-stream');

    const lora = fill(API.sdTrainJobLora, jobId, 1);
    const res = await get(r.b.app, lora, u.token);
    expect(res.statusCode).toBe(302);
    const signed = String(res.headers.location);
    expect(signed.startsWith(`${s3.endpoint}/${s3.bucket}/`)).toBe(true);
    const fetched = await fetch(signed);
    expect(fetched.status).toBe(200);
    expect(fetched.headers.get('content-disposition')).toBe('attachment; filename="shared_lora-000001.safetensors"');
    expect(Buffer.from(await fetched.arrayBuffer()).equals(large)).toBe(true);

    // The access check comes first: someone else gets 40450003 and no link.
    const stranger = await registerUser(r.b);
    const refused = await get(r.b.app, lora, stranger.token);
    expect(refused.statusCode).toBe(404);
    expect(json(refused).code).toBe(40450003);
    expect(refused.headers.location).toBeUndefined();
  });
});
