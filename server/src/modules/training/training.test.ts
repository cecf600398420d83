/**
 * LoRA training (/sd/train) on the server's fake clock: refusals that write nothing, the quote,
 * a job's whole lifecycle with its files and per-epoch charges, cancel mid-epoch, failure refunds,
 * a restart in the middle, live progress over SSE, and exactly-once money throughout.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  API,
  LORA_TRAINING_GPU,
  loraEpochCharge,
  loraEstimate,
  loraPreset,
  yuanToUnits,
  type LoraJob,
  type LoraParams,
  type LoraQuote,
} from '@console/contract';
import {
  buyCardTime,
  cardTimeLeft,
  childAccount,
  countRows,
  del,
  fundedUser,
  get,
  json,
  multipartFiles,
  pngImage,
  post,
  certify,
  startTestServer,
  type TestServer,
} from '../../../test/harness.js';
import { parseSafetensors, valuesOf } from '../../drivers/image-backend/safetensors.js';
import { EmbeddedTrainer } from '../../drivers/image-backend/embedded-trainer.js';
import type { TrainerDriver } from '../../drivers/image-backend/types.js';
import { checkLedger } from '../ledger/index.js';
import { STALE_RUNNER_MS } from '../image-jobs/index.js';
import { TrainingService } from './service.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ env: { TRAINER_CAPACITY: '2', IMAGE_BACKEND_TICK_MS: '100' } });
});
afterAll(async () => s.close());

const fill = (p: string, id: string, epoch?: number) => p.replace(':id', id).replace(':epoch', String(epoch ?? ''));
/** Four steps an epoch, three epochs: short enough to walk through step by step. */
const PARAMS: LoraParams = { ...loraPreset('person', 'sd15'), repeats: 1, epochs: 3, batchSize: 1 };

async function userWithCash(yuan: string) {
  const u = await fundedUser(s, yuan);
  await certify(s, u.token);
  return u;
}

/** A dataset of `n` images in two colours (red and blue), named so the order is known. */
async function dataset(token: string, n = 4): Promise<string> {
  const made = json<{ id: string }>(await post(s.app, API.sdDatasets, { name: '训练集', kind: 'person', triggerWord: 'sks' }, token));
  const files = Array.from({ length: n }, (_, i) => ({
    name: `img${i}.png`,
    content: pngImage(32, 32, i % 2 ? [20, 20, 230] : [230, 20, 20]),
    type: 'image/png',
  }));
  const { payload, headers } = multipartFiles(files);
  const up = await s.app.inject({
    method: 'POST',
    url: fill(API.sdDatasetImages, made.id),
    payload,
    headers: { ...headers, authorization: `Bearer ${token}` },
  });
  expect(up.statusCode).toBe(200);
  return made.id;
}

const cash = async (userId: string) => (await s.ctx.ledger.balances(userId)).cash;
const start = (token: string, datasetId: string, extra: Record<string, unknown> = {}) =>
  post(s.app, API.sdTrainJobs, { datasetId, baseModel: 'sd15', params: PARAMS, name: 'my_lora', requestId: randomUUID(), ...extra }, token);
const job = async (token: string, id: string) => json<LoraJob>(await get(s.app, fill(API.sdTrainJob, id), token));

/** Moves the clock by `seconds` and lets the runner catch up. */
async function run(seconds: number, training: TrainingService = s.ctx.training) {
  s.clock.advance(seconds * 1000);
  await training.tick();
}

