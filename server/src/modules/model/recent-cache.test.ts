import { describe, expect, it } from 'vitest';
import { BACKGROUND_READ_DELAY_MS } from '../../db/background.js';
import { RecentCache } from './recent-cache.js';

/** Long enough for a background read, which starts BACKGROUND_READ_DELAY_MS after the caller that set it off, to run. */
const backgroundReadRuns = () => new Promise((resolve) => setTimeout(resolve, BACKGROUND_READ_DELAY_MS + 5));

describe('RecentCache', () => {
  function frame() {
    let now = 0;
    let reads = 0;
    let value = 'v1';
    let release: (() => void) | null = null;
    const cache = new RecentCache<string, string>(1000, () => now);
    const load = async () => {
      reads++;
      if (release === null) return value;
      await new Promise<void>((resolve) => (release = resolve));
      return value;
    };
    return {
      cache,
      get: () => cache.get('k', load),
      advance: (ms: number) => (now += ms),
      reads: () => reads,
      change: (v: string) => (value = v),
      holdReads: () => (release = () => {}),
      finishRead: () => {
        const r = release!;
        release = null;
        r();
      },
    };
  }

  it('reads once while fresh, refreshes ahead past half its life without making the caller wait, and never answers older than its life', async () => {
    const f = frame();
    expect(await f.get()).toBe('v1');
    f.change('v2');
    f.advance(400);
    expect(await f.get()).toBe('v1');
    expect(f.reads()).toBe(1);
    f.advance(200); // 600 ms: answered at once, one read in the background
    expect(await f.get()).toBe('v1');
    expect(f.reads()).toBe(1); // not yet: the read waits until the caller's request is under way
    await backgroundReadRuns();
    expect(f.reads()).toBe(2);
    expect(await f.get()).toBe('v2');
    expect(f.reads()).toBe(2);
    f.change('v3');
    f.advance(1000); // past its life: the caller waits for a new read
    expect(await f.get()).toBe('v3');
    expect(f.reads()).toBe(3);
  });

  it('lets a delete win over a background read that started before it', async () => {
    const f = frame();
    await f.get();
    f.advance(600);
    f.holdReads();
    expect(await f.get()).toBe('v1'); // sets off the background read
    await backgroundReadRuns(); // it has started and is held
    f.change('v2');
    f.cache.delete('k');
    f.finishRead();
    await backgroundReadRuns();
    // The held read's answer was not kept: the next caller reads again.
    expect(await f.get()).toBe('v2');
    expect(f.reads()).toBe(3);
  });
});
