/**
 * The catalogue's version (issue 31 "One catalogue"): the database holds the catalogue and the
 * version it was published at, in the `published` row of `catalogue_state`. Every way of replacing
 * the catalogue as a whole advances this one counter: the operator's file (seed-file.ts
 * applyCatalogue: applied only when its `version` is higher) and, later, publishing from the
 * operator area (issue 32: a draft published becomes the next version; the file its import and
 * export). An older version never replaces a newer one, whichever replica holds which file.
 *
 * Not to be confused with the `version` row, the change counter every process's cached snapshot
 * watches (store.ts): it moves on every change of what the snapshot shows — a published catalogue,
 * an operator's model or channel edit, a registered image — and says nothing about which catalogue.
 *
 * Serialised across processes by the row lock of `published` (lockPublished): two replicas
 * starting at once with different files apply them one after the other, and the second sees what
 * the first wrote, so the higher version is what stays. The operator area's model and channel edits
 * (model-channels.ts) take the same lock.
 */
import { eq } from 'drizzle-orm';
import type { Tx } from '../../db/client.js';
import { catalogueState } from './schema.js';

export interface PublishedCatalogue {
  /** 0: a file without a `version` (applied only where nothing was published). */
  version: number;
  /** SHA-256 of the catalogue's content (contentHash): what tells a same-version file apart. */
  hash: string;
  /** Who published it: the operator's file (CATALOGUE_FILE) or, later, the operator area. */
  source: 'file' | 'console';
  at: string;
}

const KEY = 'published';
/** The placeholder the lock row holds until something is published. */
const NOTHING = { version: -1, hash: '', source: 'file', at: '' } satisfies PublishedCatalogue;

/**
 * Takes the catalogue's lock for the rest of `tx` and answers what is published (null: nothing yet,
 * a new database or one last written before versions existed).
 */
export async function lockPublished(tx: Tx, now: Date): Promise<PublishedCatalogue | null> {
  await tx.insert(catalogueState).values({ key: KEY, value: NOTHING, updatedAt: now }).onConflictDoNothing();
  const [row] = await tx.select({ value: catalogueState.value }).from(catalogueState).where(eq(catalogueState.key, KEY)).for('update');
  const value = row?.value as PublishedCatalogue | undefined;
  return value && value.version >= 0 ? value : null;
}

/** Records a new published version; the caller holds the lock (lockPublished) in the same transaction. */
export async function writePublished(tx: Tx, published: Omit<PublishedCatalogue, 'at'>, now: Date) {
  const value: PublishedCatalogue = { ...published, at: now.toISOString() };
  await tx.update(catalogueState).set({ value, updatedAt: now }).where(eq(catalogueState.key, KEY));
}

/** JSON with every object's keys sorted: the same content gives the same text however it was written. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