describe('refusals write nothing', () => {
  it('refuses bad parameters, a dataset of someone else, an empty dataset and a child without the permission', async () => {
    const u = await userWithCash('100');
    const other = await userWithCash('100');
    const theirs = await dataset(other.token, 2);
    const mine = await dataset(u.token, 2);
    const empty = json<{ id: string }>(await post(s.app, API.sdDatasets, { name: '空', kind: 'style' }, u.token)).id;
    const jobsBefore = await countRows(s, 'sd_train_jobs');
    const cashBefore = await cash(u.user.id);

    const tooMany = await start(u.token, mine, { params: { ...PARAMS, epochs: 101 } });
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.body).toContain('训练轮数最大为 100');
    const alpha = await start(u.token, mine, { params: { ...PARAMS, networkDim: 8, networkAlpha: 16 } });
    expect(alpha.body).toContain('网络 Alpha 不能大于网络维度');
    expect((await start(u.token, mine, { name: '中文名' })).statusCode).toBe(400);
    expect(json(await start(u.token, theirs)).code).toBe(40450001);
    expect(json(await post(s.app, API.sdTrainQuote, { datasetId: theirs, baseModel: 'sd15', params: PARAMS }, u.token)).code).toBe(40450001);
    expect(json(await start(u.token, empty)).code).toBe(40050005);
    const child = await childAccount(s, u, 'painter', { usingLLM: true });
    const refused = await start(child.token, mine);
    expect(refused.statusCode).toBe(403);

    expect(await countRows(s, 'sd_train_jobs')).toBe(jobsBefore);
    expect(await cash(u.user.id)).toBe(cashBefore);
  });

  it('refuses a start the cash cannot hold (gift credit does not count) with 40011010', async () => {
    const u = await userWithCash('0');
    const ds = await dataset(u.token, 2);
    const res = await start(u.token, ds);
    expect(res.statusCode).toBe(400);
    expect(json(res).code).toBe(40011010);
    expect(json<{ items: LoraJob[] }>(await get(s.app, API.sdTrainJobs, u.token)).items).toEqual([]);
  });

  it('allows three active jobs per account', async () => {
    const u = await userWithCash('100');
    const ds = await dataset(u.token, 1);
    for (let i = 0; i < 3; i++) expect((await start(u.token, ds)).statusCode).toBe(200);
    expect(json(await start(u.token, ds)).code).toBe(40050006);
    for (const j of json<{ items: LoraJob[] }>(await get(s.app, `${API.sdTrainJobs}?status=active`, u.token)).items) {
      expect((await post(s.app, fill(API.sdTrainJobCancel, j.id), undefined, u.token)).statusCode).toBe(200);
    }
  });
});

