/**
 * Image generation (/sd/diffusion, issue 16): txt2img tasks run by the image backend's painter,
 * paid per image from the cash, and the gallery of what they made.
 *
 * Money: the task's images at their price (GPU seconds × the generation GPU's rate, contract
 * `diffusionImageUnits`) are held from the cash at submit (`gen:<id>:hold`); each finished image
 * moves its price to revenue (`gen:<id>:image:<i>`); a cancel or a failure returns what is still
 * held (`gen:<id>:release`), so an image that was not made is never paid for.
 *
 * A task is moved only under its row lock (SKIP LOCKED) by the process running it; a silent
 * runner's task is started again from its first unfinished image, as training resumes (the images
 * are deterministic in their seed, so a restart makes the same pictures).
 */
import { randomInt, randomUUID } from 'node:crypto';
import sharp from 'sharp';
import { and, asc, count, desc, eq, inArray, sql } from 'drizzle-orm';
import {
  COMFY_NODES,
  EMPTY_COMFY_RUN_STATE,
  analyzeComfyGraph,
  comfyImageUnits,
  finishedComfyRun,
  foldComfyMessage,
  type ComfyGraph,
  type ComfyPlan,
  type ComfyQuote,
  DIFFUSION_GPU,
  DIFFUSION_MAX_ACTIVE,
  PUBLIC_LORAS,
  diffusionImageSeconds,
  diffusionImageUnits,
  type DiffusionImage,
  type DiffusionParams,
  type DiffusionQuote,
  type DiffusionQuoteRequest,
  type DiffusionTask,
  type LoraOption,
  type LoraRef,
  type PageOf,
  type SdBaseModelId,
  type diffusionImageSchema,
  type diffusionTaskSchema,
} from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import { loraColorOf } from '../../drivers/image-backend/lora-file.js';
import type { PainterDriver, PainterEvent } from '../../drivers/image-backend/types.js';
import type { StorageDriver, StoredObject } from '../../drivers/storage/types.js';
import { AppError } from '../../http/errors.js';
import type { CatalogueService } from '../catalogue/index.js';
import type { LedgerService } from '../ledger/index.js';
import { admitOnce, advanceEach, advanceRun, hasRoom, rowOf, staleAfter } from '../image-jobs/index.js';
import type { ResourceService } from '../resources/index.js';
import { sdGenImages, sdGenTasks, type UsedLora } from './schema.js';

/** The account's own LoRAs, made by LoRA training: listed for the form, loaded to paint with. */
export interface OwnLoras {
  loraOptions(payerId: string): Promise<LoraOption[]>;
  /** One epoch's file of a job of the account's; null when it has none (or the job failed and was refunded). */
  lora(payerId: string, jobId: string, epoch: number): Promise<{ name: string; baseModel: SdBaseModelId; file: Buffer } | null>;
}

type TaskRow = typeof sdGenTasks.$inferSelect;
type ImageRow = typeof sdGenImages.$inferSelect;
const ACTIVE = ['queued', 'running'] as const;
const MAX_RUNS = 5;

export class DiffusionService {
  readonly runnerId = randomUUID();

  constructor(
    private deps: {
      db: Db;
      clock: Clock;
      ledger: Pick<LedgerService, 'holds'>;
      storage: StorageDriver;
      catalogue: Pick<CatalogueService, 'gpuHourlyRate'>;
      training: OwnLoras;
      /** The payer's RTX 4090 时长包, drawn before the cash (whole images). */
      resources: Pick<ResourceService, 'cardTimeLeft' | 'reserveCardTime' | 'releaseCardTime'>;
      painter: PainterDriver;
      /** The ComfyUI backend that runs workflow tasks (the embedded ComfyUI, or COMFYUI_URL). */
      comfy: PainterDriver;
      /** Tasks the backend runs at once (all processes together); more wait queued. */
      capacity: number;
      /** How often the runner ticks (a runner silent for three ticks has stopped). */
      tickMs?: number;
    },
  ) {}

