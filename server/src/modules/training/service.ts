/**
 * LoRA training (/sd/train, issue 16): jobs on a dataset, run by the image backend's trainer, paid
 * from the cash as the work is done.
 *
 * Money: the quote (estimated GPU time × the training GPU's hourly rate, at least the minimum) is
 * held from the cash at the start (`train:<id>:hold`); each finished epoch moves its share of the
 * hold to revenue (`train:<id>:epoch:<n>`, contract `loraEpochCharge`, so the epochs add up to the
 * hold exactly); a cancel returns what is still held (`train:<id>:release`) and a failure returns
 * everything, the epochs' charges included (`train:<id>:refund`). Every transfer has its key, so a
 * tick replayed after a crash moves nothing twice.
 *
 * State machine: queued → preparing → training → saving → done, and failed / cancelled from any
 * active status. One place moves a job: `advance`, under the job's row lock (SKIP LOCKED, so
 * several processes share the work), or `cancel`. A job is run by one process (`runner`); a runner
 * silent for STALE_RUNNER_MS (a crash, a restart) has its jobs taken over and started again from
 * their last saved epoch.
 */
import { randomUUID } from 'node:crypto';
import { and, asc, count, desc, eq, inArray, sql } from 'drizzle-orm';
import {
  LORA_JOB_ACTIVE,
  LORA_MAX_ACTIVE_JOBS,
  LORA_MIN_CHARGE_UNITS,
  LORA_TRAINING_GPU,
  isLoraJobActive,
  loraEpochCharge,
  loraEstimate,
  loraTimeline,
  type LoraJob,
  type LoraParams,
  type LoraQuote,
  type LoraEstimate,
  type LoraOption,
  type PageOf,
  type SdBaseModelId,
  formatBeijing,
  formatYuan,
  type loraJobSchema,
} from '@console/contract';
import { buffer } from 'node:stream/consumers';
import type { Clock } from '../../clock.js';
import type { Bus } from '../../db/bus.js';
import type { Db, Tx } from '../../db/client.js';
import type { TrainerDriver, TrainerEvent, TrainingImage } from '../../drivers/image-backend/types.js';
import type { StorageDriver, StoredObject } from '../../drivers/storage/types.js';
import { AppError } from '../../http/errors.js';
import type { CatalogueService } from '../catalogue/index.js';
import type { DatasetService } from '../datasets/index.js';
import type { ResourceService } from '../resources/index.js';
import type { LedgerService } from '../ledger/index.js';
import { admitOnce, advanceEach, advanceRun, hasRoom, rowOf, staleAfter } from '../image-jobs/index.js';
import { sdTrainEpochs, sdTrainJobs } from './schema.js';

type JobRow = typeof sdTrainJobs.$inferSelect;
type EpochRow = typeof sdTrainEpochs.$inferSelect;

/** A job started this many times without finishing fails (and is refunded) instead of starting again. */
export const MAX_RUNS = 5;
/** The log keeps its last lines; the loss curve is thinned when it grows past this many points. */
const LOG_LINES = 200;
const LOSS_POINTS = 600;

export interface QuoteInput {
  datasetId: string;
  baseModel: SdBaseModelId;
  params: LoraParams;
}

/** The bus channel of "this job changed" (its id): what the progress streams wait on. */
export const TRAINING_JOB_CHANGED = 'training.job';

export class TrainingService {
  /** This process, as the runner of the jobs it starts. */
  readonly runnerId = randomUUID();

  constructor(
    private deps: {
      db: Db;
      clock: Clock;
      ledger: Pick<LedgerService, 'holds'>;
      storage: StorageDriver;
      datasets: Pick<DatasetService, 'forTraining' | 'trainingImages'>;
      catalogue: Pick<CatalogueService, 'gpuHourlyRate'>;
      /** The payer's RTX 4090 时长包, drawn before the cash. */
      resources: Pick<ResourceService, 'cardTimeLeft' | 'reserveCardTime' | 'releaseCardTime'>;
      trainer: TrainerDriver;
      /** Jobs the backend runs at once (all processes together); more wait queued. */
      capacity: number;
      /** How often the runner ticks: a runner silent for three ticks (at least STALE_RUNNER_MS) has stopped. */
      tickMs?: number;
      /** Tells every replica's progress streams that a job changed (TRAINING_JOB_CHANGED, the job's id). */
      bus?: Pick<Bus, 'publish'>;
    },
  ) {}

