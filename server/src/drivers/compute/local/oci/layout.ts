/**
 * An OCI image layout on this host's disk (image-spec: image-layout.md, manifest.md, config.md,
 * layer.md): `oci-layout`, `index.json` naming each image by its `org.opencontainers.image.ref.name`
 * annotation, and content-addressed blobs under `blobs/sha256`. The console's images live here: the
 * stock images `npm run images` builds, what the operator's registry gave (registry.ts, through
 * skopeo's `oci:` transport, which reads and writes this same format), and saved images.
 *
 * Written by the console alone: every file is written under a temporary name and renamed into
 * place, so that a crash never leaves a half-written blob or index; changes to the index are made
 * one at a time — within one process by a queue per folder, between processes on one DATA_DIR by
 * the lock file `.lock` (lock.ts), so that one's gc never runs while another imports.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { copyFile, link, lstat, mkdir, open, readdir, readFile, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { constants as zlib, createGzip } from 'node:zlib';
import { withFileLock } from './lock.js';

export interface OciImageConfigLite {
  env: string[];
  cmd: string[];
  workingDir: string;
  exposedPorts: number[];
}

export interface OciImageInfo {
  /** The name in index.json (annotation org.opencontainers.image.ref.name), e.g. 'console/base:12'; '' for a manifest no name points at. */
  ref: string;
  /** The manifest's digest, 'sha256:…'. */
  digest: string;
  /** Lowest first: `digest` of the (compressed) blob, `diffId` of the uncompressed tar. */
  layers: { digest: string; size: number; diffId: string }[];
  /** Bytes: the config and the layers as stored (compressed). */
  size: number;
  /** ISO time from the image's config ('' where it has none). */
  created: string;
  /** The manifest's annotations (an image made on a base: org.opencontainers.image.base.digest / .base.name). */
  annotations: Record<string, string>;
  config: OciImageConfigLite;
}

export const MEDIA_TYPES = {
  index: 'application/vnd.oci.image.index.v1+json',
  manifest: 'application/vnd.oci.image.manifest.v1+json',
  config: 'application/vnd.oci.image.config.v1+json',
  layerGzip: 'application/vnd.oci.image.layer.v1.tar+gzip',
} as const;

export const REF_NAME = 'org.opencontainers.image.ref.name';
export const BASE_DIGEST = 'org.opencontainers.image.base.digest';
export const BASE_NAME = 'org.opencontainers.image.base.name';

const DIGEST = /^sha256:([a-f0-9]{64})$/;
const DEFAULT_PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/**
 * Layers are compressed here, on the host that serves them, often gigabytes (a PyTorch image):
 * gzip's fastest level costs a little size for several times the speed.
 */
const GZIP_LEVEL = zlib.Z_BEST_SPEED;
const STALE_TRANSFER_MS = 24 * 3600_000;

interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
  platform?: { architecture?: string; os?: string };
}

interface IndexFile {
  schemaVersion: 2;
  mediaType?: string;
  manifests: Descriptor[];
  annotations?: Record<string, string>;
}

interface Manifest {
  schemaVersion: 2;
  mediaType?: string;
  config: Descriptor;
  layers: Descriptor[];
  annotations?: Record<string, string>;
}

/** The image config (config.md) as far as the console reads and writes it; other fields are kept as they are. */
interface ImageConfig {
  created?: string;
  architecture: string;
  os: string;
  config?: {
    Env?: string[];
    Cmd?: string[];
    Entrypoint?: string[];
    WorkingDir?: string;
    ExposedPorts?: Record<string, object>;
    [k: string]: unknown;
  };
  rootfs: { type: 'layers'; diff_ids: string[] };
  history?: { created?: string; created_by?: string; comment?: string; empty_layer?: boolean }[];
  [k: string]: unknown;
}

/** Within one process, the index changes of each layout folder one at a time. */
const queues = new Map<string, Promise<unknown>>();

export class OciLayout {
  private constructor(readonly dir: string) {}

  /** The layout in `dir`, made where missing (its folders, `oci-layout`, an empty index); a folder that is something else is refused. */
  static async open(dir: string): Promise<OciLayout> {
    const layout = new OciLayout(path.resolve(dir));
    await layout.serial(() => layout.prepare());
    return layout;
  }

  blobPath(digest: string): string {
    return path.join(this.dir, 'blobs', 'sha256', hexOf(digest));
  }