  async loraOptions(payerId: string): Promise<LoraOption[]> {
    // Only what the backend can load: a ComfyUI without the console's LoRA folder takes public ones only.
    const mine = this.deps.painter.ownLoras ? await this.deps.training.loraOptions(payerId) : [];
    const shared = PUBLIC_LORAS.map((l) => ({ source: 'public' as const, ref: l.id, epoch: null, name: l.name, baseModel: l.baseModel, triggerWord: '' }));
    return [...mine, ...shared];
  }

  /** The price of a task; with a payer, the images its 时长包 would pay for are left out of the cash total. */
  async quote(params: DiffusionQuoteRequest, payerId?: string): Promise<DiffusionQuote> {
    // The same refusals as submitting: another account's LoRA (or one for the other base model) is not quoted either.
    if (payerId) await Promise.all((params.loras ?? []).map((ref) => this.resolveLora(payerId, ref, params.baseModel)));
    const gpu = await this.gpu();
    const perImage = diffusionImageUnits(params, gpu.ratePerHour);
    const left = payerId ? await this.deps.resources.cardTimeLeft(payerId, DIFFUSION_GPU) : 0n;
    const packageImages = Math.min(params.batchCount, Number(left / imageMsOf(params)));
    return {
      seconds: Math.round(diffusionImageSeconds(params) * 10) / 10,
      gpuName: gpu.name,
      ratePerHour: String(gpu.ratePerHour),
      perImage: String(perImage),
      packageImages,
      total: String(perImage * BigInt(params.batchCount - packageImages)),
    };
  }

  /** Submits a task: its LoRAs checked, its price held, in one transaction; the same requestId twice makes one task. */
  async create(payerId: string, actorId: string, body: DiffusionParams & { requestId: string }): Promise<DiffusionTask> {
    const again = await this.byRequest(payerId, body.requestId);
    if (again) return again;
    const { requestId, loras: refs, ...rest } = body;
    const loras = await Promise.all(refs.map((ref) => this.resolveLora(payerId, ref, body.baseModel)));
    const params = { ...rest, seed: rest.seed === -1 ? randomInt(0, 2 ** 32 - 1) : rest.seed };
    const unitPrice = BigInt((await this.quote(body)).perImage);
    return this.submit(payerId, actorId, requestId, { params, loras, unitPrice, imageMs: imageMsOf(body) });
  }

  /** What a run of a ComfyUI workflow would make and cost; a workflow the backend cannot run is refused (40050009). */
  async quoteWorkflow(graph: ComfyGraph, payerId?: string): Promise<ComfyQuote> {
    const plan = planOf(graph);
    const gpu = await this.gpu();
    const perImage = comfyImageUnits(plan, gpu.ratePerHour);
    const left = payerId ? await this.deps.resources.cardTimeLeft(payerId, DIFFUSION_GPU) : 0n;
    const packageImages = Math.min(plan.images.length, Number(left / workflowImageMs(plan)));
    return {
      images: plan.images.length,
      seconds: Math.round(plan.seconds * 10) / 10,
      gpuName: gpu.name,
      ratePerHour: String(gpu.ratePerHour),
      perImage: String(perImage),
      packageImages,
      total: String(perImage * BigInt(plan.images.length - packageImages)),
    };
  }

  /** Runs a ComfyUI workflow as a task: priced per image it saves, held and charged as txt2img is. */
  async createWorkflowTask(
    payerId: string,
    actorId: string,
    w: { workflowId: string | null; name: string; graph: ComfyGraph; requestId: string },
  ): Promise<DiffusionTask> {
    const again = await this.byRequest(payerId, w.requestId);
    if (again) return again;
    const plan = planOf(w.graph);
    const first = plan.images[0]!;
    const params = {
      prompt: first.prompt.trim() || w.name,
      negativePrompt: first.negativePrompt,
      baseModel: first.baseModel,
      width: first.width,
      height: first.height,
      steps: first.steps,
      cfg: first.cfg,
      sampler: first.sampler as DiffusionParams['sampler'],
      seed: first.seed,
      batchCount: plan.images.length,
    };
    const loras = first.loras.flatMap((l): UsedLora[] => {
      const lora = PUBLIC_LORAS.find((p) => `${p.id}.safetensors` === l.file);
      return lora ? [{ ref: { source: 'public', id: lora.id, weight: l.weight }, name: lora.name, color: [...lora.color] }] : [];
    });
    const unitPrice = BigInt((await this.quoteWorkflow(w.graph)).perImage);
    return this.submit(payerId, actorId, w.requestId, {
      params,
      loras,
      unitPrice,
      imageMs: workflowImageMs(plan),
      workflow: { graph: w.graph, id: w.workflowId, name: w.name },
    });
  }

