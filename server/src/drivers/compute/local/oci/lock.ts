/**
 * A lock between processes on one file system: two console processes on one DATA_DIR (a PostgreSQL
 * deployment runs several) change the image layout one at a time, so that one's gc never deletes
 * the blobs the other is importing. The lock is a file made with O_EXCL holding its owner's host,
 * pid and start; while held its time is refreshed, so that a holder that died is recognised:
 * on the same host by its pid being gone, on any host (a shared file system, a pid reused) by the
 * file going untouched for STALE_MS. `proper-lockfile` does the same; it is not a dependency here.
 */
import { open, readFile, rename, stat, unlink, utimes } from 'node:fs/promises';
import os from 'node:os';
import { randomBytes } from 'node:crypto';

const REFRESH_MS = 5_000;
export const STALE_MS = 60_000;
const RETRY_MS = 100;
/** A holder that keeps it longer than this (a gzip of tens of gigabytes) makes the waiter give up with a clear error. */
const WAIT_LIMIT_MS = 30 * 60_000;

interface Owner {
  host: string;
  pid: number;
}

/** Runs `work` holding the lock file `file` (made and removed here); waits while another process holds it. */
export async function withFileLock<T>(file: string, work: () => Promise<T>, waitLimitMs = WAIT_LIMIT_MS): Promise<T> {
  await acquire(file, waitLimitMs);
  const refresh = setInterval(() => {
    const now = new Date();
    void utimes(file, now, now).catch(() => {});
  }, REFRESH_MS);
  refresh.unref();
  try {
    return await work();
  } finally {
    clearInterval(refresh);
    await unlink(file).catch(() => {});
  }
}

async function acquire(file: string, waitLimitMs: number): Promise<void> {
  const started = Date.now();
  const me = `${os.hostname()} ${process.pid} ${started}\n`;
  for (;;) {
    try {
      const fh = await open(file, 'wx', 0o600);
      try {
        await fh.writeFile(me);
      } finally {
        await fh.close();
      }
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    if (await removeIfStale(file)) continue;
    if (Date.now() - started > waitLimitMs) {
      throw new Error(`镜像目录被另一个控制台进程占用（${file}，${Math.round(waitLimitMs / 60_000)} 分钟未释放）：确认该进程仍在运行，或删除该文件后重试`);
    }
    await new Promise((r) => setTimeout(r, RETRY_MS));
  }
}

/** Takes away a lock whose owner is gone; true when it did (or the lock went meanwhile). */
async function removeIfStale(file: string): Promise<boolean> {
  let text: string;
  let mtimeMs: number;
  try {
    [text, { mtimeMs }] = await Promise.all([readFile(file, 'utf8'), stat(file)]);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw e;
  }
  const owner = parseOwner(text);
  // A lock being written this instant has no content yet: its maker is alive.
  if (!owner) return Date.now() - mtimeMs > STALE_MS ? takeAway(file, text) : false;
  // A live holder touches it every REFRESH_MS: untouched for long, its pid is another process's now.
  const untouched = Date.now() - mtimeMs > STALE_MS;
  const gone = untouched || (owner.host === os.hostname() && !alive(owner.pid));
  return gone ? takeAway(file, text) : false;
}

/**
 * Moves the stale file aside and deletes it if it is still the stale one; a fresh lock another
 * waiter made in between is put back (two waiters finding one stale lock at the same moment).
 */
async function takeAway(file: string, staleText: string): Promise<boolean> {
  const aside = `${file}.stale-${randomBytes(6).toString('hex')}`;
  try {
    await rename(file, aside);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw e;
  }
  const text = await readFile(aside, 'utf8').catch(() => '');
  if (text === staleText) {
    await unlink(aside).catch(() => {});
    return true;
  }
  await rename(aside, file).catch(() => {});
  return false;
}

function parseOwner(text: string): Owner | null {
  const [host, pid] = text.trim().split(' ');
  const n = Number(pid);
  return host && Number.isSafeInteger(n) && n > 0 ? { host, pid: n } : null;
}

/** Whether a process of this host runs with that pid (EPERM: it does, as another user). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
