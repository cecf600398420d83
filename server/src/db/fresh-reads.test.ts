/**
 * The promise sessions and me/info rely on: a read is never answered by a statement that started
 * before it was asked, however many reads share statements.
 */
import { describe, expect, it } from 'vitest';
import { FreshReads } from './fresh-reads.js';

/** A table whose reads can be held open, to ask again while one is running. */
function heldTable() {
  const rows = new Map<string, string>([['s1', 'live']]);
  const statements: string[][] = [];
  let release: () => void = () => {};
  const reads = new FreshReads(async (keys: string[]) => {
    statements.push(keys);
    const snapshot = new Map(keys.filter((k) => rows.has(k)).map((k) => [k, rows.get(k)!]));
    await new Promise<void>((resolve) => (release = resolve));
    return snapshot;
  });
  /** Waits until the n-th statement has started. */
  const started = async (n: number) => {
    for (let i = 0; i < 100 && statements.length < n; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(statements).toHaveLength(n);
  };
  return { rows, statements, reads, started, release: () => release() };
}

describe('fresh reads', () => {
  it('answers a read asked while an earlier statement runs from a later statement that sees the change', async () => {
    const t = heldTable();
    const first = t.reads.load('s1');
    await t.started(1);

    t.rows.set('s1', 'revoked'); // committed while the first statement runs
    const second = t.reads.load('s1');
    t.release();
    expect(await first).toBe('live');
    await t.started(2);
    t.release();
    expect(await second).toBe('revoked');
  });

  it('shares one statement among the reads asked meanwhile, and answers unknown keys with nothing', async () => {
    const t = heldTable();
    t.rows.set('s2', 'live');
    const first = t.reads.load('s1');
    await t.started(1);
    const waiting = ['s1', 's2', 's2', 'nope'].map((k) => t.reads.load(k));
    t.release();
    await first;
    await t.started(2);
    t.release();
    expect(await Promise.all(waiting)).toEqual(['live', 'live', 'live', undefined]);
    expect(t.statements).toEqual([['s1'], ['s1', 's2', 'nope']]);
  });

  it('fails every read of a failed statement, and the next reads run again', async () => {
    let fail = true;
    const reads = new FreshReads(async (keys: string[]) => {
      if (fail) throw new Error('connection lost');
      return new Map(keys.map((k) => [k, k.toUpperCase()]));
    });
    await expect(Promise.all([reads.load('a'), reads.load('b')])).rejects.toThrow('connection lost');
    fail = false;
    expect(await reads.load('a')).toBe('A');
  });
});