  private async submit(
    payerId: string,
    actorId: string,
    requestId: string,
    t: {
      params: TaskRow['params'];
      loras: UsedLora[];
      unitPrice: bigint;
      imageMs: bigint;
      workflow?: { graph: ComfyGraph; id: string | null; name: string };
    },
  ): Promise<DiffusionTask> {
    const images = t.params.batchCount;
    const now = this.deps.clock.now();
    const id = randomUUID();
    return admitOnce({
      db: this.deps.db,
      jobs: sdGenTasks,
      payerId,
      requestId,
      id,
      active: ACTIVE,
      maxActive: DIFFUSION_MAX_ACTIVE,
      limitError: 'DIFFUSION_ACTIVE_LIMIT',
      insert: async (tx) => {
        // The packages pay for the first images, whole ones; the cash holds the rest.
        const reserved = await this.deps.resources.reserveCardTime(tx, payerId, jobRef(id), DIFFUSION_GPU, t.imageMs * BigInt(images), t.imageMs);
        const packageImages = Number(reserved / t.imageMs);
        const held = t.unitPrice * BigInt(images - packageImages);
        await tx.insert(sdGenTasks).values({
          id,
          userId: payerId,
          createdBy: actorId,
          requestId,
          params: t.params,
          loras: t.loras,
          workflow: t.workflow?.graph ?? null,
          workflowId: t.workflow?.id ?? null,
          workflowName: t.workflow?.name ?? null,
          comfy: t.workflow ? EMPTY_COMFY_RUN_STATE : null,
          status: 'queued',
          unitPrice: t.unitPrice,
          imageMs: t.imageMs,
          packageImages,
          held,
          createdAt: now,
          updatedAt: now,
        });
        const what = t.workflow ? `ComfyUI 工作流「${t.workflow.name}」` : 'AI 绘图';
        await this.deps.ledger.holds.hold(tx, {
          key: `gen:${id}:hold`,
          kind: 'diffusion_hold',
          memo: `${what}预扣（现金支付 ${images - packageImages} 张）`,
          actorId,
          holder: id,
          payerId,
          amount: held,
          short: 'DIFFUSION_INSUFFICIENT_CASH',
        });
      },
      byRequest: () => this.byRequest(payerId, requestId),
      get: (taskId) => this.get(payerId, taskId),
    });
  }

  async list(
    payerId: string,
    q: { page: number; pageSize: number; status?: 'active' | 'done'; kind?: 'txt2img' | 'workflow' },
  ): Promise<PageOf<typeof diffusionTaskSchema>> {
    const where = and(
      eq(sdGenTasks.userId, payerId),
      q.kind === 'workflow' ? sql`${sdGenTasks.workflow} is not null` : undefined,
      q.kind === 'txt2img' ? sql`${sdGenTasks.workflow} is null` : undefined,
      q.status === 'active' ? inArray(sdGenTasks.status, [...ACTIVE]) : undefined,
      q.status === 'done' ? sql`${sdGenTasks.status} not in ('queued', 'running')` : undefined,
    );
    const [{ n } = { n: 0 }] = await this.deps.db.select({ n: count() }).from(sdGenTasks).where(where);
    const rows = await this.deps.db
      .select()
      .from(sdGenTasks)
      .where(where)
      .orderBy(desc(sdGenTasks.createdAt), desc(sdGenTasks.id))
      .limit(q.pageSize)
      .offset((q.page - 1) * q.pageSize);
    return { items: await this.taskViews(rows), total: n, page: q.page, pageSize: q.pageSize };
  }