  /**
   * A new image of `layers` (uncompressed tar files, lowest first) on top of `base` (a ref or a
   * digest) where given, named `ref` (an image that had that name loses it). Its config is the
   * base's with `config`'s fields in their place.
   */
  importImage(o: {
    ref: string;
    layers: string[];
    base?: string;
    config?: Partial<OciImageConfigLite>;
    annotations?: Record<string, string>;
    history?: string;
  }): Promise<OciImageInfo> {
    return this.serial(async () => {
      checkRef(o.ref);
      const base = o.base ? await this.resolveUnlocked(o.base) : null;
      if (o.base && !base) throw new Error(`基础镜像 ${o.base} 不存在`);
      const baseManifest = base ? await this.readJsonBlob<Manifest>(base.digest) : null;
      const baseConfig = baseManifest ? await this.readJsonBlob<ImageConfig>(baseManifest.config.digest) : null;
      const added: { descriptor: Descriptor; diffId: string }[] = [];
      for (const tar of o.layers) added.push(await this.addLayer(tar));
      const created = new Date().toISOString();
      const config = imageConfig(baseConfig, o.config ?? {}, created, added, o.history);
      const configDescriptor = await this.writeBlob(jsonBytes(config), MEDIA_TYPES.config);
      const annotations = { ...(o.annotations ?? {}) };
      if (base) {
        annotations[BASE_DIGEST] = base.digest;
        if (base.ref) annotations[BASE_NAME] = base.ref;
      }
      const manifest: Manifest = {
        schemaVersion: 2,
        mediaType: MEDIA_TYPES.manifest,
        config: configDescriptor,
        layers: [...(baseManifest?.layers ?? []), ...added.map((a) => a.descriptor)],
        ...(Object.keys(annotations).length ? { annotations } : {}),
      };
      const manifestDescriptor = await this.writeBlob(jsonBytes(manifest), MEDIA_TYPES.manifest);
      await this.name(o.ref, manifestDescriptor);
      return infoOf(o.ref, manifestDescriptor.digest, manifest, config);
    });
  }

  /** The image of that name ('console/base:12') or manifest digest ('sha256:…'); null where there is none. */
  resolve(refOrDigest: string): Promise<OciImageInfo | null> {
    return this.resolveUnlocked(refOrDigest);
  }

  /** Every image named in the index, in its order. */
  async list(): Promise<OciImageInfo[]> {
    const index = await this.readIndex();
    const out: OciImageInfo[] = [];
    for (const d of index.manifests) {
      if (d.mediaType !== MEDIA_TYPES.manifest) continue;
      out.push(await this.infoAt(d.annotations?.[REF_NAME] ?? '', d.digest));
    }
    return out;
  }

  /** Removes the name; its blobs stay until gc. */
  untag(ref: string): Promise<void> {
    return this.serial(async () => {
      const index = await this.readIndex();
      const kept = index.manifests.filter((d) => d.annotations?.[REF_NAME] !== ref);
      if (kept.length !== index.manifests.length) await this.writeIndex({ ...index, manifests: kept });
    });
  }

  /**
   * Deletes the blobs no manifest named in index.json needs (and what an interrupted write left);
   * with `keep`, first removes the names it says no (in the same turn: no import comes between).
   */
  gc(keep?: (ref: string) => boolean): Promise<{ removedBlobs: number; freedBytes: number; untagged: string[] }> {
    return this.serial(async () => {
      const untagged: string[] = [];
      if (keep) {
        const index = await this.readIndex();
        const kept = index.manifests.filter((d) => {
          const ref = d.annotations?.[REF_NAME];
          if (!ref || keep(ref)) return true;
          untagged.push(ref);
          return false;
        });
        if (untagged.length) await this.writeIndex({ ...index, manifests: kept });
      }
      const needed = await this.neededBlobs();
      let removedBlobs = 0;
      let freedBytes = 0;
      const blobs = path.join(this.dir, 'blobs', 'sha256');
      for (const name of await readdir(blobs)) {
        if (needed.has(name)) continue;
        const file = path.join(blobs, name);
        freedBytes += (await lstat(file)).size;
        await unlink(file);
        removedBlobs++;
      }
      await rm(this.tmpDir, { recursive: true, force: true });
      await mkdir(this.tmpDir, { recursive: true });
      await this.removeStaleTransfers();
      return { removedBlobs, freedBytes, untagged };
    });
  }