describe('a job from start to end', () => {
  it('quotes the estimate at the training GPU rate, holds it, charges each epoch its share and writes real files', async () => {
    const u = await userWithCash('100');
    const ds = await dataset(u.token, 4);
    const quote = json<LoraQuote>(await post(s.app, API.sdTrainQuote, { datasetId: ds, baseModel: 'sd15', params: PARAMS }, u.token));
    const rate = (await s.ctx.catalogue.gpuHourlyRate(LORA_TRAINING_GPU))!;
    const estimate = loraEstimate(4, PARAMS, 'sd15', rate.ratePerHour);
    expect(quote).toMatchObject({
      images: 4,
      steps: { perEpoch: 4, total: 12 },
      seconds: estimate.seconds,
      amount: String(estimate.units),
      gpuName: 'RTX 4090',
    });

    const requestId = randomUUID();
    const first = json<LoraJob>(await start(u.token, ds, { requestId }));
    // A double click: the same request starts nothing more.
    const again = json<LoraJob>(await start(u.token, ds, { requestId }));
    expect(again.id).toBe(first.id);
    expect(first).toMatchObject({ status: 'queued', held: quote.amount, charged: '0', step: 0, epoch: 0 });
    const held = BigInt(quote.amount);
    expect(await cash(u.user.id)).toBe(yuanToUnits('100') - held);

    await s.ctx.training.tick();
    expect((await job(u.token, first.id)).status).toBe('preparing');
    await run(59);
    expect((await job(u.token, first.id)).status).toBe('preparing');
    await run(1 + 0.45 * 2); // setup over, two steps done
    let j = await job(u.token, first.id);
    expect(j).toMatchObject({ status: 'training', step: 2, epoch: 0, charged: '0' });
    expect(j.loss.length).toBeGreaterThan(0);
    expect(j.etaSeconds).toBeGreaterThan(0);

    await run(0.45 * 2 + 5); // the first epoch's last steps and its save
    j = await job(u.token, first.id);
    expect(j).toMatchObject({ status: 'training', epoch: 1, step: 4, charged: String(loraEpochCharge(held, 3, 1)) });
    expect(j.epochs.map((e) => e.epoch)).toEqual([1]);

    await run(0.45 * 8 + 5); // the second epoch and the third's steps: saving
    expect((await job(u.token, first.id)).status).toBe('saving');
    await run(5);
    j = await job(u.token, first.id);
    expect(j).toMatchObject({ status: 'done', epoch: 3, step: 12, charged: String(held), refunded: '0', etaSeconds: null });
    expect(j.epochs.map((e) => e.epoch)).toEqual([1, 2, 3]);
    expect(j.log.join('\n')).toContain('saving checkpoint: my_lora-000003.safetensors');
    // The loss falls: the end of the curve is below its start.
    expect(j.loss.at(-1)![1]).toBeLessThan(j.loss[0]![1]);

    // Charged exactly the hold, once; nothing left held.
    expect(await cash(u.user.id)).toBe(yuanToUnits('100') - held);
    await run(10);
    expect(await cash(u.user.id)).toBe(yuanToUnits('100') - held);

    // The LoRA file is a real safetensors file laid out as sd-scripts writes one.
    const file = await get(s.app, fill(API.sdTrainJobLora, first.id, 3), u.token);
    expect(file.statusCode).toBe(200);
    expect(file.headers['content-disposition']).toContain('my_lora-000003.safetensors');
    const raw = file.rawPayload;
    const headerLength = Number(raw.readBigUInt64LE(0));
    const header = JSON.parse(raw.subarray(8, 8 + headerLength).toString('utf8'));
    expect(header.__metadata__).toMatchObject({ ss_output_name: 'my_lora', ss_epoch: '3', ss_num_epochs: '3', ss_network_dim: String(PARAMS.networkDim) });
    const parsed = parseSafetensors(raw);
    const down = parsed.tensors['lora_unet_down_blocks_0_attentions_0_transformer_blocks_0_attn1_to_q.lora_down.weight']!;
    expect(down.shape).toEqual([PARAMS.networkDim, 320]);
    // Every tensor's bytes are its shape's elements at its dtype's size, and they fill the rest of the file.
    const BYTES: Record<string, number> = { F16: 2, F32: 4 };
    let end = 0;
    for (const [name, t] of Object.entries(header)) {
      if (name === '__metadata__') continue;
      const { dtype, shape, data_offsets } = t as { dtype: string; shape: number[]; data_offsets: [number, number] };
      expect(data_offsets[1] - data_offsets[0]).toBe(shape.reduce((n, d) => n * d, 1) * BYTES[dtype]!);
      end = Math.max(end, data_offsets[1]);
    }
    expect(raw.length).toBe(8 + headerLength + end);
    // What it learnt is the dataset's colours, far from the grey it started at: every image (red or
    // blue) has almost no green and red + blue of about 0.98, whatever mix of them the batches drew.
    const [r, g, b] = valuesOf(parsed.tensors['console_dataset_color']!);
    expect(Math.abs(r! + b! - 0.98)).toBeLessThan(0.1);
    expect(g).toBeLessThan(0.2);

    const sample = await get(s.app, fill(API.sdTrainJobSample, first.id, 1), u.token);
    expect(sample.headers['content-type']).toBe('image/png');
    expect(sample.rawPayload.subarray(1, 4).toString()).toBe('PNG');
    expect(json(await get(s.app, fill(API.sdTrainJobLora, first.id, 4), u.token)).code).toBe(40450004);
    // Someone else cannot read it.
    const stranger = await userWithCash('0');
    expect(json(await get(s.app, fill(API.sdTrainJobLora, first.id, 3), stranger.token)).code).toBe(40450003);

    // Deleting the finished job removes its files.
    expect((await del(s.app, fill(API.sdTrainJob, first.id), u.token)).statusCode).toBe(200);
    expect(json(await get(s.app, fill(API.sdTrainJob, first.id), u.token)).code).toBe(40450003);
    expect((await checkLedger(s.ctx.db)).problems).toEqual([]);
  });

  it('cancel mid-epoch charges the finished epochs and returns the rest; a second cancel is refused', async () => {
    const u = await userWithCash('100');
    const ds = await dataset(u.token, 4);
    const j = json<LoraJob>(await start(u.token, ds));
    const held = BigInt(j.held);
    await s.ctx.training.tick();
    await run(60 + 0.45 * 4 + 5 + 0.45 * 2); // one epoch saved, two steps into the second
    expect(await job(u.token, j.id)).toMatchObject({ epoch: 1, step: 6 });
    expect(json(await del(s.app, fill(API.sdTrainJob, j.id), u.token)).code).toBe(40950003);

    const cancelled = json<LoraJob>(await post(s.app, fill(API.sdTrainJobCancel, j.id), undefined, u.token));
    const first = loraEpochCharge(held, 3, 1);
    expect(cancelled).toMatchObject({ status: 'cancelled', charged: String(first), refunded: String(held - first) });
    expect(await cash(u.user.id)).toBe(yuanToUnits('100') - first);
    expect(json(await post(s.app, fill(API.sdTrainJobCancel, j.id), undefined, u.token)).code).toBe(40950002);
    // The runner leaves it alone from now on.
    await run(120);
    expect(await job(u.token, j.id)).toMatchObject({ status: 'cancelled', epoch: 1 });
    expect(await cash(u.user.id)).toBe(yuanToUnits('100') - first);
  });

  it('a failure refunds everything, the finished epochs included', async () => {
    const u = await userWithCash('100');
    const ds = await dataset(u.token, 4);
    const j = json<LoraJob>(await start(u.token, ds));
    await s.ctx.training.tick();
    await run(60 + 0.45 * 4 + 5);
    expect((await job(u.token, j.id)).epoch).toBe(1);
    // The backend reports a failure (e.g. out of GPU memory) on its next poll.
    const trainer = s.ctx.drivers.trainer;
    const poll = trainer.poll.bind(trainer);
    trainer.poll = async (id) => (id === j.id ? [{ type: 'failed', reason: 'CUDA out of memory：显存不足，请调小批大小或分辨率后重试' }] : poll(id));
    try {
      await run(1);
    } finally {
      trainer.poll = poll;
    }
    const failed = await job(u.token, j.id);
    expect(failed).toMatchObject({ status: 'failed', charged: '0', refunded: j.held });
    expect(failed.error).toContain('显存不足');
    expect(await cash(u.user.id)).toBe(yuanToUnits('100'));
    expect((await checkLedger(s.ctx.db)).problems).toEqual([]);
  });

  it('a job whose dataset was deleted before its start fails and is refunded', async () => {
    const u = await userWithCash('100');
    const ds = await dataset(u.token, 2);
    const j = json<LoraJob>(await start(u.token, ds));
    expect((await del(s.app, fill(API.sdDataset, ds), u.token)).statusCode).toBe(200);
    await s.ctx.training.tick();
    expect(await job(u.token, j.id)).toMatchObject({ status: 'failed', refunded: j.held });
    expect(await cash(u.user.id)).toBe(yuanToUnits('100'));
  });
});

