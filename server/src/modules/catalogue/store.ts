/**
 * The catalogue as the server reads it: one in-memory snapshot per process, because market pages are
 * read far more often than the catalogue changes.
 *
 * - The static part (regions … prices, settings) is reloaded when the `version` row changes; each
 *   process looks at that row at most every VERSION_CHECK_MS, so an operator's edit reaches every
 *   process of a PostgreSQL deployment within seconds.
 * - Free cards (inventory) are re-read at most every INVENTORY_TTL_MS, and at once in the process
 *   that reserved or released cards. Orders never trust this copy: they reserve with a row update.
 */
import { eq } from 'drizzle-orm';
import type { BillingCycle } from '@console/contract';
import type { Db } from '../../db/client.js';
import { afterAMoment } from '../../db/background.js';
import {
  catalogueApplications,
  catalogueGpuTypes,
  catalogueHosts,
  catalogueImages,
  cataloguePrices,
  catalogueRegions,
  catalogueRooms,
  catalogueSizes,
  catalogueState,
} from './schema.js';
import { rateToBp, type UnitPrice } from './pricing.js';
import type { CatalogueSettings, ModelChannelEntry, ModelEntry, ResourceProductEntry } from './seed-file.js';
import { DEFAULT_PRIVACY_POLICY, DEFAULT_USER_AGREEMENT } from './agreements.js';
import { yuanToUnits } from '@console/contract';

export const VERSION_CHECK_MS = 3000;
export const INVENTORY_TTL_MS = 1000;

export type RegionRow = typeof catalogueRegions.$inferSelect;
export type RoomRow = typeof catalogueRooms.$inferSelect;
export type GpuTypeRow = typeof catalogueGpuTypes.$inferSelect;
export type HostRow = typeof catalogueHosts.$inferSelect;
export type SizeRow = typeof catalogueSizes.$inferSelect;
export type ImageRow = typeof catalogueImages.$inferSelect;
export type ApplicationRow = typeof catalogueApplications.$inferSelect;

/** Catalogue entries kept outside the catalogue file (CatalogueStore.mergeEntries). */
export interface ExtraEntries {
  images: ImageRow[];
  applications: ApplicationRow[];
}

export interface Settings {
  dataDiskPricePerGbDay: bigint;
  studentBp: number;
  newUserVoucher: bigint;
  rechargeBonusBp: number;
  /** null: not configured, no customer-service entry is shown. */
  customerServiceUrl: string | null;
  userAgreement: string;
  privacyPolicy: string;
  rechargeMin: bigint;
  rechargeMax: bigint;
  giftValidDays: number;
  newUserVoucherValidDays: number;
  paymentTimeoutMinutes: number;
  welcomeGift: bigint;
  welcomeGiftValidDays: number;
  giftRenewGraceDays: number;
  giftRenewDays: number;
  noCardPricePerHour: bigint;
  noCardCpu: number;
  noCardMemoryGb: number;
  stoppedReleaseDays: number;
  expiredReleaseDays: number;
  releaseNoticeHours: number;
  userImageLimit: number;
  migrateHoldMinutes: number;
  bandwidthPricePerMbpsHour: bigint;
  /** Ascending, without repeats. */
  bandwidthStepsMbps: number[];
  /** The market on a real host: how many times its cores and memory are sold (host-market.ts). */
  hostCpuOvercommit: number;
  hostMemoryOvercommit: number;
}

export interface Snapshot {
  version: number;
  settings: Settings;
  regions: RegionRow[];
  rooms: RoomRow[];
  gpuTypes: GpuTypeRow[];
  hosts: HostRow[];
  sizes: SizeRow[];
  images: ImageRow[];
  applications: ApplicationRow[];
  prices: Map<string, Map<BillingCycle, UnitPrice>>;
  resourceProducts: ResourceProductEntry[];
  /** The model square and its channels (every entry of the file, inactive models and disabled channels too). */
  models: ModelEntry[];
  modelChannels: ModelChannelEntry[];
  /** Changes whenever anything a response shows may have changed: keys the response caches. */
  generation: number;
}

export function priceKey(kind: 'gpu' | 'size', id: string) {
  return `${kind}:${id}`;
}

export class CatalogueStore {
  private current: Snapshot | null = null;
  private loading: Promise<Snapshot> | null = null;
  private versionCheckedAt = 0;
  private inventoryAt = 0;
  private generation = 0;
  private mustWait = true;
  private invalidations = 0;
  private extraEntries: () => Promise<ExtraEntries> = async () => ({ images: [], applications: [] });

  constructor(private db: Db) {}