  async get(payerId: string, id: string): Promise<DiffusionTask> {
    const [row] = await this.deps.db
      .select()
      .from(sdGenTasks)
      .where(and(eq(sdGenTasks.id, id), eq(sdGenTasks.userId, payerId)));
    if (!row) throw new AppError('DIFFUSION_TASK_NOT_FOUND');
    return (await this.taskViews([row]))[0]!;
  }

  /** Stops a task: the images made stay paid, the rest of the hold goes back to the cash. */
  async cancel(payerId: string, id: string, actorId: string): Promise<DiffusionTask> {
    const cancelled = await this.deps.db.transaction(async (tx) => {
      const [row] = await tx
        .select()
        .from(sdGenTasks)
        .where(and(eq(sdGenTasks.id, id), eq(sdGenTasks.userId, payerId)))
        .for('update');
      if (!row) throw new AppError('DIFFUSION_TASK_NOT_FOUND');
      if (!(ACTIVE as readonly string[]).includes(row.status)) throw new AppError('DIFFUSION_TASK_ENDED');
      await this.end(tx, row, 'cancelled', null, actorId);
      return row;
    });
    // After the commit: a cancel that rolled back leaves the run going.
    await this.painterOf(cancelled).cancel(id);
    return this.get(payerId, id);
  }

  async gallery(payerId: string, q: { page: number; pageSize: number }): Promise<PageOf<typeof diffusionImageSchema>> {
    const [{ n } = { n: 0 }] = await this.deps.db.select({ n: count() }).from(sdGenImages).where(eq(sdGenImages.userId, payerId));
    const rows = await this.deps.db
      .select({ image: sdGenImages, task: sdGenTasks })
      .from(sdGenImages)
      .innerJoin(sdGenTasks, eq(sdGenTasks.id, sdGenImages.taskId))
      .where(eq(sdGenImages.userId, payerId))
      .orderBy(desc(sdGenImages.createdAt), desc(sdGenImages.index))
      .limit(q.pageSize)
      .offset((q.page - 1) * q.pageSize);
    return { items: rows.map((r) => imageView(r.image, r.task)), total: n, page: q.page, pageSize: q.pageSize };
  }

  async removeImage(payerId: string, id: string): Promise<void> {
    const [row] = await this.deps.db
      .delete(sdGenImages)
      .where(and(eq(sdGenImages.id, id), eq(sdGenImages.userId, payerId)))
      .returning();
    if (!row) throw new AppError('DIFFUSION_IMAGE_NOT_FOUND');
    for (const key of [row.storageKey, thumbnailKey(row.storageKey)]) await this.deps.storage.delete(key).catch(() => {});
  }

  /** The picture (PNG), or its thumbnail (WebP, at most 320 px a side) for the gallery's grid. */
  async imageFile(payerId: string, id: string, thumbnail = false): Promise<StoredObject & { fileName: string }> {
    const [row] = await this.deps.db
      .select()
      .from(sdGenImages)
      .where(and(eq(sdGenImages.id, id), eq(sdGenImages.userId, payerId)));
    const file = row && (await this.deps.storage.get(thumbnail ? thumbnailKey(row.storageKey) : row.storageKey));
    if (!file) throw new AppError('DIFFUSION_IMAGE_NOT_FOUND');
    return { ...file, contentType: thumbnail ? 'image/webp' : 'image/png', fileName: `sd-${row.seed}-${row.id.slice(0, 8)}.png` };
  }

  // --- the runner ---------------------------------------------------------------------------------

  async tick(): Promise<number> {
    const rows = await this.deps.db
      .select({ id: sdGenTasks.id })
      .from(sdGenTasks)
      .where(inArray(sdGenTasks.status, [...ACTIVE]))
      .orderBy(asc(sdGenTasks.createdAt));
    return advanceEach(
      rows.map((r) => r.id),
      (id) => this.advance(id),
    );
  }