  // --- the account holder's calls ---------------------------------------------------------------

  async quote(payerId: string, body: QuoteInput): Promise<LoraQuote> {
    const { imageIds } = await this.deps.datasets.forTraining(payerId, body.datasetId);
    const { quote, estimate } = await this.price(imageIds, body);
    const split = splitEstimate(estimate, await this.deps.resources.cardTimeLeft(payerId, LORA_TRAINING_GPU));
    return { ...quote, packageSeconds: Number(split.packageMs / 1000n), amount: String(split.cash) };
  }

  /** Starts a job: the quote held from the cash and the job queued, in one transaction; the same requestId twice starts one job. */
  async create(payerId: string, actorId: string, body: QuoteInput & { name: string; requestId: string }): Promise<LoraJob> {
    const again = await this.byRequest(payerId, body.requestId);
    if (again) return again;
    const { dataset, imageIds } = await this.deps.datasets.forTraining(payerId, body.datasetId);
    const { quote, estimate } = await this.price(imageIds, body);
    const now = this.deps.clock.now();
    const id = randomUUID();
    return admitOnce({
      db: this.deps.db,
      jobs: sdTrainJobs,
      payerId,
      requestId: body.requestId,
      id,
      active: LORA_JOB_ACTIVE,
      maxActive: LORA_MAX_ACTIVE_JOBS,
      limitError: 'TRAIN_ACTIVE_LIMIT',
      insert: async (tx) => {
        // The packages first: what they reserve is not held from the cash.
        const reserved = await this.deps.resources.reserveCardTime(tx, payerId, jobRef(id), LORA_TRAINING_GPU, estimateMs(estimate));
        const { cash: units, packageMs } = splitEstimate(estimate, reserved);
        await tx.insert(sdTrainJobs).values({
          id,
          userId: payerId,
          createdBy: actorId,
          requestId: body.requestId,
          datasetId: dataset.id,
          datasetName: dataset.name,
          kind: dataset.kind,
          triggerWord: dataset.triggerWord,
          imageIds,
          name: body.name,
          baseModel: body.baseModel,
          params: body.params,
          status: 'queued',
          stepsPerEpoch: quote.steps.perEpoch,
          stepsTotal: quote.steps.total,
          estimateSeconds: quote.seconds,
          ratePerHour: BigInt(quote.ratePerHour),
          held: units,
          packageMs,
          log: [`${beijing(now)} ${packageMs > 0n ? `时长包预留 ${hours(packageMs)} 小时，` : ''}已预扣 ¥${formatYuan(units)}，排队等待 GPU`],
          createdAt: now,
          updatedAt: now,
        });
        await this.deps.ledger.holds.hold(tx, {
          key: `train:${id}:hold`,
          kind: 'train_hold',
          memo: `LoRA 训练「${body.name}」预扣`,
          actorId,
          holder: id,
          payerId,
          amount: units,
          short: 'TRAIN_INSUFFICIENT_CASH',
        });
      },
      byRequest: () => this.byRequest(payerId, body.requestId),
      get: (jobId) => this.get(payerId, jobId),
    });
  }

  async list(payerId: string, q: { page: number; pageSize: number; status?: 'active' | 'done' }): Promise<PageOf<typeof loraJobSchema>> {
    const where = and(
      eq(sdTrainJobs.userId, payerId),
      q.status === 'active' ? inArray(sdTrainJobs.status, [...LORA_JOB_ACTIVE]) : undefined,
      q.status === 'done' ? sql`${sdTrainJobs.status} not in ('queued', 'preparing', 'training', 'saving')` : undefined,
    );
    const [{ n } = { n: 0 }] = await this.deps.db.select({ n: count() }).from(sdTrainJobs).where(where);
    const rows = await this.deps.db
      .select()
      .from(sdTrainJobs)
      .where(where)
      .orderBy(desc(sdTrainJobs.createdAt), desc(sdTrainJobs.id))
      .limit(q.pageSize)
      .offset((q.page - 1) * q.pageSize);
    return { items: await this.views(rows), total: n, page: q.page, pageSize: q.pageSize };
  }

