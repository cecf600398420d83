/**
 * 文件存储: each paying account's own file tree under `<root>/<payerId>`, mounted read-write at
 * /root/shared in its local instances (drivers/compute/local) and browsed from the console.
 *
 * The tree is written from inside the machines too, where a user may plant a symbolic link to any
 * path, or swap a folder for one while the console works on it. So the console never touches the
 * tree from the host: each operation runs in a throwaway bubblewrap sandbox that sees only that
 * tree (at /t) and the read-only /usr; and there no link is followed either (INTO, SCRIPTS): a link
 * to that sandbox's own /proc, to /usr or to another folder of the tree leads nowhere.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import type { FileStoreEntry, FileStoreListing } from '@console/contract';
import { AppError } from '../../http/errors.js';
import { ensureTree } from '../../drivers/compute/local/disk.js';
import { ownTree, throwaway } from '../../drivers/compute/local/sandbox.js';
import { keepTail } from '../../drivers/compute/local/bounded-text.js';

export interface FileStoreOptions {
  /** Where the accounts' trees live (DATA_DIR/filestore). */
  root: string;
  quotaBytes: number;
  /**
   * Each tree an ext4 image of this many GiB (treeImageGb of the quota), so that writes from inside
   * the machines stop at the quota too; null where images cannot be mounted (not root): the quota
   * then holds for the console's uploads only.
   */
  imageGb?: number | null;
  /** The host uid the account's machines run as (the local driver's hostUidOf); absent or null: the server's own. */
  hostUidOf?: (payerId: string) => Promise<number | null>;
  bwrap?: string;
}

/** Exit codes of the scripts below, and what they mean to the user. */
const REFUSALS = { 3: 'FILE_NOT_FOUND', 4: 'FILESTORE_NOT_A_FOLDER', 5: 'FILESTORE_EXISTS', 6: 'FILESTORE_NOT_A_FILE', 7: 'FILESTORE_QUOTA' } as const;

const ENTRIES = '--entries--';
/** The entries of one folder a listing shows: the rest are named only by `truncated`. */
export const LISTED_MAX = 5000;
/** The sum of the tree's file sizes, one line (a double: exact to 2^53 bytes). */
const SUM_OF_FILES = `find /t -type f -printf '%s\\n' | /usr/bin/mawk '{ s += $1 } END { printf "%.0f\\n", s }'`;
/** What the console keeps of a script's output: a full listing page is about 1.5 MB. */
const OUTPUT_MAX = 4 * 1024 * 1024;
/** The temporary names of uploads under way. */
const UPLOADING = '.upload-';

/**
 * Enters the folder $1 (a path under /t) as the working directory, never by way of a link: where it
 * leads is checked after entering (a link anywhere on the way ends elsewhere), so a folder swapped
 * for a link meanwhile is refused too, and the names below are then taken from that folder alone.
 * Missing or reached through a link: exit 3; a file: exit 4.
 */
const INTO = `into() {
  cd -P -- "$1" 2>/dev/null && [ "$(pwd -P; echo .)" = "$1
." ] && return
  [ -e "$1" ] && [ ! -L "$1" ] && [ ! -d "$1" ] && exit 4; exit 3
}
into "$1"
`;

/**
 * The operations, each in the folder $1 (entered by INTO) on the name $2 there. Each step acts on
 * the name itself, never on what a link there leads to: find, mv, rm, mkdir and ln do not follow a
 * link they are given, a read opens with O_NOFOLLOW (and O_NONBLOCK: a FIFO put in a file's place
 * fails instead of waiting), an upload's temporary name is new (O_EXCL).
 */
const SCRIPTS = {
  // The bytes of every file in the tree summed, a marker, then one record per entry of the folder
  // (type, size, mtime, name, NUL-ended; a name may hold anything but / and NUL), the first
  // LISTED_MAX + 1 only: a machine's root can make millions of files, and what the console reads
  // of a listing stays the size of a page. mawk by its path (awk is a link through the host's /etc).
  list: `${SUM_OF_FILES}; echo ${ENTRIES}
find . -mindepth 1 -maxdepth 1 -printf '%y\\t%s\\t%T@\\t%f\\0' | head -z -n ${LISTED_MAX + 1}`,
  used: SUM_OF_FILES,
  mkdir: `[ -e "./$2" ] || [ -L "./$2" ] && exit 5; mkdir -- "./$2" || exit 7`,
  // $3 the new name.
  rename: `[ -e "./$2" ] || [ -L "./$2" ] || exit 3; [ -e "./$3" ] || [ -L "./$3" ] && exit 5; mv -T -- "./$2" "./$3"`,
  remove: `[ -e "./$2" ] || [ -L "./$2" ] || exit 3; rm -rf -- "./$2"`,
  isFile: `[ -L "./$2" ] || [ ! -e "./$2" ] && exit 3; [ -f "./$2" ] || exit 6`,
  read: `exec dd if="./$2" iflag=nofollow,nonblock bs=128K status=none`,
  // Into a temporary name of its own ($3): a failed upload removes only what it wrote.
  // A write that fails is the tree's file system being full (its image is the quota): exit 7.
  write: `[ -e "./$2" ] || [ -L "./$2" ] && exit 5; set -C; cat > "./$3" || exit 7`,
  // A hard link never replaces an existing name: one that appeared meanwhile wins, the upload is refused.
  commit: `ln -- "./$3" "./$2" 2>/dev/null || { rm -f -- "./$3"; exit 5; }; rm -f -- "./$3"`,
  discard: `rm -f -- "./$3"`,
};

