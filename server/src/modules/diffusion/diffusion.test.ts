/**
 * Image generation (/sd/diffusion) on the fake clock: refusals that write nothing, the per-image
 * price, a task's images made one by one and each charged once, the same seed giving the same
 * picture, LoRAs (public and trained) changing it, cancel, failure, a restart, and the gallery.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  API,
  DIFFUSION_GPU,
  PUBLIC_LORAS,
  diffusionImageSeconds,
  diffusionImageUnits,
  loraPreset,
  yuanToUnits,
  type DiffusionParams,
  type DiffusionTask,
  type LoraJob,
  type LoraOption,
  type PageOf,
  type diffusionImageSchema,
} from '@console/contract';
import {
  buyCardTime,
  cardTimeLeft,
  certify,
  childAccount,
  countRows,
  del,
  fundedUser,
  get,
  json,
  multipartFiles,
  pngImage,
  post,
  startTestServer,
  type TestServer,
} from '../../../test/harness.js';
import { ComfyPainter } from '../../drivers/image-backend/comfy-client.js';
import { EmbeddedPainter } from '../../drivers/image-backend/embedded-painter.js';
import { checkLedger } from '../ledger/index.js';
import { STALE_RUNNER_MS } from '../image-jobs/index.js';
import { DiffusionService } from './service.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ env: { PAINTER_CAPACITY: '2' } });
});
afterAll(async () => s.close());

const fill = (p: string, id: string) => p.replace(':id', id);
const PARAMS: DiffusionParams = {
  prompt: 'a cat, watercolor, garden',
  negativePrompt: 'blurry',
  baseModel: 'sd15',
  loras: [],
  width: 256,
  height: 256,
  steps: 20,
  cfg: 7,
  sampler: 'Euler a',
  seed: 1234,
  batchCount: 2,
};
/** One image's time on the reference card at PARAMS. */
const IMAGE_SECONDS = diffusionImageSeconds(PARAMS);

const userWithCash = (yuan: string) => fundedUser(s, yuan);
const cash = async (userId: string) => (await s.ctx.ledger.balances(userId)).cash;
const submit = (token: string, extra: Partial<DiffusionParams> & { requestId?: string } = {}) =>
  post(s.app, API.sdDiffusionTasks, { ...PARAMS, requestId: randomUUID(), ...extra }, token);
const task = async (token: string, id: string) => json<DiffusionTask>(await get(s.app, fill(API.sdDiffusionTask, id), token));
const file = async (token: string, imageId: string) => (await get(s.app, fill(API.sdDiffusionImageFile, imageId), token)).rawPayload;

/** Moves the clock, then ticks as the scheduler would until nothing changes (the painter makes one picture per poll). */
async function run(seconds: number, service: DiffusionService = s.ctx.diffusion) {
  s.clock.advance(seconds * 1000);
  for (let i = 0; i < 10 && (await service.tick()) > 0; i++);
}

/** Runs a task to its end and returns it. */
async function finish(token: string, id: string): Promise<DiffusionTask> {
  await s.ctx.diffusion.tick();
  await run(IMAGE_SECONDS * 8 + 1);
  return task(token, id);
}

describe('refusals write nothing', () => {
  it('refuses bad parameters, LoRAs that are not usable, a child without the permission and a short cash', async () => {
    const u = await userWithCash('10');
    const before = { tasks: await countRows(s, 'sd_gen_tasks'), cash: await cash(u.user.id) };
    const bad = await submit(u.token, { width: 500 });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('宽度应为 64 的倍数');
    expect((await submit(u.token, { batchCount: 9 })).body).toContain('生成数量最大为 8');
    expect((await submit(u.token, { prompt: '  ' })).body).toContain('请输入提示词');
    const stranger = randomUUID();
    expect(json(await submit(u.token, { loras: [{ source: 'job', jobId: stranger, epoch: 1, weight: 1 }] })).code).toBe(40450007);
    expect(json(await submit(u.token, { loras: [{ source: 'public', id: 'cyberpunk', weight: 0.8 }] })).code).toBe(40050007); // an SDXL LoRA on SD 1.5
    // The quote refuses the same LoRAs with the same codes.
    const quote = (loras: DiffusionParams['loras']) => post(s.app, API.sdDiffusionQuote, { ...PARAMS, loras }, u.token);
    expect(json(await quote([{ source: 'job', jobId: stranger, epoch: 1, weight: 1 }])).code).toBe(40450007);
    expect(json(await quote([{ source: 'public', id: 'cyberpunk', weight: 0.8 }])).code).toBe(40050007);
    expect((await quote([])).statusCode).toBe(200);
    const child = await childAccount(s, u, 'drawer', { usingLLM: true });
    expect((await submit(child.token)).statusCode).toBe(403);
    const poor = await userWithCash('0');
    const refused = await submit(poor.token);
    expect(refused.statusCode).toBe(400);
    expect(json(refused).code).toBe(40011011);
    expect(await countRows(s, 'sd_gen_tasks')).toBe(before.tasks);
    expect(await cash(u.user.id)).toBe(before.cash);
  });
});

