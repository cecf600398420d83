/** Which catalogue images and applications instances not yet released use (the operator may not remove those). */
import { and, inArray, isNull, or } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { instances } from './schema.js';

/** For each id, how many instances not released were made from the catalogue image or the application of that id. */
export async function instancesUsingImages(db: Db, ids: readonly string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (!ids.length) return out;
  const list = [...new Set(ids)];
  const rows = await db
    .select({ imageId: instances.imageId, applicationId: instances.applicationId })
    .from(instances)
    .where(and(isNull(instances.releasedAt), or(inArray(instances.imageId, list), inArray(instances.applicationId, list))));
  for (const r of rows) {
    // An application's instance names its image too: counted once, for the application where both are registered ones.
    const id = r.applicationId && list.includes(r.applicationId) ? r.applicationId : r.imageId!;
    out.set(id, (out.get(id) ?? 0) + 1);
  }
  return out;
}