  /** How the backend gets an own LoRA's file (public ones it has already). */
  private readerOf(payerId: string, ref: LoraRef): (() => Promise<Buffer>) | undefined {
    if (ref.source !== 'job') return undefined;
    return async () => {
      const lora = await this.deps.training.lora(payerId, ref.jobId, ref.epoch);
      if (!lora) throw new Error('所用的 LoRA 已删除');
      return lora.file;
    };
  }

  /** The backend a task runs on: workflows on ComfyUI, txt2img on the painter. */
  private painterOf(row: Pick<TaskRow, 'workflow'>): PainterDriver {
    return row.workflow ? this.deps.comfy : this.deps.painter;
  }

  private async advance(id: string): Promise<boolean> {
    const byId = eq(sdGenTasks.id, id);
    const [kind] = await this.deps.db
      .select({ workflow: sql<boolean>`${sdGenTasks.workflow} is not null` })
      .from(sdGenTasks)
      .where(byId);
    const painter = kind?.workflow ? this.deps.comfy : this.deps.painter;
    return advanceRun<TaskRow, PainterEvent>({
      db: this.deps.db,
      clock: this.deps.clock,
      runnerId: this.runnerId,
      staleMs: staleAfter(this.deps.tickMs),
      ...rowOf<TaskRow>(this.deps.db, sdGenTasks, id),
      isActive: (status) => (ACTIVE as readonly string[]).includes(status),
      poll: () => painter.poll(id),
      drop: () => painter.cancel(id),
      start: async (tx, row, now) => {
        return (await hasRoom(tx, sdGenTasks, ['running'], this.deps.capacity)) ? this.run(tx, row, now) : false;
      },
      takeOver: (tx, row, now) => this.run(tx, row, now),
      apply: (tx, row, events, now) => this.apply(tx, row, events, now),
    });
  }

  /** Starts (or starts again) the task on the backend from its first unfinished image. */
  private async run(tx: Tx, row: TaskRow, now: Date): Promise<boolean> {
    if (row.runs >= MAX_RUNS) return this.end(tx, row, 'failed', `生成进程多次中断（${row.runs} 次），未生成的图片已退款`, null);
    await this.painterOf(row).start({
      taskId: row.id,
      params: row.params,
      loras: row.loras.map((l) => ({ color: l.color, weight: l.ref.weight, file: loraFileOf(l.ref), read: this.readerOf(row.userId, l.ref) })),
      fromImage: row.done,
      ...(row.workflow ? { workflow: row.workflow } : {}),
    });
    await tx
      .update(sdGenTasks)
      .set({
        status: 'running',
        runner: this.runnerId,
        heartbeatAt: now,
        runs: row.runs + 1,
        step: 0,
        updatedAt: now,
        ...(row.workflow ? { comfy: EMPTY_COMFY_RUN_STATE } : {}),
      })
      .where(eq(sdGenTasks.id, row.id));
    return true;
  }

  private async apply(tx: Tx, row: TaskRow, events: PainterEvent[], now: Date): Promise<boolean> {
    let { done, step, charged, comfy } = row;
    for (const e of events) {
      if (e.type === 'failed') return this.end(tx, { ...row, done, charged, comfy }, 'failed', e.reason, null);
      if (e.type === 'node') comfy = foldComfyMessage(comfy ?? EMPTY_COMFY_RUN_STATE, e.message);
      else if (e.type === 'progress') step = e.step;
      else if (e.type === 'image') {
        charged += await this.saveImage(tx, row, e, now);
        done = e.index + 1;
        step = 0;
      } else if (e.type === 'done') return this.end(tx, { ...row, done, charged, comfy: comfy && finishedComfyRun(comfy) }, 'done', null, null);
    }
    await tx
      .update(sdGenTasks)
      .set({ heartbeatAt: now, ...(events.length ? { done, step, charged, comfy, updatedAt: now } : {}) })
      .where(eq(sdGenTasks.id, row.id));
    return events.length > 0;
  }