  /**
   * Adds entries another module keeps to every snapshot (the operator's registered images,
   * operator/registered-images.ts); that module bumps the version when they change.
   */
  mergeEntries(source: () => Promise<ExtraEntries>) {
    this.extraEntries = source;
    this.invalidateAll();
  }

  /**
   * The snapshot. When it is merely old (TTL passed) the current one is answered at once and a
   * refresh runs in the background, so no request waits on it; after an explicit invalidation the
   * caller waits for fresh data, because it has just changed it.
   */
  async get(): Promise<Snapshot> {
    for (;;) {
      const now = performance.now();
      const fresh = now - this.versionCheckedAt < VERSION_CHECK_MS && now - this.inventoryAt < INVENTORY_TTL_MS;
      if (this.current && fresh) return this.current;
      const stale = this.mustWait ? null : this.current;
      this.loading ??= (stale ? afterAMoment(() => this.refresh()) : this.refresh()).finally(() => {
        this.loading = null;
      });
      if (stale) {
        this.loading.catch(() => {}); // a failed background refresh is retried on the next request
        return stale;
      }
      const snap = await this.loading;
      // A refresh that began before the latest invalidation may hold old numbers: go round again.
      if (!this.mustWait) return snap;
    }
  }

  /**
   * The snapshot as it is now, without waiting: for code running inside a transaction, which must
   * not wait on another query (PGlite has one connection). The context loads it once at start.
   */
  peek(): Snapshot {
    if (!this.current) throw new Error('catalogue: peek() before the first load');
    void this.get().catch(() => {}); // keep it fresh for the next caller
    return this.current;
  }

  /** Forget the free-card counts (this process reserved or released cards). */
  invalidateInventory() {
    this.invalidations++;
    this.inventoryAt = 0;
    this.mustWait = true;
  }

  /** Forget everything (this process applied a new catalogue file). */
  invalidateAll() {
    this.invalidateInventory();
    this.versionCheckedAt = 0;
    if (this.current) this.current = { ...this.current, version: -1 };
  }

  private async refresh(): Promise<Snapshot> {
    const started = performance.now();
    const seen = this.invalidations;
    const version = await this.readVersion();
    if (!this.current || this.current.version !== version) {
      this.current = await this.loadAll(version);
    } else {
      await this.reloadInventory(this.current);
    }
    if (seen === this.invalidations) {
      this.versionCheckedAt = started;
      this.inventoryAt = started;
      this.mustWait = false;
    }
    return this.current;
  }

  private async readVersion(): Promise<number> {
    const [row] = await this.db.select({ value: catalogueState.value }).from(catalogueState).where(eq(catalogueState.key, 'version'));
    return Number(row?.value ?? 0);
  }

  private async reloadInventory(snap: Snapshot) {
    const rows = await this.db.select({ id: catalogueHosts.id, gpuFree: catalogueHosts.gpuFree }).from(catalogueHosts).where(eq(catalogueHosts.active, true));
    const free = new Map(rows.map((r) => [r.id, r.gpuFree]));
    let changed = false;
    const hosts = snap.hosts.map((h) => {
      const f = free.get(h.id);
      if (f === undefined || f === h.gpuFree) return h;
      changed = true;
      return { ...h, gpuFree: f };
    });
    if (changed) {
      snap.hosts = hosts;
      snap.generation = ++this.generation;
    }
  }

  private async loadAll(version: number): Promise<Snapshot> {
    const q = this.db;
    const [regions, rooms, gpuTypes, hosts, sizes, images, applications, priceRows, settingsRow, productsRow, modelsRow, channelsRow] = await Promise.all([
      q.select().from(catalogueRegions).where(eq(catalogueRegions.active, true)).orderBy(catalogueRegions.sort),
      q.select().from(catalogueRooms).where(eq(catalogueRooms.active, true)).orderBy(catalogueRooms.sort),
      q.select().from(catalogueGpuTypes).where(eq(catalogueGpuTypes.active, true)).orderBy(catalogueGpuTypes.sort),
      q.select().from(catalogueHosts).where(eq(catalogueHosts.active, true)).orderBy(catalogueHosts.sort),
      q.select().from(catalogueSizes).where(eq(catalogueSizes.active, true)).orderBy(catalogueSizes.sort),
      q.select().from(catalogueImages).where(eq(catalogueImages.active, true)).orderBy(catalogueImages.sort),
      q.select().from(catalogueApplications).where(eq(catalogueApplications.active, true)).orderBy(catalogueApplications.sort),
      q.select().from(cataloguePrices),
      q.select().from(catalogueState).where(eq(catalogueState.key, 'settings')),
      q.select().from(catalogueState).where(eq(catalogueState.key, 'resourceProducts')),
      q.select().from(catalogueState).where(eq(catalogueState.key, 'models')),
      q.select().from(catalogueState).where(eq(catalogueState.key, 'modelChannels')),
    ]);
    const extra = await this.extraEntries();
    images.push(...extra.images);
    applications.push(...extra.applications);
    const prices = new Map<string, Map<BillingCycle, UnitPrice>>();
    for (const p of priceRows) {
      const key = priceKey(p.productKind, p.productId);
      if (!prices.has(key)) prices.set(key, new Map());
      prices.get(key)!.set(p.cycle, { listPrice: p.listPrice, discountBp: p.discountBp });
    }
    return {
      version,
      settings: parseSettings(settingsRow[0]?.value as CatalogueSettings | undefined),
      regions,
      rooms,
      gpuTypes,
      hosts,
      sizes,
      images,
      applications,
      prices,
      resourceProducts: (productsRow[0]?.value as ResourceProductEntry[] | undefined) ?? [],
      models: (modelsRow[0]?.value as ModelEntry[] | undefined) ?? [],
      modelChannels: (channelsRow[0]?.value as ModelChannelEntry[] | undefined) ?? [],
      generation: ++this.generation,
    };
  }
}

