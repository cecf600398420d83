/**
 * A machine moving to another host's agent (the two halves of fleet-migrate.ts's migration), on the
 * local driver: `exportMachine` packs the stopped machine into one OCI artifact and pushes it to the
 * operator's registry (REGISTRY_URL); `importMachine` on the other host pulls it and lays the same
 * instance out there, stopped. The machine on the source is not touched by the export: the fleet
 * destroys it once the import succeeded.
 *
 * The artifact is an image on the machine's base (by digest, as a saved image is: machine-image.ts),
 * with two layers of its own, lowest first:
 *   - its system layer (what the user changed on top of the image), packed as saveImage packs it;
 *   - its data disk: a tar of the disk's files (lost+found left out), read as the machine's uid.
 * Both gzip-compressed by the layout. A tar of the files rather than the ext4 image: the empty
 * blocks of a 50 GB disk never travel, whatever the image's holes, and the target makes a fresh ext4
 * image of the size bought and unpacks into it (a plain folder where disks cannot be images). The
 * machine's spec (sizes, password, ports, its 文件存储 …) travels as an annotation of the manifest:
 * the registry is the operator's, behind its login, and holds the machine's disks anyway.
 *
 * Owners are not kept: each host's machines run as its own uids (host-uids.ts), and what the data
 * disk holds is handed to the machine's uid as it is unpacked and again at its start (ownTree).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { machineSpecSchema } from '../agent.js';
import type { MigrationArtifact } from '../types.js';
import { keepTail } from './bounded-text.js';
import { makeDiskImage, mountDisk } from './disk.js';
import { byDigest, type LocalSpec } from './machine-image.js';
import { BASE_DIGEST, BASE_NAME, OciLayout, type OciImageInfo } from './oci/layout.js';
import { OperatorRegistry, type RegistryOptions } from './oci/registry.js';
import { layOutFromImage, packImage, throwaway, type SandboxPaths } from './sandbox.js';

/** The manifest annotation that carries the machine's record (MovedMachine, JSON). */
const MACHINE = 'cn.console.migration.machine';

/** What a machine is beyond its disks: what the target's record of it needs (its spec as the protocol's create carries it, and its base). */
const movedMachineSchema = z.object({
  spec: machineSpecSchema.extend({ imageRef: z.string().nullable().optional(), imageDigest: z.string().nullable().optional() }),
  diskGb: z.number().int().min(0),
  bandwidthMbps: z.number().int().min(0),
  gpu: z.boolean(),
});
interface MovedMachine {
  spec: LocalSpec;
  diskGb: number;
  bandwidthMbps: number;
  gpu: boolean;
}

/** What the driver lends the two halves: where its machines and images are, and how its machines run. */
export interface MigrationHost {
  /** The driver's folder (its image layout is `<dir>/oci`). */
  dir: string;
  bwrap?: string;
  registry: RegistryOptions | null;
  /** Whether disks are ext4 images of their size here (disk.ts), and a system disk's size where its spec names none. */
  diskImages: boolean;
  defaultSystemDiskGb: number;
  paths(m: { hostId: string; instanceId: string }): SandboxPaths;
  uidOf(instanceId: string, spec: LocalSpec): Promise<number | null>;
  hostnameOf(instanceId: string): string;
  log?: (message: string) => void;
  /** Runs `work` with the base `digest` kept from the image gc meanwhile (MachineImages.using). */
  using<T>(digest: string | null | undefined, work: () => Promise<T>): Promise<T>;
}

/** The machine as the source's driver keeps it (a local_machines row). */
export interface ExportedRow {
  instanceId: string;
  hostId: string;
  diskGb: number;
  bandwidthMbps: number;
  gpu: boolean;
  spec: unknown;
}

/** What an import laid out: the target's record of the machine (stopped) and where it is reached. */
export interface ImportedMachine {
  hostId: string;
  gpu: boolean;
  diskGb: number;
  bandwidthMbps: number;
  spec: LocalSpec;
}

/**
 * Pushes the stopped machine `m` (its disks mounted where they are images) to the registry as
 * `migrationRef`: its system layer and data disk on its base. The machine is left as it was.
 */