  /**
   * Verifies a blob against its digest (reading it whole): before it is unpacked. Throws where the
   * content does not match.
   */
  async verifyBlob(digest: string): Promise<void> {
    const actual = await sha256OfFile(this.blobPath(digest));
    if (`sha256:${actual}` !== digest) throw new Error(`镜像数据损坏：${digest} 的内容与摘要不符`);
  }

  /**
   * Takes the image named `ref` in another layout (a folder skopeo just wrote, on the same file
   * system: its blobs are moved, not copied) into this one under the same name.
   */
  adopt(fromDir: string, ref: string): Promise<OciImageInfo> {
    return this.serial(async () => {
      checkRef(ref);
      const from = new OciLayout(path.resolve(fromDir));
      const entry = (await from.readIndex()).manifests.findLast((d) => d.annotations?.[REF_NAME] === ref);
      if (!entry) throw new Error(`镜像 ${ref} 不在 ${fromDir} 中`);
      if (entry.mediaType !== MEDIA_TYPES.manifest) throw new Error(`镜像 ${ref} 是多平台索引（${entry.mediaType}），只支持单一平台的镜像`);
      const manifest = await from.readJsonBlob<Manifest>(entry.digest);
      await from.readJsonBlob<ImageConfig>(manifest.config.digest);
      for (const d of [manifest.config, ...manifest.layers, entry]) await this.moveBlobFrom(from, d);
      await this.name(ref, { mediaType: MEDIA_TYPES.manifest, digest: entry.digest, size: entry.size });
      return this.infoAt(ref, entry.digest);
    });
  }

  /**
   * Writes a layout of the single image `ref` (a name or a digest) into the empty-or-missing folder
   * `toDir` (same file system: blobs hard-linked), named `as` there (default: its name here), for
   * skopeo to push while gc may run here.
   */
  exportImage(ref: string, toDir: string, as?: string): Promise<OciImageInfo> {
    return this.serial(async () => {
      const info = await this.resolveUnlocked(ref);
      if (!info) throw new Error(`镜像 ${ref} 不存在`);
      const to = await OciLayout.open(toDir);
      const manifest = await this.readJsonBlob<Manifest>(info.digest);
      for (const d of [manifest.config, ...manifest.layers]) await linkOrCopy(this.blobPath(d.digest), to.blobPath(d.digest));
      await linkOrCopy(this.blobPath(info.digest), to.blobPath(info.digest));
      const size = (await stat(this.blobPath(info.digest))).size;
      await to.name(as ?? (info.ref || ref), { mediaType: MEDIA_TYPES.manifest, digest: info.digest, size });
      return info;
    });
  }

  /**
   * Hard-links every blob of this layout into another layout's blob folder (same file system), so
   * that a copy into that layout (skopeo's oci: transport skips a blob already there) downloads only
   * what this host lacks: a saved image's base layers stay where they are.
   */
  async lendBlobs(toDir: string): Promise<void> {
    const from = path.join(this.dir, 'blobs', 'sha256');
    const to = path.join(toDir, 'blobs', 'sha256');
    await mkdir(to, { recursive: true });
    for (const name of await readdir(from)) {
      try {
        await link(path.join(from, name), path.join(to, name));
      } catch (e) {
        // gone meanwhile (gc), already there, or another file system: then it is downloaded
        if (!['ENOENT', 'EEXIST', 'EXDEV'].includes((e as NodeJS.ErrnoException).code ?? '')) throw e;
      }
    }
  }

  // ——— inside ———

  private get tmpDir(): string {
    return path.join(this.dir, '.tmp');
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const previous = queues.get(this.dir) ?? Promise.resolve();
    const locked = async () => {
      await mkdir(this.dir, { recursive: true, mode: 0o755 });
      return withFileLock(path.join(this.dir, '.lock'), work);
    };
    const next = previous.then(locked, locked);
    const settled = next.catch(() => {});
    queues.set(this.dir, settled);
    void settled.then(() => {
      if (queues.get(this.dir) === settled) queues.delete(this.dir);
    });
    return next;
  }

