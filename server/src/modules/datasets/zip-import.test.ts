/**
 * Unpacking dataset zips (issue 28 §4): on a worker thread, counting what entries really inflate
 * to whatever they declare, stopping at the cap, and refusing entries whose path leaves the archive.
 */
import { deflateRawSync } from 'node:zlib';
import { threadId } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { DEFAULT_ZIP_LIMITS, INFLATE_CHUNK, unpackZip, ZipRefused } from './zip-import.js';
import { zipOf } from '../../../test/zip-builder.js';

const MB = 1024 * 1024;
/** 16 MB of zeros deflated: about 16 KB. */
const ZEROS = deflateRawSync(Buffer.alloc(16 * MB));
const limits = { ...DEFAULT_ZIP_LIMITS, maxUnpacked: 40 * MB };

/** A zip bomb: `n` entries of 16 MB of zeros each, every one declaring 26 KB. */
const bomb = (n: number) => zipOf(Array.from({ length: n }, (_, i) => ({ name: `set/${i}.png`, deflated: ZEROS, size: 26 * 1024 })));

async function refusal(p: Promise<unknown>): Promise<ZipRefused> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ZipRefused);
  return e as ZipRefused;
}

describe('unpackZip', () => {
  it('stops a bomb that lies about its sizes once it has really inflated past the cap, no more than one chunk beyond', async () => {
    const e = await refusal(unpackZip(bomb(8), limits));
    expect(e.why).toBe('too_large');
    expect(e.inflated).toBeGreaterThan(limits.maxUnpacked);
    expect(e.inflated).toBeLessThanOrEqual(limits.maxUnpacked + INFLATE_CHUNK);
  });

  it('inflates on another thread: the caller hears progress while the unpacking is still under way', async () => {
    let finished = false;
    const heard: { inflated: number; finished: boolean }[] = [];
    const done = unpackZip(bomb(2), limits, (inflated) => heard.push({ inflated, finished })).finally(() => (finished = true));
    const result = await done;
    // Progress was handled by this thread's event loop before the result: the loop was free meanwhile.
    expect(heard.length).toBeGreaterThanOrEqual(1);
    expect(heard.every((h) => !h.finished)).toBe(true);
    expect(result.threadId).not.toBe(threadId);
    expect(result.inflated).toBe(32 * MB);
    expect([...result.files.keys()]).toEqual(['set/0.png', 'set/1.png']);
    expect(result.files.get('set/1.png')!.equals(Buffer.alloc(16 * MB))).toBe(true);
  });

  it('unpacks one zip at a time: a second waits until the first is done', async () => {
    let firstDone = false;
    const heardBeforeFirstDone: number[] = [];
    const first = unpackZip(bomb(2), limits).finally(() => (firstDone = true));
    const second = unpackZip(bomb(2), limits, (n) => !firstDone && heardBeforeFirstDone.push(n));
    expect((await first).inflated).toBe(32 * MB);
    expect((await second).inflated).toBe(32 * MB);
    expect(heardBeforeFirstDone).toEqual([]);
  });

  it('refuses an honest zip too big by its declared sizes before inflating anything', async () => {
    const entries = Array.from({ length: 3 }, (_, i) => ({ name: `${i}.png`, deflated: ZEROS, size: 16 * MB }));
    const e = await refusal(unpackZip(zipOf(entries), limits));
    expect(e).toMatchObject({ why: 'too_large', inflated: 0 });
  });

  it('refuses by name an entry that really inflates past its own limit, and takes the rest', async () => {
    const result = await unpackZip(
      zipOf([
        { name: 'big.png', deflated: ZEROS, size: 1000 },
        { name: 'big.txt', deflated: deflateRawSync(Buffer.alloc(100 * 1024, 'a')), size: 10 },
        { name: 'ok.png', stored: Buffer.from('png bytes') },
      ]),
      { ...limits, maxImage: 1 * MB },
    );
    expect(result.refused).toEqual([
      { name: 'big.png', why: 'too_large' },
      { name: 'big.txt', why: 'too_large' },
    ]);
    expect([...result.files.keys()]).toEqual(['ok.png']);
    expect(result.inflated).toBeLessThanOrEqual(1 * MB + 64 * 1024 + 2 * INFLATE_CHUNK + 9);
  });

  it('refuses entries whose path leaves the archive, absolute or with a drive; reads a backslash as a folder', async () => {
    const png = Buffer.from('png');
    const result = await unpackZip(
      zipOf(
        ['../../x.png', '/abs/x.png', '..\\..\\x.png', 'C:\\x.png', 'c:x.png', 'a/../../x.png', 'win\\y.png', 'ok..png'].map((name) => ({ name, stored: png })),
      ),
      limits,
    );
    expect(result.refused).toEqual(
      ['../../x.png', '/abs/x.png', '..\\..\\x.png', 'C:\\x.png', 'c:x.png', 'a/../../x.png'].map((name) => ({ name, why: 'unsafe_name' })),
    );
    expect([...result.files.keys()]).toEqual(['win/y.png', 'ok..png']);
  });

  it('refuses what is not a zip, a stored entry whose sizes disagree, and entries outside the file', async () => {
    expect((await refusal(unpackZip(Buffer.from('PK but not really'), limits))).why).toBe('invalid');
    expect((await refusal(unpackZip(zipOf([{ name: 'a.png', stored: Buffer.from('abc'), size: 0 }]), limits))).why).toBe('invalid');
    const zip = zipOf([{ name: 'a.png', stored: Buffer.from('abc') }]);
    const central = zip.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    zip.writeUInt32LE(zip.length, central + 42); // the local header's offset, past the end
    expect((await refusal(unpackZip(zip, limits))).why).toBe('invalid');
  });
});
