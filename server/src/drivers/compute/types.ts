/**
 * The compute driver of DESIGN.md "Orders and instances": what turns instance decisions into
 * machines. Real backends are asynchronous, so every call only submits an operation under an id the
 * server chooses (submitting the same id again is a no-op) and the outcome arrives later in the
 * event stream. The server owns placement and capacity (catalogue inventory); the driver executes.
 */
import type { SizeCategory } from '@console/contract';
import type { RoutesPlugin } from '../../http/routes-plugin.js';

export type OsFamily = 'linux' | 'windows';

/** The family of a catalogue image's `os` ("Windows Server 2022", "Ubuntu 22.04"). */
export function osFamilyOf(os: string): OsFamily {
  return /windows/i.test(os) ? 'windows' : 'linux';
}

export interface MachineSpec {
  hostId: string | null;
  regionId: string;
  gpuCount: number;
  cpu: number;
  memoryGb: number;
  /** The catalogue image (or the application's image) to boot from. */
  imageId: string | null;
  /** An image the user saved (saveImage's imageRef) to boot from instead; imageId is then its base. */
  userImageRef: string | null;
  /**
   * The OCI image (reference, e.g. `console/base:12`) the catalogue image names: the machine's system
   * is that image's. Null or absent: the host's own system (the simulated fleet's demonstration images).
   */
  imageRef?: string | null;
  dataDiskGb: number;
  /** The plan's system disk (系统盘) in GB: the size of everything the machine writes outside its data disk (default 30, the catalogue's usual). */
  systemDiskGb?: number;
  /** Public bandwidth limit in Mbps; 0: the host's default (GPU machines). */
  bandwidthMbps: number;
  sshUser: string;
  sshPassword: string;
  /** Token for the machine's JupyterLab. */
  jupyterToken: string;
  /** The port an image application listens on, if any. */
  appPort: number | null;
  /** A graphical desktop the user reaches in the browser (云桌面, 云游戏, 跨境电商 machines). */
  desktop?: boolean;
  /** Whose 文件存储 the machine mounts at /root/shared (the paying account's id). */
  fileStoreId?: string;
}

/** Where a user reaches the machine, known once it is created. */
export interface MachineAccess {
  sshHost: string;
  sshPort: number;
}

/** The parameters of an operation that needs none. */
export type NoParams = Record<string, never>;

/**
 * What the console asks of a machine: the one union the instance state machine decides, every
 * driver executes and the agent protocol carries (agent.ts: its `{ kind, params }`), so that what an
 * operation needs is checked where it is built, not cast where it is run.
 */
export type InstanceOp =
  | { kind: 'create'; params: MachineSpec }
  /** `gpu: false` is no-card mode: the machine boots without its GPUs. */
  | { kind: 'start'; params: { gpu: boolean } }
  | { kind: 'stop'; params: NoParams }
  | { kind: 'restart'; params: NoParams }
  | { kind: 'destroy'; params: NoParams }
  | { kind: 'resizeDisk'; params: { dataDiskGb: number } }
  /** Sets the machine's public bandwidth limit; applied live, running or stopped. */
  | { kind: 'changeBandwidth'; params: { bandwidthMbps: number } }
  | { kind: 'migrate'; params: { targetHostId: string } }
  | { kind: 'saveImage'; params: { imageRef: string } };

export type OperationKind = InstanceOp['kind'];

/** What a driver runs: an operation it was given, or the boot with which it follows a create. */
export type DriverOp = InstanceOp | { kind: 'boot'; params: NoParams };

/**
 * The id under which a driver runs and reports the boot that follows the create `createOpId`
 * (the agent protocol's, version 1): the console waits for it after the create's success.
 */
export function bootOpId(createOpId: string): string {
  return `${createOpId}:boot`;
}

export type EventKind = OperationKind | MigrationOp['kind'] | 'boot' | 'lost' | 'found';