const DEFAULT_SETTINGS: CatalogueSettings = {
  dataDiskPricePerGbDay: '0.007',
  studentDiscountRate: '1',
  newUserVoucherYuan: '0',
  rechargeBonusRate: '0',
  rechargeMinYuan: '10',
  rechargeMaxYuan: '50000',
  giftValidDays: 365,
  newUserVoucherValidDays: 30,
  paymentTimeoutMinutes: 15,
  welcomeGiftYuan: '0',
  welcomeGiftValidDays: 30,
  giftRenewGraceDays: 7,
  giftRenewDays: 30,
  noCardPricePerHourYuan: '0.1',
  noCardCpu: 0.5,
  noCardMemoryGb: 2,
  stoppedReleaseDays: 15,
  expiredReleaseDays: 7,
  releaseNoticeHours: 24,
  userImageLimit: 10,
  migrateHoldMinutes: 120,
  bandwidthPricePerMbpsHourYuan: '0.03',
  bandwidthStepsMbps: [5, 10, 20, 30, 50, 100],
  hostCpuOvercommit: 1,
  hostMemoryOvercommit: 1,
};

function parseSettings(raw: CatalogueSettings | undefined): Settings {
  const s = { ...DEFAULT_SETTINGS, ...raw };
  return {
    dataDiskPricePerGbDay: yuanToUnits(s.dataDiskPricePerGbDay),
    studentBp: rateToBp(s.studentDiscountRate) ?? 10000,
    newUserVoucher: yuanToUnits(s.newUserVoucherYuan),
    rechargeBonusBp: rateToBp(s.rechargeBonusRate) ?? 0,
    customerServiceUrl: s.customerServiceUrl || null,
    userAgreement: s.userAgreement ?? DEFAULT_USER_AGREEMENT,
    privacyPolicy: s.privacyPolicy ?? DEFAULT_PRIVACY_POLICY,
    rechargeMin: yuanToUnits(s.rechargeMinYuan),
    rechargeMax: yuanToUnits(s.rechargeMaxYuan),
    giftValidDays: s.giftValidDays,
    newUserVoucherValidDays: s.newUserVoucherValidDays,
    paymentTimeoutMinutes: s.paymentTimeoutMinutes,
    welcomeGift: yuanToUnits(s.welcomeGiftYuan),
    welcomeGiftValidDays: s.welcomeGiftValidDays,
    giftRenewGraceDays: s.giftRenewGraceDays,
    giftRenewDays: s.giftRenewDays,
    noCardPricePerHour: yuanToUnits(s.noCardPricePerHourYuan),
    noCardCpu: s.noCardCpu,
    noCardMemoryGb: s.noCardMemoryGb,
    stoppedReleaseDays: s.stoppedReleaseDays,
    expiredReleaseDays: s.expiredReleaseDays,
    releaseNoticeHours: s.releaseNoticeHours,
    userImageLimit: s.userImageLimit,
    migrateHoldMinutes: s.migrateHoldMinutes,
    bandwidthPricePerMbpsHour: yuanToUnits(s.bandwidthPricePerMbpsHourYuan),
    bandwidthStepsMbps: [...new Set(s.bandwidthStepsMbps)].sort((a, b) => a - b),
    hostCpuOvercommit: s.hostCpuOvercommit,
    hostMemoryOvercommit: s.hostMemoryOvercommit,
  };
}
