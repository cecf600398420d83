/**
 * Server-wide secrets generated once and stored in the database, so that every server process
 * behind a load balancer shares them (a key in process memory would log users out on restart).
 */
import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { serverSecrets } from './schema.js';

export async function loadOrCreateSecret(db: Db, name: string, now: Date, bytes = 32): Promise<Buffer> {
  return Buffer.from(await loadOrCreateText(db, name, now, () => randomBytes(bytes).toString('base64url')), 'base64url');
}

/** The stored value of a secret, or `fresh()` stored now: the first process to ask decides it for all. */
export async function loadOrCreateText(db: Db, name: string, now: Date, fresh: () => string): Promise<string> {
  await db.insert(serverSecrets).values({ name, value: fresh(), createdAt: now }).onConflictDoNothing();
  const [row] = await db.select().from(serverSecrets).where(eq(serverSecrets.name, name));
  return row!.value;
}