describe('a task from submit to the gallery', () => {
  it('holds the images’ price, makes them one by one with progress, charges each once and lists them in the gallery', async () => {
    const u = await userWithCash('10');
    const rate = (await s.ctx.catalogue.gpuHourlyRate(DIFFUSION_GPU))!;
    const perImage = diffusionImageUnits(PARAMS, rate.ratePerHour);
    const quote = json(await post(s.app, API.sdDiffusionQuote, PARAMS, u.token));
    expect(quote).toMatchObject({ perImage: String(perImage), total: String(perImage * 2n), gpuName: 'RTX 4090' });
    // The price does not wait for a prompt: size, steps and count are enough.
    const { baseModel, width, height, steps, batchCount } = PARAMS;
    expect(json(await post(s.app, API.sdDiffusionQuote, { baseModel, width, height, steps, batchCount }, u.token))).toEqual(quote);
    expect((await post(s.app, API.sdDiffusionQuote, { baseModel, width: 500, height, steps, batchCount }, u.token)).body).toContain('宽度应为 64 的倍数');

    const requestId = randomUUID();
    const t = json<DiffusionTask>(await submit(u.token, { requestId }));
    expect(json<DiffusionTask>(await submit(u.token, { requestId })).id).toBe(t.id); // a double click
    expect(t).toMatchObject({ status: 'queued', held: String(perImage * 2n), charged: '0', seed: 1234 });
    expect(await cash(u.user.id)).toBe(yuanToUnits('10') - perImage * 2n);

    await s.ctx.diffusion.tick();
    await run(IMAGE_SECONDS / 2);
    let now = await task(u.token, t.id);
    expect(now).toMatchObject({ status: 'running', done: 0, step: 10 });
    await run(IMAGE_SECONDS / 2);
    now = await task(u.token, t.id);
    expect(now).toMatchObject({ status: 'running', done: 1, charged: String(perImage) });
    await run(IMAGE_SECONDS);
    now = await task(u.token, t.id);
    expect(now).toMatchObject({ status: 'done', done: 2, charged: String(perImage * 2n), refunded: '0' });
    expect(now.images.map((i) => i.seed)).toEqual([1234, 1235]);
    expect(await cash(u.user.id)).toBe(yuanToUnits('10') - perImage * 2n);

    const gallery = json<PageOf<typeof diffusionImageSchema>>(await get(s.app, API.sdDiffusionImages, u.token));
    expect(gallery.total).toBe(2);
    const first = gallery.items.find((i) => i.index === 0)!;
    expect(first.params).toMatchObject({ prompt: PARAMS.prompt, seed: 1234, width: 256, sampler: 'Euler a' });
    const png = await file(u.token, first.id);
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect(png.readUInt32BE(16)).toBe(256); // the PNG's own width
    const thumb = await get(s.app, `${fill(API.sdDiffusionImageFile, first.id)}?thumb=1`, u.token);
    expect(thumb.headers['content-type']).toBe('image/webp');
    expect(thumb.rawPayload.subarray(8, 12).toString()).toBe('WEBP');

    // The same parameters and seed: the same picture; another seed or a LoRA: another one.
    const same = await finish(u.token, json<DiffusionTask>(await submit(u.token, { batchCount: 1 })).id);
    expect(await file(u.token, same.images[0]!.id)).toEqual(png);
    const other = await finish(u.token, json<DiffusionTask>(await submit(u.token, { batchCount: 1, seed: 99 })).id);
    expect(await file(u.token, other.images[0]!.id)).not.toEqual(png);
    const tinted = await finish(
      u.token,
      json<DiffusionTask>(await submit(u.token, { batchCount: 1, loras: [{ source: 'public', id: 'watercolor', weight: 1 }] })).id,
    );
    expect(await file(u.token, tinted.images[0]!.id)).not.toEqual(png);

    // Another account cannot read or delete it; the owner can delete it.
    const stranger = await userWithCash('0');
    expect(json(await get(s.app, fill(API.sdDiffusionImageFile, first.id), stranger.token)).code).toBe(40450006);
    expect(json(await del(s.app, fill(API.sdDiffusionImage, first.id), stranger.token)).code).toBe(40450006);
    expect((await del(s.app, fill(API.sdDiffusionImage, first.id), u.token)).statusCode).toBe(200);
    expect(json(await get(s.app, fill(API.sdDiffusionImageFile, first.id), u.token)).code).toBe(40450006);
    expect((await checkLedger(s.ctx.db)).problems).toEqual([]);
  });

  it('a random seed (-1) is chosen by the server and shown', async () => {
    const u = await userWithCash('10');
    const t = json<DiffusionTask>(await submit(u.token, { seed: -1, batchCount: 1 }));
    expect(t.seed).toBeGreaterThanOrEqual(0);
    const done = await finish(u.token, t.id);
    expect(done.images[0]!.seed).toBe(t.seed);
  });

  it('cancel keeps the images made paid and returns the rest; a failure returns what was not made', async () => {
    const u = await userWithCash('10');
    const t = json<DiffusionTask>(await submit(u.token, { batchCount: 4 }));
    const perImage = BigInt(t.held) / 4n;
    await s.ctx.diffusion.tick();
    await run(IMAGE_SECONDS * 1.5);
    const cancelled = json<DiffusionTask>(await post(s.app, fill(API.sdDiffusionTaskCancel, t.id), undefined, u.token));
    expect(cancelled).toMatchObject({ status: 'cancelled', done: 1, charged: String(perImage), refunded: String(perImage * 3n) });
    expect(json(await post(s.app, fill(API.sdDiffusionTaskCancel, t.id), undefined, u.token)).code).toBe(40950004);
    await run(IMAGE_SECONDS * 4);
    expect((await task(u.token, t.id)).done).toBe(1);
    expect(await cash(u.user.id)).toBe(yuanToUnits('10') - perImage);

    const f = json<DiffusionTask>(await submit(u.token, { batchCount: 3 }));
    await s.ctx.diffusion.tick();
    await run(IMAGE_SECONDS * 2);
    const painter = s.ctx.drivers.painter;
    const poll = painter.poll.bind(painter);
    painter.poll = async (id) => (id === f.id ? [{ type: 'failed', reason: '生成出错：显存不足' }] : poll(id));
    try {
      await run(0.1);
    } finally {
      painter.poll = poll;
    }
    const failed = await task(u.token, f.id);
    expect(failed).toMatchObject({ status: 'failed', done: 2, charged: String(perImage * 2n), refunded: String(perImage) });
    expect(failed.error).toContain('显存不足');
    expect(await cash(u.user.id)).toBe(yuanToUnits('10') - perImage * 3n);
    expect((await checkLedger(s.ctx.db)).problems).toEqual([]);
  });

  it('another process takes over a silent runner’s task and makes the rest, each image charged once', async () => {
    const u = await userWithCash('10');
    const t = json<DiffusionTask>(await submit(u.token, { batchCount: 3 }));
    await s.ctx.diffusion.tick();
    await run(IMAGE_SECONDS * 1.5);
    expect((await task(u.token, t.id)).done).toBe(1);
    const next = new DiffusionService({
      db: s.ctx.db,
      clock: s.clock,
      ledger: s.ctx.ledger,
      storage: s.ctx.drivers.storage,
      catalogue: s.ctx.catalogue,
      training: s.ctx.training,
      resources: s.ctx.resources,
      painter: new EmbeddedPainter(s.clock),
      comfy: s.ctx.drivers.comfy,
      capacity: 2,
    });
    s.clock.advance(STALE_RUNNER_MS);
    await next.tick();
    await run(IMAGE_SECONDS * 2 + 1, next);
    const done = await task(u.token, t.id);
    expect(done).toMatchObject({ status: 'done', done: 3, charged: t.held });
    expect(done.images.map((i) => i.index)).toEqual([0, 1, 2]);
    expect(await cash(u.user.id)).toBe(yuanToUnits('10') - BigInt(t.held));
  });
});

