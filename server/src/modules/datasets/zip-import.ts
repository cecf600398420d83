/**
 * Unpacking a dataset zip (issue 28 §4) off the event loop: a zip of 6.8 MB can hold 1 GiB of zeros,
 * and inflating it with `unzipSync` held the main thread for seconds. So:
 * - the zip is read on a worker thread of its own at nice 10: the event loop serving everyone else
 *   goes first (not SCHED_IDLE as password hashes, users/hashing.ts: on cores kept busy an import
 *   would wait without end, where a login is refused AUTH_BUSY);
 * - what an entry really inflates to is counted as it comes out of zlib (declared sizes are only
 *   used to refuse early, never trusted), and inflation stops the moment the zip's cap or the
 *   entry's own limit is passed: at most one output chunk (INFLATE_CHUNK) beyond it is ever made;
 * - entries whose path climbs out (`..`), is absolute (`/x`, `\x`) or names a drive (`C:`) are
 *   refused by name, never flattened into the dataset.
 * The worker parses the central directory itself (node:zlib inflates): nothing to resolve from a
 * package, so it runs the same under tsx, vitest and plain node.
 */
import { Worker } from 'node:worker_threads';
import { DATASET_IMAGE_EXTENSIONS, DATASET_MAX_IMAGE_BYTES } from '@console/contract';

export interface ZipLimits {
  /** Real bytes all entries may inflate to together. */
  maxUnpacked: number;
  /** Entries (images and captions) a zip may hold. */
  maxEntries: number;
  /** Real bytes one image, one caption may inflate to. */
  maxImage: number;
  maxCaption: number;
}

export const DEFAULT_ZIP_LIMITS: ZipLimits = {
  maxUnpacked: 256 * 1024 * 1024,
  maxEntries: 2 * 512 + 64,
  maxImage: DATASET_MAX_IMAGE_BYTES,
  maxCaption: 64 * 1024,
};

/** zlib's output chunk: inflation is checked against the limits after each. */
export const INFLATE_CHUNK = 64 * 1024;

export type RefusedEntry = { name: string; why: 'too_large' | 'unsafe_name' };

export interface UnpackedZip {
  /** Images and captions by their path in the zip (`\` read as `/`). */
  files: Map<string, Buffer>;
  refused: RefusedEntry[];
  /** Real bytes inflated (or copied, for stored entries). */
  inflated: number;
  /** The thread that inflated them (not the caller's). */
  threadId: number;
}

/** Why a zip was refused as a whole, with what was inflated before it was. */
export class ZipRefused extends Error {
  constructor(
    readonly why: 'invalid' | 'too_many' | 'too_large',
    readonly inflated: number,
    detail = '',
  ) {
    super(`zip refused: ${why}${detail ? ` (${detail})` : ''}`);
  }
}

/**
 * Zip imports let in at once, counted from before the upload is read (each holds its zip, up to
 * 200 MB, in memory from the upload until its turn to unpack ends): one being unpacked and this
 * many more uploading or waiting their turn. Each account has one import at a time; further ones
 * are refused at once (DATASET_IMPORT_ONGOING, DATASET_IMPORT_BUSY), before their bodies are read,
 * so an account cannot fill the memory nor the line (issue 28 §4).
 */
export const ZIP_IMPORTS_WAITING = 2;
const importing = new Set<string>();

export type ZipImportAdmission = { ok: true; leave: () => void } | { ok: false; why: 'account_busy' | 'server_busy' };

/** Lets an account's import in, or says why not; `leave` (once the import has ended, however) frees its place. */
export function admitZipImport(account: string): ZipImportAdmission {
  if (importing.has(account)) return { ok: false, why: 'account_busy' };
  if (importing.size > ZIP_IMPORTS_WAITING) return { ok: false, why: 'server_busy' };
  importing.add(account);
  return { ok: true, leave: () => importing.delete(account) };
}

/** Imports let in and not yet ended (tests wait on it). */
export function zipImportsAdmitted(): number {
  return importing.size;
}

/** The unpacking under way: each may hold the zip and what it unpacks to (up to about 460 MB) at once. */
let turn: Promise<unknown> = Promise.resolve();

/**
 * The zip's images and captions, unpacked on a worker thread; zips take turns, one at a time.
 * `onProgress` hears the bytes inflated so far (after every 8 MB) while the worker runs: a caller
 * that hears it is not blocked by the work.
 */
export function unpackZip(zip: Buffer, limits: ZipLimits = DEFAULT_ZIP_LIMITS, onProgress?: (inflated: number) => void): Promise<UnpackedZip> {
  const mine = turn.then(() => unpackNow(zip, limits, onProgress));
  turn = mine.catch(() => {});
  return mine;
}