  async get(payerId: string, id: string): Promise<LoraJob> {
    const [view] = await this.views([await this.own(payerId, id)]);
    return view!;
  }

  /** When the job last changed (what the live page watches), or null when it is not the payer's. */
  async changedAt(payerId: string, id: string): Promise<{ updatedAt: number; active: boolean } | null> {
    const [row] = await this.deps.db
      .select({ updatedAt: sdTrainJobs.updatedAt, status: sdTrainJobs.status })
      .from(sdTrainJobs)
      .where(and(eq(sdTrainJobs.id, id), eq(sdTrainJobs.userId, payerId)));
    return row ? { updatedAt: row.updatedAt.getTime(), active: isLoraJobActive(row.status) } : null;
  }

  /** Stops an active job: the finished epochs stay charged, the rest of the hold goes back to the cash. */
  async cancel(payerId: string, id: string, actorId: string): Promise<LoraJob> {
    await this.deps.db.transaction(async (tx) => {
      const row = await lockOwn(tx, payerId, id);
      if (!isLoraJobActive(row.status)) throw new AppError('TRAIN_JOB_ENDED');
      await this.stop(tx, row, this.deps.clock.now(), actorId, '已取消');
    });
    this.changed(id);
    // After the commit: a cancel that rolled back leaves the run going.
    await this.deps.trainer.cancel(id);
    return this.get(payerId, id);
  }

  /** Ends a job keeping what its finished epochs were charged: the rest of the hold and of the 时长包 time goes back. */
  private async stop(tx: Tx, row: JobRow, now: Date, actorId: string | null, why: string): Promise<void> {
    const rest = row.held - row.charged;
    await this.giveBack(tx, row, 'release', rest, 0n, actorId);
    await this.deps.resources.releaseCardTime(tx, jobRef(row.id), row.packageMs - row.packageUsedMs);
    const note = `${beijing(now)} ${why}：完成 ${row.epoch} 轮，结算 ¥${formatYuan(row.charged)}，退回 ¥${formatYuan(rest)}`;
    await tx
      .update(sdTrainJobs)
      .set({ status: 'cancelled', refunded: rest, finishedAt: now, heartbeatAt: now, updatedAt: now, log: appendLog(row.log, [note]) })
      .where(eq(sdTrainJobs.id, row.id));
  }

  /** Deletes a finished job and its files. */
  async remove(payerId: string, id: string): Promise<void> {
    const epochs = await this.deps.db.transaction(async (tx) => {
      const row = await lockOwn(tx, payerId, id);
      if (isLoraJobActive(row.status)) throw new AppError('TRAIN_JOB_ACTIVE');
      const files = await tx.select().from(sdTrainEpochs).where(eq(sdTrainEpochs.jobId, id));
      await tx.delete(sdTrainJobs).where(eq(sdTrainJobs.id, id));
      return files;
    });
    // After the commit: a failed delete leaves only a file nobody reaches.
    for (const e of epochs) for (const key of [e.loraKey, ...e.sampleKeys]) await this.deps.storage.delete(key).catch(() => {});
  }

  /** An epoch's LoRA file or its first sample image. */
  async epochFile(payerId: string, id: string, epoch: number, what: 'lora' | 'sample'): Promise<StoredObject & { fileName: string }> {
    const job = await this.own(payerId, id);
    // A failed job was refunded in full: its files are not the account's.
    if (job.status === 'failed') throw new AppError('TRAIN_EPOCH_NOT_FOUND');
    const [row] = await this.deps.db
      .select()
      .from(sdTrainEpochs)
      .where(and(eq(sdTrainEpochs.jobId, id), eq(sdTrainEpochs.epoch, epoch)));
    const key = row && (what === 'lora' ? row.loraKey : row.sampleKeys[0]);
    const file = key ? await this.deps.storage.get(key) : null;
    if (!file) throw new AppError('TRAIN_EPOCH_NOT_FOUND');
    const fileName = what === 'lora' ? loraFileName(job.name, epoch) : `${job.name}-${pad(epoch)}.png`;
    return { ...file, fileName };
  }

