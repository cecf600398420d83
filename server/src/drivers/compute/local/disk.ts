/**
 * The local machine's data disk (数据盘) with the size the user bought: an ext4 file system in a
 * sparse image beside the instance's directory, loop-mounted on its data folder while the machine
 * exists (the sandbox binds that folder). A full disk refuses writes (ENOSPC) as a real one does;
 * 扩容 grows the image and the file system, online. Loop mounts need root: without it the data disk
 * is a plain folder whose size is not enforced (the driver says so in its log).
 *
 * The image is sparse and its inode tables are not zeroed (`noinit_itable`): a new 50 GB disk
 * takes a few MB of the host and a few tens of milliseconds.
 */
import { execFile } from 'node:child_process';
import { existsSync, lchownSync, lstatSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { chmod, stat, statfs, truncate } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);
const GIB = 1024 ** 3;
const MOUNT_OPTIONS = 'loop,noinit_itable,nosuid,nodev';

/** Whether data disks can be real file systems here, and why not when they cannot. */
export function diskImagesWork(): { ok: boolean; why: string } {
  if (process.getuid?.() !== 0) return { ok: false, why: '服务器不以 root 运行，无法挂载磁盘镜像' };
  for (const tool of ['/sbin/mkfs.ext4', '/sbin/resize2fs', '/bin/mount', '/sbin/losetup']) {
    if (!existsSync(tool) && !existsSync(tool.replace(/^\/(s?bin)/, '/usr/$1')))
      return { ok: false, why: `缺少 ${tool.split('/').pop()}（Debian 软件包 e2fsprogs、mount）` };
  }
  if (!existsSync('/dev/loop-control')) return { ok: false, why: '本机没有 loop 设备（/dev/loop-control）' };
  return { ok: true, why: '数据盘为 ext4 镜像，容量生效' };
}

/**
 * Makes an empty file system of `gb` GiB (whole 4 KiB blocks) in `image` (the file must not exist
 * yet), its root folder owned by the machine's host uid (null: the server's); the image file itself
 * is the server's alone.
 */
export async function makeDiskImage(image: string, gb: number, uid: number | null = null): Promise<void> {
  await run('truncate', ['-s', String(Math.ceil((gb * GIB) / 4096) * 4096), image]);
  await chmod(image, 0o600);
  const owner = uid ?? process.getuid?.() ?? 0;
  // No blocks reserved for root (the user gets the whole size).
  await run('mkfs.ext4', ['-q', '-F', '-m', '0', '-i', '65536', '-E', `lazy_itable_init=1,lazy_journal_init=1,root_owner=${owner}:${owner}`, image]);
}

/** The loop device mounted on `folder`, or null when nothing is. */
export function mountedDevice(folder: string): string | null {
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    if (unescapeMount(left.split(' ')[4]!) === folder) return right.split(' ')[1] ?? null;
  }
  return null;
}

/**
 * Mounts the image on its folder, unless it already is (after a restart of the server). mkfs makes
 * `lost+found` the server's whatever the root's owner: it is given to the machine's uid, whose
 * file system it is.
 */
export async function mountDisk(image: string, folder: string, uid: number | null = null): Promise<void> {
  if (!mountedDevice(folder)) await run('mount', ['-t', 'ext4', '-o', MOUNT_OPTIONS, image, folder]);
  const lostFound = path.join(folder, 'lost+found');
  if (uid != null && existsSync(lostFound) && lstatSync(lostFound).uid !== uid) lchownSync(lostFound, uid, uid);
}

/** Unmounts the folder's disk (and frees its loop device); nothing mounted is fine. */
export async function unmountDisk(folder: string): Promise<void> {
  if (!mountedDevice(folder)) return;
  await run('umount', [folder]);
}

/**
 * Grows the disk to `gb` GiB (the machine is stopped: 扩容 asks for that); a smaller size leaves it
 * as it is (disks only grow). Offline, on the image: growing a mounted ext4 takes CAP_SYS_RESOURCE,
 * which a server in a container often lacks. Checked first, then the image grown, then the file
 * system to the image: a try cut short anywhere is finished by the next.
 */
export async function growDisk(image: string, folder: string, gb: number): Promise<void> {
  const bytes = Math.ceil((gb * GIB) / 4096) * 4096;
  const wasMounted = mountedDevice(folder) !== null;
  await unmountDisk(folder);
  try {
    await check(image);
    if (bytes > (await stat(image)).size) await truncate(image, bytes);
    await run('resize2fs', [image]);
  } finally {
    if (wasMounted) await mountDisk(image, folder);
  }
}

/**
 * e2fsck's preen: exit 1 is "errors corrected", which is what a check is for. Only once no loop
 * device holds the image any more: a mount namespace the host cannot see (a sandbox still on its
 * way out) may still have the file system mounted, and checking a mounted one would damage it.
 */
async function check(image: string): Promise<void> {
  for (let i = 0; (await loopDevicesOf(image)).length; i++) {
    if (i >= 100) throw new Error('数据盘仍在使用中，请稍后重试');
    await new Promise((r) => setTimeout(r, 50));
  }
  try {
    await run('e2fsck', ['-f', '-p', image]);
  } catch (e) {
    if ((e as { code?: number }).code !== 1) throw new Error('数据盘检查未通过，请联系运营方处理', { cause: e });
  }
}

/** The loop devices backed by the image (a mounted image has one; autoclear frees it with the last mount). */
async function loopDevicesOf(image: string): Promise<string[]> {
  const { stdout } = await run('losetup', ['-j', image]);
  return stdout.split('\n').filter(Boolean);
}

/** Bytes in use on the mounted disk. */
export async function usedBytes(folder: string): Promise<number> {
  const s = await statfs(folder);
  return (s.blocks - s.bfree) * s.bsize;
}

/** mountinfo writes space, tab, newline and backslash as octal escapes. */
function unescapeMount(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/** The image of a tree with a quota of `quotaGb`: the quota, and room for the file system's own tables and journal. */
export function treeImageGb(quotaGb: number): number {
  return quotaGb * 1.03 + 1 / 16;
}

/** Trees mounted by this process (ensureTree), unmounted with it (unmountTrees). */
const trees = new Map<string, Promise<boolean>>();

/**
 * A folder that is an ext4 image of `gb` GiB beside it (`<folder>.img`), made on first use and
 * mounted once per process however many callers ask at once: 文件存储's per-account tree, which
 * the console writes through the API and the machines write at /root/shared, so only the file
 * system can hold both to the quota. A folder that already holds files without an image (made
 * before images were possible) stays a plain folder. Resolves whether the size is enforced.
 */
export function ensureTree(folder: string, gb: number, uid: number | null = null): Promise<boolean> {
  let mounted = trees.get(folder);
  if (!mounted) {
    mounted = (async () => {
      const image = `${folder}.img`;
      mkdirSync(folder, { recursive: true });
      if (!existsSync(image)) {
        if (readdirSync(folder).length) return false;
        await makeDiskImage(image, gb, uid);
      }
      await mountDisk(image, folder, uid);
      return true;
    })();
    trees.set(folder, mounted);
    mounted.catch(() => trees.delete(folder));
  }
  return mounted;
}

/** Unmounts every tree this process mounted (the server stops). */
export async function unmountTrees(): Promise<void> {
  const folders = [...trees.keys()];
  trees.clear();
  for (const folder of folders) await unmountDisk(folder).catch(() => {});
}