export async function exportMachine(host: MigrationHost, m: ExportedRow, migrationRef: string): Promise<MigrationArtifact> {
  const registryOptions = needRegistry(host);
  const spec = m.spec as LocalSpec;
  const uid = await host.uidOf(m.instanceId, spec);
  const paths = host.paths(m);
  const work = await mkdtemp(path.join(host.dir, 'images', '.migrate-'));
  try {
    const systemTar = path.join(work, 'system.tar');
    const dataTar = path.join(work, 'data.tar');
    await packImage(paths, systemTar, uid, host.bwrap);
    await packData(paths.data, dataTar, uid, host.bwrap);
    const layout = await OciLayout.open(path.join(host.dir, 'oci'));
    const moved: MovedMachine = { spec, diskGb: m.diskGb, bandwidthMbps: m.bandwidthMbps, gpu: m.gpu };
    const image = await layout.importImage({
      ref: migrationRef,
      layers: [systemTar, dataTar],
      ...(spec.imageDigest ? { base: spec.imageDigest } : {}),
      annotations: { [MACHINE]: JSON.stringify(moved) },
      history: `console: 迁移（实例 ${m.instanceId}）`,
    });
    const registry = new OperatorRegistry(layout, registryOptions);
    try {
      await pushBase(registry, image);
      await registry.push(migrationRef);
    } finally {
      // The layers go with the layout's next gc: the artifact lives in the registry now.
      await layout.untag(migrationRef);
    }
    const [system, data] = image.layers.slice(-2);
    return { ref: migrationRef, digest: image.digest, systemBytes: system!.size, dataBytes: data!.size };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * Lays out the machine the artifact `migrationRef` (pinned: `digest`) holds as `instanceId` on
 * `hostId`, stopped: its base pulled where this host lacks it, its system layer unpacked onto a new
 * system disk, a new data disk of its size with its files. Whatever a failure leaves is the
 * caller's to remove (its disks: `host.paths`).
 */
export async function importMachine(
  host: MigrationHost,
  instanceId: string,
  params: { migrationRef: string; digest: string; hostId: string },
): Promise<ImportedMachine> {
  const layout = await OciLayout.open(path.join(host.dir, 'oci'));
  const registry = new OperatorRegistry(layout, needRegistry(host));
  const image = await pulled(layout, registry, params.migrationRef, params.digest);
  try {
    const moved = machineOf(image);
    const base = image.annotations[BASE_DIGEST] ?? null;
    if (base && !(await layout.resolve(base))) await pullBase(registry, image, base);
    const [system, data] = image.layers.slice(-2);
    if (!system || !data) throw new Error('迁移数据无效：缺少系统层或数据盘');
    for (const layer of [system, data]) await layout.verifyBlob(layer.digest);
    const spec: LocalSpec = { ...moved.spec, hostId: params.hostId, imageDigest: base };
    const paths = host.paths({ hostId: params.hostId, instanceId });
    const uid = await host.uidOf(instanceId, spec);
    await host.using(base, async () => {
      const systemGb = host.diskImages ? (spec.systemDiskGb ?? host.defaultSystemDiskGb) : null;
      await layOutFromImage(paths, host.hostnameOf(instanceId), uid, layout.blobPath(system.digest), host.bwrap, systemGb);
      if (host.diskImages && moved.diskGb > 0) {
        await makeDiskImage(paths.dataImage, moved.diskGb, uid);
        await mountDisk(paths.dataImage, paths.data, uid);
      }
      await unpackData(paths.data, layout.blobPath(data.digest), uid, host.bwrap);
    });
    await forget(host, registry, params.migrationRef);
    return { hostId: params.hostId, gpu: moved.gpu, diskGb: moved.diskGb, bandwidthMbps: moved.bandwidthMbps, spec };
  } finally {
    await layout.untag(params.migrationRef);
  }
}

/**
 * The artifact leaves the registry once the machine is laid out here: it holds a user's disks, which
 * must not outlive the move. A registry that does not allow deletes keeps it (the log says so: the
 * operator's retention policy for the `console-migrations/` repositories then removes it).
 */
async function forget(host: MigrationHost, registry: OperatorRegistry, ref: string): Promise<void> {
  const removed = await registry.remove(ref).catch((e: unknown) => {
    host.log?.(`local compute: 迁移数据 ${ref} 未能从镜像仓库删除：${(e as Error).message}`);
    return null;
  });
  if (removed === false) host.log?.(`local compute: 镜像仓库不允许删除，迁移数据 ${ref} 仍留在仓库中，请按 console-migrations/ 的保留策略清理`);
}

function needRegistry(host: MigrationHost): RegistryOptions {
  if (!host.registry) throw new Error('跨主机迁移需要镜像仓库：请为每台主机的算力代理配置 REGISTRY_URL（及其登录）');
  return host.registry;
}

/** A machine's base pushed by digest where the registry lacks it (as a saved image's is), so that any host can lay it out. */
async function pushBase(registry: OperatorRegistry, image: OciImageInfo): Promise<void> {
  const digest = image.annotations[BASE_DIGEST];
  const name = image.annotations[BASE_NAME];
  if (!digest) return;
  if (!name) throw new Error('实例的基础镜像没有名称，无法推送到镜像仓库');
  const pinned = byDigest(name, digest);
  if (!(await registry.exists(pinned))) await registry.pushAs(digest, pinned);
}

async function pullBase(registry: OperatorRegistry, image: OciImageInfo, base: string): Promise<void> {
  const name = image.annotations[BASE_NAME];
  if (!name) throw new Error(`实例的基础镜像 ${base} 不在本主机，且没有名称可从镜像仓库拉取`);
  await registry.pull(byDigest(name, base));
}

/** The artifact in this host's layout: pulled unless an earlier try already did; refused unless it is what the export pushed. */
async function pulled(layout: OciLayout, registry: OperatorRegistry, ref: string, digest: string): Promise<OciImageInfo> {
  const here = await layout.resolve(ref);
  const image = here?.digest === digest ? here : await registry.pull(ref);
  if (image.digest !== digest) throw new Error(`镜像仓库中的迁移数据（${image.digest}）与源主机导出的（${digest}）不一致`);
  return image;
}

function machineOf(image: OciImageInfo): MovedMachine {
  const raw = image.annotations[MACHINE];
  const parsed = raw ? movedMachineSchema.safeParse(JSON.parse(raw)) : null;
  if (!parsed?.success) throw new Error('迁移数据无效：缺少实例规格');
  return parsed.data;
}

/**
 * The data disk's files as a tar, read in a throwaway sandbox as the machine's uid that sees the
 * disk only (what its root left there is read as the machine sees it, links never followed).
 */
async function packData(data: string, file: string, uid: number | null, bwrap = 'bwrap'): Promise<void> {
  const out = await open(file, 'wx', 0o600);
  try {
    const tar = throwaway(
      { ro: { '/d': data } },
      ['tar', '-c', '-f', '-', '-C', '/d', '--numeric-owner', '--sparse', '--exclude=./lost+found', '.'],
      uid,
      bwrap,
    );
    await finished(spawn(tar.file, tar.args, { stdio: ['ignore', out.fd, 'pipe'], env: tar.env }), '打包数据盘失败');
  } catch (e) {
    rmSync(file, { force: true });
    throw e;
  } finally {
    await out.close();
  }
}

/** Unpacks a data disk's layer (gzip tar) onto the new disk, in a throwaway sandbox as the machine's uid that sees that disk only. */
async function unpackData(data: string, layer: string, uid: number | null, bwrap = 'bwrap'): Promise<void> {
  const archive = await open(layer, 'r');
  try {
    const tar = throwaway({ rw: { '/d': data } }, ['tar', '-x', '-z', '-f', '-', '-C', '/d', '--no-same-owner', '--delay-directory-restore'], uid, bwrap);
    await finished(spawn(tar.file, tar.args, { stdio: [archive.fd, 'ignore', 'pipe'], env: tar.env }), '解包数据盘失败');
  } finally {
    await archive.close();
  }
}

function finished(child: ChildProcess, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const stderr = keepTail(child.stderr);
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`${what}：${stderr.toString().trim().slice(-300) || `退出码 ${code}`}`))));
  });
}
