/**
 * The orchestrator's probes (Kubernetes, HAProxy): /livez says the process turns (a failing one is
 * restarted), /readyz says this replica should get traffic (a failing one is taken out of rotation,
 * not restarted). /healthz stays as it was.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { API, livenessSchema, readinessSchema, type Readiness } from '@console/contract';
import { migrationsFolder, type Database } from '../db/client.js';
import type { Lifecycle } from './lifecycle.js';

/** Below Kubernetes' default probe timeout (1 s): a database slower than this is as good as away for new traffic. */
export const READY_DB_TIMEOUT_MS = 800;

export interface ProbeDeps {
  database: Database;
  lifecycle: Lifecycle;
  /** The migrations this version needs (the folder's journal); tests point it elsewhere. */
  migrationsFolder?: string;
  dbTimeoutMs?: number;
}

export async function registerProbes(app: FastifyInstance, deps: ProbeDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const needed = lastMigration(deps.migrationsFolder ?? migrationsFolder);
  const timeoutMs = deps.dbTimeoutMs ?? READY_DB_TIMEOUT_MS;
  // Once every migration is seen applied it stays so: later checks only ask the database to answer.
  let migrated = false;

  r.get(API.livez, { schema: { tags: ['系统'], summary: '存活探针（不访问数据库）', response: { 200: livenessSchema } } }, async () => ({
    status: 'alive' as const,
  }));

  r.get(
    API.readyz,
    {
      schema: {
        tags: ['系统'],
        summary: '就绪探针：数据库按时应答、迁移已执行、未在停止；否则 503 并说明原因',
        response: { 200: readinessSchema, 503: readinessSchema },
      },
    },
    async (_req, reply) => {
      const checks: Readiness['checks'] = { database: 'ok', migrations: migrated ? 'ok' : 'unknown', stopping: deps.lifecycle.stopping };
      const reasons: string[] = [];
      if (checks.stopping) reasons.push('本副本正在停止：不再接收新流量，进行中的请求完成后退出');
      const query = migrated
        ? deps.database.db.execute('select 1')
        : deps.database.db.execute('select max(created_at)::text as at from drizzle.__drizzle_migrations');
      const answer = await within(query, timeoutMs);
      if (answer === 'timeout') {
        checks.database = 'timeout';
        reasons.push(`数据库在 ${timeoutMs} 毫秒内没有应答`);
      } else if (answer instanceof Error) {
        checks.database = 'down';
        reasons.push(`数据库无法访问：${answer.message}`);
      } else if (!migrated) {
        const rows = (answer as { rows?: { at: string | null }[] }).rows ?? [];
        const applied = Number(rows[0]?.at ?? 0);
        migrated = applied >= needed;
        checks.migrations = migrated ? 'ok' : 'pending';
        if (!migrated) reasons.push('数据库迁移尚未全部执行：本版本需要的表结构还不在数据库里，先运行数据库迁移');
      }
      const ready = reasons.length === 0;
      return reply.status(ready ? 200 : 503).send({ status: ready ? 'ready' : 'unready', database: deps.database.kind, checks, reasons });
    },
  );
}

/** The `when` of the folder's last migration: drizzle records it as created_at when it applies that migration. */
function lastMigration(folder: string): number {
  const journal = JSON.parse(readFileSync(path.join(folder, 'meta', '_journal.json'), 'utf8')) as { entries: { when: number }[] };
  return Math.max(0, ...journal.entries.map((e) => e.when));
}

/** The promise's value, its error, or 'timeout'. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | Error | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ms)));
  try {
    return await Promise.race([promise.catch((e: unknown) => (e instanceof Error ? e : new Error(String(e)))), late]);
  } finally {
    clearTimeout(timer);
  }
}
