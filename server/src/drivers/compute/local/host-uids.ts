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
import { randomUUID } from 'node:crypto';
import {
  accessSync,
  chmodSync,
  constants,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
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

/**
 * Uids per range. Several consoles (each its DATA_DIR and database) may run machines on one host:
 * each holds ranges of its own, recorded host-wide (HostUidRanges), and numbers its owners within
 * them, so that no two consoles' machines share a uid.
 */
export const HOST_UID_RANGE = 65_536;
/** The ranges there are: every uid stays below 2^31 - 1. */
const RANGES = Math.floor((2 ** 31 - 1 - HOST_UID_BASE) / HOST_UID_RANGE);
/** Where the host-wide record of ranges lives unless LOCAL_HOST_UIDS_DIR says otherwise. */
export const DEFAULT_HOST_UIDS_DIR = '/var/lib/gpu-console/host-uids';

/** One range's holder, as recorded: the console, its folder (DATA_DIR/local-compute) and which of its ranges this is. */
interface RangeClaim {
  console: string;
  dir: string;
  block: number;
}

/**
 * The host-wide record of which console holds which range of uids: a folder (root's alone) with a
 * file `<range>.<generation>` per claim, the highest generation of a range its holder. A claim is
 * made by creating its file where none is (a hard link of a finished file: atomic, so two consoles
 * starting at once never take the same range, and no lock is needed). A range is taken over only
 * when its holder is gone — its folder no longer holds its console id — and no process on the host
 * runs as one of its uids; the takeover is the next generation, which again only one can create.
 */
export class HostUidRanges {
  private readonly bases = new Map<number, number>();

  constructor(
    private readonly registry: string,
    private readonly self: { console: string; dir: string },
  ) {
    mkdirSync(registry, { recursive: true, mode: 0o700 });
    chmodSync(registry, 0o700);
  }

  /** The first uid of this console's `block`-th range (its owners HOST_UID_RANGE × block onwards), claimed on first use. */
  baseOf(block: number): number {
    const known = this.bases.get(block);
    if (known !== undefined) return known;
    for (;;) {
      const holders = this.holders();
      const mine = [...holders].find(([, h]) => h.claim?.console === this.self.console && h.claim.block === block);
      const range = mine?.[0] ?? this.claim(holders, block);
      if (range === null) continue; // another console took it meanwhile: look again
      const base = HOST_UID_BASE + range * HOST_UID_RANGE;
      this.bases.set(block, base);
      return base;
    }
  }

  /** Each recorded range's current claim (null: a file that cannot be read as one, kept as taken). */
  private holders(): Map<number, { generation: number; claim: RangeClaim | null }> {
    const holders = new Map<number, { generation: number; claim: RangeClaim | null }>();
    for (const name of readdirSync(this.registry)) {
      const m = /^(\d+)\.(\d+)$/.exec(name);
      if (!m) continue;
      const [range, generation] = [Number(m[1]), Number(m[2])];
      if ((holders.get(range)?.generation ?? -1) > generation) continue;
      holders.set(range, { generation, claim: readClaim(path.join(this.registry, name)) });
    }
    return holders;
  }

  /** Claims a free range (or one whose holder is gone) for `block`; null when another console was faster. */
  private claim(holders: Map<number, { generation: number; claim: RangeClaim | null }>, block: number): number | null {
    let range = 0;
    while (range < RANGES && holders.has(range)) range++;
    let generation = 0;
    if (range === RANGES) {
      const gone = [...holders].find(([r, h]) => h.claim && holderGone(h.claim) && !uidsInUse(HOST_UID_BASE + r * HOST_UID_RANGE));
      if (!gone) throw new Error(`宿主上的实例用户号段已用完（${RANGES} 段）：清理 ${this.registry} 中已不存在的控制台的记录`);
      [range, generation] = [gone[0], gone[1].generation + 1];
    }
    const temp = path.join(this.registry, `.claim-${randomUUID()}`);
    writeFileSync(temp, JSON.stringify({ ...this.self, block } satisfies RangeClaim), { mode: 0o600 });
    try {
      linkSync(temp, path.join(this.registry, `${range}.${generation}`));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') return null;
      throw e;
    } finally {
      unlinkSync(temp);
    }
    // The claims it replaces: gone.
    for (let g = 0; g < generation; g++) rmSync(path.join(this.registry, `${range}.${g}`), { force: true });
    return range;
  }
}

function readClaim(file: string): RangeClaim | null {
  try {
    const claim = JSON.parse(readFileSync(file, 'utf8')) as RangeClaim;
    return typeof claim.console === 'string' && typeof claim.dir === 'string' && Number.isInteger(claim.block) ? claim : null;
  } catch {
    return null;
  }
}

/** Whether the console that made a claim is gone: its folder no longer holds its id. */
function holderGone(claim: RangeClaim): boolean {
  try {
    return readFileSync(path.join(claim.dir, CONSOLE_ID_FILE), 'utf8').trim() !== claim.console;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

/** Whether a process on the host runs as a uid of the range starting at `base`. */
function uidsInUse(base: number): boolean {
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let status: string;
    try {
      status = readFileSync(`/proc/${pid}/status`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    const uids = /^Uid:\s+(.*)$/m.exec(status)?.[1]?.split(/\s+/).map(Number) ?? [];
    if (uids.some((u) => u >= base && u < base + HOST_UID_RANGE)) return true;
  }
  return false;
}

/** The file in the driver's folder naming its console in the host-wide record (HostUidRanges). */
const CONSOLE_ID_FILE = 'console-id';

/** The console's id in the host-wide record: made once, kept in its folder. */
export function consoleIdOf(dir: string): string {
  const file = path.join(dir, CONSOLE_ID_FILE);
  try {
    writeFileSync(file, `${randomUUID()}\n`, { flag: 'wx', mode: 0o600 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  return readFileSync(file, 'utf8').trim();
}

/** Each owner's host uid: its number in this console (table local_host_uids), in this console's ranges on the host. */
export class HostUids {
  private readonly known = new Map<string, number>();

  constructor(
    private readonly db: Db,
    private readonly ranges: HostUidRanges,
  ) {}

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
    // A console alone on its host holds range 0: its uids are those it gave before there were ranges.
    const seq = row!.seq;
    const uid = this.ranges.baseOf(Math.floor(seq / HOST_UID_RANGE)) + (seq % HOST_UID_RANGE);
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