  /**
   * The working folders of pulls and pushes (registry.ts: `.pull-*`, `.push-*`) a crash left: a day
   * old, no transfer still uses them.
   */
  private async removeStaleTransfers(): Promise<void> {
    for (const name of await readdir(this.dir)) {
      if (!/^\.(pull|push)-/.test(name)) continue;
      const at = path.join(this.dir, name);
      if (Date.now() - (await lstat(at)).mtimeMs > STALE_TRANSFER_MS) await rm(at, { recursive: true, force: true });
    }
  }

  private async prepare(): Promise<void> {
    await mkdir(path.join(this.dir, 'blobs', 'sha256'), { recursive: true, mode: 0o755 });
    await mkdir(this.tmpDir, { recursive: true, mode: 0o700 });
    const marker = path.join(this.dir, 'oci-layout');
    if (existsSync(marker)) {
      const version = parseJson<{ imageLayoutVersion?: unknown }>(await readFile(marker, 'utf8'), marker).imageLayoutVersion;
      if (typeof version !== 'string' || !version.startsWith('1.')) throw malformed(`oci-layout 的 imageLayoutVersion 为 ${String(version)}`);
    } else {
      await this.writeAtomic(marker, JSON.stringify({ imageLayoutVersion: '1.0.0' }));
    }
    if (existsSync(path.join(this.dir, 'index.json'))) await this.readIndex();
    else await this.writeIndex({ schemaVersion: 2, mediaType: MEDIA_TYPES.index, manifests: [] });
  }

  private async resolveUnlocked(refOrDigest: string): Promise<OciImageInfo | null> {
    const index = await this.readIndex();
    if (DIGEST.test(refOrDigest)) {
      const named = index.manifests.findLast((d) => d.digest === refOrDigest);
      if (!named && !existsSync(this.blobPath(refOrDigest))) return null;
      return this.infoAt(named?.annotations?.[REF_NAME] ?? '', refOrDigest);
    }
    const entry = index.manifests.findLast((d) => d.annotations?.[REF_NAME] === refOrDigest);
    if (!entry) return null;
    if (entry.mediaType !== MEDIA_TYPES.manifest) throw new Error(`镜像 ${refOrDigest} 是多平台索引（${entry.mediaType}），只支持单一平台的镜像`);
    return this.infoAt(refOrDigest, entry.digest);
  }

  private async infoAt(ref: string, digest: string): Promise<OciImageInfo> {
    const manifest = await this.readJsonBlob<Manifest>(digest);
    checkManifest(manifest, digest);
    const config = await this.readJsonBlob<ImageConfig>(manifest.config.digest);
    checkConfig(config, manifest);
    return infoOf(ref, digest, manifest, config);
  }

  /** Digest hex of every blob the named images need. */
  private async neededBlobs(): Promise<Set<string>> {
    const needed = new Set<string>();
    const visit = async (d: Descriptor): Promise<void> => {
      needed.add(hexOf(d.digest));
      if (d.mediaType === MEDIA_TYPES.index) {
        for (const m of (await this.readJsonBlob<IndexFile>(d.digest)).manifests ?? []) await visit(m);
      } else if (d.mediaType === MEDIA_TYPES.manifest || d.mediaType === 'application/vnd.docker.distribution.manifest.v2+json') {
        const manifest = await this.readJsonBlob<Manifest>(d.digest);
        checkManifest(manifest, d.digest);
        for (const blob of [manifest.config, ...manifest.layers]) needed.add(hexOf(blob.digest));
      }
    };
    for (const d of (await this.readIndex()).manifests) await visit(d);
    return needed;
  }

  /** Gzips a tar file into a blob: its digest and size, and the tar's own digest (the diff id). */
  private async addLayer(tarFile: string): Promise<{ descriptor: Descriptor; diffId: string }> {
    const tmp = this.tmpName();
    const tarHash = hashing();
    const gzHash = hashing();
    try {
      await pipeline(createReadStream(tarFile), tarHash.stream, createGzip({ level: GZIP_LEVEL }), gzHash.stream, createWriteStream(tmp, { mode: 0o644 }));
      const digest = `sha256:${gzHash.hex()}`;
      await this.placeBlob(tmp, digest);
      return { descriptor: { mediaType: MEDIA_TYPES.layerGzip, digest, size: gzHash.size() }, diffId: `sha256:${tarHash.hex()}` };
    } finally {
      await rm(tmp, { force: true });
    }
  }

