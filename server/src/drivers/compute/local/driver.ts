/**
 * The `local` compute driver (issue 15): every instance is a bubblewrap sandbox on this host
 * (sandbox.ts), its disks under `<dir>/hosts/<hostId>/<instanceId>`. Operations really happen — a
 * start runs the sandbox, a stop ends it, a release deletes the disks, a saved image is the system
 * layer packed into `<dir>/images/<ref>.tar`, a migration moves the disks to another host's
 * directory — one at a time per instance, and their outcome is an event, as from any backend. A move
 * to another host's agent (a fleet: fleet-migrate.ts) is an export here and an import there, through
 * the operator's registry (migration.ts).
 *
 * The sandboxes belong to this server process (they end with it): one process drives a host. After a
 * restart the machines that should be running are started again. A sandbox that ends on its own is
 * reported (`found`, stopped), never assumed running.
 *
 * When the server runs as root the machine's size is enforced: a control group with its memory,
 * CPU and process limits (cgroups.ts), and a data disk that is an ext4 image of the size bought
 * (disk.ts). Otherwise they are recorded, not applied, and the log says so at start. Bandwidth
 * limits are recorded, not applied.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { and, asc, desc, eq, gt, inArray, ne } from 'drizzle-orm';
import type { Clock } from '../../../clock.js';
import type { Db } from '../../../db/client.js';
import { localEvents, localMachines, localOperations } from './schema.js';
import { eventOfRow, OperationCalls, stateRefusal } from '../operations.js';
import type { SizeCategory } from '@console/contract';
import {
  bootOpId,
  type ComputeDriver,
  type DriverEvent,
  type DriverOp,
  type EventKind,
  type FileStoreMount,
  type HostOffer,
  type InstanceOp,
  type MachineApp,
  type MachineSample,
  type MachineService,
  type MachineSpec,
  type MachineStatus,
  type MigrationOp,
  type OperationOutcome,
  type RemovedImage,
  type SavedImageInfo,
  type ShellCommand,
  SFTP_SERVER,
} from '../types.js';
import { detectCgroups, noCgroups, PIDS_PER_MACHINE, type Cgroups } from './cgroups.js';
import { MachineSampler, sampledMachine } from './sampler.js';
import { localHostOffer } from './host-offer.js';
import { AppService, layoutImages, type AppImages } from './app-service.js';
import { desktopIn, startDesktop } from './desktop.js';
import { diskImagesWork, ensureTree, growDisk, makeDiskImage, mountDisk, mountedDevice, treeImageGb, unmountDisk, unmountTrees, usedBytes } from './disk.js';
import { consoleIdOf, DEFAULT_HOST_UIDS_DIR, HostUidRanges, HostUids, hostUidsWork, shutDataDir } from './host-uids.js';
import { networkPolicyWorks } from './network-policy.js';
import { cardDevices, endStrayHolders, GpuClaims, gpuView, localGpuHost, sampleGpus, type GpuHost, type GpuView } from './gpus.js';
import { startHostView, type HostView } from './host-view.js';
import { hostNotebook, imageNotebook, startNotebook } from './notebook.js';
import { layoutHasImages, MachineImages, type BootSource, type LocalSpec } from './machine-image.js';
import type { RegistryOptions } from './oci/registry.js';
import { OciLayout } from './oci/layout.js';
import { ServiceImages } from './service-images.js';
import { removeSavedImage } from './image-removal.js';
import { exportMachine, importMachine, type MigrationHost } from './migration.js';
import {
  commandIn,
  imageEnvOf,
  inRoot,
  layOutFromImage,
  ownTree,
  packImage,
  serviceSocket,
  startServiceRelay,
  PYTHON,
  layOut,
  removeDisks,
  sandboxPaths,
  startSandbox,
  stopSandbox,
  type RunningSandbox,
  type SandboxPaths,
} from './sandbox.js';

type MachineRow = typeof localMachines.$inferSelect;
type Power = MachineRow['power'];

export interface LocalDriverOptions {
  db: Db;
  clock: Clock;
  /** Where hosts' disks and saved images live (DATA_DIR/local-compute). */
  dir: string;
  /** What the access details name as the SSH host and port (the console's SSH gateway). */
  sshHost: string;
  sshPort: () => number;
  /** Where the accounts' 文件存储 trees live: a machine whose spec names one mounts it at /root/shared. */
  fileStoreRoot?: string;
  /** Their quota (FILESTORE_QUOTA_GB): each tree an image of that size where disks can be images. */
  fileStoreQuotaGb?: number;
  /** Private ranges machines reach after all (SANDBOX_ALLOW_NETS); the rest of them and the host's own addresses never. */
  allowNets?: readonly string[];
  bwrap?: string;
  log?: (message: string) => void;
  /** Whether machines' sizes are enforced where the host allows it (default); false: never (tests of the plain layout). */
  enforceLimits?: boolean;
  /** The host-wide record of the consoles' uid ranges (LOCAL_HOST_UIDS_DIR; default DEFAULT_HOST_UIDS_DIR). */
  hostUidsDir?: string;
  /**
   * LOCAL_MACHINES_AS_SERVER_USER: where the server is root and machines cannot have uids of their
   * own, run them as the server's uid anyway (their root is then the host's uid 0, with fewer
   * capabilities) instead of refusing to start them.
   */
  machinesAsServerUser?: boolean;
  /** The host's NVIDIA cards and driver files (gpus.ts; tests: a fake tree); default: this host's. */
  gpus?: GpuHost;
  /** REGISTRY_URL and its login: saved images are pushed there, images the host lacks pulled from it (machine-image.ts). */
  registry?: RegistryOptions | null;
}