describe('时长包 before the cash', () => {
  it('the package pays for the first whole images, the cash for the rest; a cancel gives back the time of images not made', async () => {
    const u = await userWithCash('300'); // the package costs ¥168
    const imageMs = BigInt(Math.ceil(IMAGE_SECONDS * 1000));
    const pkg = await buyCardTime(s, u.token, imageMs + imageMs / 2n);
    const params = { ...PARAMS, batchCount: 3 };
    const quote = json(await post(s.app, API.sdDiffusionQuote, params, u.token));
    expect(quote).toMatchObject({ packageImages: 1, total: String(BigInt(quote.perImage) * 2n) });
    const cashBefore = await cash(u.user.id);

    const first = json<DiffusionTask>(await submit(u.token, { batchCount: 3 }));
    expect(first).toMatchObject({ packageImages: 1, held: quote.total });
    expect(await cardTimeLeft(s, pkg)).toBe(imageMs / 2n);
    json(await post(s.app, fill(API.sdDiffusionTaskCancel, first.id), undefined, u.token));
    expect(await cardTimeLeft(s, pkg)).toBe(imageMs + imageMs / 2n);
    expect(await cash(u.user.id)).toBe(cashBefore);

    const t = json<DiffusionTask>(await submit(u.token, { batchCount: 3 }));
    const done = await finish(u.token, t.id);
    expect(done).toMatchObject({ status: 'done', done: 3, packageImages: 1, charged: quote.total });
    expect(await cardTimeLeft(s, pkg)).toBe(imageMs / 2n);
    expect(await cash(u.user.id)).toBe(cashBefore - BigInt(quote.total));
    expect((await checkLedger(s.ctx.db)).problems).toEqual([]);
  });
});

