/**
 * A LoRA job end to end on TRAINER_DRIVER=kohya: the dataset uploaded to the training machine, the
 * stand-in of sd-scripts (test/fixtures/fake-sd-scripts) run through accelerate, its epochs charged
 * one by one as their files arrive, the job done with the files and samples sd-scripts wrote.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, loraPreset, yuanToUnits, type LoraJob } from '@console/contract';
import { certify, fundedUser, get, json, multipartFiles, pngImage, post, startTestServer, type TestServer } from '../../../test/harness.js';
import { parseSafetensors } from '../../drivers/image-backend/safetensors.js';
import { checkLedger } from '../ledger/index.js';

const SCRIPTS = path.resolve(import.meta.dirname, '../../../test/fixtures/fake-sd-scripts');
const work = mkdtempSync(path.join(tmpdir(), 'kohya-job-'));
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({
    env: {
      TRAINER_DRIVER: 'kohya',
      KOHYA_SCRIPTS_DIR: SCRIPTS,
      KOHYA_WORK_DIR: work,
      KOHYA_ACCELERATE: path.join(SCRIPTS, 'accelerate'),
      IMAGE_BACKEND_TICK_MS: '100',
    },
  });
});
afterAll(async () => {
  await s.close();
  rmSync(work, { recursive: true, force: true });
});
const fill = (p: string, id: string, epoch?: number) => p.replace(':id', id).replace(':epoch', String(epoch ?? ''));

describe('LoRA training on kohya sd-scripts', () => {
  it('trains through the log and files sd-scripts writes, each epoch charged once', async () => {
    const u = await fundedUser(s, '100');
    await certify(s, u.token);
    const ds = json<{ id: string }>(await post(s.app, API.sdDatasets, { name: '训练集', kind: 'person', triggerWord: 'sks' }, u.token));
    const { payload, headers } = multipartFiles(
      Array.from({ length: 3 }, (_, i) => ({ name: `img${i}.png`, content: pngImage(32, 32, [200, 40 * i, 40]), type: 'image/png' })),
    );
    expect(
      (await s.app.inject({ method: 'POST', url: fill(API.sdDatasetImages, ds.id), payload, headers: { ...headers, authorization: `Bearer ${u.token}` } }))
        .statusCode,
    ).toBe(200);
    const params = { ...loraPreset('person', 'sd15'), repeats: 2, epochs: 2, batchSize: 2 };
    const started = json<LoraJob>(
      await post(s.app, API.sdTrainJobs, { datasetId: ds.id, baseModel: 'sd15', params, name: 'kohya_lora', requestId: randomUUID() }, u.token),
    );
    let job = started;
    for (let i = 0; i < 200 && !['done', 'failed'].includes(job.status); i++) {
      s.clock.advance(100);
      await s.ctx.training.tick();
      await new Promise((r) => setTimeout(r, 30));
      job = json<LoraJob>(await get(s.app, fill(API.sdTrainJob, started.id), u.token));
    }
    expect(job, job.error ?? '').toMatchObject({ status: 'done', epoch: 2, step: 6, charged: started.held });
    expect(job.log).toContain('model saved.');
    const lora = await get(s.app, fill(API.sdTrainJobLora, started.id, 2), u.token);
    expect(parseSafetensors(lora.rawPayload).metadata).toMatchObject({ ss_epoch: '2' });
    const sample = await get(s.app, fill(API.sdTrainJobSample, started.id, 1), u.token);
    expect(sample.rawPayload.subarray(1, 4).toString()).toBe('PNG');
    expect((await s.ctx.ledger.balances(u.user.id)).cash).toBe(yuanToUnits('100') - BigInt(started.held));
    expect((await checkLedger(s.ctx.db)).problems).toEqual([]);
  });
});