  /** The image into storage and the gallery, and its price from the hold to revenue; what it charged. */
  private async saveImage(tx: Tx, row: TaskRow, e: Extract<PainterEvent, { type: 'image' }>, now: Date): Promise<bigint> {
    const storageKey = `gen/${row.id}/${e.index}.png`;
    await this.deps.storage.put(storageKey, e.png, 'image/png');
    await this.deps.storage.put(thumbnailKey(storageKey), await thumbnailOf(e.png), 'image/webp');
    await tx
      .insert(sdGenImages)
      .values({ id: randomUUID(), taskId: row.id, userId: row.userId, index: e.index, seed: e.seed, storageKey, bytes: e.png.length, createdAt: now })
      .onConflictDoNothing();
    if (e.index < row.packageImages) return 0n; // paid by the packages at submit
    return this.deps.ledger.holds.settle(tx, {
      key: `gen:${row.id}:image:${e.index}`,
      kind: 'diffusion_usage',
      memo: `${row.workflow ? `工作流「${row.workflowName}」` : 'AI 绘图'}第 ${e.index + 1}/${row.params.batchCount} 张`,
      actorId: row.createdBy,
      holder: row.id,
      amount: row.unitPrice,
    });
  }

  /** Ends a task (done, cancelled or failed): whatever is still held goes back to the cash. */
  private async end(tx: Tx, row: TaskRow, status: 'done' | 'cancelled' | 'failed', error: string | null, actorId: string | null): Promise<boolean> {
    const unmadeOnPackages = Math.max(0, row.packageImages - row.done);
    await this.deps.resources.releaseCardTime(tx, jobRef(row.id), row.imageMs * BigInt(unmadeOnPackages));
    const rest = row.held - row.charged;
    await this.deps.ledger.holds.release(tx, {
      key: `gen:${row.id}:release`,
      kind: 'diffusion_release',
      memo: status === 'cancelled' ? 'AI 绘图取消，退回未生成部分' : 'AI 绘图未生成部分退回',
      actorId,
      holder: row.id,
      payerId: row.userId,
      amount: rest,
    });
    const now = this.deps.clock.now();
    await tx
      .update(sdGenTasks)
      .set({ status, error, done: row.done, charged: row.charged, comfy: row.comfy, refunded: rest, finishedAt: now, heartbeatAt: now, updatedAt: now })
      .where(eq(sdGenTasks.id, row.id));
    return true;
  }

  // --- LoRAs, prices and views ------------------------------------------------------------------------

  private async resolveLora(payerId: string, ref: LoraRef, baseModel: DiffusionParams['baseModel']): Promise<UsedLora> {
    if (ref.source === 'public') {
      const lora = PUBLIC_LORAS.find((l) => l.id === ref.id)!;
      if (lora.baseModel !== baseModel) throw new AppError('DIFFUSION_LORA_MISMATCH');
      return { ref, name: lora.name, color: [...lora.color] };
    }
    if (!this.deps.painter.ownLoras) throw new AppError('DIFFUSION_OWN_LORA_UNSUPPORTED');
    const lora = await this.deps.training.lora(payerId, ref.jobId, ref.epoch);
    if (!lora) throw new AppError('DIFFUSION_LORA_NOT_FOUND');
    if (lora.baseModel !== baseModel) throw new AppError('DIFFUSION_LORA_MISMATCH');
    return { ref, name: lora.name, color: loraColorOf(lora.file) };
  }

  private async gpu() {
    const gpu = await this.deps.catalogue.gpuHourlyRate(DIFFUSION_GPU);
    if (!gpu) throw new AppError('DIFFUSION_GPU_UNAVAILABLE');
    return gpu;
  }

  private async byRequest(payerId: string, requestId: string): Promise<DiffusionTask | null> {
    const [row] = await this.deps.db
      .select()
      .from(sdGenTasks)
      .where(and(eq(sdGenTasks.userId, payerId), eq(sdGenTasks.requestId, requestId)));
    return row ? (await this.taskViews([row]))[0]! : null;
  }