async function unpackNow(zip: Buffer, limits: ZipLimits, onProgress?: (inflated: number) => void): Promise<UnpackedZip> {
  // Handed over, not copied: the caller has no more use for it.
  const owned = zip.byteOffset === 0 && zip.byteLength === zip.buffer.byteLength ? zip : Buffer.from(zip);
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { zip: owned, limits, extensions: DATASET_IMAGE_EXTENSIONS, chunk: INFLATE_CHUNK },
    transferList: [owned.buffer as ArrayBuffer],
  });
  try {
    return await new Promise<UnpackedZip>((resolve, reject) => {
      worker.on('message', (m: WorkerMessage) => {
        if (m.type === 'progress') onProgress?.(m.inflated);
        else if (m.type === 'refused') reject(new ZipRefused(m.why, m.inflated, m.detail));
        else
          resolve({
            files: new Map(m.files.map((f) => [f.name, Buffer.from(f.data.buffer, f.data.byteOffset, f.data.byteLength)])),
            refused: m.refused,
            inflated: m.inflated,
            threadId: m.threadId,
          });
      });
      worker.on('error', (e) => reject(new ZipRefused('invalid', 0, e.message)));
      worker.on('exit', (code) => reject(new ZipRefused('invalid', 0, `worker exited with ${code}`)));
    });
  } finally {
    void worker.terminate();
  }
}

type WorkerMessage =
  | { type: 'progress'; inflated: number }
  | { type: 'refused'; why: ZipRefused['why']; inflated: number; detail: string }
  | { type: 'done'; files: { name: string; data: Uint8Array }[]; refused: RefusedEntry[]; inflated: number; threadId: number };

/**
 * The worker's program (CommonJS, evaluated). Reads the end record and the central directory
 * (ZIP64 included), checks every entry's local header lies inside the file, then copies (stored)
 * or inflates (deflated) the entries it takes, counting real bytes.
 */