  private async writeBlob(bytes: Buffer, mediaType: string): Promise<Descriptor> {
    const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    if (!existsSync(this.blobPath(digest))) {
      const tmp = this.tmpName();
      await writeFile(tmp, bytes, { mode: 0o644 });
      await this.placeBlob(tmp, digest);
    }
    return { mediaType, digest, size: bytes.length };
  }

  /** Renames a finished temporary file to its blob name (a blob already there is the same content). */
  private async placeBlob(tmp: string, digest: string): Promise<void> {
    const at = this.blobPath(digest);
    if (existsSync(at)) return;
    await syncFile(tmp);
    await rename(tmp, at);
  }

  private async moveBlobFrom(from: OciLayout, d: Descriptor): Promise<void> {
    const at = this.blobPath(d.digest);
    if (existsSync(at)) return;
    const src = from.blobPath(d.digest);
    const size = (await stat(src)).size;
    if (size !== d.size) throw new Error(`镜像数据损坏：${d.digest} 大小为 ${size}，清单中为 ${d.size}`);
    await rename(src, at);
  }

  /** Gives `ref` to the manifest, taking it from whatever image had it. */
  private async name(ref: string, manifest: Descriptor): Promise<void> {
    const index = await this.readIndex();
    const others = index.manifests.filter((d) => d.annotations?.[REF_NAME] !== ref);
    const entry: Descriptor = { mediaType: manifest.mediaType, digest: manifest.digest, size: manifest.size, annotations: { [REF_NAME]: ref } };
    await this.writeIndex({ ...index, manifests: [...others, entry] });
  }

  private async readIndex(): Promise<IndexFile> {
    const file = path.join(this.dir, 'index.json');
    const index = parseJson<IndexFile>(await readFile(file, 'utf8'), file);
    if (index.schemaVersion !== 2 || !Array.isArray(index.manifests)) throw malformed('index.json 不是 schemaVersion 2 的镜像索引');
    for (const d of index.manifests) checkDescriptor(d, 'index.json');
    return index;
  }

  private writeIndex(index: IndexFile): Promise<void> {
    return this.writeAtomic(path.join(this.dir, 'index.json'), JSON.stringify(index));
  }

  /** A small JSON blob (manifest, config, index), its content checked against its digest. */
  private async readJsonBlob<T>(digest: string): Promise<T> {
    const file = this.blobPath(digest);
    let bytes: Buffer;
    try {
      bytes = await readFile(file);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw malformed(`缺少 ${digest}`);
      throw e;
    }
    if (`sha256:${createHash('sha256').update(bytes).digest('hex')}` !== digest) throw new Error(`镜像数据损坏：${digest} 的内容与摘要不符`);
    return parseJson<T>(bytes.toString('utf8'), digest);
  }

  private async writeAtomic(file: string, content: string): Promise<void> {
    const tmp = this.tmpName();
    try {
      await writeFile(tmp, content, { mode: 0o644 });
      await syncFile(tmp);
      await rename(tmp, file);
    } finally {
      await rm(tmp, { force: true });
    }
  }

  private tmpName(): string {
    return path.join(this.tmpDir, randomBytes(8).toString('hex'));
  }
}

/** The config of a new image: the base's (or a fresh one) with the given fields replaced, its layers appended. */
function imageConfig(
  base: ImageConfig | null,
  over: Partial<OciImageConfigLite>,
  created: string,
  added: { diffId: string }[],
  history = 'console: importImage',
): ImageConfig {
  const inner = { ...(base?.config ?? { Env: [DEFAULT_PATH], Cmd: ['/bin/bash'], WorkingDir: '/' }) };
  if (over.env) inner.Env = over.env;
  if (over.cmd) {
    // What runs is cmd exactly: an entrypoint of the base would be put before it.
    inner.Cmd = over.cmd;
    delete inner.Entrypoint;
  }
  if (over.workingDir !== undefined) inner.WorkingDir = over.workingDir;
  if (over.exposedPorts) inner.ExposedPorts = Object.fromEntries(over.exposedPorts.map((p) => [`${p}/tcp`, {}]));
  return {
    ...(base ?? {}),
    created,
    architecture: base?.architecture ?? ociArchitecture(),
    os: base?.os ?? 'linux',
    config: inner,
    rootfs: { type: 'layers', diff_ids: [...(base?.rootfs.diff_ids ?? []), ...added.map((a) => a.diffId)] },
    history: [...(base?.history ?? []), ...added.map(() => ({ created, created_by: history }))],
  };
}