  private async taskViews(rows: TaskRow[]): Promise<DiffusionTask[]> {
    if (!rows.length) return [];
    const images = await this.deps.db
      .select()
      .from(sdGenImages)
      .where(
        inArray(
          sdGenImages.taskId,
          rows.map((r) => r.id),
        ),
      )
      .orderBy(asc(sdGenImages.index));
    return rows.map((r) => ({
      id: r.id,
      kind: r.workflow ? ('workflow' as const) : ('txt2img' as const),
      status: r.status,
      prompt: r.params.prompt,
      baseModel: r.params.baseModel,
      batchCount: r.params.batchCount,
      done: r.done,
      step: r.step,
      steps: r.params.steps,
      seed: r.params.seed,
      packageImages: r.packageImages,
      held: String(r.held),
      charged: String(r.charged),
      refunded: String(r.refunded),
      error: r.error,
      images: images.filter((i) => i.taskId === r.id).map((i) => imageView(i, r)),
      workflow: r.workflow ? { id: r.workflowId, name: r.workflowName ?? '', nodes: nodesOf(r.workflow), state: r.comfy ?? EMPTY_COMFY_RUN_STATE } : null,
      createdAt: r.createdAt.toISOString(),
      finishedAt: r.finishedAt?.toISOString() ?? null,
    }));
  }
}

function imageView(i: ImageRow, task: TaskRow): DiffusionImage {
  const { batchCount: _batch, ...params } = task.params;
  void _batch;
  return {
    id: i.id,
    taskId: i.taskId,
    index: i.index,
    seed: i.seed,
    width: task.params.width,
    height: task.params.height,
    bytes: i.bytes,
    params: { ...params, seed: i.seed, loras: task.loras.map((l) => l.ref) },
    loras: task.loras.map((l) => ({ source: l.ref.source, ref: l.ref.source === 'job' ? l.ref.jobId : l.ref.id, name: l.name, weight: l.ref.weight })),
    workflowName: task.workflow ? task.workflowName : null,
    createdAt: i.createdAt.toISOString(),
  };
}

/** A workflow's plan; one the backend cannot run is refused with what to change. */
function planOf(graph: ComfyGraph): ComfyPlan {
  const analysis = analyzeComfyGraph(graph);
  if (!analysis.ok) throw new AppError('COMFY_WORKFLOW_INVALID', analysis.errors.map((e) => e.message).join('；'));
  return analysis.plan;
}

/** One image's share of a workflow's card time, in whole milliseconds. */
function workflowImageMs(plan: ComfyPlan): bigint {
  return BigInt(Math.ceil((plan.seconds * 1000) / plan.images.length));
}

/** The nodes of a workflow run, in the order they run. */
function nodesOf(graph: ComfyGraph): { id: string; classType: string; title: string }[] {
  const analysis = analyzeComfyGraph(graph);
  const ids = analysis.ok ? analysis.plan.order : Object.keys(graph);
  return ids.map((id) => {
    const node = graph[id]!;
    const spec = (COMFY_NODES as Record<string, { title: string }>)[node.class_type];
    return { id, classType: node.class_type, title: node._meta?.title ?? spec?.title ?? node.class_type };
  });
}

/** The file name a ComfyUI backend loads a LoRA by: the public ones by id, the account's by job and epoch. */
function loraFileOf(ref: LoraRef): string {
  return ref.source === 'public' ? `${ref.id}.safetensors` : `console-${ref.jobId}-${String(ref.epoch).padStart(6, '0')}.safetensors`;
}

/** The task's reservation in the 时长包 (resource_package_usages.job_ref). */
function jobRef(id: string): string {
  return `gen:${id}`;
}

/** One image's card time in whole milliseconds (what a package pays for it). */
function imageMsOf(p: Pick<DiffusionParams, 'baseModel' | 'width' | 'height' | 'steps'>): bigint {
  return BigInt(Math.ceil(diffusionImageSeconds(p) * 1000));
}

const THUMBNAIL_SIDE = 320;

function thumbnailKey(storageKey: string): string {
  return `${storageKey}.thumb`;
}

function thumbnailOf(png: Buffer): Promise<Buffer> {
  return sharp(png).resize({ width: THUMBNAIL_SIDE, height: THUMBNAIL_SIDE, fit: 'inside', withoutEnlargement: true }).webp({ quality: 80 }).toBuffer();
}