export class LocalComputeDriver extends OperationCalls implements ComputeDriver {
  readonly name = 'local';
  /** The notebook the host's python3 runs (asked once per process); null: no machine offers Jupyter. */
  readonly notebook = hostNotebook();
  /**
   * What machines of this host may offer (each one what its /usr has: machineServices): the notebook
   * where python3 has one (python3-notebook), the 6006 relay where there is python3, a desktop in
   * machines that ask for one where the Xfce desktop's programs are (desktop.ts) — in the host's
   * system, or in any image, where the image layout has images.
   */
  readonly services: readonly MachineService[];
  /** Sandboxes on this host's Linux: a Windows image is not offered. */
  readonly osFamilies = ['linux'] as const;
  /**
   * What these machines cannot give of what the cards promise: a 云游戏 machine's gaming card and
   * 60 fps stream, a 跨境电商 machine's own clean IP (machines leave by this host's address); a 云桌面
   * where the host lacks the desktop's programs (desktop.ts).
   */
  get unsold(): Partial<Record<SizeCategory, string>> {
    return {
      Game: '云游戏需要游戏显卡和画面串流，本平台的机器没有，暂不销售',
      Ebusiness: '跨境电商需要独立纯净 IP，本平台的机器共用主机的出口 IP，暂不销售',
      ...(this.services.includes('desktop') ? {} : { Desktop: '本平台的主机没有安装云桌面所需的软件，暂不销售' }),
    };
  }
  /** The running machines that have a desktop (their spec asks for one). */
  private readonly desktops = new Set<string>();
  /** The image applications of the running machines (app-service.ts), and the image configs their commands come from. */
  private readonly apps: AppService;
  private readonly appImages: AppImages;
  /** What each running machine offers: what its /usr has (machineServices). */
  private readonly offered = new Map<string, readonly MachineService[]>();
  /** The root whose /usr each running machine runs: its image's unpacked rootfs, or the host's `/`. */
  private readonly roots = new Map<string, string>();
  /** Which images of the layout offer which services: named to a machine that lacks one (serviceMissing). */
  private readonly serviceImages: ServiceImages;
  /** The OCI images machines boot from, and their saved images (machine-image.ts). */
  private readonly images: MachineImages;
  private readonly sandboxes = new Map<string, RunningSandbox>();
  /** Made at the first sample (the card claims exist once the constructor has run). */
  private sampler: MachineSampler | null = null;
  /** Each instance's operations, one after another. */
  private readonly queues = new Map<string, Promise<void>>();
  private readonly ready: Promise<void>;

  /** Where hosts' disks and saved images live (the real path of LocalDriverOptions.dir). */
  readonly dir: string;
  /** Each running sandbox's control group (a name per run: a late cleanup never touches the next run's). */
  private readonly groups = new Map<RunningSandbox, string>();
  /** Run names start from the process's start time: never a group name a server before this one used. */
  private runs = Date.now();
  /** The control groups that hold machines to their size (none: not enforced). */
  readonly cgroups: Cgroups;
  /** Whether data disks are images of their size, and why not. */
  readonly diskImages: { ok: boolean; why: string };
  /** Whether machines run as host uids of their own (host-uids.ts), and why not. */
  readonly hostUidMode: { ok: boolean; why: string };
  private readonly hostUids: HostUids | null;
  /** Why machines are not started on this host (the server is root, and they would run as it); null: they are. */
  readonly machineRefusal: string | null;
  /** What the machines' /proc says of their size (lxcfs), once started. */
  private readonly hostView: Promise<HostView>;
  /** The machines' /etc/resolv.conf: the NAT's name server. */
  private readonly resolvConf: string;
  /** The host's cards and the driver's files machines with cards see (gpus.ts). */
  private readonly gpuHost: GpuHost;
  /** Which machine holds which of the host's cards (while it runs). */
  readonly gpuClaims: GpuClaims;

  constructor(private readonly opts: LocalDriverOptions) {
    super();
    mkdirSync(path.join(opts.dir, 'images'), { recursive: true, mode: 0o700 });
    // Mount points are compared as the kernel writes them: no link in the path.
    this.dir = realpathSync(opts.dir);
    this.apps = new AppService({ dir: this.dir, log: opts.log });
    this.appImages = layoutImages(this.dir);
    this.images = new MachineImages(this.dir, opts.bwrap, opts.registry ?? null);
    this.serviceImages = new ServiceImages(() => OciLayout.open(path.join(this.dir, 'oci')));
    this.services = layoutHasImages(this.dir) ? ['jupyter', 'service', 'desktop'] : this.machineServices(null);
    const enforce = opts.enforceLimits ?? true;
    this.cgroups = enforce ? detectCgroups() : noCgroups('未启用');
    this.diskImages = enforce ? diskImagesWork() : { ok: false, why: '未启用' };
    let hostUidMode = enforce ? hostUidsWork(path.dirname(this.dir)) : { ok: false, why: '未启用' };
    let ranges: HostUidRanges | null = null;
    if (hostUidMode.ok) {
      const registry = opts.hostUidsDir ?? DEFAULT_HOST_UIDS_DIR;
      try {
        ranges = new HostUidRanges(registry, { console: consoleIdOf(this.dir), dir: this.dir });
      } catch (e) {
        hostUidMode = { ok: false, why: `无法使用宿主上的实例用户号段记录 ${registry}（${(e as Error).message}），可用 LOCAL_HOST_UIDS_DIR 指定其他目录` };
      }
    }
    this.hostUidMode = hostUidMode;
    this.hostUids = ranges ? new HostUids(opts.db, ranges) : null;
    this.machineRefusal = machineRefusal(hostUidMode, opts.machinesAsServerUser ?? false);
    // Machines running as their own uids walk down to their disks (not list them: a machine's folder
    // is named by its id); otherwise only the server reaches them, as a machine's root is the server's uid.
    chmodSync(this.dir, this.hostUids ? 0o711 : 0o700);
    if (this.hostUids) {
      lockDown(this.dir);
      // Before any machine runs (recover below): the rest of DATA_DIR — the database, uploads — shut to them.
      shutDataDir(path.dirname(this.dir), [path.basename(this.dir), ...(opts.fileStoreRoot ? [path.basename(opts.fileStoreRoot)] : [])]);
    }
    this.resolvConf = path.join(this.dir, 'resolv.conf');
    writeFileSync(this.resolvConf, 'nameserver 10.0.2.3\n', { mode: 0o644 });
    opts.log?.(
      `local compute: 实例规格限制——内存/CPU/进程数：${this.cgroups.version ? this.cgroups.why : `不生效（${this.cgroups.why}）`}；` +
        `系统盘、数据盘容量：${this.diskImages.ok ? '生效' : `不生效（${this.diskImages.why}）`}；` +
        `实例网络：${networkPolicyWorks().why}${opts.allowNets?.length ? `，另可访问 ${opts.allowNets.join('、')}` : ''}；` +
        `实例 root 映射到宿主非特权用户：${this.hostUidMode.ok ? '生效' : `不生效（${this.hostUidMode.why}）`}` +
        (this.machineRefusal ? `；${this.machineRefusal}` : ''),
    );
    this.hostView = enforce ? startHostView(this.dir) : Promise.resolve({ mount: null, why: '未启用', stop: async () => {} });
    void this.hostView.then((v) =>
      opts.log?.(`local compute: 实例内资源视图：${v.mount ? v.why : `不生效（${v.why}），实例内 free、top 显示宿主的内存与 CPU`}`),
    );
    this.gpuHost = opts.gpus ?? localGpuHost();
    this.gpuClaims = new GpuClaims(opts.db, opts.clock);
    const cards = this.gpuHost.cards();
    opts.log?.(
      `local compute: 本机 GPU：${cards.length ? cards.map((c) => `${c.model}（/dev/nvidia${c.minor}）`).join('、') : '无（GPU 实例以无卡方式运行）'}`,
    );
    this.ready = this.recover();
  }

