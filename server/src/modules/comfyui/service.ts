/**
 * The ComfyUI area's workflows (/comfyui): each account keeps up to COMFY_MAX_WORKFLOWS graphs in
 * ComfyUI's API format under names of its own. Running one hands its graph, as it is at that
 * moment, to image generation (DiffusionService.createWorkflowTask), which prices, holds and runs
 * it like any other task; its pictures go to the same gallery.
 */
import { randomUUID } from 'node:crypto';
import { and, count, desc, eq, sql } from 'drizzle-orm';
import { COMFY_MAX_WORKFLOWS, type ComfyGraph, type ComfyWorkflow, type DiffusionTask, type PageOf, type comfyWorkflowSchema } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import { isUniqueViolation } from '../../db/results.js';
import { AppError } from '../../http/errors.js';
import type { DiffusionService } from '../diffusion/index.js';
import { comfyWorkflows } from './schema.js';

type Row = typeof comfyWorkflows.$inferSelect;

export class ComfyWorkflowService {
  constructor(private deps: { db: Db; clock: Clock; diffusion: Pick<DiffusionService, 'createWorkflowTask'> }) {}

  async list(payerId: string, q: { page: number; pageSize: number }): Promise<PageOf<typeof comfyWorkflowSchema>> {
    const mine = eq(comfyWorkflows.userId, payerId);
    const [{ n } = { n: 0 }] = await this.deps.db.select({ n: count() }).from(comfyWorkflows).where(mine);
    const rows = await this.deps.db
      .select()
      .from(comfyWorkflows)
      .where(mine)
      .orderBy(desc(comfyWorkflows.updatedAt), desc(comfyWorkflows.id))
      .limit(q.pageSize)
      .offset((q.page - 1) * q.pageSize);
    return { items: rows.map(view), total: n, page: q.page, pageSize: q.pageSize };
  }

  async get(payerId: string, id: string): Promise<ComfyWorkflow> {
    return view(await this.row(payerId, id));
  }

  async create(payerId: string, actorId: string, body: { name: string; graph: ComfyGraph }): Promise<ComfyWorkflow> {
    const now = this.deps.clock.now();
    const id = randomUUID();
    await this.named(async () => {
      await this.deps.db.transaction(async (tx) => {
        // Counted under the account's lock, so two saves cannot both take the last place.
        await tx.execute(sqlLock(payerId));
        const [{ n } = { n: 0 }] = await tx.select({ n: count() }).from(comfyWorkflows).where(eq(comfyWorkflows.userId, payerId));
        if (n >= COMFY_MAX_WORKFLOWS) throw new AppError('COMFY_WORKFLOW_LIMIT');
        await tx.insert(comfyWorkflows).values({ id, userId: payerId, createdBy: actorId, name: body.name, graph: body.graph, createdAt: now, updatedAt: now });
      });
    });
    return this.get(payerId, id);
  }

  async update(payerId: string, id: string, body: { name?: string; graph?: ComfyGraph }): Promise<ComfyWorkflow> {
    await this.named(async () => {
      const [row] = await this.deps.db
        .update(comfyWorkflows)
        .set({ ...(body.name !== undefined ? { name: body.name } : {}), ...(body.graph ? { graph: body.graph } : {}), updatedAt: this.deps.clock.now() })
        .where(and(eq(comfyWorkflows.id, id), eq(comfyWorkflows.userId, payerId)))
        .returning({ id: comfyWorkflows.id });
      if (!row) throw new AppError('COMFY_WORKFLOW_NOT_FOUND');
    });
    return this.get(payerId, id);
  }

  async remove(payerId: string, id: string): Promise<void> {
    const [row] = await this.deps.db
      .delete(comfyWorkflows)
      .where(and(eq(comfyWorkflows.id, id), eq(comfyWorkflows.userId, payerId)))
      .returning({ id: comfyWorkflows.id });
    if (!row) throw new AppError('COMFY_WORKFLOW_NOT_FOUND');
  }

  /** Runs the workflow as it is saved now (later edits do not change the run). */
  async run(payerId: string, actorId: string, body: { workflowId: string; requestId: string }): Promise<DiffusionTask> {
    const w = await this.row(payerId, body.workflowId);
    return this.deps.diffusion.createWorkflowTask(payerId, actorId, { workflowId: w.id, name: w.name, graph: w.graph, requestId: body.requestId });
  }

  private async row(payerId: string, id: string): Promise<Row> {
    const [row] = await this.deps.db
      .select()
      .from(comfyWorkflows)
      .where(and(eq(comfyWorkflows.id, id), eq(comfyWorkflows.userId, payerId)));
    if (!row) throw new AppError('COMFY_WORKFLOW_NOT_FOUND');
    return row;
  }

  /** A name the account already uses is refused with its own code. */
  private async named(write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (e) {
      throw isUniqueViolation(e) ? new AppError('COMFY_WORKFLOW_NAME_TAKEN') : e;
    }
  }
}

function sqlLock(payerId: string) {
  return sql`select pg_advisory_xact_lock(hashtext(${`comfy_workflows:${payerId}`}))`;
}

function view(r: Row): ComfyWorkflow {
  return {
    id: r.id,
    name: r.name,
    graph: r.graph,
    nodes: Object.keys(r.graph).length,
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
  };
}