  /** A saved epoch's LoRA as image generation uses it: its name, base model and its file; null when there is none. */
  async lora(payerId: string, jobId: string, epoch: number): Promise<{ name: string; baseModel: SdBaseModelId; file: Buffer } | null> {
    const [row] = await this.deps.db
      .select({ name: sdTrainJobs.name, baseModel: sdTrainJobs.baseModel, status: sdTrainJobs.status, loraKey: sdTrainEpochs.loraKey })
      .from(sdTrainEpochs)
      .innerJoin(sdTrainJobs, eq(sdTrainJobs.id, sdTrainEpochs.jobId))
      .where(and(eq(sdTrainJobs.id, jobId), eq(sdTrainJobs.userId, payerId), eq(sdTrainEpochs.epoch, epoch)));
    // A failed job was refunded: its files are not the account's to use.
    if (!row || row.status === 'failed') return null;
    const file = await this.deps.storage.get(row.loraKey);
    return file ? { name: `${row.name}-${pad(epoch)}`, baseModel: row.baseModel, file: await buffer(file.body) } : null;
  }

  /** The account's LoRAs for the generation form: every saved epoch of its jobs that did not fail, the newest first. */
  async loraOptions(payerId: string): Promise<LoraOption[]> {
    const rows = await this.deps.db
      .select({
        jobId: sdTrainJobs.id,
        name: sdTrainJobs.name,
        baseModel: sdTrainJobs.baseModel,
        triggerWord: sdTrainJobs.triggerWord,
        epoch: sdTrainEpochs.epoch,
      })
      .from(sdTrainEpochs)
      .innerJoin(sdTrainJobs, eq(sdTrainJobs.id, sdTrainEpochs.jobId))
      .where(and(eq(sdTrainJobs.userId, payerId), sql`${sdTrainJobs.status} <> 'failed'`))
      .orderBy(desc(sdTrainJobs.createdAt), desc(sdTrainEpochs.epoch))
      .limit(500);
    return rows.map((r) => ({
      source: 'job' as const,
      ref: r.jobId,
      epoch: r.epoch,
      name: `${r.name}-${pad(r.epoch)}`,
      baseModel: r.baseModel,
      triggerWord: r.triggerWord,
    }));
  }

  // --- the runner ---------------------------------------------------------------------------------

  /** Moves every active job forward (the scheduler calls it every second); returns how many changed. */
  async tick(): Promise<number> {
    const rows = await this.deps.db
      .select({ id: sdTrainJobs.id })
      .from(sdTrainJobs)
      .where(inArray(sdTrainJobs.status, [...LORA_JOB_ACTIVE]))
      .orderBy(asc(sdTrainJobs.createdAt));
    return advanceEach(
      rows.map((r) => r.id),
      async (id) => {
        const moved = await this.advance(id);
        if (moved) this.changed(id);
        return moved;
      },
    );
  }

  /** A job's row changed (committed): the progress streams watching it, on any replica, read it again. */
  private changed(id: string) {
    this.deps.bus?.publish(TRAINING_JOB_CHANGED, id);
  }

  private advance(id: string): Promise<boolean> {
    return advanceRun<JobRow, TrainerEvent>({
      db: this.deps.db,
      clock: this.deps.clock,
      runnerId: this.runnerId,
      staleMs: staleAfter(this.deps.tickMs),
      ...rowOf<JobRow>(this.deps.db, sdTrainJobs, id),
      isActive: (status) => isLoraJobActive(status as LoraJob['status']),
      poll: () => this.deps.trainer.poll(id),
      drop: () => this.deps.trainer.cancel(id),
      start: (tx, row, now) => this.startIfRoom(tx, row, now),
      takeOver: (tx, row, now, why) =>
        this.restart(tx, row, now, `${why === 'silent' ? '运行节点失联' : '训练进程已中断'}，从第 ${row.epoch} 轮结束处继续训练`),
      apply: (tx, row, events, now) => this.apply(tx, row, events, now),
    });
  }

  private async startIfRoom(tx: Tx, row: JobRow, now: Date): Promise<boolean> {
    if (!(await hasRoom(tx, sdTrainJobs, ['preparing', 'training', 'saving'], this.deps.capacity))) return false;
    return this.run(tx, row, now, `${beijing(now)} 开始准备：加载底模和数据集`);
  }

  private async restart(tx: Tx, row: JobRow, now: Date, why: string): Promise<boolean> {
    if (row.runs >= MAX_RUNS) return this.fail(tx, row, now, `训练进程多次中断（${row.runs} 次），任务已停止；费用已全部退回`);
    return this.run(tx, row, now, `${beijing(now)} ${why}`);
  }

