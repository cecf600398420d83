/**
 * The online experience's conversations, kept per user (the page saves the whole conversation
 * after each answer; the chat itself goes through the gateway like any key's call).
 */
import { and, count, desc, eq, sql } from 'drizzle-orm';
import { CONVERSATION_LIMIT, type Conversation, type ConversationSaveRequest, type ConversationSummary } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import { AppError } from '../../http/errors.js';
import type { ModelCatalogue } from './catalogue.js';
import { modelConversations } from './schema.js';

export class ConversationService {
  constructor(private readonly deps: { db: Db; clock: Clock; models: Pick<ModelCatalogue, 'get'> }) {}

  async list(userId: string): Promise<{ list: ConversationSummary[] }> {
    const rows = await this.deps.db
      .select({
        id: modelConversations.id,
        title: modelConversations.title,
        model: modelConversations.model,
        messageCount: sql<number>`jsonb_array_length(${modelConversations.messages})`,
        updatedAt: modelConversations.updatedAt,
      })
      .from(modelConversations)
      .where(eq(modelConversations.userId, userId))
      .orderBy(desc(modelConversations.updatedAt), desc(modelConversations.id))
      .limit(CONVERSATION_LIMIT);
    return { list: rows.map((r) => ({ ...r, messageCount: Number(r.messageCount), updatedAt: r.updatedAt.toISOString() })) };
  }

  async get(userId: string, id: string): Promise<Conversation> {
    const [row] = await this.deps.db
      .select()
      .from(modelConversations)
      .where(and(eq(modelConversations.id, id), eq(modelConversations.userId, userId)));
    if (!row) throw new AppError('CONVERSATION_NOT_FOUND');
    return toDto(row);
  }

  /** Saves the whole conversation under the page's id; a new one counts towards CONVERSATION_LIMIT. */
  async save(userId: string, id: string, req: ConversationSaveRequest): Promise<Conversation> {
    if (!(await this.deps.models.get(req.model))) throw new AppError('MODEL_UNKNOWN', `model：模型 ${req.model} 不在模型广场中`);
    const now = this.deps.clock.now();
    const values = {
      title: req.title,
      model: req.model,
      system: req.system,
      temperature: req.temperature,
      maxTokens: req.maxTokens,
      messages: req.messages,
      updatedAt: now,
    };
    return this.deps.db.transaction(async (tx) => {
      // One user's conversations are made one at a time, so two new ones cannot both pass the limit.
      await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`model-conversation:${userId}`}, 0))`);
      const [existing] = await tx.select({ userId: modelConversations.userId }).from(modelConversations).where(eq(modelConversations.id, id));
      // Another user's id is answered like a missing one: ids are not to be probed.
      if (existing && existing.userId !== userId) throw new AppError('CONVERSATION_NOT_FOUND');
      if (existing) {
        const [row] = await tx.update(modelConversations).set(values).where(eq(modelConversations.id, id)).returning();
        return toDto(row!);
      }
      const [n] = await tx.select({ n: count() }).from(modelConversations).where(eq(modelConversations.userId, userId));
      if ((n?.n ?? 0) >= CONVERSATION_LIMIT) throw new AppError('CONVERSATION_LIMIT');
      const [row] = await tx
        .insert(modelConversations)
        .values({ id, userId, createdAt: now, ...values })
        .returning();
      return toDto(row!);
    });
  }

  async remove(userId: string, id: string): Promise<void> {
    const deleted = await this.deps.db
      .delete(modelConversations)
      .where(and(eq(modelConversations.id, id), eq(modelConversations.userId, userId)))
      .returning({ id: modelConversations.id });
    if (!deleted.length) throw new AppError('CONVERSATION_NOT_FOUND');
  }
}

function toDto(r: typeof modelConversations.$inferSelect): Conversation {
  return {
    id: r.id,
    title: r.title,
    model: r.model,
    system: r.system,
    temperature: r.temperature,
    maxTokens: r.maxTokens,
    messages: r.messages,
    updatedAt: r.updatedAt.toISOString(),
  };
}