/**
 * The two halves of moving a stopped machine between hosts' agents (fleet-migrate.ts): not decisions
 * of the instance state machine, which asks for one `migrate`, but what the fleet asks of each host.
 * `exportMachine` (source, machine stopped): its system layer and data disk pushed to the operator's
 * registry under `migrationRef`, the machine untouched. `importMachine` (target): that artifact
 * (pinned by `digest`) pulled and laid out as the same instance on `hostId`, stopped.
 */
export type MigrationOp =
  { kind: 'exportMachine'; params: { migrationRef: string } } | { kind: 'importMachine'; params: { migrationRef: string; digest: string; hostId: string } };

/** What an export pushed (the outcome of exportMachine): the artifact's manifest digest and what its two layers take, compressed. */
export interface MigrationArtifact {
  ref: string;
  digest: string;
  systemBytes: number;
  dataBytes: number;
}

/** One operation as the backend knows it now (ComputeDriver.operation): whether it ended, how, and what it reported. */
export interface OperationOutcome {
  opId: string;
  instanceId: string;
  kind: EventKind;
  state: 'pending' | 'done' | 'failed';
  error: string | null;
  /** exportMachine: what it pushed. */
  migration?: MigrationArtifact;
  /** create, importMachine: where the machine is reached. */
  access?: MachineAccess;
}

/** What really happened, in the order it happened. */
export interface DriverEvent {
  seq: number;
  /** The operation this reports on (null for host loss and recovery). */
  opId: string | null;
  instanceId: string;
  /** 'boot' is the second half of a create: the new machine has started. */
  kind: EventKind;
  ok: boolean;
  error: string | null;
  /** create: access details; found: the machine's power state. */
  access?: MachineAccess;
  power?: MachinePower;
  /** saveImage: how large the saved image is, in GB. */
  imageSizeGb?: number;
  /** exportMachine: what it pushed. */
  migration?: MigrationArtifact;
  at: Date;
}

export type MachinePower = 'creating' | 'running' | 'stopped' | 'destroyed';

export interface MachineStatus {
  power: MachinePower;
  /** Whether the machine runs with its GPUs mounted. */
  gpu: boolean;
  /** The host cannot be reached: the machine's real state is unknown. */
  lost: boolean;
  hostId: string | null;
  /** An operation the driver has accepted and not finished. */
  pendingOpId: string | null;
}