function infoOf(ref: string, digest: string, manifest: Manifest, config: ImageConfig): OciImageInfo {
  const inner = config.config ?? {};
  return {
    ref,
    digest,
    layers: manifest.layers.map((l, i) => ({ digest: l.digest, size: l.size, diffId: config.rootfs.diff_ids[i]! })),
    size: manifest.config.size + manifest.layers.reduce((sum, l) => sum + l.size, 0),
    created: typeof config.created === 'string' ? config.created : '',
    annotations: { ...(manifest.annotations ?? {}) },
    config: {
      env: inner.Env ?? [],
      cmd: [...(inner.Entrypoint ?? []), ...(inner.Cmd ?? [])],
      workingDir: inner.WorkingDir ?? '',
      exposedPorts: Object.keys(inner.ExposedPorts ?? {})
        .map((p) => Number.parseInt(p, 10))
        .filter((p) => Number.isInteger(p) && p > 0 && p < 65536),
    },
  };
}

function checkManifest(m: Manifest, digest: string): void {
  if (m?.schemaVersion !== 2 || !m.config || !Array.isArray(m.layers)) throw malformed(`${digest} 不是镜像清单`);
  checkDescriptor(m.config, digest);
  for (const l of m.layers) checkDescriptor(l, digest);
}

function checkConfig(c: ImageConfig, m: Manifest): void {
  const ids = c?.rootfs?.diff_ids;
  if (!Array.isArray(ids) || ids.length !== m.layers.length || !ids.every((d) => typeof d === 'string' && DIGEST.test(d))) {
    throw malformed(`${m.config.digest} 的 rootfs.diff_ids 与清单的层数不符`);
  }
}

function checkDescriptor(d: Descriptor, where: string): void {
  if (!d || typeof d.mediaType !== 'string' || typeof d.digest !== 'string' || !DIGEST.test(d.digest) || !Number.isSafeInteger(d.size) || d.size < 0) {
    throw malformed(`${where} 中有无效的描述符 ${JSON.stringify(d)?.slice(0, 200)}`);
  }
}

function hexOf(digest: string): string {
  const m = DIGEST.exec(digest);
  if (!m) throw new Error(`无效的镜像摘要：${digest.slice(0, 100)}（应为 sha256:64 位十六进制）`);
  return m[1]!;
}

/** An image name as skopeo's oci: transport accepts it (image-spec annotations.md's ref.name grammar). */
const REF = /^[A-Za-z0-9]+(?:(?:[-._:@+]|--)[A-Za-z0-9]+)*(?:\/[A-Za-z0-9]+(?:(?:[-._:@+]|--)[A-Za-z0-9]+)*)*$/;

export function checkRef(ref: string): void {
  if (!REF.test(ref) || ref.length > 255) throw new Error(`无效的镜像名：${ref.slice(0, 100)}（如 console/base:12）`);
}

function malformed(why: string): Error {
  return new Error(`OCI 镜像目录无效：${why}`);
}

function parseJson<T>(text: string, where: string): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    throw malformed(`${where} 不是有效的 JSON`);
  }
}

function jsonBytes(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}

function ociArchitecture(): string {
  return (
    ({ x64: 'amd64', arm64: 'arm64', ia32: '386', ppc64: 'ppc64le', s390x: 's390x', riscv64: 'riscv64' } as Record<string, string>)[process.arch] ??
    process.arch
  );
}

/** A pass-through stream that hashes and counts what goes through it. */
function hashing(): { stream: Transform; hex(): string; size(): number } {
  const hash = createHash('sha256');
  let size = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback) {
      hash.update(chunk);
      size += chunk.length;
      done(null, chunk);
    },
  });
  let hex = '';
  return { stream, hex: () => (hex ||= hash.digest('hex')), size: () => size };
}

export async function sha256OfFile(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Flushes a file to the disk before it is renamed into place: after a crash, a name points at the whole content. */
async function syncFile(file: string): Promise<void> {
  const fh = await open(file, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function linkOrCopy(from: string, to: string): Promise<void> {
  if (existsSync(to)) return;
  try {
    await link(from, to);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EXDEV') throw e;
    await copyFile(from, to);
  }
}