  /** Starts the job on the backend (again, after its saved epochs) with the images it took at its start. */
  private async run(tx: Tx, row: JobRow, now: Date, note: string): Promise<boolean> {
    const images: TrainingImage[] = row.datasetId ? await this.deps.datasets.trainingImages(row.datasetId, row.imageIds, tx) : [];
    if (!images.length) {
      // Epochs already saved were delivered (their files are there): they stay paid, as on a cancel.
      if (row.epoch > 0) {
        await this.stop(tx, row, now, null, '数据集或其中的图片已被删除，训练无法继续');
        return true;
      }
      return this.fail(tx, row, now, '数据集或其中的图片已被删除，训练无法进行；费用已全部退回');
    }
    await this.deps.trainer.start({
      jobId: row.id,
      params: row.params,
      baseModel: row.baseModel,
      outputName: row.name,
      triggerWord: row.triggerWord,
      kind: row.kind,
      images,
      steps: { perEpoch: row.stepsPerEpoch, total: row.stepsTotal },
      fromEpoch: row.epoch,
    });
    await tx
      .update(sdTrainJobs)
      .set({
        status: 'preparing',
        runner: this.runnerId,
        heartbeatAt: now,
        runs: row.runs + 1,
        step: row.epoch * row.stepsPerEpoch,
        startedAt: row.startedAt ?? now,
        log: appendLog(row.log, [note]),
        updatedAt: now,
      })
      .where(eq(sdTrainJobs.id, row.id));
    return true;
  }

  /** What the backend reported, applied in order: progress, saved epochs (stored and charged), the end. */
  private async apply(tx: Tx, row: JobRow, events: TrainerEvent[], now: Date): Promise<boolean> {
    let { status, step, epoch, charged, loss, packageUsedMs } = row;
    const lines: string[] = [];
    for (const e of events) {
      if (e.type === 'failed') return this.fail(tx, { ...row, charged, epoch, packageUsedMs }, now, e.reason, lines);
      if (e.type === 'phase') status = e.phase;
      else if (e.type === 'log') lines.push(e.line);
      else if (e.type === 'progress') {
        step = e.step;
        loss = thin([...loss, ...e.loss]);
      } else if (e.type === 'epoch') {
        charged += await this.saveEpoch(tx, row, e, now);
        packageUsedMs += loraEpochCharge(row.packageMs, row.params.epochs, e.epoch);
        epoch = e.epoch;
        step = Math.max(step, e.epoch * row.stepsPerEpoch);
      } else if (e.type === 'done') status = 'done';
    }
    const ended = status === 'done';
    let refunded = row.refunded;
    if (ended) {
      lines.push(`${beijing(now)} 训练完成：共 ${epoch} 轮，结算 ¥${formatYuan(charged)}`);
      // The epochs' shares add up to the hold; should a backend end with fewer, nothing stays held.
      refunded = row.held - charged;
      await this.giveBack(tx, row, 'release', refunded, 0n, null);
      await this.deps.resources.releaseCardTime(tx, jobRef(row.id), row.packageMs - packageUsedMs);
    }
    const changed = events.length > 0;
    await tx
      .update(sdTrainJobs)
      .set({
        heartbeatAt: now,
        ...(changed ? { status, step, epoch, charged, packageUsedMs, refunded, loss, log: appendLog(row.log, lines), updatedAt: now } : {}),
        ...(ended ? { finishedAt: now } : {}),
      })
      .where(eq(sdTrainJobs.id, row.id));
    return changed;
  }

