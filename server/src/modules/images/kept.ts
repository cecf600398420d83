/** The saved images that still exist (not deleted): what the image gc must keep on the hosts. */
import { isNull } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { userImages } from './schema.js';

export async function keptImageIds(db: Db): Promise<Set<string>> {
  const rows = await db.select({ id: userImages.id }).from(userImages).where(isNull(userImages.deletedAt));
  return new Set(rows.map((r) => r.id));
}