export class FileStore {
  private readonly made = new Set<string>();
  /** Trees handed to their account's uid by this process. */
  private readonly owned = new Set<string>();

  constructor(private readonly opts: FileStoreOptions) {
    // The accounts' uids walk down to their trees, without listing them; where machines run as the
    // server's uid, only the server reaches them (a machine's root may leave setuid files there).
    mkdirSync(opts.root, { recursive: true, mode: 0o700 });
    chmodSync(opts.root, opts.hostUidOf ? 0o711 : 0o700);
  }

  get quotaBytes(): number {
    return this.opts.quotaBytes;
  }

  /** The account's tree on the host (mounted where it is an image) and the uid that owns it: what operations wait for. */
  private async ready(payerId: string): Promise<{ tree: string; uid: number | null }> {
    const tree = this.treeOf(payerId);
    const uid = (await this.opts.hostUidOf?.(payerId)) ?? null;
    if (this.opts.imageGb) await ensureTree(tree, this.opts.imageGb, uid);
    // Given to the account's uid once per tree and process, not on every operation.
    if (!this.owned.has(tree)) {
      await ownTree(tree, uid);
      if (uid !== null) chmodSync(tree, 0o700); // the account's alone
      this.owned.add(tree);
    }
    return { tree, uid };
  }

  /** The account's tree on the host, created on first use (the local driver mounts it). */
  treeOf(payerId: string): string {
    const dir = path.join(this.opts.root, payerId);
    // Made once per account and process, not on every request.
    if (!this.made.has(dir)) {
      mkdirSync(dir, { recursive: true });
      this.made.add(dir);
    }
    return dir;
  }

  async list(payerId: string, at: string): Promise<FileStoreListing> {
    const out = await this.run(payerId, 'list', [inTree(at)]);
    const marker = out.indexOf(`${ENTRIES}\n`);
    const usedBytes = sumLines(out.slice(0, marker));
    const entries: FileStoreEntry[] = [];
    const records = out.slice(marker + ENTRIES.length + 1).split('\0');
    const truncated = records.filter(Boolean).length > LISTED_MAX;
    for (const record of records.slice(0, LISTED_MAX)) {
      const [type, size, mtime, ...name] = record.split('\t');
      // Links are not shown: the console never follows them (a name of one is still taken, and the
      // link itself can be renamed or deleted by its path).
      if (!name.length || (type !== 'd' && type !== 'f')) continue;
      const n = name.join('\t');
      if (n.startsWith(UPLOADING)) continue; // an upload under way
      if (at === '/' && n === 'lost+found' && type === 'd') continue; // the tree's file system's own
      entries.push({
        name: n,
        path: path.posix.join(at, n),
        dir: type === 'd',
        size: type === 'd' ? 0 : Number(size),
        modifiedAt: new Date(Number(mtime) * 1000).toISOString(),
      });
    }
    entries.sort((a, b) => Number(b.dir) - Number(a.dir) || a.name.localeCompare(b.name, 'zh-CN'));
    return { path: at, entries, usedBytes, quotaBytes: this.opts.quotaBytes, truncated };
  }

  async makeFolder(payerId: string, parent: string, name: string): Promise<void> {
    await this.run(payerId, 'mkdir', [inTree(parent), name]);
  }

  async rename(payerId: string, at: string, name: string): Promise<void> {
    if (at === '/') throw new AppError('VALIDATION_FAILED', '根目录不能重命名');
    await this.run(payerId, 'rename', [...entryOf(at), name]);
  }

  async remove(payerId: string, at: string): Promise<void> {
    if (at === '/') throw new AppError('VALIDATION_FAILED', '根目录不能删除');
    await this.run(payerId, 'remove', entryOf(at));
  }