  /** An epoch's files into storage and its share of the hold to revenue; what it charged. */
  private async saveEpoch(tx: Tx, row: JobRow, e: Extract<TrainerEvent, { type: 'epoch' }>, now: Date): Promise<bigint> {
    const loraKey = `train/${row.id}/${loraFileName(row.name, e.epoch)}`;
    const sampleKeys = e.samples.map((_, i) => `train/${row.id}/sample-${pad(e.epoch)}-${i}.png`);
    await this.deps.storage.put(loraKey, e.lora, 'application/octet-stream');
    for (const [i, sample] of e.samples.entries()) await this.deps.storage.put(sampleKeys[i]!, sample, 'image/png');
    await tx
      .insert(sdTrainEpochs)
      .values({ jobId: row.id, epoch: e.epoch, loraKey, loraBytes: e.lora.length, sampleKeys, createdAt: now })
      .onConflictDoNothing();
    const share = loraEpochCharge(row.held, row.params.epochs, e.epoch);
    if (share === 0n) return 0n; // paid by the packages
    return this.deps.ledger.holds.settle(tx, {
      key: `train:${row.id}:epoch:${e.epoch}`,
      kind: 'train_usage',
      memo: `LoRA 训练「${row.name}」第 ${e.epoch}/${row.params.epochs} 轮`,
      actorId: row.createdBy,
      holder: row.id,
      amount: share,
    });
  }

  /** Ends a job as failed: everything it paid goes back to the cash, the epochs' charges included. */
  private async fail(tx: Tx, row: JobRow, now: Date, reason: string, lines: string[] = []): Promise<boolean> {
    const held = row.held - row.charged;
    await this.giveBack(tx, row, 'refund', held, row.charged, null);
    await this.deps.resources.releaseCardTime(tx, jobRef(row.id), row.packageMs);
    await tx
      .update(sdTrainJobs)
      .set({
        status: 'failed',
        error: reason,
        charged: 0n,
        refunded: row.held,
        packageUsedMs: 0n,
        finishedAt: now,
        heartbeatAt: now,
        updatedAt: now,
        log: appendLog(row.log, [...lines, `${beijing(now)} 训练失败：${reason}`]),
      })
      .where(eq(sdTrainJobs.id, row.id));
    return true;
  }

  // --- money -------------------------------------------------------------------------------------

  private async price(imageIds: string[], body: QuoteInput): Promise<{ quote: Omit<LoraQuote, 'packageSeconds' | 'amount'>; estimate: LoraEstimate }> {
    if (!imageIds.length) throw new AppError('DATASET_EMPTY');
    const gpu = await this.deps.catalogue.gpuHourlyRate(LORA_TRAINING_GPU);
    if (!gpu) throw new AppError('TRAIN_GPU_UNAVAILABLE');
    const estimate = loraEstimate(imageIds.length, body.params, body.baseModel, gpu.ratePerHour);
    return {
      estimate,
      quote: {
        images: imageIds.length,
        steps: estimate.steps,
        seconds: estimate.seconds,
        gpuName: gpu.name,
        ratePerHour: String(gpu.ratePerHour),
        listAmount: String(estimate.units),
        minimum: String(LORA_MIN_CHARGE_UNITS),
      },
    };
  }

  /** Money back to the cash: what is still held, and (on a failure) what the epochs were charged. */
  private giveBack(tx: Tx, row: JobRow, why: 'release' | 'refund', held: bigint, charged: bigint, actorId: string | null) {
    return this.deps.ledger.holds.release(tx, {
      key: `train:${row.id}:${why}`,
      kind: 'train_release',
      memo: why === 'release' ? `LoRA 训练「${row.name}」取消，退回未用部分` : `LoRA 训练「${row.name}」失败，全额退回`,
      actorId,
      holder: row.id,
      payerId: row.userId,
      amount: held,
      refunded: charged,
    });
  }

  // --- views -------------------------------------------------------------------------------------

  private async byRequest(payerId: string, requestId: string): Promise<LoraJob | null> {
    const [row] = await this.deps.db
      .select()
      .from(sdTrainJobs)
      .where(and(eq(sdTrainJobs.userId, payerId), eq(sdTrainJobs.requestId, requestId)));
    return row ? (await this.views([row]))[0]! : null;
  }

  private async own(payerId: string, id: string): Promise<JobRow> {
    const [row] = await this.deps.db
      .select()
      .from(sdTrainJobs)
      .where(and(eq(sdTrainJobs.id, id), eq(sdTrainJobs.userId, payerId)));
    if (!row) throw new AppError('TRAIN_JOB_NOT_FOUND');
    return row;
  }

  private async views(rows: JobRow[]): Promise<LoraJob[]> {
    if (!rows.length) return [];
    const epochs = await this.deps.db
      .select()
      .from(sdTrainEpochs)
      .where(
        inArray(
          sdTrainEpochs.jobId,
          rows.map((r) => r.id),
        ),
      )
      .orderBy(asc(sdTrainEpochs.epoch));
    return rows.map((r) =>
      this.view(
        r,
        epochs.filter((e) => e.jobId === r.id),
      ),
    );
  }

