import type { FastifyBaseLogger } from 'fastify';
import { InstanceCategory } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import type { ComputeDriver } from '../../drivers/compute/types.js';
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import type { CatalogueStore, InventoryService, Quotes } from '../catalogue/index.js';
import type { GiftService } from '../gifts/index.js';
import type { ImageService } from '../images/index.js';
import type { LedgerService } from '../ledger/index.js';
import type { NoticeService } from '../notices/index.js';
import { PURCHASE_TYPES, type Checkout, type FulfillerLine, type Fulfillers, type OrderService, type UsageCharges } from '../orders/index.js';
import type { ResourceService } from '../resources/index.js';
import type { BalanceFloors, ChildService, UserService } from '../users/index.js';
import { AppTokens } from './app-token.js';
import { InstanceBilling } from './billing.js';
import { Meter } from './meter.js';
import { ConversionService } from './conversions.js';
import { InstanceCreation } from './create.js';
import { DiskService, ResizeDiskTask } from './disks.js';
import { MigrateTask, MigrationService } from './migrate.js';
import { PrepaidService } from './prepaid.js';
import { Reconciler } from './reconciler.js';
import { RenewalService } from './renewal.js';
import { instanceRoutes } from './routes.js';
import { SaveImageService, SaveImageTask } from './save-image.js';
import { ScheduledStops } from './scheduled-stop.js';
import { PasswordBox } from './secrets.js';
import { InstanceService } from './service.js';
import type { TaskHandlers } from './tasks.js';
import { DowngradeRefunds } from './traffic-refund.js';
import { ChangeBandwidthTask, TrafficService } from './traffic.js';
import { InstanceViews } from './views.js';

/** Where browsers reach the machines' web pages (the access module's MachineOrigins). */
export interface MachinePages {
  /** Whether the machines' pages can have origins of their own (machine-origin.ts). */
  readonly configured: boolean;
  /** Whether each instance has an origin of its own. */
  readonly perInstance: boolean;
  originOf(instanceId: string): string;
}

export interface InstancesModuleDeps {
  db: Db;
  clock: Clock;
  log: FastifyBaseLogger;
  auth: AuthGuards;
  driver: ComputeDriver;
  catalogue: CatalogueStore;
  /** The server's quotes of renewals, disks, bandwidth and conversions. */
  pricing: Quotes;
  inventory: InventoryService;
  images: ImageService;
  users: UserService;
  children: Pick<ChildService, 'child'>;
  notices: NoticeService;
  floors: BalanceFloors;
  ledger: LedgerService;
  gifts: GiftService;
  orders: OrderService;
  checkout: Checkout;
  usage: UsageCharges;
  fulfillers: Fulfillers;
  /** Card-hour packages, which GPU runs consume before money. */
  resources: ResourceService;
  machinePages: MachinePages;
  /** The key that seals machine passwords and ComfyUI API tokens. */
  passwordKey: Buffer;
  publicBaseUrl: string;
  billingTickSeconds: number;
  /** How many lanes a meter tick charges its batches in (one connection each). */
  meterLanes: number;
  balanceLowHours: number;
  autoRenewLeadHours: number;
  /** PREPAID_REFUND_FEE_RATE, as written (a decimal fraction). */
  prepaidRefundFeeRate: string;
  computeOpRetryMs: number;
}