describe('trained LoRAs', () => {
  it('offers each saved epoch of the account’s jobs and paints with the colour the LoRA learnt', async () => {
    const u = await userWithCash('100');
    await certify(s, u.token);
    const ds = json<{ id: string }>(await post(s.app, API.sdDatasets, { name: '红色', kind: 'style', triggerWord: 'redx' }, u.token)).id;
    const { payload, headers } = multipartFiles([{ name: 'a.png', content: pngImage(32, 32, [240, 10, 10]), type: 'image/png' }]);
    await s.app.inject({ method: 'POST', url: fill(API.sdDatasetImages, ds), payload, headers: { ...headers, authorization: `Bearer ${u.token}` } });
    const params = { ...loraPreset('style', 'sd15'), repeats: 2, epochs: 2, batchSize: 1 };
    const job = json<LoraJob>(await post(s.app, API.sdTrainJobs, { datasetId: ds, baseModel: 'sd15', params, name: 'red', requestId: randomUUID() }, u.token));
    await s.ctx.training.tick();
    s.clock.advance(200_000);
    await s.ctx.training.tick();
    expect(json<LoraJob>(await get(s.app, fill(API.sdTrainJob, job.id), u.token)).status).toBe('done');

    const options = json<{ items: LoraOption[] }>(await get(s.app, API.sdLoras, u.token)).items;
    expect(options.filter((o) => o.source === 'job').map((o) => [o.name, o.epoch])).toEqual([
      ['red-000002', 2],
      ['red-000001', 1],
    ]);
    expect(options.some((o) => o.source === 'public' && o.ref === 'watercolor')).toBe(true);

    const plain = await finish(u.token, json<DiffusionTask>(await submit(u.token, { batchCount: 1, prompt: 'redx, flower' })).id);
    const lora = await finish(
      u.token,
      json<DiffusionTask>(await submit(u.token, { batchCount: 1, prompt: 'redx, flower', loras: [{ source: 'job', jobId: job.id, epoch: 2, weight: 1 }] })).id,
    );
    expect(lora.images[0]!.params.loras).toEqual([{ source: 'job', jobId: job.id, epoch: 2, weight: 1 }]);
    // The LoRA learnt red: its picture is redder than the one without it.
    const redness = async (id: string) => {
      const { default: sharp } = await import('sharp');
      const { channels } = await sharp(await file(u.token, id)).stats();
      return channels[0]!.mean - (channels[1]!.mean + channels[2]!.mean) / 2;
    };
    expect(await redness(lora.images[0]!.id)).toBeGreaterThan((await redness(plain.images[0]!.id)) + 10);
    // An SDXL task cannot use it.
    expect(
      json(await submit(u.token, { baseModel: 'sdxl', width: 1024, height: 1024, loras: [{ source: 'job', jobId: job.id, epoch: 2, weight: 1 }] })).code,
    ).toBe(40050007);
  });
});

describe('a ComfyUI backend without the LoRA folder', () => {
  it('offers and takes only public LoRAs', async () => {
    const u = await userWithCash('10');
    const own: LoraOption = { source: 'job', ref: randomUUID(), epoch: 1, name: 'mine-000001', baseModel: 'sd15', triggerWord: 'sks' };
    const service = new DiffusionService({
      db: s.ctx.db,
      clock: s.clock,
      ledger: s.ctx.ledger,
      storage: s.ctx.drivers.storage,
      catalogue: s.ctx.catalogue,
      training: { loraOptions: async () => [own], lora: async () => null },
      resources: s.ctx.resources,
      painter: new ComfyPainter({ url: async () => 'http://127.0.0.1:9' }),
      comfy: s.ctx.drivers.comfy,
      capacity: 2,
    });
    expect((await service.loraOptions(u.user.id)).map((o) => o.source)).toEqual(PUBLIC_LORAS.map(() => 'public'));
    const refused = service.create(u.user.id, u.user.id, {
      ...PARAMS,
      loras: [{ source: 'job', jobId: own.ref, epoch: 1, weight: 1 }],
      requestId: randomUUID(),
    });
    await expect(refused).rejects.toMatchObject({ code: 40050010 });
    expect(await cash(u.user.id)).toBe(yuanToUnits('10'));
  });
});