  async status(instanceId: string): Promise<MachineStatus | null> {
    await this.ready;
    const [m] = await this.opts.db.select().from(localMachines).where(eq(localMachines.instanceId, instanceId));
    const [pending] = await this.opts.db
      .select({ opId: localOperations.opId })
      .from(localOperations)
      .where(and(eq(localOperations.instanceId, instanceId), eq(localOperations.state, 'pending')))
      .limit(1);
    if (!m) return pending ? { power: 'creating', gpu: false, lost: false, hostId: null, pendingOpId: pending.opId } : null;
    return { power: m.power, gpu: m.gpu, lost: false, hostId: m.hostId, pendingOpId: pending?.opId ?? null };
  }

  async events(afterSeq: number, limit: number): Promise<DriverEvent[]> {
    const rows = await this.opts.db.select().from(localEvents).where(gt(localEvents.seq, afterSeq)).orderBy(asc(localEvents.seq)).limit(limit);
    return rows.map(eventOfRow);
  }

  /** What the data disks really hold, in GB (rounded up). */
  async diskUsage(instanceIds: string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    if (!instanceIds.length) return out;
    const rows = await this.opts.db
      .select()
      .from(localMachines)
      .where(and(inArray(localMachines.instanceId, instanceIds), ne(localMachines.power, 'destroyed')));
    for (const m of rows) {
      const data = this.paths(m).data;
      out.set(m.instanceId, Math.ceil((mountedDevice(data) ? await usedBytes(data) : await bytesUnder(data)) / 1024 ** 3));
    }
    return out;
  }

  /**
   * The host uid of an account's machines and its 文件存储 (null: machines run as the server's own
   * uid). 文件存储's operations run as it too, so what the console writes the machines may change.
   */
  async hostUidOf(payerId: string): Promise<number | null> {
    return this.hostUids ? this.hostUids.of(payerId) : null;
  }

  /** The accounts' 文件存储 trees its machines mount, where it was given their root and quota. */
  get fileStore(): FileStoreMount | undefined {
    const { fileStoreRoot: root, fileStoreQuotaGb: quotaGb } = this.opts;
    if (!root || !quotaGb) return undefined;
    return {
      root,
      quotaGb,
      imageGb: this.diskImages.ok ? treeImageGb(quotaGb) : null,
      hostUidOf: this.hostUidMode.ok ? (payerId) => this.hostUidOf(payerId) : undefined,
    };
  }

  /** A machine's host uid: its account's where it mounts the account's 文件存储, else its own. */
  private uidOf(instanceId: string, spec: MachineSpec): Promise<number | null> {
    return this.hostUidOf(spec.fileStoreId ?? instanceId);
  }

  /** The running sandbox of an instance (the terminal, SSH and notebook join it); null when it is not running. */
  sandbox(instanceId: string): RunningSandbox | null {
    return this.sandboxes.get(instanceId) ?? null;
  }

  /** A command (default: a login shell) inside the running sandbox: the web terminal and the SSH gateway. */
  shell(instanceId: string, command: string[] = ['/bin/bash', '--login']): ShellCommand | null {
    const sandbox = this.sandboxes.get(instanceId);
    return sandbox ? commandIn(sandbox, command) : null;
  }

  /** Services inside the running sandboxes, through a Unix socket on the sandbox's own /run. */
  socketOf(instanceId: string, service: MachineService): { path: string; close(): void } | null {
    const sandbox = this.sandboxes.get(instanceId);
    if (!sandbox || !this.offered.get(instanceId)?.includes(service) || (service === 'desktop' && !this.desktops.has(instanceId))) return null;
    return serviceSocket(sandbox, service);
  }

  /** Why a running machine lacks a service this host offers: its image has not the programs. */
  serviceMissing(instanceId: string, service: MachineService | 'sftp'): string | null {
    if (service === 'sftp') return this.sftpMissing(instanceId);
    const offered = this.offered.get(instanceId);
    if (!this.sandboxes.has(instanceId) || !offered || offered.includes(service) || !this.services.includes(service)) return null;
    return missingText(service, this.serviceImages.offering(service));
  }

  /** Why the SSH gateway cannot run sftp in a running machine: its /usr has no sftp-server. */
  private sftpMissing(instanceId: string): string | null {
    const root = this.roots.get(instanceId);
    if (!this.sandboxes.has(instanceId) || root === undefined || inRoot(root, SFTP_SERVER)) return null;
    return missingText('sftp', this.serviceImages.offering('sftp'));
  }

  /** Looks again at which images offer which services (serviceMissing names them); resolves once known. */
  lookAtServiceImages(): Promise<void> {
    return this.serviceImages.refresh();
  }

  /** A saved image as this host keeps it: a layer on its base in the image layout, or an archive of a machine on the host's system. */
  imageInfo(imageRef: string): Promise<SavedImageInfo | null> {
    return this.images.info(imageRef, this.imageFile(imageRef));
  }