describe('时长包 before the cash', () => {
  it('a package covering the whole estimate holds no cash and is drawn by the job; one covering part of it lowers the hold, and a cancel gives the unused time back', async () => {
    const u = await userWithCash('300'); // the package costs ¥168
    const ds = await dataset(u.token, 4);
    const pkg = await buyCardTime(s, u.token, 3_600_000n);
    const cashBefore = await cash(u.user.id);
    const quote = json<LoraQuote>(await post(s.app, API.sdTrainQuote, { datasetId: ds, baseModel: 'sd15', params: PARAMS }, u.token));
    expect(quote).toMatchObject({ packageSeconds: quote.seconds, amount: '0' });
    const j = json<LoraJob>(await start(u.token, ds));
    expect(j).toMatchObject({ held: '0', packageSeconds: quote.seconds });
    expect(await cardTimeLeft(s, pkg)).toBe(3_600_000n - BigInt(quote.seconds) * 1000n);
    await s.ctx.training.tick();
    await run(60 + 0.45 * 12 + 15 + 1);
    expect(await job(u.token, j.id)).toMatchObject({ status: 'done', charged: '0', packageUsedSeconds: quote.seconds });
    expect(await cash(u.user.id)).toBe(cashBefore);
    // The package's history (/compute/detail) names the job and the hours it took.
    const usages = json<{ items: { kind: string; ref: string; amount: string }[] }>(await get(s.app, API.resourcePackageUsages.replace(':id', pkg), u.token));
    expect(usages.items).toEqual([expect.objectContaining({ kind: 'train', ref: j.id, amount: String(Math.ceil((quote.seconds * 10_000) / 3600) / 10_000) })]);
    const stranger = await userWithCash('0');
    expect(json(await get(s.app, API.resourcePackageUsages.replace(':id', pkg), stranger.token)).code).toBe(40450008);
    // On sale with its hours' price at the card's rate, so the discount shows.
    const products = json<{ items: { id: string; price: string; listPrice: string | null }[] }>(await get(s.app, API.resourceProducts));
    expect(products.items.find((p) => p.id === 'gpu-hours-4090-100')).toMatchObject({ price: '1680000', listPrice: '1980000' });
    expect(products.items.find((p) => p.id === 'llm-tokens-10m')).toMatchObject({ listPrice: null });

    // Half the estimate left in the package: about half the price held from the cash.
    const half = BigInt(quote.seconds) * 500n;
    await s.ctx.db.execute(`update resource_packages set remain = ${half} where id = '${pkg}'`);
    const partial = json<LoraQuote>(await post(s.app, API.sdTrainQuote, { datasetId: ds, baseModel: 'sd15', params: PARAMS }, u.token));
    expect(partial.packageSeconds).toBe(Math.floor(quote.seconds / 2));
    expect(BigInt(partial.amount)).toBe(
      (BigInt(quote.listAmount) * (BigInt(quote.seconds) * 1000n - half) + BigInt(quote.seconds) * 1000n - 1n) / (BigInt(quote.seconds) * 1000n),
    );
    const k = json<LoraJob>(await start(u.token, ds));
    expect(k.held).toBe(partial.amount);
    expect(await cardTimeLeft(s, pkg)).toBe(0n);
    await s.ctx.training.tick();
    await run(60 + 0.45 * 4 + 5); // one epoch of three
    const cancelled = json<LoraJob>(await post(s.app, fill(API.sdTrainJobCancel, k.id), undefined, u.token));
    const usedMs = loraEpochCharge(half, 3, 1);
    expect(cancelled.packageUsedSeconds).toBe(Number(usedMs) / 1000);
    expect(await cardTimeLeft(s, pkg)).toBe(half - usedMs);
    expect(await cash(u.user.id)).toBe(cashBefore - loraEpochCharge(BigInt(partial.amount), 3, 1));
    expect((await checkLedger(s.ctx.db)).problems).toEqual([]);
  });

  it('a failed job gives all its package time back', async () => {
    const u = await userWithCash('300');
    const ds = await dataset(u.token, 4);
    const pkg = await buyCardTime(s, u.token, 3_600_000n);
    const j = json<LoraJob>(await start(u.token, ds));
    expect(await cardTimeLeft(s, pkg)).toBeLessThan(3_600_000n);
    expect((await del(s.app, fill(API.sdDataset, ds), u.token)).statusCode).toBe(200);
    await s.ctx.training.tick();
    expect((await job(u.token, j.id)).status).toBe('failed');
    expect(await cardTimeLeft(s, pkg)).toBe(3_600_000n);
  });
});