export interface ComputeDriver {
  readonly name: string;
  /** Submits `op` on the machine of `instanceId` under `opId` (the same id again is a no-op). */
  submit(opId: string, instanceId: string, op: InstanceOp): Promise<void>;
  /** The machine as the backend sees it now; null when it has never heard of it. */
  status(instanceId: string): Promise<MachineStatus | null>;
  /** Used data disk in GB of the machines the backend knows (others are left out). */
  diskUsage(instanceIds: string[]): Promise<Map<string, number>>;
  /** Events after `afterSeq`, oldest first. */
  events(afterSeq: number, limit: number): Promise<DriverEvent[]>;
  /** Submits one half of a move between hosts (fleet-migrate.ts) under `opId` (again: a no-op); absent: the backend cannot move machines between hosts. */
  submitMigration?(opId: string, instanceId: string, op: MigrationOp): Promise<void>;
  /** The operation submitted under `opId` as it stands now; null: never submitted here. */
  operation?(opId: string): Promise<OperationOutcome | null>;
  /**
   * The command line that runs `command` (default: a login shell) inside the running machine, as its
   * root user (the web terminal and the SSH gateway run it); absent when the backend gives the
   * console no way in, null while the machine is not running.
   */
  shell?(instanceId: string, command?: string[]): ShellCommand | null;
  /** Services inside the running machines the console reaches through a Unix socket (socketOf). */
  readonly services?: readonly MachineService[];
  /** The operating systems its machines can run (an image's `os` says which it needs); absent: any. */
  readonly osFamilies?: readonly OsFamily[];
  /**
   * Size categories whose cards its machines cannot honour, each with why (shown to the buyer): not
   * listed, and an order for one refused. Absent: every category is sold.
   */
  readonly unsold?: Readonly<Partial<Record<SizeCategory, string>>>;
  /**
   * The Unix socket of a service inside the running machine, for the console to connect to (`path`;
   * `close` once connected); null when it is not running or not listening yet.
   */
  socketOf?(instanceId: string, service: MachineService): { path: string; close(): void } | null;
  /**
   * The image application (镜像应用) the running machine serves, where the driver runs applications
   * itself: its port through a Unix socket, and how it is doing; null: it runs none (not an
   * application, no start command in its image, or not running).
   */
  app?(instanceId: string): MachineApp | null;
  /** Ends what the driver runs inside this process, as the server stops (the machines' recorded state stays). */
  shutdown?(): Promise<void>;
  /**
   * The ids of the machines running in this process's reach, for the SSH gateway, which a driver with
   * shells it can reach offers (absent: no gateway).
   */
  runningIds?(): string[];
  /** The accounts' 文件存储 trees its machines mount at /root/shared (absent: they mount none, and there is no 文件存储). */
  readonly fileStore?: FileStoreMount;
  /** Pages of the driver's own that the console serves (the simulated machines' pages, its control panel). */
  routes?(deps: DriverRoutesDeps): RoutesPlugin;
  /** A saved image as the driver keeps it (saveImage's imageRef), for the 镜像 page; null: it keeps none by that name. */
  imageInfo?(imageRef: string): Promise<SavedImageInfo | null>;
  /**
   * Drops a saved image the console deleted (no instance is being created from it): its name goes
   * from the host's images, so that what only it needs can be freed. Absent: the driver keeps nothing to drop.
   */
  removeImage?(imageRef: string): Promise<RemovedImage>;
  /**
   * Why a running machine does not offer `service` (its image lacks the programs), in Chinese; null:
   * it does, or is not running. Services outside `services` are never offered. `sftp`: the program
   * the SSH gateway runs for sftp and scp (SFTP_SERVER).
   */
  serviceMissing?(instanceId: string, service: MachineService | 'sftp'): string | null;
  /**
   * The figures of the running machines it reaches (those of `instanceIds`; absent: all of them), for the
   * 概览 charts and GPU 空闲自动关机 (modules/monitoring). Rates are since the previous call, so the first
   * sample of a machine has none. Absent: the backend gives no figures.
   */
  sample?(instanceIds?: readonly string[]): Promise<Map<string, MachineSample>>;
  /**
   * What the one host behind the driver really has, for a market that sells only that (the local
   * driver: local/host-offer.ts). Absent: a fleet the catalogue describes (the simulated one).
   */
  offer?(): Promise<HostOffer>;
  /**
   * What one host of a fleet may sell now, by its agent's last report (the fleet driver): null —
   * nothing (not registered, lost or unhealthy: the market neither lists nor sells it); a HostOffer —
   * no more cards than it reports free; 'catalogue' — its agent reports no hardware (a simulated
   * host), so the catalogue describes it. Absent: one host (offer) or the simulated fleet.
   */
  offerOf?(hostId: string): Promise<HostOffer | 'catalogue' | null>;
}

/** A host's real hardware and images (ComputeDriver.offer): what the market on it may sell. */
export interface HostOffer {
  cpus: number;
  memoryGb: number;
  /** Free disk where the machines' disks live, in GB. */
  diskGb: number;
  /** The host's cards by model (nvidia-smi's name, e.g. "NVIDIA GeForce RTX 4090"). */
  gpus: { model: string; memoryMb: number; count: number }[];
  /** OCI references present on the host (its image layout); null: any, images are not checked. */
  images: readonly string[] | null;
  /** The host's own system (/etc/os-release): what an image without an OCI reference runs on. */
  hostOs: { name: string; id: string; versionId: string };
  /** What the machines that hold the host now (creating or running) were sized, cards included. */
  held: { cpu: number; memoryGb: number; gpus: number };
}