  /** Drops a saved image the console deleted (image-removal.ts). */
  removeImage(imageRef: string): Promise<RemovedImage> {
    return removeSavedImage({ dir: this.dir, images: this.images, imageRef, archive: this.imageFile(imageRef) });
  }

  /** What this host has, for the market that sells only that (host-offer.ts). */
  offer(): Promise<HostOffer> {
    return localHostOffer(this.dir, this.opts.db, () => this.gpuHost.cards());
  }

  /** What the running machines are doing, for the 概览 charts and GPU 空闲自动关机 (local/sampler.ts). */
  async sample(instanceIds?: readonly string[]): Promise<Map<string, MachineSample>> {
    const ids = this.runningIds().filter((id) => !instanceIds || instanceIds.includes(id));
    const rows = ids.length ? await this.opts.db.select().from(localMachines).where(inArray(localMachines.instanceId, ids)) : [];
    this.sampler ??= new MachineSampler({ read: sampleGpus, held: (machines) => this.gpuClaims.held(machines) });
    return this.sampler.sample(rows.flatMap((m) => sampledMachine(m, this.sandboxes.get(m.instanceId), this.paths(m))));
  }

  /** The image application the running machine serves, if it is one (app-service.ts). */
  app(instanceId: string): MachineApp | null {
    return this.sandboxes.has(instanceId) ? this.apps.appOf(instanceId) : null;
  }

  /** The instances whose sandboxes run in this process. */
  runningIds(): string[] {
    return [...this.sandboxes.keys()];
  }

  /** Ends every sandbox without recording a stop, as the server's own end would (tests of a restart). */
  async shutdown(): Promise<void> {
    const running = [...this.sandboxes.entries()];
    this.sandboxes.clear();
    this.apps.stopAll();
    await Promise.all(running.map(([, s]) => stopSandbox(s)));
    await Promise.all(running.map(([, sandbox]) => this.releaseGroup(sandbox)));
    // The disks leave the host's mount table with the server; the next start mounts them again.
    await this.ready;
    const machines = await this.opts.db.select().from(localMachines).where(ne(localMachines.power, 'destroyed'));
    for (const m of machines) await this.detachDisks(m).catch((e: unknown) => this.opts.log?.(`local compute: 磁盘卸载失败：${String(e)}`));
    await unmountTrees();
    await (await this.hostView).stop();
  }

  /** Where a saved image's archive lives. */
  private imageFile(ref: string): string {
    return path.join(this.dir, 'images', `${safeName(ref)}.tar`);
  }

  private paths(m: Pick<MachineRow, 'hostId' | 'instanceId'>): SandboxPaths {
    return sandboxPaths(path.join(this.dir, 'hosts', m.hostId), m.instanceId);
  }

  async submit(opId: string, instanceId: string, op: InstanceOp) {
    await this.ready;
    const inserted = await this.opts.db
      .insert(localOperations)
      .values({ opId, instanceId, kind: op.kind, params: op.params, state: 'pending', createdAt: this.opts.clock.now() })
      .onConflictDoNothing()
      .returning({ opId: localOperations.opId });
    if (inserted.length) this.enqueue(instanceId, () => this.run(opId, instanceId, op));
  }

  /** One half of a move to or from another host's agent (migration.ts), under `opId` (again: a no-op). */
  async submitMigration(opId: string, instanceId: string, op: MigrationOp) {
    await this.ready;
    const inserted = await this.opts.db
      .insert(localOperations)
      .values({ opId, instanceId, kind: op.kind, params: op.params, state: 'pending', createdAt: this.opts.clock.now() })
      .onConflictDoNothing()
      .returning({ opId: localOperations.opId });
    if (inserted.length) this.enqueue(instanceId, () => this.run(opId, instanceId, op));
  }

  /** An operation as it stands (fleet-migrate.ts follows its steps by it): its state, and what its event reported. */
  async operation(opId: string): Promise<OperationOutcome | null> {
    await this.ready;
    const [op] = await this.opts.db.select().from(localOperations).where(eq(localOperations.opId, opId));
    if (!op) return null;
    const [ended] = await this.opts.db.select().from(localEvents).where(eq(localEvents.opId, opId)).orderBy(desc(localEvents.seq)).limit(1);
    const data = op.state === 'pending' || !ended ? {} : eventOfRow(ended);
    return { opId, instanceId: op.instanceId, kind: op.kind as EventKind, state: op.state, error: op.error, ...pick(data, 'migration', 'access') };
  }

  private enqueue(instanceId: string, work: () => Promise<void>) {
    const next = (this.queues.get(instanceId) ?? Promise.resolve()).then(work).catch((e: unknown) => this.opts.log?.(`local compute: ${String(e)}`));
    this.queues.set(instanceId, next);
  }

  /** Resolves once every operation submitted so far has ended (tests). */
  async settled(): Promise<void> {
    await this.ready;
    for (;;) {
      const pending = [...this.queues.values()];
      await Promise.all(pending);
      if ([...this.queues.values()].every((p, i) => p === pending[i])) return;
    }
  }

  private async run(opId: string, instanceId: string, op: DriverOp | MigrationOp) {
    const { kind } = op;
    const [machine] = await this.opts.db.select().from(localMachines).where(eq(localMachines.instanceId, instanceId));
    let data: object = {};
    let error: string | null = this.refusal(kind, machine);
    if (!error) {
      try {
        data = await this.execute(op, instanceId, machine);
      } catch (e) {
        error = e instanceof Error ? e.message : String(e);
        if (op.kind === 'importMachine')
          await this.dropImport(instanceId, op.params.hostId).catch((e: unknown) => this.opts.log?.(`local compute: ${String(e)}`));
        if (kind === 'boot') {
          await this.dropDisks(machine!).catch((e: unknown) => this.opts.log?.(`local compute: ${String(e)}`));
          await this.setMachine(instanceId, { power: 'destroyed' });
        }
      }
    }
    await this.opts.db
      .update(localOperations)
      .set({ state: error ? 'failed' : 'done', error })
      .where(eq(localOperations.opId, opId));
    await this.event({ opId, instanceId, kind, ok: !error, error, data });
    if (kind === 'create' && !error) this.enqueue(instanceId, () => this.run(bootOpId(opId), instanceId, { kind: 'boot', params: {} }));
  }