describe('the queue and replays', () => {
  it('runs as many jobs at once as the backend has room for; the next waits queued', async () => {
    const a = await userWithCash('100');
    const b = await userWithCash('100');
    const [da, db] = [await dataset(a.token, 1), await dataset(b.token, 1)];
    const jobs = [json<LoraJob>(await start(a.token, da)), json<LoraJob>(await start(a.token, da)), json<LoraJob>(await start(b.token, db))];
    await s.ctx.training.tick();
    const statuses = async () => Promise.all(jobs.map(async (j, i) => (await job(i < 2 ? a.token : b.token, j.id)).status));
    expect(await statuses()).toEqual(['preparing', 'preparing', 'queued']);
    await run(60 + 0.45 * 3 + 15 + 1); // the first two end
    await s.ctx.training.tick();
    expect(await statuses()).toEqual(['done', 'done', 'preparing']);
  });

  it('the same request sent twice at once starts one job and holds once', async () => {
    const u = await userWithCash('100');
    const ds = await dataset(u.token, 2);
    const requestId = randomUUID();
    const [x, y] = await Promise.all([start(u.token, ds, { requestId }), start(u.token, ds, { requestId })]);
    expect([x.statusCode, y.statusCode]).toEqual([200, 200]);
    expect(json<LoraJob>(x).id).toBe(json<LoraJob>(y).id);
    expect(await cash(u.user.id)).toBe(yuanToUnits('100') - BigInt(json<LoraJob>(x).held));
    await post(s.app, fill(API.sdTrainJobCancel, json<LoraJob>(x).id), undefined, u.token);
  });
});

