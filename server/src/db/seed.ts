/**
 * Demo data for the embedded database, applied at every start and idempotent: running it twice
 * changes nothing. The catalogue arrives with its own issue; for now a demo account.
 */
import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { Clock } from '../clock.js';
import type { Db } from './client.js';
import { users } from './schema.js';
import { hashPassword } from '../modules/users/index.js';

export const DEMO_ACCOUNT = { mobile: '13800000000', password: 'Demo1234', nickname: '演示账号' };

export async function seedDemo(db: Db, clock: Clock) {
  const [existing] = await db.select({ id: users.id }).from(users).where(eq(users.mobile, DEMO_ACCOUNT.mobile));
  if (existing) return;
  const now = clock.now();
  await db
    .insert(users)
    .values({
      id: randomUUID(),
      mobile: DEMO_ACCOUNT.mobile,
      passwordHash: await hashPassword(DEMO_ACCOUNT.password),
      nickname: DEMO_ACCOUNT.nickname,
      firstVisit: false,
      createdAt: now,
      updatedAt: now,
    })
    .onConflictDoNothing();
}