  private refusal(kind: (DriverOp | MigrationOp)['kind'], m: MachineRow | undefined): string | null {
    if (kind === 'create') return m ? '机器已存在' : this.machineRefusal;
    // A machine that left this host once (destroyed here) may come back to it.
    if (kind === 'importMachine') return m && m.power !== 'destroyed' ? '机器已存在' : this.machineRefusal;
    if (kind === 'exportMachine') return !m || m.power === 'destroyed' ? '机器不存在' : m.power === 'stopped' ? null : `机器当前为 ${m.power}，请先关机再迁移`;
    if (!m || m.power === 'destroyed') return '机器不存在';
    return stateRefusal(kind, m.power);
  }

  private async execute(op: DriverOp | MigrationOp, instanceId: string, m: MachineRow | undefined): Promise<object> {
    switch (op.kind) {
      case 'exportMachine':
        await this.attachDisk(m!);
        return { migration: await exportMachine(this.migrationHost, m!, op.params.migrationRef) };
      case 'importMachine':
        return { access: await this.importMachine(instanceId, op.params) };
      case 'create': {
        const spec = op.params;
        const row = { instanceId, hostId: spec.hostId ?? 'local', gpu: spec.gpuCount > 0, diskGb: spec.dataDiskGb, sshPort: this.opts.sshPort() };
        const uid = await this.uidOf(instanceId, spec);
        // What an earlier try cut short left there goes first; what this one leaves, if it fails.
        await this.dropDisks(row);
        try {
          const systemGb = this.diskImages.ok ? (spec.systemDiskGb ?? DEFAULT_SYSTEM_DISK_GB) : null;
          // The base is fixed now, by digest: a later re-tag of the reference changes no machine's system.
          const source = await this.images.sourceOf(spec);
          await this.images.using(source.digest, async () => {
            await this.layOutSystem(row, spec, source, uid, systemGb);
            // A size without a data disk (云桌面: its system disk only) keeps the folder, as the system layer is kept.
            if (this.diskImages.ok && spec.dataDiskGb > 0) {
              await makeDiskImage(this.paths(row).dataImage, spec.dataDiskGb, uid);
              await mountDisk(this.paths(row).dataImage, this.paths(row).data, uid);
            }
            const kept: LocalSpec = { ...spec, imageDigest: source.digest };
            await this.opts.db
              .insert(localMachines)
              .values({ ...row, power: 'creating', bandwidthMbps: spec.bandwidthMbps, spec: kept, updatedAt: this.opts.clock.now() });
          });
        } catch (e) {
          await this.dropDisks(row).catch(() => {});
          throw e;
        }
        return { access: { sshHost: this.opts.sshHost, sshPort: row.sshPort } };
      }
      case 'boot':
        await this.runSandbox(m!, m!.gpu);
        return {};
      case 'start':
        await this.runSandbox(m!, op.params.gpu);
        return {};
      case 'stop':
        await this.halt(m!, 'stopped');
        return {};
      case 'restart':
        // Its cards kept: another machine's start meanwhile cannot take them.
        await this.halt(m!, 'stopped', true);
        await this.runSandbox(m!, m!.gpu);
        return {};
      case 'destroy':
        // Destroyed once the disks are gone: a failure on the way leaves it stopped, and destroy can run again.
        await this.halt(m!, 'stopped');
        await this.dropDisks(m!);
        // The unpacked image stays for the next machine on it (an order then boots without unpacking
        // 1–2 GiB again); the hourly image gc (collectImages) removes what no machine needs.
        await this.setMachine(instanceId, { power: 'destroyed' });
        return {};
      case 'resizeDisk': {
        const gb = op.params.dataDiskGb;
        const { dataImage, data } = this.paths(m!);
        if (existsSync(dataImage)) await growDisk(dataImage, data, gb);
        await this.setMachine(instanceId, { diskGb: gb });
        return {};
      }
      case 'changeBandwidth':
        await this.setMachine(instanceId, { bandwidthMbps: op.params.bandwidthMbps });
        return {};
      case 'migrate': {
        const target = { instanceId, hostId: op.params.targetHostId };
        const to = this.paths(target).root;
        mkdirSync(path.dirname(to), { recursive: true, mode: 0o711 });
        await this.detachDisks(m!);
        renameSync(this.paths(m!).root, to);
        await this.setMachine(instanceId, { hostId: target.hostId });
        await this.attachDisk(target);
        return {};
      }
      case 'saveImage': {
        const spec = m!.spec as LocalSpec;
        const uid = await this.uidOf(instanceId, spec);
        if (spec.imageDigest) return { imageSizeGb: gbOf(await this.saveLayer(m!, op.params.imageRef, spec.imageDigest, uid)) };
        // A machine on the host's system: its system layer as an archive of its own, as before images.
        const file = this.imageFile(op.params.imageRef);
        await packImage(this.paths(m!), file, uid, this.opts.bwrap);
        return { imageSizeGb: gbOf(statSync(file).size) };
      }
    }
  }

  /** What migration.ts needs of this driver. */
  private get migrationHost(): MigrationHost {
    return {
      dir: this.dir,
      bwrap: this.opts.bwrap,
      registry: this.opts.registry ?? null,
      diskImages: this.diskImages.ok,
      defaultSystemDiskGb: DEFAULT_SYSTEM_DISK_GB,
      paths: (m) => this.paths(m),
      uidOf: (id, spec) => this.uidOf(id, spec),
      hostnameOf,
      log: this.opts.log,
      using: (digest, work) => this.images.using(digest, work),
    };
  }

