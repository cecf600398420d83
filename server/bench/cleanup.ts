/**
 * Removing what a bench server left: its data folder once nothing is mounted under it. A local
 * instance's trees and disks are ext4 images loop-mounted under the data folder; the server
 * unmounts them as it stops, but a sandbox still on its way out keeps a mount busy for a moment,
 * and removing the folder then fails with EBUSY (or, worse, reaches into a mounted file system).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';

/** Mount points at or under `dir` in this process's mount table, deepest first. */
export function mountsUnder(dir: string): string[] {
  const root = path.resolve(dir);
  const points = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => !!p)
    // mountinfo escapes space, tab, newline and backslash as octal.
    .map((p) => p.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(parseInt(oct, 8))))
    .filter((p) => p === root || p.startsWith(`${root}/`));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Waits (up to `waitMs`) for the mounts under `dir` to go, unmounting the ones still there halfway
 * through; then removes it. Resolves to false, leaving the folder and saying why, when a mount stays.
 */
export async function removeWhenUnmounted(dir: string, waitMs = 20_000, log: (line: string) => void = console.log): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  let tried = false;
  for (;;) {
    const mounts = mountsUnder(dir);
    if (!mounts.length) break;
    if (Date.now() > deadline) {
      log(`未删除 ${dir}：仍有挂载（${mounts.join('、')}）`);
      return false;
    }
    if (!tried && Date.now() > deadline - waitMs / 2) {
      tried = true;
      for (const m of mounts) {
        try {
          execFileSync('umount', [m], { stdio: 'ignore', timeout: 10_000 });
        } catch {
          // Still busy: looked at again below.
        }
      }
    }
    await sleep(200);
  }
  rmSync(dir, { recursive: true, force: true });
  return true;
}