/** What a job left in the platform's hold account: 0 once it has ended, whatever happened. */
async function stillHeld(jobId: string): Promise<bigint> {
  const res = await s.ctx.db.execute(`select coalesce(sum(e.amount), 0)::text as held from ledger_entries e
    join ledger_transfers t on t.id = e.transfer_id join ledger_accounts a on a.id = e.account_id
    where t.idempotency_key like 'train:${jobId}:%' and a.kind = 'hold'`);
  return BigInt((res as unknown as { rows: { held: string }[] }).rows[0]!.held);
}

describe('when things go wrong in the middle', () => {
  it('a failure reported with an epoch in the same poll refunds that epoch too, and the failed job’s files are gone', async () => {
    const u = await userWithCash('100');
    const ds = await dataset(u.token, 4);
    const j = json<LoraJob>(await start(u.token, ds));
    await s.ctx.training.tick();
    await run(60 + 0.45 * 4 + 5);
    const trainer = s.ctx.drivers.trainer;
    const poll = trainer.poll.bind(trainer);
    trainer.poll = async (id) => {
      const events = await poll(id);
      return id === j.id && events ? [...events, { type: 'failed', reason: '显存不足' }] : events;
    };
    try {
      await run(0.45 * 4 + 5); // epoch 2 is saved and charged, then the failure
    } finally {
      trainer.poll = poll;
    }
    expect(await job(u.token, j.id)).toMatchObject({ status: 'failed', charged: '0', refunded: j.held });
    expect(await cash(u.user.id)).toBe(yuanToUnits('100'));
    expect(await stillHeld(j.id)).toBe(0n);
    expect(json(await get(s.app, fill(API.sdTrainJobLora, j.id, 1), u.token)).code).toBe(40450004);
  });

  it('an epoch that could not be stored is trained again, not skipped: the job still ends with every epoch and nothing held', async () => {
    const u = await userWithCash('100');
    const ds = await dataset(u.token, 4);
    const j = json<LoraJob>(await start(u.token, ds));
    await s.ctx.training.tick();
    const storage = s.ctx.drivers.storage;
    const put = storage.put.bind(storage);
    let failures = 0;
    storage.put = async (key, body, type) => {
      if (key.endsWith('-000002.safetensors') && failures++ === 0) throw new Error('ENOSPC: no space left on device');
      return put(key, body, type);
    };
    try {
      s.clock.advance((60 + (0.45 * 4 + 5) * 2) * 1000);
      await expect(s.ctx.training.tick()).rejects.toThrow('ENOSPC');
      expect((await job(u.token, j.id)).epoch).toBe(0); // nothing of that poll was kept
      for (let i = 0; i < 4; i++) await run(60 + 0.45 * 12 + 15);
    } finally {
      storage.put = put;
    }
    const done = await job(u.token, j.id);
    expect(done).toMatchObject({ status: 'done', epoch: 3, charged: j.held });
    expect(done.epochs.map((e) => e.epoch)).toEqual([1, 2, 3]);
    expect(await stillHeld(j.id)).toBe(0n);
  });

  it('the same request sent twice at once at the active limit returns the one job to both', async () => {
    const u = await userWithCash('100');
    const ds = await dataset(u.token, 1);
    await start(u.token, ds);
    await start(u.token, ds);
    const requestId = randomUUID();
    const [x, y] = await Promise.all([start(u.token, ds, { requestId }), start(u.token, ds, { requestId })]);
    expect([x.statusCode, y.statusCode]).toEqual([200, 200]);
    expect(json<LoraJob>(x).id).toBe(json<LoraJob>(y).id);
    for (const j of json<{ items: LoraJob[] }>(await get(s.app, `${API.sdTrainJobs}?status=active`, u.token)).items) {
      await post(s.app, fill(API.sdTrainJobCancel, j.id), undefined, u.token);
    }
  });
});