  /** A machine moved here from another host (migration.ts), recorded stopped once its disks are laid out. */
  private async importMachine(instanceId: string, params: Extract<MigrationOp, { kind: 'importMachine' }>['params']) {
    // What an earlier try cut short left there goes first.
    await this.dropImport(instanceId, params.hostId);
    const moved = await importMachine(this.migrationHost, instanceId, params);
    const row = { ...moved, power: 'stopped' as const, sshPort: this.opts.sshPort(), updatedAt: this.opts.clock.now() };
    await this.opts.db
      .insert(localMachines)
      .values({ instanceId, ...row })
      .onConflictDoUpdate({ target: localMachines.instanceId, set: row });
    return { sshHost: this.opts.sshHost, sshPort: row.sshPort };
  }

  /** Removes what a failed import laid out (a machine that is not recorded here). */
  private async dropImport(instanceId: string, hostId: string) {
    await this.dropDisks({ instanceId, hostId });
  }

  /**
   * A new machine's system disk: a saved layer of the image layout unpacked (its base's /usr under
   * it), a saved archive of a machine on the host's system, or a fresh one seeded from its image (or the host).
   */
  private async layOutSystem(
    row: Pick<MachineRow, 'hostId' | 'instanceId'>,
    spec: MachineSpec,
    source: BootSource,
    uid: number | null,
    systemGb: number | null,
  ) {
    const paths = this.paths(row);
    const hostname = hostnameOf(row.instanceId);
    if (source.layer) await layOutFromImage(paths, hostname, uid, source.layer, this.opts.bwrap, systemGb);
    else if (spec.userImageRef) await layOutFromImage(paths, hostname, uid, this.imageFile(spec.userImageRef), this.opts.bwrap, systemGb);
    else await layOut(paths, hostname, uid, systemGb, source.digest ? await this.images.rootfs(source.digest) : null);
  }

  /**
   * Saves a machine on an image as a layer on that image (its system layer packed as the machine's
   * uid, as an archive is): the layer's size in bytes.
   */
  private async saveLayer(m: MachineRow, imageRef: string, base: string, uid: number | null): Promise<number> {
    const tar = path.join(this.dir, 'images', `.${safeName(imageRef)}.layer.tar`);
    rmSync(tar, { force: true });
    try {
      await packImage(this.paths(m), tar, uid, this.opts.bwrap);
      const image = await this.images.save(imageRef, tar, base, m.instanceId);
      return image.layers.at(-1)!.size;
    } finally {
      rmSync(tar, { force: true });
    }
  }

  /** The bases (manifest digests) of the machines not destroyed. */
  private async machineBases(): Promise<string[]> {
    const rows = await this.opts.db.select({ spec: localMachines.spec }).from(localMachines).where(ne(localMachines.power, 'destroyed'));
    return rows.flatMap((r) => (r.spec as LocalSpec).imageDigest ?? []);
  }

  /**
   * The image gc (job images.gc): the saved images not in `savedKept` (deleted) leave the layout
   * with the blobs only they needed, and unpacked bases no machine runs on go. How much went.
   */
  async collectImages(savedKept: ReadonlySet<string>): Promise<number> {
    const r = await this.images.gc(savedKept, await this.machineBases());
    if (r.untagged.length || r.removedBlobs || r.removedRootfs.length) {
      this.opts.log?.(
        `local compute: 镜像清理：移除 ${r.untagged.length} 个已删除的保存镜像、${r.removedBlobs} 个数据块（${Math.round(r.freedBytes / 1024 ** 2)} MiB）、${r.removedRootfs.length} 个解包的镜像`,
      );
    }
    return r.untagged.length + r.removedBlobs + r.removedRootfs.length;
  }

  /** Runs the machine's sandbox and watches it: an end nobody asked for is reported. */
  private async runSandbox(m: MachineRow, gpu: boolean) {
    if (this.machineRefusal) throw new Error(this.machineRefusal);
    const spec = m.spec as LocalSpec;
    // Its image's rootfs, unpacked again where it was pruned or this host never had it.
    const rootfs = spec.imageDigest ? await this.images.rootfs(spec.imageDigest) : null;
    // Its image's Env (LANG, TZ, PATH…) for every process that joins it: the terminal, SSH, the notebook, its application.
    const imageEnv = spec.imageDigest ? imageEnvOf((await this.appImages.resolve(spec.imageDigest))?.config.env ?? []) : undefined;
    const uid = await this.uidOf(m.instanceId, spec);
    const sharedDir = spec.fileStoreId && this.opts.fileStoreRoot ? path.join(this.opts.fileStoreRoot, spec.fileStoreId) : undefined;
    if (sharedDir && this.diskImages.ok && this.opts.fileStoreQuotaGb) await ensureTree(sharedDir, treeImageGb(this.opts.fileStoreQuotaGb), uid);
    else if (sharedDir) mkdirSync(sharedDir, { recursive: true });
    if (sharedDir) {
      await ownTree(sharedDir, uid);
      chmodSync(sharedDir, 0o700); // the account's alone
    }
    await this.attachDisk(m, uid);
    // A machine laid out before it had a uid of its own (or under another) is handed to it; its two
    // disks are its uid's alone (the folder above them is walkable by every machine's uid).
    for (const disk of [this.paths(m).system, this.paths(m).data]) {
      await ownTree(disk, uid);
      chmodSync(disk, 0o700);
    }
    const group = `${m.instanceId}-${(this.runs++).toString(36)}`;
    const memoryBytes = Math.floor(Math.max(0.25, spec.memoryGb) * 1024 ** 3);
    const cgroupProcs = this.cgroups.make(group, {
      memoryBytes,
      cpus: Math.max(0.1, spec.cpu),
      pids: PIDS_PER_MACHINE,
    });
    let sandbox: RunningSandbox;
    let cards: GpuView | null;
    try {
      cards = await this.cardsFor(m, gpu);
      sandbox = await startSandbox(
        this.paths(m),
        {
          hostname: hostnameOf(m.instanceId),
          gpuDevices: cards?.devices ?? [],
          gpu: cards,
          env: cards ? {} : { CUDA_VISIBLE_DEVICES: '' },
          sharedDir,
          cgroupProcs,
          hostUid: uid,
          resolvConf: this.resolvConf,
          allowNets: this.opts.allowNets,
          lxcfs: (await this.hostView).mount,
          memoryBytes,
          rootfs,
          imageEnv,
        },
        this.opts.bwrap,
      );
    } catch (e) {
      await this.cgroups.remove(group).catch(() => {});
      await this.gpuClaims.release(m.instanceId);
      throw e;
    }
    this.groups.set(sandbox, group);
    this.sandboxes.set(m.instanceId, sandbox);
    const offered = this.machineServices(rootfs).filter((s) => this.services.includes(s));
    this.offered.set(m.instanceId, offered);
    this.roots.set(m.instanceId, rootfs ?? '/');
    // Its image lacks a service: which images have it is known by the time the user asks (read in the background).
    if (this.services.some((s) => !offered.includes(s)) || !inRoot(rootfs ?? '/', SFTP_SERVER))
      void this.lookAtServiceImages().catch((e: unknown) => this.opts.log?.(`local compute: 读取镜像内容失败：${String(e)}`));
    const notebook = rootfs ? imageNotebook(rootfs) : this.notebook;
    if (notebook && offered.includes('jupyter')) startNotebook(sandbox, notebook, m.instanceId, spec.jupyterToken, this.opts.log);
    if (offered.includes('service')) startServiceRelay(sandbox, this.opts.log);
    this.desktops.delete(m.instanceId);
    if (offered.includes('desktop') && spec.desktop) {
      startDesktop(sandbox, this.opts.log, rootfs ?? '/');
      this.desktops.add(m.instanceId);
    }
    await this.apps.startIfApp(m.instanceId, sandbox, spec, this.appImages, { cards: cards !== null });
    await this.setMachine(m.instanceId, { power: 'running', gpu });
    void sandbox.ended.then(async () => {
      if (this.sandboxes.get(m.instanceId) !== sandbox) return; // stopped on purpose
      // Told at once, before anything that waits: a start meanwhile must find it stopped and keep its new sandbox.
      this.sandboxes.delete(m.instanceId);
      // Its cards go back while it still reads running: a start, refused until it reads stopped, cannot have claimed them yet.
      await this.gpuClaims.release(m.instanceId);
      this.apps.stop(m.instanceId);
      await this.setMachine(m.instanceId, { power: 'stopped' });
      await this.event({ opId: null, instanceId: m.instanceId, kind: 'found', ok: true, error: null, data: { power: 'stopped' } });
      await this.releaseGroup(sandbox);
    });
  }