  /**
   * A file's bytes, streamed (checked to be a file first, so a refusal comes before any byte); a
   * read that fails midway ends the stream with an error rather than a short file; a reader that
   * goes away (the stream closed early) ends the reading.
   */
  async read(payerId: string, at: string): Promise<Readable> {
    await this.run(payerId, 'isFile', entryOf(at));
    const child = await this.spawn(payerId, 'read', entryOf(at), 'ignore');
    const stream = new PassThrough();
    child.stdout!.pipe(stream, { end: false });
    child.stderr!.resume();
    child.once('error', (e) => stream.destroy(e));
    child.once('close', (code) => (code === 0 ? stream.end() : stream.destroy(new Error(`读取文件失败（退出码 ${code}）`))));
    // A reader gone: the pipe closed, \`cat\` ends on its next write (EPIPE). Never a signal: one that
    // lands while bubblewrap is still setting up can leave its child running, holding the pipe.
    stream.once('close', () => child.stdout!.destroy());
    return stream;
  }

  /**
   * Writes an uploaded file into a folder: never over an existing name, and stopped (leaving
   * nothing behind) once it would pass the quota.
   */
  async write(payerId: string, folder: string, name: string, body: Readable): Promise<number> {
    let room = this.opts.quotaBytes - sumLines(await this.run(payerId, 'used', [inTree('/')]));
    const temp = `${UPLOADING}${randomUUID()}`;
    const child = await this.spawn(payerId, 'write', [inTree(folder), name, temp], 'pipe');
    let written = 0;
    let refusal: Error | null = null;
    const done = this.outcome(child);
    // Stopped by ending what the script reads, never by a signal: one that lands while bubblewrap is
    // still setting up can leave its child holding our pipes, and the upload would wait forever.
    const stop = (why: Error) => {
      if (refusal) return;
      refusal = why;
      body.unpipe(child.stdin!);
      child.stdin!.end();
    };
    body.on('data', (chunk: Buffer) => {
      room -= chunk.length;
      written += chunk.length;
      if (room < 0) stop(new AppError('FILESTORE_QUOTA'));
    });
    body.pipe(child.stdin!);
    child.stdin!.on('error', () => {}); // the script refused before reading
    body.once('error', (e) => stop(e));
    try {
      await done;
      // The upload limit is the quota: a file cut there did not fit.
      if ((body as Readable & { truncated?: boolean }).truncated) refusal ??= new AppError('FILESTORE_QUOTA');
    } catch (e) {
      refusal ??= e as Error;
    }
    if (refusal) {
      body.resume(); // read the rest so the refusal reaches the browser
      await this.run(payerId, 'discard', [inTree(folder), name, temp]).catch(() => {});
      throw refusal;
    }
    await this.run(payerId, 'commit', [inTree(folder), name, temp]);
    return written;
  }

  private async spawn(payerId: string, script: keyof typeof SCRIPTS, args: string[], stdin: 'pipe' | 'ignore') {
    const { tree, uid } = await this.ready(payerId);
    const line = throwaway({ rw: { '/t': tree } }, ['--chdir', '/t', '/bin/sh', '-c', INTO + SCRIPTS[script], 'sh', ...args], uid, this.opts.bwrap);
    return spawn(line.file, line.args, { stdio: [stdin, 'pipe', 'pipe'], env: line.env });
  }

  /** Runs a script to its end: its output, or the refusal its exit code stands for. */
  private async run(payerId: string, script: keyof typeof SCRIPTS, args: string[]): Promise<string> {
    return this.outcome(await this.spawn(payerId, script, args, 'ignore'));
  }

  private outcome(child: Awaited<ReturnType<FileStore['spawn']>>): Promise<string> {
    return new Promise((resolve, reject) => {
      const out: Buffer[] = [];
      let kept = 0;
      // Its error output is what tools say of names a machine's root chose: a few KB of it kept.
      const err = keepTail(child.stderr);
      // The scripts print little (a listing is capped in the sandbox); anything past OUTPUT_MAX is dropped.
      child.stdout!.on('data', (c: Buffer) => {
        if (kept + c.length > OUTPUT_MAX) return;
        kept += c.length;
        out.push(c);
      });
      child.once('error', reject);
      child.once('close', (code) => {
        if (code === 0) return resolve(Buffer.concat(out).toString());
        const refusal = REFUSALS[code as keyof typeof REFUSALS];
        reject(refusal ? new AppError(refusal) : new Error(`文件存储操作失败（退出码 ${code}）：${err.toString().trim()}`));
      });
    });
  }
}

function sumLines(text: string): number {
  return text
    .split('\n')
    .filter(Boolean)
    .reduce((sum, n) => sum + Number(n), 0);
}

/** A path of the API ("/a/b", validated by the contract) as seen inside the throwaway sandbox. */
function inTree(at: string): string {
  return at === '/' ? '/t' : `/t${at}`;
}

/** An entry of the API (not the root) as the scripts take it: its folder inside the sandbox, its name there. */
function entryOf(at: string): [string, string] {
  return [inTree(path.posix.dirname(at)), path.posix.basename(at)];
}
