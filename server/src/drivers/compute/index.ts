/**
 * The compute drivers, by the name `COMPUTE_DRIVER` gives: a new driver is its own file and one line
 * here (its settings, if it has any, are validated in config.ts).
 */
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import path from 'node:path';
import { AgentComputeDriver } from './agent.js';
import { FleetComputeDriver, fleetSecretKey } from './fleet.js';
import { loadOrCreateSecret } from '../../modules/system/index.js';
import { LocalComputeDriver } from './local/driver.js';
import type { RegistryOptions } from './local/oci/registry.js';
import { SimulatedComputeDriver, parseSimDelays } from './simulated.js';
import type { ComputeDriver } from './types.js';

/** The settings the drivers read (config.ts validates them; named here so that config.ts can list the drivers). */
export interface ComputeDriverSettings {
  COMPUTE_SIM_DELAYS?: string;
  COMPUTE_SIM_DOMAIN: string;
  COMPUTE_AGENT_URL?: string;
  COMPUTE_AGENT_KEY_ID?: string;
  COMPUTE_AGENT_SECRET?: string;
  FILESTORE_QUOTA_GB?: number;
  LOCAL_HOST_UIDS_DIR?: string;
  LOCAL_MACHINES_AS_SERVER_USER?: boolean;
  SANDBOX_ALLOW_NETS?: readonly string[];
  REGISTRY_URL?: string;
  REGISTRY_USER?: string;
  REGISTRY_PASSWORD?: string;
  SESSION_SECRET?: string;
  FLEET_HOST_GRACE_SECONDS?: number;
  dataDir: string;
  publicBaseUrl: string;
}

export interface ComputeDriverDeps {
  config: ComputeDriverSettings;
  db: Db;
  clock: Clock;
  log: (message: string) => void;
  /** The port the SSH gateway listens on (known once it does). */
  sshPort: () => number;
  /** Where the accounts' 文件存储 trees live (mounted at /root/shared). */
  fileStoreRoot: string;
}

/** The local driver's folder: its hosts' disks, its OCI image layout (`oci/`) and unpacked images; `npm run images` builds into it. */
export function localComputeDir(dataDir: string): string {
  return path.join(dataDir, 'local-compute');
}

/** REGISTRY_URL and its login as the local driver's images take them; null without a registry. */
export function registryOptionsOf(config: Pick<ComputeDriverSettings, 'REGISTRY_URL' | 'REGISTRY_USER' | 'REGISTRY_PASSWORD'>): RegistryOptions | null {
  return config.REGISTRY_URL ? { url: config.REGISTRY_URL, user: config.REGISTRY_USER, password: config.REGISTRY_PASSWORD } : null;
}

export const COMPUTE_DRIVERS = {
  simulated: ({ config, db, clock }) => new SimulatedComputeDriver(db, clock, parseSimDelays(config.COMPUTE_SIM_DELAYS), config.COMPUTE_SIM_DOMAIN),
  agent: ({ config }) =>
    new AgentComputeDriver({ baseUrl: config.COMPUTE_AGENT_URL!, keyId: config.COMPUTE_AGENT_KEY_ID!, secret: config.COMPUTE_AGENT_SECRET! }),
  local: ({ config, db, clock, log, sshPort, fileStoreRoot }) =>
    new LocalComputeDriver({
      db,
      clock,
      log,
      dir: localComputeDir(config.dataDir),
      sshHost: new URL(config.publicBaseUrl).hostname,
      sshPort,
      fileStoreRoot,
      fileStoreQuotaGb: config.FILESTORE_QUOTA_GB,
      allowNets: config.SANDBOX_ALLOW_NETS,
      hostUidsDir: config.LOCAL_HOST_UIDS_DIR,
      machinesAsServerUser: config.LOCAL_MACHINES_AS_SERVER_USER,
      registry: registryOptionsOf(config),
    }),
  // The hosts mount the operator's shared file system at the console's 文件存储 path (README "Running in production").
  fleet: ({ config, db, clock, log, sshPort, fileStoreRoot }) =>
    new FleetComputeDriver({
      db,
      clock,
      log,
      secretKey: fleetKeyOf(config, db, clock),
      graceMs: (config.FLEET_HOST_GRACE_SECONDS ?? 60) * 1000,
      sshGateway: () => ({ sshHost: new URL(config.publicBaseUrl).hostname, sshPort: sshPort() }),
      agentOptions: { fileStore: { root: fileStoreRoot, quotaGb: config.FILESTORE_QUOTA_GB ?? 20, imageGb: null } },
    }),
} satisfies Record<string, (deps: ComputeDriverDeps) => ComputeDriver>;

/**
 * The key the fleet's host secrets are sealed under: derived from SESSION_SECRET where it is set (then
 * a dump of the database alone does not reveal them); without it, from a key kept in the database.
 */
export function fleetKeyOf(config: Pick<ComputeDriverSettings, 'SESSION_SECRET'>, db: Db, clock: Clock): () => Promise<Buffer> {
  let key: Promise<Buffer> | null = null;
  const read = async () =>
    fleetSecretKey(config.SESSION_SECRET ? Buffer.from(config.SESSION_SECRET, 'base64url') : await loadOrCreateSecret(db, 'fleet-host-key', clock.now()));
  return () => (key ??= read());
}

export type ComputeDriverName = keyof typeof COMPUTE_DRIVERS;
export const COMPUTE_DRIVER_NAMES = Object.keys(COMPUTE_DRIVERS) as [ComputeDriverName, ...ComputeDriverName[]];

export function makeComputeDriver(name: ComputeDriverName, deps: ComputeDriverDeps): ComputeDriver {
  return COMPUTE_DRIVERS[name](deps);
}

/** Whether this host can run the local driver's sandboxes, and why not (local/sandbox.ts bwrapWorks asks bubblewrap). */
export type SandboxProbe = () => { ok: boolean; why: string };

/**
 * `COMPUTE_DRIVER=auto` (the default): real sandboxes where bubblewrap works (`probe`), otherwise the
 * simulated fleet, so `npm start` works on a bare machine; the reason goes to the start-up log.
 */
export function chooseComputeDriver(wanted: ComputeDriverName | 'auto', probe: SandboxProbe): { name: ComputeDriverName; why: string } {
  if (wanted !== 'auto') return { name: wanted, why: `已设置 COMPUTE_DRIVER=${wanted}` };
  const bwrap = probe();
  return bwrap.ok
    ? { name: 'local', why: 'COMPUTE_DRIVER=auto：本机 bwrap 可用，实例是本机上的沙箱' }
    : { name: 'simulated', why: `COMPUTE_DRIVER=auto：${bwrap.why}，改用模拟机群` };
}