  /** What a machine on `rootfs` (null: the host's system) offers of this host's services: what its /usr has. */
  private machineServices(rootfs: string | null): readonly MachineService[] {
    const all: MachineService[] = ['jupyter', 'service', 'desktop'];
    return all.filter((s) => {
      if (s === 'jupyter') return (rootfs ? imageNotebook(rootfs) : this.notebook) !== null;
      if (s === 'service') return inRoot(rootfs ?? '/', PYTHON) !== null;
      return desktopIn(rootfs ?? '/');
    });
  }

  /**
   * The cards a machine starting with them gets (claimed for it: gpus.ts) and what it sees of them;
   * null in no-card mode, and on a host without cards, where a GPU machine runs without them.
   */
  private async cardsFor(m: MachineRow, gpu: boolean): Promise<GpuView | null> {
    const count = (m.spec as MachineSpec).gpuCount;
    const cards = this.gpuHost.cards();
    if (!gpu || count <= 0 || !cards.length) return null;
    const mine = await this.gpuClaims.claim(m.instanceId, count, cards);
    const ended = endStrayHolders(cardDevices(this.gpuHost, mine));
    if (ended) this.opts.log?.(`local compute: 结束了其他实例中 ${ended} 个持有本实例 GPU 的进程（${m.instanceId}）`);
    return gpuView(this.gpuHost, mine);
  }

  /** Ends the machine's sandbox; its cards go back unless `keepCards` (a restart). */
  private async halt(m: MachineRow, power: Power, keepCards = false) {
    const sandbox = this.sandboxes.get(m.instanceId);
    this.sandboxes.delete(m.instanceId);
    this.apps.stop(m.instanceId);
    if (sandbox) {
      await stopSandbox(sandbox);
      await this.releaseGroup(sandbox);
    }
    if (!keepCards) await this.gpuClaims.release(m.instanceId);
    await this.setMachine(m.instanceId, { power });
  }

  /** A run's control group, once its processes are gone (a group that stays is only logged: it holds nothing). */
  private async releaseGroup(sandbox: RunningSandbox) {
    const group = this.groups.get(sandbox);
    this.groups.delete(sandbox);
    if (group) await this.cgroups.remove(group).catch((e: unknown) => this.opts.log?.(`local compute: ${String(e)}`));
  }

  /** Unmounts and deletes a machine's disks. */
  private async dropDisks(m: Pick<MachineRow, 'hostId' | 'instanceId'>) {
    await this.detachDisks(m);
    await removeDisks(this.paths(m));
  }

  /** Unmounts the machine's data and system disks (nothing mounted is fine). */
  private async detachDisks(m: Pick<MachineRow, 'hostId' | 'instanceId'>) {
    await unmountDisk(this.paths(m).data);
    await unmountDisk(this.paths(m).system);
  }

  /** Mounts the machine's system and data disks where they are images (made while disks could be images). */
  private async attachDisk(m: Pick<MachineRow, 'hostId' | 'instanceId'>, uid: number | null = null) {
    const { dataImage, data, systemImage, system } = this.paths(m);
    if (existsSync(systemImage)) await mountDisk(systemImage, system, uid);
    if (existsSync(dataImage)) await mountDisk(dataImage, data, uid);
  }

  private async setMachine(instanceId: string, set: Partial<MachineRow>) {
    await this.opts.db
      .update(localMachines)
      .set({ ...set, updatedAt: this.opts.clock.now() })
      .where(eq(localMachines.instanceId, instanceId));
  }

  private async event(e: { opId: string | null; instanceId: string; kind: EventKind; ok: boolean; error: string | null; data: object }) {
    await this.opts.db.insert(localEvents).values({ ...e, at: this.opts.clock.now() });
  }

