/**
 * Server-wide secrets generated once and stored in the database, so that every server process
 * behind a load balancer shares them (a key in process memory would log users out on restart).
 */
import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { serverSecrets } from '../../db/schema.js';

export async function loadOrCreateSecret(db: Db, name: string, now: Date, bytes = 32): Promise<Buffer> {
  await db
    .insert(serverSecrets)
    .values({ name, value: randomBytes(bytes).toString('base64url'), createdAt: now })
    .onConflictDoNothing();
  const [row] = await db.select().from(serverSecrets).where(eq(serverSecrets.name, name));
  return Buffer.from(row!.value, 'base64url');
}
