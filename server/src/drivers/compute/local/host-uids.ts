/**
 * Whom a machine's root is on the host. Inside its sandbox a machine runs as root (uid 0 of its own
 * user namespace); when the server runs as root that would be the host's uid 0, merely without
 * most capabilities. So, where it can, the driver runs each account's machines as an unprivileged
 * host uid of their own: bubblewrap is started as that uid (setpriv), its user namespace maps root
 * inside onto it, and the machines' disks and the account's 文件存储 are owned by it. A setuid
 * file a machine leaves behind is then setuid to nobody who matters, and a machine that got out of
 * its namespaces would hold an ordinary user's rights over its own files only.
 *
 * All machines of an account share its uid (they share /root/shared, so each must be able to write
 * what another wrote); a machine without 文件存储 gets one of its own.
 */
import { accessSync, chmodSync, constants, existsSync, lstatSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Db } from '../../../db/client.js';
import { localHostUids } from './schema.js';

/**
 * The first uid handed out: above systemd's range for containers' users (524288–1879048191 is
 * nspawn's), below 2^31, so no person's or service's account on the host has it.
 */
export const HOST_UID_BASE = 1_900_000_000;

/** setpriv (util-linux) changes uid and gid before bubblewrap runs. */
export const SETPRIV = '/usr/bin/setpriv';

/** The command prefix that runs what follows as `uid` (gid the same, no supplementary groups). */
export function asHostUser(uid: number | null | undefined): string[] {
  return uid == null ? [] : [SETPRIV, `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--'];
}

/**
 * Whether machines can run as host uids of their own under `dir`: the server is root, and an
 * unprivileged uid can walk down to `dir` (bubblewrap, running as that uid, opens the disks by
 * path). The driver makes the folders under `dir` walkable itself; above it is the operator's.
 */
export function hostUidsWork(dir: string): { ok: boolean; why: string } {
  if (process.getuid?.() !== 0) return { ok: false, why: '服务器不以 root 运行，实例的 root 即服务器自己的用户' };
  if (!existsSync(SETPRIV)) return { ok: false, why: '缺少 setpriv（Debian 软件包 util-linux）' };
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    if ((statSync(at).mode & 0o001) === 0) return { ok: false, why: `目录 ${at} 不允许其他用户进入（需要 o+x），DATA_DIR 须放在可进入的位置` };
    if (at === path.dirname(at)) break;
  }
  accessSync(dir, constants.X_OK);
  return { ok: true, why: '每个账号的实例以宿主上独立的非特权用户运行' };
}

/** Each owner's host uid, handed out once and kept (table local_host_uids). */
export class HostUids {
  private readonly known = new Map<string, number>();

  constructor(private readonly db: Db) {}

  /** The owner's uid: an account's id (its machines and 文件存储) or a machine's own id. */
  async of(owner: string): Promise<number> {
    const cached = this.known.get(owner);
    if (cached !== undefined) return cached;
    // The update on conflict makes the statement return the existing row too, in one round trip.
    const [row] = await this.db
      .insert(localHostUids)
      .values({ owner })
      .onConflictDoUpdate({ target: localHostUids.owner, set: { owner } })
      .returning({ seq: localHostUids.seq });
    const uid = HOST_UID_BASE + row!.seq;
    this.known.set(owner, uid);
    return uid;
  }
}

/**
 * DATA_DIR as machines with uids of their own need it: walkable (they reach their disks and 文件存储
 * through it), and nothing else in it open to them — the embedded database (PGlite writes its files
 * 0666), uploaded files, keys. Each other entry is shut to the server's uid; `files` (made on the
 * first upload) is made now, shut. A machine never sees DATA_DIR from inside its sandbox: this is
 * for one that got out of it.
 */
export function shutDataDir(dataDir: string, open: readonly string[]): void {
  mkdirSync(path.join(dataDir, 'files'), { recursive: true, mode: 0o700 });
  for (const name of readdirSync(dataDir)) {
    if (open.includes(name)) continue;
    const at = path.join(dataDir, name);
    const st = lstatSync(at);
    if (!st.isSymbolicLink()) chmodSync(at, st.mode & 0o700);
  }
}