  private view(r: JobRow, epochs: EpochRow[]): LoraJob {
    return {
      id: r.id,
      name: r.name,
      datasetId: r.datasetId,
      datasetName: r.datasetName,
      triggerWord: r.triggerWord,
      baseModel: r.baseModel,
      params: r.params,
      status: r.status,
      images: r.imageIds.length,
      steps: { perEpoch: r.stepsPerEpoch, total: r.stepsTotal },
      step: r.step,
      epoch: r.epoch,
      estimateSeconds: r.estimateSeconds,
      etaSeconds: isLoraJobActive(r.status) ? this.eta(r) : null,
      loss: r.loss,
      log: r.log,
      epochs: epochs.map((e) => ({ epoch: e.epoch, bytes: e.loraBytes, samples: e.sampleKeys.length, createdAt: e.createdAt.toISOString() })),
      packageSeconds: Number(r.packageMs) / 1000,
      packageUsedSeconds: Number(r.packageUsedMs) / 1000,
      held: String(r.held),
      charged: String(r.charged),
      refunded: String(r.refunded),
      error: r.error,
      createdAt: r.createdAt.toISOString(),
      startedAt: r.startedAt?.toISOString() ?? null,
      finishedAt: r.finishedAt?.toISOString() ?? null,
      updatedAt: r.updatedAt.toISOString(),
    };
  }

  /** Seconds still to go at the backend's pace: the steps and saves left, and the setup while not yet training. */
  private eta(r: JobRow): number {
    const t = loraTimeline(r.params, r.baseModel);
    const setup = r.status === 'queued' || r.status === 'preparing' ? t.setupSeconds : 0;
    const seconds = setup + (r.stepsTotal - r.step) * t.secondsPerStep + (r.params.epochs - r.epoch) * t.saveSecondsPerEpoch;
    return Math.ceil(seconds / this.deps.trainer.speedup);
  }
}

/** The payer's job, locked for the rest of the transaction. */
async function lockOwn(tx: Tx, payerId: string, id: string): Promise<JobRow> {
  const [row] = await tx
    .select()
    .from(sdTrainJobs)
    .where(and(eq(sdTrainJobs.id, id), eq(sdTrainJobs.userId, payerId)))
    .for('update');
  if (!row) throw new AppError('TRAIN_JOB_NOT_FOUND');
  return row;
}

/** The job's reservation in the 时长包 (resource_package_usages.job_ref). */
function jobRef(id: string): string {
  return `train:${id}`;
}

function estimateMs(estimate: LoraEstimate): bigint {
  return BigInt(estimate.seconds) * 1000n;
}

/**
 * What the packages pay of an estimate (up to its GPU time) and what the cash holds: the estimate's
 * price in proportion to the time the packages do not cover, rounded up.
 */
export function splitEstimate(estimate: LoraEstimate, packageMsAvailable: bigint): { packageMs: bigint; cash: bigint } {
  const total = estimateMs(estimate);
  const packageMs = packageMsAvailable < total ? packageMsAvailable : total;
  return { packageMs, cash: (estimate.units * (total - packageMs) + total - 1n) / total };
}

function hours(ms: bigint): string {
  return (Number(ms) / 3_600_000).toFixed(4).replace(/\.?0+$/, '');
}

/** sd-scripts' file name of an epoch's LoRA. */
function loraFileName(name: string, epoch: number): string {
  return `${name}-${pad(epoch)}.safetensors`;
}

function pad(epoch: number): string {
  return String(epoch).padStart(6, '0');
}

function appendLog(log: string[], lines: string[]): string[] {
  return lines.length ? [...log, ...lines].slice(-LOG_LINES) : log;
}

/** The loss curve thinned to every other point when it grows too long (the last point kept). */
function thin(points: [number, number][]): [number, number][] {
  if (points.length <= LOSS_POINTS) return points;
  return points.filter((_, i) => i % 2 === 0 || i === points.length - 1);
}

/** A log line's time: Beijing, to the second. */
function beijing(d: Date): string {
  return formatBeijing(d, 'second');
}