/** Instances: buying, running, billing and changing them, and the driver's reports on their machines. */
export function instancesModule(deps: InstancesModuleDeps) {
  const { db, clock, log, driver, catalogue, pricing, inventory, images, orders, checkout, usage, notices, floors } = deps;
  const meter = new Meter(usage, deps.resources);
  const passwords = new PasswordBox(deps.passwordKey);
  const { machinePages } = deps;
  const instanceViews = new InstanceViews({
    db,
    clock,
    catalogue,
    images,
    users: deps.users,
    orders,
    passwords,
    publicBaseUrl: deps.publicBaseUrl,
    reach: {
      terminal: typeof driver.shell === 'function',
      simulatedPages: driver.name === 'simulated',
      // Only where the machines' pages can have origins of their own (machine-origin.ts).
      notebookProxy: Boolean(driver.services?.includes('jupyter')) && machinePages.configured,
      serviceProxy: Boolean(driver.services?.includes('service')) && machinePages.configured,
      // ComfyUI at the root of an origin of the instance's own.
      appProxy: machinePages.configured && machinePages.perInstance,
      // Applications the machines run themselves (their image's command on their port), opened through that proxy.
      machineApps: typeof driver.app === 'function',
      desktop: Boolean(driver.services?.includes('desktop')),
    },
    serviceMissing: (instanceId, service) => driver.serviceMissing?.(instanceId, service) ?? null,
  });
  const bandwidthRefunds = new DowngradeRefunds({ clock, orders, checkout, gifts: deps.gifts });
  // What each task does when the driver reports it (tasks.ts): one line per task.
  const tasks: TaskHandlers = {
    saveImage: new SaveImageTask({ images }),
    resizeDisk: new ResizeDiskTask({ usage }),
    changeBandwidth: new ChangeBandwidthTask({ meter, refunds: bandwidthRefunds }),
    migrate: new MigrateTask({ inventory }),
  };
  const instances = new InstanceService({
    db,
    clock,
    driver,
    inventory,
    catalogue,
    usage,
    checkout,
    meter,
    passwords,
    log,
    notify: async (userId, notice) => void (await notices.send(userId, notice)),
    views: instanceViews,
    tasks,
    fulfillers: deps.fulfillers,
    floors,
  });
  const creation = new InstanceCreation({ db, clock, catalogue, inventory, images, passwords, instances });
  const renewals = new RenewalService({ db, clock, catalogue, pricing, orders, instances });
  const disks = new DiskService({ db, clock, driver, catalogue, pricing, orders, instances, views: instanceViews, ledger: deps.ledger });
  const traffic = new TrafficService({ db, clock, catalogue, pricing, orders, refunds: bandwidthRefunds, instances, views: instanceViews });
  const conversions = new ConversionService({ db, clock, instances, orders, usage, pricing, catalogue, meter });
  const migration = new MigrationService({ db, clock, catalogue, inventory, instances, views: instanceViews });
  const saveImage = new SaveImageService({ db, catalogue, images, instances });
  const scheduledStops = new ScheduledStops({ db, clock, instances, views: instanceViews });
  const instanceBilling = new InstanceBilling({
    db,
    clock,
    meter,
    instances,
    migration,
    catalogue,
    floors,
    tickSeconds: deps.billingTickSeconds,
    workers: deps.meterLanes,
    balanceLow: (loads) => notices.balanceCheck(loads, deps.balanceLowHours),
  });
  const prepaid = new PrepaidService({
    db,
    clock,
    instances,
    views: instanceViews,
    renewals,
    orders,
    checkout,
    gifts: deps.gifts,
    users: deps.users,
    log,
    leadHours: deps.autoRenewLeadHours,
    notices,
    refundFeeRate: deps.prepaidRefundFeeRate,
  });
  const reconciler = new Reconciler({ db, clock, driver, instances, log, retryAfterMs: deps.computeOpRetryMs });
  // Programs reach an instance's ComfyUI at its own origin, as browsers do.
  const appTokens = new AppTokens({
    db,
    passwords,
    apiUrlOf: (id) => (machinePages.configured && machinePages.perInstance ? machinePages.originOf(id) : null),
    accountDisabled: async (id) => (await deps.users.findById(id))?.disabled ?? true,
  });
  // Who delivers each order an instance is sold by: one line per fulfiller, for every instance category.
  const byType: Omit<FulfillerLine, 'categories'>[] = [
    { types: PURCHASE_TYPES, fulfiller: creation },
    { types: ['Renew'], fulfiller: renewals },
    { types: ['ChangeDataDisk'], fulfiller: disks },
    { types: ['TrafficUpgrade'], fulfiller: traffic },
    { types: ['DayToMonth', 'TransferToLong'], fulfiller: { fulfil: (order) => conversions.apply(order) } },
  ];
  const fulfillerLines: FulfillerLine[] = byType.map((line) => ({ categories: InstanceCategory.values, ...line }));
  const services = { instances, instanceViews, renewals, prepaid, scheduledStops, conversions, migration, saveImage, disks, traffic, appTokens };
  const routes: RoutesPlugin = async (app) => instanceRoutes(app, { auth: deps.auth, children: deps.children, ...services });
  return { ...services, creation, meter, instanceBilling, reconciler, fulfillers: fulfillerLines, routes };
}