describe('a restart in the middle', () => {
  it('another process takes the job over once the runner is silent and finishes it from the last saved epoch, charging each epoch once', async () => {
    const u = await userWithCash('100');
    const ds = await dataset(u.token, 4);
    const j = json<LoraJob>(await start(u.token, ds));
    const held = BigInt(j.held);
    await s.ctx.training.tick();
    await run(60 + 0.45 * 4 + 5 + 0.45 * 3); // epoch 1 saved, 3 steps into epoch 2

    // The process dies: a new one, with a trainer that knows nothing of the run.
    const trainer: TrainerDriver = new EmbeddedTrainer(s.clock);
    const next = new TrainingService({
      db: s.ctx.db,
      clock: s.clock,
      ledger: s.ctx.ledger,
      storage: s.ctx.drivers.storage,
      datasets: s.ctx.datasets,
      catalogue: s.ctx.catalogue,
      resources: s.ctx.resources,
      trainer,
      capacity: 2,
    });
    await next.tick();
    expect((await job(u.token, j.id)).status).toBe('training'); // the old runner is not silent yet
    s.clock.advance(STALE_RUNNER_MS);
    await next.tick();
    let now = await job(u.token, j.id);
    expect(now).toMatchObject({ status: 'preparing', epoch: 1, step: 4 });
    expect(now.log.join('\n')).toContain('从第 1 轮结束处继续训练');

    await run(60 + 0.45 * 8 + 10 + 1, next);
    now = await job(u.token, j.id);
    expect(now).toMatchObject({ status: 'done', epoch: 3, charged: String(held) });
    expect(await cash(u.user.id)).toBe(yuanToUnits('100') - held);

    // Resumed from the saved state, the result is what an uninterrupted run gives.
    const resumed = parseSafetensors((await get(s.app, fill(API.sdTrainJobLora, j.id, 3), u.token)).rawPayload);
    const straight = json<LoraJob>(await start(u.token, ds));
    await next.tick();
    await run(60 + 0.45 * 12 + 15 + 1, next);
    expect((await job(u.token, straight.id)).status).toBe('done');
    const uninterrupted = parseSafetensors((await get(s.app, fill(API.sdTrainJobLora, straight.id, 3), u.token)).rawPayload);
    expect(valuesOf(resumed.tensors['console_dataset_color']!)).toEqual(valuesOf(uninterrupted.tensors['console_dataset_color']!));
    expect((await checkLedger(s.ctx.db)).problems).toEqual([]);
  });
});

describe('live progress', () => {
  it('streams the job as server-sent events each time it changes, and ends with it', async () => {
    const u = await userWithCash('100');
    const ds = await dataset(u.token, 4);
    const j = json<LoraJob>(await start(u.token, ds));
    const stream = get(s.app, fill(API.sdTrainJobEvents, j.id), u.token);
    // Move the job while the stream watches (it reads every IMAGE_BACKEND_TICK_MS = 100 ms of real time).
    await new Promise((resolve) => setTimeout(resolve, 250));
    await s.ctx.training.tick();
    for (const seconds of [61, 2, 6, 10, 10]) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      await run(seconds);
    }
    const res = await stream;
    expect(res.headers['content-type']).toContain('text/event-stream');
    const events = res.body
      .split('\n\n')
      .filter((e) => e.startsWith('data: '))
      .map((e) => JSON.parse(e.slice(6)) as LoraJob);
    expect(events[0]!.status).toBe('queued');
    expect(events.at(-1)!.status).toBe('done');
    const statuses = [...new Set(events.map((e) => e.status))];
    expect(statuses).toEqual(expect.arrayContaining(['queued', 'training', 'done']));
    // Steps only go forward.
    expect(events.map((e) => e.step)).toEqual([...events.map((e) => e.step)].sort((a, b) => a - b));
    expect(json(await get(s.app, fill(API.sdTrainJobEvents, randomUUID()), u.token)).code).toBe(40450003);
  });
});
