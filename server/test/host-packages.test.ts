/**
 * A local-sandbox test that cannot run for want of a Debian package is skipped on a developer's
 * machine and fails under CI, naming the package; .ci/run installs every package the tests ask for.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { HOST_PACKAGES, skipOrFail } from './host-packages.js';

describe('local-sandbox tests without a package they need', () => {
  it('are skipped outside CI, with a line naming the package', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      expect(skipOrFail([], {})).toBe(false);
      expect(skipOrFail(['python3-notebook (no notebook)'], {})).toBe(true);
      expect(skipOrFail(['python3-notebook (no notebook)'], { CI: 'false' })).toBe(true);
      expect(warn).toHaveBeenCalledWith(expect.stringContaining('python3-notebook'));
    } finally {
      warn.mockRestore();
    }
  });

  it('fail under CI, naming every missing package', () => {
    expect(skipOrFail([], { CI: 'true' })).toBe(false);
    expect(() => skipOrFail(['python3-notebook (no notebook)', 'slirp4netns (no /usr/bin/slirp4netns)'], { CI: 'true' })).toThrow(
      /Debian packages python3-notebook .*slirp4netns/,
    );
    expect(() => skipOrFail(['bubblewrap (找不到 bwrap)'], { CI: '1' })).toThrow(/bubblewrap/);
  });

  it('are run by .ci/run, which installs every package they ask for', () => {
    const ci = readFileSync(path.join(import.meta.dirname, '../../.ci/run'), 'utf8');
    expect(HOST_PACKAGES.filter((p) => !new RegExp(`dpkg -s ${p} |for p in [^;]*\\b${p}\\b`).test(ci))).toEqual([]);
    expect(ci).toContain('npm run test:local');
  });
});