/** What a machine was doing when sampled (ComputeDriver.sample); null: not known there. */
export interface MachineSample {
  /** Share of the plan's cores in use since the previous sample, 0–100. */
  cpuPercent: number | null;
  memoryUsedBytes: number | null;
  memoryLimitBytes: number | null;
  dataDiskUsedBytes: number | null;
  dataDiskSizeBytes: number | null;
  systemDiskUsedBytes: number | null;
  systemDiskSizeBytes: number | null;
  /** Bytes per second through the machine's own network interfaces since the previous sample. */
  netRxBytesPerSec: number | null;
  netTxBytesPerSec: number | null;
  /** The machine's cards, in the order of their minor numbers (empty: none, or not known). */
  gpus: { utilisation: number; memoryUsedMb: number; memoryTotalMb: number | null }[];
  /** Why the GPUs are not in the sample although the machine holds cards (null: they are, or it holds none). */
  gpuUnavailable: string | null;
  /** Made-up figures (the simulated fleet). */
  simulated: boolean;
}

/** A saved image (ComputeDriver.imageInfo): what the 镜像 page shows of it. */
export interface SavedImageInfo {
  /** What it takes on the host: its layers as stored (compressed), the base's included. */
  sizeBytes: number;
  /** The image it is a layer on; null: the host's own system (saved before images were OCI images, or from such a machine). */
  base: { ref: string | null; digest: string } | null;
  /** Lowest first; the last is what the machine changed. digest null: an archive of its own, not an OCI blob. */
  layers: { digest: string | null; sizeBytes: number }[];
  createdAt: string | null;
  /** Unpacked, in bytes, where the driver knows it (absent or null: not known). */
  unpackedBytes?: number | null;
  /** Made-up figures (the simulated fleet). */
  simulated?: boolean;
}

/** What removeImage did, for the user's message. */
export interface RemovedImage {
  /** Whether the host had the image (false: nothing by that name was left). */
  removed: boolean;
  /** Bytes of its own layer (or archive) no other image needs. */
  freedBytes: number | null;
  /** Freed at once (an archive deleted), or left for the image layout's gc (a layer no name needs any more). */
  freed: 'now' | 'gc';
  simulated?: boolean;
}

/** Where and how the driver keeps the accounts' 文件存储 trees, which the console's 文件存储 pages read and write too. */
export interface FileStoreMount {
  root: string;
  quotaGb: number;
  /** Each tree an ext4 image of this many GiB; null where images cannot be mounted. */
  imageGb: number | null;
  /** The host uid the account's machines run as; absent: the server's own. */
  hostUidOf?: (payerId: string) => Promise<number | null>;
}

/** What the driver's pages may show of an instance (the instances module's InstanceAccess). */
export interface MachinePageAccess {
  id: string;
  name: string;
  jupyterToken: string;
  sshHost: string | null;
  sshPort: number | null;
  sshUser: string;
  applicationId: string | null;
  status: string;
}

export interface DriverRoutesDeps {
  /** The instance's access by id (null: no such instance). */
  accessOf(instanceId: string): Promise<MachinePageAccess | null>;
  /** Whether its dev tools (the control panel) exist. */
  controlPanel: boolean;
}

/** An application inside a running machine (ComputeDriver.app). */
export interface MachineApp {
  /** A connection to its port (`close` once connected); null while there is none to make. */
  socket(): { path: string; close(): void } | null;
  /** How it is doing (the 启动中 page says it); null once the machine runs it no more. */
  state(): Promise<MachineAppState | null>;
}

export interface MachineAppState {
  port: number;
  /** How many times its command has ended since the machine started (it is started again, later each time). */
  exits: number;
  /** Whether its command runs now (between two tries it does not). */
  running: boolean;
  /** Seconds since its current (or last) try started. */
  upSeconds: number;
  /** The end of its log inside the machine (/var/log/app.log). */
  logTail: string;
}

export interface ShellCommand {
  file: string;
  args: string[];
  env: Record<string, string>;
}

/**
 * `jupyter`: the notebook, served inside the machine under base URL `/jupyter/<instanceId>/`;
 * `service`: the 自定义服务 port (6006) inside the machine, as plain HTTP from its root;
 * `desktop`: the machine's desktop as a VNC (RFB) server.
 */
export type MachineService = 'jupyter' | 'service' | 'desktop';

/** The program inside a machine that the SSH gateway's `sftp` subsystem runs (OpenSSH's, Debian's openssh-sftp-server). */
export const SFTP_SERVER = '/usr/lib/openssh/sftp-server';