  /** After a restart: the machines that were running run again; operations cut short are failed. */
  private async recover() {
    const cut = await this.opts.db
      .update(localOperations)
      .set({ state: 'failed', error: '服务重启，操作中断' })
      .where(eq(localOperations.state, 'pending'))
      .returning();
    for (const op of cut) await this.event({ opId: op.opId, instanceId: op.instanceId, kind: op.kind as EventKind, ok: false, error: op.error, data: {} });
    const kept = await this.opts.db.select().from(localMachines).where(ne(localMachines.power, 'destroyed'));
    await this.cgroups.sweep(kept.map((m) => m.instanceId)).catch((e: unknown) => this.opts.log?.(`local compute: ${String(e)}`));
    for (const m of kept) await this.attachDisk(m).catch((e: unknown) => this.opts.log?.(`local compute: 数据盘挂载失败（${m.instanceId}）：${String(e)}`));
    const running = kept.filter((m) => m.power === 'running');
    // Nothing runs yet: only the machines that run again keep their cards (they claim them again as they start).
    await this.gpuClaims.releaseAllBut(running.map((m) => m.instanceId));
    for (const m of running) {
      try {
        await this.runSandbox(m, m.gpu);
      } catch (e) {
        await this.setMachine(m.instanceId, { power: 'stopped' });
        await this.event({ opId: null, instanceId: m.instanceId, kind: 'found', ok: true, error: String(e), data: { power: 'stopped' } });
      }
    }
  }
}

/** A machine's system disk when its spec names none (the catalogue's usual 30 GB). */
const DEFAULT_SYSTEM_DISK_GB = 30;

/**
 * Why machines must not start: the server is root and they cannot run as uids of their own, so
 * their root would be the host's (issue 28: never silently). Not root: they run as the server's
 * unprivileged uid, as intended. The operator may accept root by LOCAL_MACHINES_AS_SERVER_USER.
 */
function machineRefusal(hostUidMode: { ok: boolean; why: string }, asServerUser: boolean): string | null {
  if (hostUidMode.ok || asServerUser || process.getuid?.() !== 0) return null;
  return (
    `本机实例无法启动：控制台以 root 运行，但实例不能以宿主上独立的非特权用户运行（${hostUidMode.why}），否则实例的 root 就是宿主的 root。` +
    '请让 DATA_DIR 及其上级目录允许其他用户进入（chmod o+x），或把 DATA_DIR 设到这样的位置；确要让实例以服务器自身的用户运行，请设置 LOCAL_MACHINES_AS_SERVER_USER=true'
  );
}

/** Why a machine lacks a service (ComputeDriver.serviceMissing): its system has not the programs; what has them; what else to do. */
const SERVICE_MISSING: Record<MachineService | 'sftp', { why: string; images: string; otherwise: string | null }> = {
  jupyter: {
    why: '该实例的镜像没有 Jupyter Notebook（python3 的 notebook 模块），无法打开 JupyterLab',
    images: '带 Notebook 的镜像',
    otherwise: '也可在实例中自行安装 Notebook 后通过自定义服务访问',
  },
  service: { why: '该实例的镜像没有 python3，控制台无法转发自定义服务（6006 端口）', images: '带 python3 的镜像', otherwise: null },
  desktop: { why: '该实例的镜像没有云桌面所需的软件（Xfce、TigerVNC、Chromium、fcitx5），无法打开远程桌面', images: '带云桌面软件的镜像', otherwise: null },
  sftp: {
    why: '该实例的镜像没有 sftp-server（Debian 的 openssh-sftp-server 软件包），无法用 sftp、scp 传输文件',
    images: '带 sftp-server 的镜像',
    otherwise: '也可在实例中安装 openssh-sftp-server，或通过 JupyterLab、文件存储传输文件',
  },
};

/** What the user is told of a missing service: why, and the images of this host that have it (`images`; none known: the kind to look for). */
function missingText(service: MachineService | 'sftp', images: readonly string[]): string {
  const m = SERVICE_MISSING[service];
  const which = images.length ? `本主机${m.images}：${images.join('、')}，请用其创建实例` : `请使用${m.images}`;
  return [m.why, which, m.otherwise].filter(Boolean).join('；');
}

/** A saved image's size in GB as the console bills and limits it (at least 1). */
function gbOf(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / 1024 ** 3));
}

function hostnameOf(instanceId: string): string {
  return `instance-${instanceId.slice(0, 8)}`;
}

/** The fields of an event an operation's outcome repeats (those it has). */
function pick(e: Partial<DriverEvent>, ...keys: ('migration' | 'access')[]): Partial<Pick<DriverEvent, 'migration' | 'access'>> {
  return Object.fromEntries(keys.filter((k) => e[k] !== undefined).map((k) => [k, e[k]]));
}

function safeName(ref: string): string {
  return ref.replace(/[^A-Za-z0-9._-]/g, '_');
}

async function bytesUnder(dir: string): Promise<number> {
  let total = 0;
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch {
    return 0;
  }
  for (const name of entries) {
    const full = path.join(dir, name);
    const st = await lstat(full);
    total += st.isDirectory() ? await bytesUnder(full) : st.size;
  }
  return total;
}

/**
 * Folders and files under the driver's folder as machines with uids of their own need them, whatever
 * an earlier version left (it had only the top folder shut, and machines ran as the server's uid):
 * hosts walkable, each machine's disks its uid's alone (handed over at its next start), images and
 * disk image files the server's only.
 */
function lockDown(dir: string): void {
  const images = path.join(dir, 'images');
  chmodSync(images, 0o700);
  for (const name of readdirSync(images)) chmodSync(path.join(images, name), 0o600);
  const hosts = path.join(dir, 'hosts');
  if (!existsSync(hosts)) return;
  chmodSync(hosts, 0o711);
  for (const host of readdirSync(hosts)) {
    chmodSync(path.join(hosts, host), 0o711);
    for (const id of readdirSync(path.join(hosts, host))) {
      const paths = sandboxPaths(path.join(hosts, host), id);
      chmodSync(paths.root, 0o711);
      for (const disk of [paths.system, paths.data]) if (existsSync(disk)) chmodSync(disk, 0o700);
      for (const image of [paths.dataImage, paths.systemImage]) if (existsSync(image)) chmodSync(image, 0o600);
    }
  }
}