const WORKER_SOURCE = `
const { parentPort, workerData, threadId } = require('node:worker_threads');
const zlib = require('node:zlib');
try {
  const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop());
  require('node:os').setPriority(tid, 10);
} catch {}

const { zip, limits, extensions, chunk } = workerData;
const buf = Buffer.from(zip.buffer, zip.byteOffset, zip.byteLength);
const PROGRESS_EVERY = 8 * 1024 * 1024;
let inflated = 0;
let reported = 0;

class Refused extends Error {
  constructor(why, detail = '') { super(detail); this.why = why; }
}
const invalid = (detail) => new Refused('invalid', detail);

function counted(n) {
  inflated += n;
  if (inflated - reported >= PROGRESS_EVERY) {
    reported = inflated;
    parentPort.postMessage({ type: 'progress', inflated });
  }
  if (inflated > limits.maxUnpacked) throw new Refused('too_large');
}

function endRecord() {
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 22 - 65535); i--) {
    if (buf.readUInt32LE(i) !== 0x06054b50) continue;
    let count = buf.readUInt16LE(i + 10);
    let size = buf.readUInt32LE(i + 12);
    let offset = buf.readUInt32LE(i + 16);
    if (count === 0xffff || size === 0xffffffff || offset === 0xffffffff) {
      const loc = i - 20;
      if (loc < 0 || buf.readUInt32LE(loc) !== 0x07064b50) throw invalid('zip64 locator missing');
      const at = Number(buf.readBigUInt64LE(loc + 8));
      if (at + 56 > buf.length || buf.readUInt32LE(at) !== 0x06064b50) throw invalid('zip64 end record missing');
      count = Number(buf.readBigUInt64LE(at + 32));
      size = Number(buf.readBigUInt64LE(at + 40));
      offset = Number(buf.readBigUInt64LE(at + 48));
    }
    if (offset + size > buf.length) throw invalid('central directory outside the file');
    return { count, offset, end: offset + size };
  }
  throw invalid('no end record');
}

function decodeName(bytes, utf8Flag) {
  if (utf8Flag) return bytes.toString('utf8');
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return bytes.toString('latin1');
  }
}

function* centralDirectory() {
  const { count, offset, end } = endRecord();
  let p = offset;
  for (let n = 0; n < count; n++) {
    if (p + 46 > end || buf.readUInt32LE(p) !== 0x02014b50) throw invalid('bad central directory entry');
    const flags = buf.readUInt16LE(p + 8);
    const method = buf.readUInt16LE(p + 10);
    let compressed = buf.readUInt32LE(p + 20);
    let size = buf.readUInt32LE(p + 24);
    const nameLength = buf.readUInt16LE(p + 28);
    const extraLength = buf.readUInt16LE(p + 30);
    const commentLength = buf.readUInt16LE(p + 32);
    let local = buf.readUInt32LE(p + 42);
    const next = p + 46 + nameLength + extraLength + commentLength;
    if (next > end) throw invalid('central directory entry cut off');
    const name = decodeName(buf.subarray(p + 46, p + 46 + nameLength), (flags & 0x800) !== 0);
    // ZIP64: the sizes and the offset that did not fit are in the extra field, in this order.
    for (let x = p + 46 + nameLength; x + 4 <= p + 46 + nameLength + extraLength; ) {
      const id = buf.readUInt16LE(x);
      const len = buf.readUInt16LE(x + 2);
      if (id === 0x0001) {
        let q = x + 4;
        if (size === 0xffffffff) { size = Number(buf.readBigUInt64LE(q)); q += 8; }
        if (compressed === 0xffffffff) { compressed = Number(buf.readBigUInt64LE(q)); q += 8; }
        if (local === 0xffffffff) { local = Number(buf.readBigUInt64LE(q)); q += 8; }
      }
      x += 4 + len;
    }
    yield { name, flags, method, compressed, size, local };
    p = next;
  }
}

/** Where an entry's data starts and ends, by its local header, which must lie inside the file. */
function dataOf(e) {
  if (e.local + 30 > buf.length || buf.readUInt32LE(e.local) !== 0x04034b50) throw invalid('bad local header');
  const start = e.local + 30 + buf.readUInt16LE(e.local + 26) + buf.readUInt16LE(e.local + 28);
  if (start + e.compressed > buf.length) throw invalid('entry data outside the file');
  return buf.subarray(start, start + e.compressed);
}

/** Whether a path climbs out of the archive, is absolute or names a drive. */
function unsafe(name) {
  if (/^[\\\\/]/.test(name) || /^[A-Za-z]:/.test(name)) return true;
  return name.split(/[\\\\/]/).some((part) => part === '..');
}

/** Inflates one entry, counting real bytes; null when it passed its own limit (inflation stopped there). */
function inflate(data, limit) {
  return new Promise((resolve, reject) => {
    const out = [];
    let length = 0;
    let done = false;
    const inf = zlib.createInflateRaw({ chunkSize: chunk });
    const finish = (value, error) => {
      if (done) return;
      done = true;
      inf.destroy();
      if (error) reject(error);
      else resolve(value);
    };
    inf.on('data', (c) => {
      if (done) return;
      try {
        counted(c.length);
      } catch (e) {
        return finish(null, e);
      }
      length += c.length;
      if (length > limit) return finish(null);
      out.push(c);
    });
    inf.on('error', (e) => finish(null, invalid(e.message)));
    inf.on('end', () => {
      const whole = new Uint8Array(length);
      let at = 0;
      for (const c of out) { whole.set(c, at); at += c.length; }
      finish(whole);
    });
    inf.end(data);
  });
}

async function unpack() {
  const taken = [];
  const refused = [];
  let entries = 0;
  let declared = 0;
  for (const e of centralDirectory()) {
    const name = e.name.replace(/\\\\/g, '/');
    const base = name.split('/').pop();
    if (name.endsWith('/') || name.startsWith('__MACOSX/') || base.startsWith('.')) continue;
    const dot = base.lastIndexOf('.');
    const ext = dot > 0 ? base.slice(dot).toLowerCase() : '';
    const caption = ext === '.txt';
    if (!caption && !extensions.includes(ext)) continue;
    if (++entries > limits.maxEntries) throw new Refused('too_many');
    if (unsafe(e.name)) { refused.push({ name: e.name, why: 'unsafe_name' }); continue; }
    if (e.flags & 1) throw invalid('encrypted entry');
    if (e.method !== 0 && e.method !== 8) throw invalid('unknown compression method ' + e.method);
    // A stored entry is copied by its compressed size whatever it declares: both must agree.
    if (e.method === 0 && e.compressed !== e.size) throw invalid('stored entry sizes disagree');
    const limit = caption ? limits.maxCaption : limits.maxImage;
    const data = dataOf(e);
    // Declared sizes refuse early (an honest zip too big is refused before any work); they are never trusted further.
    if (e.size > limit) { refused.push({ name: e.name, why: 'too_large' }); continue; }
    declared += e.size;
    if (declared > limits.maxUnpacked) throw new Refused('too_large');
    taken.push({ e, name, data, limit });
  }
  const files = [];
  for (const { e, name, data, limit } of taken) {
    let bytes;
    if (e.method === 0) {
      counted(data.length);
      bytes = new Uint8Array(data);
    } else {
      bytes = await inflate(data, limit);
    }
    if (bytes === null) refused.push({ name: e.name, why: 'too_large' });
    else files.push({ name, data: bytes });
  }
  return { files, refused };
}

unpack().then(
  ({ files, refused }) =>
    parentPort.postMessage({ type: 'done', files, refused, inflated, threadId }, files.map((f) => f.data.buffer)),
  (e) => parentPort.postMessage({ type: 'refused', why: e instanceof Refused ? e.why : 'invalid', inflated, detail: String((e && e.message) || e) }),
);
`;
