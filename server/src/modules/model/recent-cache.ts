/**
 * Values read at most `ttlMs` ago, refreshed ahead: past half their life a value is still answered
 * at once while one read for it runs in the background, so a key used at least every `ttlMs / 2`
 * never makes a caller wait for the database, and no answer is ever older than `ttlMs`. A value
 * dropped (`delete`, an edit in this process) is read again by the next caller.
 */
import { afterAMoment } from '../../db/background.js';

export class RecentCache<K, V> {
  private readonly entries = new Map<K, { value: V; at: number; refreshing: boolean }>();

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number,
    private readonly maxEntries = 10_000,
  ) {}

  /** The cached value, or `load`'s (not kept when it is undefined). */
  async get(key: K, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const hit = this.entries.get(key);
    const age = hit ? this.now() - hit.at : Infinity;
    if (hit && age < this.ttlMs) {
      if (age >= this.ttlMs / 2 && !hit.refreshing) {
        hit.refreshing = true;
        afterAMoment(load).then(
          (value) => this.keep(key, value, hit),
          () => (hit.refreshing = false), // the next caller tries again; the value is still within its life
        );
      }
      return hit.value;
    }
    const value = await load();
    this.keep(key, value);
    return value;
  }

  /** A newer value of `key` (this process wrote it). */
  set(key: K, value: V): void {
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(key, { value, at: this.now(), refreshing: false });
  }

  peek(key: K): V | undefined {
    return this.entries.get(key)?.value;
  }

  /** Updates a cached value in place, keeping its age. */
  patch(key: K, update: (value: V) => V): void {
    const hit = this.entries.get(key);
    if (hit) hit.value = update(hit.value);
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  private keep(key: K, value: V | undefined, replacing?: { value: V }) {
    // A delete while the background read ran wins: the read may predate the change.
    if (replacing && this.entries.get(key) !== replacing) return;
    if (value === undefined) this.entries.delete(key);
    else this.set(key, value);
  }
}
