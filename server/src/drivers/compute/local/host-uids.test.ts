/**
 * The host-wide record of the consoles' uid ranges (host-uids.ts), on plain files: two consoles get
 * ranges of their own, a console keeps its range across restarts, and a range is taken over only
 * from a console that is gone.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { consoleIdOf, HOST_UID_BASE, HOST_UID_RANGE, HostUidRanges } from './host-uids.js';

describe('host uid ranges', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'console-uid-ranges-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const consoleAt = (name: string) => {
    const dir = path.join(root, name);
    mkdirSync(dir, { recursive: true });
    return { console: consoleIdOf(dir), dir };
  };

  it('gives each console ranges of its own and keeps them across restarts', () => {
    const registry = path.join(root, 'registry-1');
    const [a, b] = [consoleAt('a'), consoleAt('b')];
    expect(consoleIdOf(a.dir)).toBe(a.console); // kept in its folder
    const first = new HostUidRanges(registry, a).baseOf(0);
    expect(first).toBe(HOST_UID_BASE);
    const other = new HostUidRanges(registry, b).baseOf(0);
    expect(other).toBe(HOST_UID_BASE + HOST_UID_RANGE);
    // Its second range (owners past the first 65 536) is a third one, not the other console's.
    expect(new HostUidRanges(registry, a).baseOf(1)).toBe(HOST_UID_BASE + 2 * HOST_UID_RANGE);
    expect(new HostUidRanges(registry, a).baseOf(0)).toBe(first);
    expect(new HostUidRanges(registry, b).baseOf(0)).toBe(other);
  });

  it('takes over only a range whose console is gone, once every range is held, and says so when none is', () => {
    const registry = path.join(root, 'registry-2');
    mkdirSync(registry);
    const ranges = Math.floor((2 ** 31 - 1 - HOST_UID_BASE) / HOST_UID_RANGE);
    const alive = consoleAt('alive');
    // Every range held: the first half by a console still there, the rest by ones whose folders are gone.
    for (let r = 0; r < ranges; r++) {
      const holder = r < ranges / 2 ? alive : { console: `gone-${r}`, dir: path.join(root, `gone-${r}`) };
      writeFileSync(path.join(registry, `${r}.0`), JSON.stringify({ ...holder, block: r }));
    }
    const late = consoleAt('late');
    const base = new HostUidRanges(registry, late).baseOf(0);
    const range = (base - HOST_UID_BASE) / HOST_UID_RANGE;
    expect(range).toBeGreaterThanOrEqual(ranges / 2);
    expect(JSON.parse(readFileSync(path.join(registry, `${range}.1`), 'utf8'))).toMatchObject({ console: late.console, block: 0 });
    expect(existsSync(path.join(registry, `${range}.0`))).toBe(false);
    expect(new HostUidRanges(registry, late).baseOf(0)).toBe(base);

    // Nothing left to take over: a clear refusal naming the record.
    for (const name of readdirSync(registry)) {
      const r = Number(name.split('.')[0]);
      if (r >= ranges / 2 && r !== range) writeFileSync(path.join(registry, name), JSON.stringify({ ...alive, block: r }));
    }
    expect(() => new HostUidRanges(registry, consoleAt('last')).baseOf(0)).toThrow(registry);
  });
});
