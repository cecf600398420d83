/**
 * Everything a route needs, built once per server: configuration, the database, the drivers of
 * the outside worlds and the domain services. Tests build the same thing with other drivers.
 */
import { fileStoreModule, type FileStore } from './modules/filestore/index.js';
import { accessModule, MachineOrigins, type AccessGate, type SshKeyService, type Terminals } from './modules/access/index.js';
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { RoutesPlugin } from './http/routes-plugin.js';
import type { SchedulerDeps } from './jobs/scheduler.js';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import type { Database, Db } from './db/client.js';
import { OutboxMailDriver, OutboxSmsDriver } from './drivers/outbox.js';
import { SmtpMailDriver } from './drivers/mail/smtp.js';
import type { MailDriver } from './drivers/mail/types.js';
import { AliyunSmsDriver } from './drivers/sms/aliyun.js';
import { AliyunRealNameDriver } from './drivers/realname/aliyun.js';
import { SandboxRealNameDriver } from './drivers/realname/sandbox.js';
import type { RealNameDriver } from './drivers/realname/types.js';
import type { SmsDriver } from './drivers/sms/types.js';
import { chooseCounters, type Counters } from './drivers/counters/index.js';
import { makeStorageDriver } from './drivers/storage/index.js';
import type { StorageDriver } from './drivers/storage/types.js';
import path from 'node:path';
import { makeAuthGuards, type AuthGuards } from './http/auth.js';
import { SessionService } from './modules/users/index.js';
import { loadOrCreateSecret } from './modules/system/index.js';
import { usersModule, type UserService } from './modules/users/index.js';
import { limitPasswordHashing } from './modules/users/index.js';
import { verificationModule, type VerificationService } from './modules/verification/index.js';
import { catalogueModule, type CatalogueService, type InventoryService, type Quotes } from './modules/catalogue/index.js';
import { applyCatalogue, describeApply, readCatalogueFile } from './modules/catalogue/index.js';
import { CatalogueStore } from './modules/catalogue/index.js';
import { vouchersModule, type VoucherService } from './modules/vouchers/index.js';
import { ledgerModule, type LedgerService } from './modules/ledger/index.js';
import { giftsModule, type GiftService } from './modules/gifts/index.js';
import { paymentsModule, type PaymentService, type RefundService } from './modules/payments/index.js';
import { DbSandboxStore, sandboxGatewayKeys } from './modules/payments/index.js';
import { rechargeModule, RechargeTotals, type RechargeService } from './modules/recharge/index.js';
import {
  fulfillerTable,
  ordersModule,
  type Checkout,
  type FulfillerLine,
  type FulfillerOf,
  type OrderService,
  type PurchaseService,
} from './modules/orders/index.js';
import { resourcesModule, type ResourceService } from './modules/resources/index.js';
import { invoicesModule, type InvoiceService } from './modules/invoices/index.js';
import { operatorModule, type OperatorService } from './modules/operator/index.js';
import { makePaymentDrivers, type PaymentDrivers } from './drivers/payment/index.js';
import { osFamilyOf, type ComputeDriver } from './drivers/compute/types.js';
import { localComputeDir, makeComputeDriver, registryOptionsOf } from './drivers/compute/index.js';
import { LocalComputeDriver } from './drivers/compute/local/driver.js';
import { ImageRegistrar } from './drivers/compute/local/oci/registration.js';
import {
  instancesModule,
  METER_LANES,
  type AppTokens,
  type ConversionService,
  type DiskService,
  type InstanceBilling,
  type InstanceService,
  type InstanceViews,
  type MigrationService,
  type PrepaidService,
  type Reconciler,
  type RenewalService,
  type SaveImageService,
  type ScheduledStops,
  type TrafficService,
} from './modules/instances/index.js';
import { imagesModule, keptImageIds, type ImageService } from './modules/images/index.js';
import { datasetsModule, type DatasetService } from './modules/datasets/index.js';
import { trainingModule, type TrainingService } from './modules/training/index.js';
import { EmbeddedTrainer } from './drivers/image-backend/embedded-trainer.js';
import { hostExec, KohyaTrainer, machineExec } from './drivers/image-backend/kohya-trainer.js';
import type { PainterDriver, TrainerDriver } from './drivers/image-backend/types.js';
import { EmbeddedPainter } from './drivers/image-backend/embedded-painter.js';
import { ComfyPainter } from './drivers/image-backend/comfy-client.js';
import { comfyuiModule, type ComfyWorkflowService } from './modules/comfyui/index.js';
import { EmbeddedComfy } from './drivers/image-backend/embedded-comfy.js';
import { EmbeddedComfyApps } from './drivers/image-backend/comfy-apps.js';
import { diffusionModule, type DiffusionService } from './modules/diffusion/index.js';
import type { BalanceFloors } from './modules/users/index.js';
import { certificationModule, type CertificationService } from './modules/certification/index.js';
import { spendLimitsOf, type ChildService } from './modules/users/index.js';
import { studentsModule, type StudentService } from './modules/students/index.js';
import { instancesUsingImages, PasswordBox } from './modules/instances/index.js';
import { noticesModule, type GpuSubscriptionService, type NoticeService } from './modules/notices/index.js';
import { monitoringModule, type IdleStops, type Monitoring } from './modules/monitoring/index.js';
import { modelModule, type ApiKeyService, type ConversationService, type ModelCatalogue, type ModelGateway, type ModelUsage } from './modules/model/index.js';

export interface Drivers {
  sms: SmsDriver;
  mail: MailDriver;
  storage: StorageDriver;
  payment: PaymentDrivers;
  compute: ComputeDriver;
  realName: RealNameDriver;
  trainer: TrainerDriver;
  painter: PainterDriver;
  /** The ComfyUI that runs workflows (and, with COMFYUI_URL, every image). */
  comfy: PainterDriver;
}

export interface AppContext {
  config: Config;
  database: Database;
  db: Db;
  clock: Clock;
  drivers: Drivers;
  sessions: SessionService;
  codes: VerificationService;
  users: UserService;
  auth: AuthGuards;
  catalogueStore: CatalogueStore;
  catalogue: CatalogueService;
  /** Prices of purchases, renewals and changes, with placement of GPU orders. */
  quotes: Quotes;
  inventory: InventoryService;
  vouchers: VoucherService;
  ledger: LedgerService;
  gifts: GiftService;
  payments: PaymentService;
  refunds: RefundService;
  recharge: RechargeService;
  orders: OrderService;
  /** Buying: who may buy, the server's quote, the new order. */
  purchase: PurchaseService;
  /** Paying, fulfilment, refunds, recovery and expiry of orders. */
  checkout: Checkout;
  resources: ResourceService;
  invoices: InvoiceService;
  operator: OperatorService;
  /** The image gc (job images.gc): the local driver's layout and unpacked images; nothing to do on other drivers. */
  imageGc: { tick(): Promise<number> };
  certification: CertificationService;
  students: StudentService;
  children: ChildService;
  instances: InstanceService;
  instanceViews: InstanceViews;
  renewals: RenewalService;
  migration: MigrationService;
  saveImage: SaveImageService;
  images: ImageService;
  datasets: DatasetService;
  training: TrainingService;
  diffusion: DiffusionService;
  comfyWorkflows: ComfyWorkflowService;
  disks: DiskService;
  instanceBilling: InstanceBilling;
  /** Prepaid instances: auto-renewal and refund of unused time. */
  prepaid: PrepaidService;
  /** 定时关机 of instances. */
  scheduledStops: ScheduledStops;
  /** 余额保底 of main accounts (the post-paid tick stops instances below it). */
  balanceFloors: BalanceFloors;
  conversions: ConversionService;
  traffic: TrafficService;
  reconciler: Reconciler;
  /** Notices that arrive: 站内信, SMS and e-mail per the user's preferences. */
  notices: NoticeService;
  /** 有卡时通知我. */
  gpuSubscriptions: GpuSubscriptionService;
  /** The 概览 figures of instances (sampling, roll-ups, the API). */
  monitoring: Monitoring;
  /** GPU 空闲自动关机. */
  idleStops: IdleStops;
  /** The model square and its channel router (from the catalogue file's models and modelChannels). */
  models: ModelCatalogue;
  /** API keys of the model gateway. */
  apiKeys: ApiKeyService;
  /** Where the limits a user could multiply across replicas are counted (drivers/counters: redis, postgres or memory). */
  counters: Counters;
  /** Holds, settles and logs each /v1 call. */
  modelGateway: ModelGateway;
  /** The calls' stats, call log, hourly rollups and retention. */
  modelUsage: ModelUsage;
  /** The online experience's conversations. */
  conversations: ConversationService;
  /** Who may reach into a running instance, and closing what they may no longer reach. */
  accessGate: AccessGate;
  /** The web terminal's shells. */
  terminals: Terminals;
  /** 文件存储 (null unless instances are local sandboxes, the only machines that mount it). */
  fileStore: FileStore | null;
  /** 账号中心's SSH public keys, and which instance a key logs into. */
  sshKeys: SshKeyService;
  /** Where browsers reach the machines' web services (app.ts starts their listener when the driver has any). */
  machineOrigins: MachineOrigins;
  /** The ComfyUI of ComfyUI application instances on fleets that do not run applications themselves. */
  comfyApps: EmbeddedComfyApps;
  /** The API tokens of instances' ComfyUI, for programs (modules/instances/app-token.ts). */
  appTokens: AppTokens;
  /** Where the SSH gateway listens (app.ts starts it with the HTTP server when the driver gives shells). */
  sshEndpoint: { port: number };
  /** Set by `npm start`: the secret `npm run operator` on this machine presents (see cli/operator.ts). */
  localOperatorToken: string | null;
  /** Re-reads the catalogue file and applies it if its version is newer than the database's (start, file watcher, operator); true when applied. */
  reloadCatalogue(): Promise<boolean>;
  cookies: { set(reply: FastifyReply, token: string): void; clear(reply: FastifyReply): void };
  /** Each module's routes, bound by its wiring function (app.ts registers each in a scope of its own). */
  routes: RoutesPlugin[];
  /** The routes of the machines' own listener (app.ts): their web services. */
  machineRoutes: RoutesPlugin;
}

export async function makeDrivers(
  config: Config,
  db: Db,
  log: FastifyBaseLogger,
  clock: Clock,
  given: Partial<Drivers> = {},
  sshEndpoint: { port: number } = { port: config.SSH_GATEWAY_PORT },
): Promise<Drivers> {
  const sms: SmsDriver =
    config.SMS_DRIVER === 'aliyun'
      ? new AliyunSmsDriver({
          accessKeyId: config.ALIYUN_SMS_ACCESS_KEY_ID!,
          accessKeySecret: config.ALIYUN_SMS_ACCESS_KEY_SECRET!,
          signName: config.ALIYUN_SMS_SIGN_NAME!,
          templateCode: config.ALIYUN_SMS_TEMPLATE_CODE!,
          endpoint: config.ALIYUN_SMS_ENDPOINT,
        })
      : new OutboxSmsDriver(db, log, clock);
  const mail: MailDriver = config.MAIL_DRIVER === 'smtp' ? new SmtpMailDriver(config.SMTP_URL!, config.MAIL_FROM) : new OutboxMailDriver(db, log, clock);
  const payment =
    given.payment ??
    makePaymentDrivers(
      { ...config, PUBLIC_BASE_URL: config.publicBaseUrl },
      {
        now: () => clock.now(),
        sandbox:
          config.PAYMENT_DRIVER === 'sandbox' ? { store: new DbSandboxStore(db), gatewayKeys: await sandboxGatewayKeys(db, clock.now()), log } : undefined,
      },
    );
  const compute =
    given.compute ??
    makeComputeDriver(config.COMPUTE_DRIVER, {
      config,
      db,
      clock,
      log: (m) => log.warn(m),
      sshPort: () => sshEndpoint.port,
      fileStoreRoot: fileStoreRoot(config),
    });
  const realName: RealNameDriver =
    config.REALNAME_DRIVER === 'aliyun'
      ? new AliyunRealNameDriver({
          accessKeyId: config.ALIYUN_REALNAME_ACCESS_KEY_ID!,
          accessKeySecret: config.ALIYUN_REALNAME_ACCESS_KEY_SECRET!,
          endpoint: config.ALIYUN_REALNAME_ENDPOINT,
        })
      : new SandboxRealNameDriver(config.REALNAME_SANDBOX_REJECT);
  const trainer: TrainerDriver =
    config.TRAINER_DRIVER === 'kohya'
      ? new KohyaTrainer({
          exec: config.KOHYA_INSTANCE_ID ? machineExec(compute, config.KOHYA_INSTANCE_ID) : hostExec(),
          scriptsDir: config.KOHYA_SCRIPTS_DIR,
          workDir: config.KOHYA_WORK_DIR,
          accelerate: config.KOHYA_ACCELERATE,
          models: { sd15: config.KOHYA_SD15_MODEL, sdxl: config.KOHYA_SDXL_MODEL },
        })
      : new EmbeddedTrainer(clock, config.IMAGE_BACKEND_SPEEDUP);
  const comfyUrl = config.COMFYUI_URL;
  const comfy = comfyUrl
    ? new ComfyPainter({ url: async () => comfyUrl.replace(/\/$/, '') }, 1, config.COMFYUI_LORA_DIR ?? null)
    : new ComfyPainter(new EmbeddedComfy(clock, config.IMAGE_BACKEND_SPEEDUP));
  const painter = comfyUrl ? comfy : new EmbeddedPainter(clock, config.IMAGE_BACKEND_SPEEDUP);
  return { sms, mail, storage: await makeStorageDriver(config), payment, compute, realName, trainer, painter, comfy, ...given };
}

export async function createContext(opts: {
  config: Config;
  database: Database;
  clock: Clock;
  log: FastifyBaseLogger;
  drivers?: Partial<Drivers>;
  /** Fulfillers that replace the modules' own for their (category, order type) pairs (tests steer orders with them). */
  fulfillers?: FulfillerLine[];
}): Promise<AppContext> {
  const { config, database, clock } = opts;
  const db = database.db;
  // The listener of the events every replica hears (db/bus.ts) tells of its connection's troubles in the server's log.
  database.bus.log = (level, message) => opts.log[level](message);
  const routes: RoutesPlugin[] = [];
  // The SSH gateway's port: the configured one, or the one it got (SSH_GATEWAY_PORT=0) once it listens.
  const sshEndpoint = { port: config.SSH_GATEWAY_PORT };
  const drivers = await makeDrivers(config, db, opts.log, clock, opts.drivers, sshEndpoint);
  const sessionKey = config.SESSION_SECRET ? Buffer.from(config.SESSION_SECRET, 'base64url') : await loadOrCreateSecret(db, 'session-key', clock.now());
  const codeKey = await loadOrCreateSecret(db, 'code-hmac-key', clock.now());
  const sessions = new SessionService(db, sessionKey, clock);
  const auth = makeAuthGuards(sessions);
  const verification = verificationModule({
    db,
    clock,
    sms: drivers.sms,
    mail: drivers.mail,
    secret: codeKey,
    ipLimitPerHour: config.CODE_IP_LIMIT_PER_HOUR,
    auth,
    // The code routes check the account first, and accounts check codes: the users module comes after this one.
    recipients: () => users,
    devTools: config.devTools,
  });
  const { codes } = verification;
  routes.push(verification.routes);
  const catalogueStore = new CatalogueStore(db);
  const { ledger, routes: ledgerRoutes } = ledgerModule({ db, clock, auth });
  routes.push(ledgerRoutes);
  await ledger.ensurePlatformAccounts();
  const { vouchers, routes: vouchersRoutes } = vouchersModule({ db, clock, ledger, catalogue: catalogueStore, auth });
  routes.push(vouchersRoutes);
  // A file older than the database's catalogue version (or of the same version with other content)
  // is refused with a log line and the database's catalogue stays: a replica with a stale file
  // never reverts prices (catalogue/published.ts).
  const reloadCatalogue = async () => {
    const file = readCatalogueFile(config.catalogueFile);
    const outcome = await applyCatalogue(db, file, clock.now());
    for (const line of describeApply(config.catalogueFile, file, outcome)) opts.log[line.level](line.message);
    if (outcome.result === 'applied') catalogueStore.invalidateAll();
    return outcome.result === 'applied';
  };
  await reloadCatalogue();
  await catalogueStore.get();
  limitPasswordHashing({ concurrency: config.PASSWORD_HASH_CONCURRENCY, queue: config.PASSWORD_HASH_QUEUE });
  // The recharge module sits above gifts (a recharge grants its bonus), so gifts read its totals through their own interface.
  const { gifts, routes: giftsRoutes } = giftsModule({ db, clock, ledger, recharged: new RechargeTotals(db), catalogue: catalogueStore, auth });
  routes.push(giftsRoutes);
  const usersModuleOut = usersModule({
    db,
    clock,
    sessions,
    codes,
    storage: drivers.storage,
    operatorMobiles: config.OPERATOR_MOBILES,
    loginIpFailureLimit: config.LOGIN_IP_FAILURE_LIMIT,
    onRegistered: [(userId, tx) => vouchers.grantNewUser(userId, tx)],
    auth,
    gifts,
    childLimit: config.CHILD_ACCOUNT_LIMIT,
    // What a child spent is the orders module's, built later on the accounts: asked only once the server runs.
    spentOf: (ids) => spending.summary(ids),
    cookieSecure: config.COOKIE_SECURE,
    cookieDomain: config.COOKIE_DOMAIN,
    uploadMaxBytes: config.UPLOAD_MAX_BYTES,
  });
  routes.push(usersModuleOut.routes);
  const { users, balanceFloors, children, cookies } = usersModuleOut;
  const {
    notices,
    gpuSubscriptions,
    routes: noticesRoutes,
  } = noticesModule({
    db,
    clock,
    sms: drivers.sms,
    mail: drivers.mail,
    findUser: (id) => users.findById(id),
    smsTemplates: config.ALIYUN_SMS_NOTICE_TEMPLATES,
    publicBaseUrl: config.publicBaseUrl,
    log: opts.log,
    catalogue: catalogueStore,
    auth,
  });
  routes.push(noticesRoutes);
  const {
    payments,
    routes: paymentsRoutes,
    refundsModule,
  } = paymentsModule({
    db,
    clock,
    ledger,
    drivers: drivers.payment,
    publicBaseUrl: config.publicBaseUrl,
    log: opts.log,
  });
  routes.push(paymentsRoutes);
  const { recharge, routes: rechargeRoutes } = rechargeModule({ db, clock, catalogue: catalogueStore, payments, gifts, auth });
  routes.push(rechargeRoutes);
  const { images, routes: imagesRoutes } = imagesModule({
    db,
    clock,
    auth,
    catalogue: catalogueStore,
    users,
    compute: drivers.compute,
    log: (m) => opts.log.warn(m),
  });
  routes.push(imagesRoutes);
  const osFamilies = drivers.compute.osFamilies;
  const { datasets, routes: datasetsRoutes } = datasetsModule({ db, clock, storage: drivers.storage, users, auth });
  routes.push(datasetsRoutes);
  const catalogueModuleOut = catalogueModule({
    store: catalogueStore,
    clock,
    vouchers,
    userImages: images,
    runs: (image: { os: string }) => !osFamilies || osFamilies.includes(osFamilyOf(image.os)),
    unsold: drivers.compute.unsold,
    // The local driver's host: the market sells its cores, memory, cards and images only (catalogue/host-market.ts).
    offer: drivers.compute.offer?.bind(drivers.compute),
    // A fleet's hosts: each sold only while its agent is healthy, for no more cards than it reports (catalogue/fleet-market.ts).
    offerOf: drivers.compute.offerOf?.bind(drivers.compute),
    auth,
    simulated: { images: !config.COMFYUI_URL, training: config.TRAINER_DRIVER !== 'kohya' },
    log: (m) => opts.log.info(m),
  });
  routes.push(catalogueModuleOut.routes);
  const { catalogue, quotes, inventory } = catalogueModuleOut;
  // Orders are delivered by the modules that sell them (resources, instances), which are built after the orders module
  // because they create and charge orders: it looks its fulfillers up in the table filled once they exist.
  let fulfillerOf: FulfillerOf = () => undefined;
  const resourcesWired = resourcesModule({
    db,
    clock,
    auth,
    catalogue: catalogueStore,
    pricing: catalogue,
    // A package names the order that bought it; the orders module, which sells packages, comes next.
    orders: { uidsOf: (ids) => ordersWired.orders.uidsOf(ids) },
  });
  const { resources } = resourcesWired;
  const ordersWired = ordersModule({
    db,
    clock,
    log: opts.log,
    auth,
    ledger,
    gifts,
    vouchers,
    payments,
    catalogue: catalogueStore,
    pricing: quotes,
    resources,
    spendLimitsOf,
    fulfillerOf: (category, type) => fulfillerOf(category, type),
    // A post-paid start counts the payer's running instances, which the instances module (built later, on the orders module) knows.
    hourlyLoads: [(tx, payerId, except, createdBy, pendingOrderIds) => instancesWired.instances.hourlyLoad(tx, payerId, except, createdBy, pendingOrderIds)],
    requireRealName: config.REQUIRE_REALNAME_FOR_PURCHASE,
  });
  const { orders, purchase, checkout, usage, spending } = ordersWired;
  routes.push(resourcesWired.routes, ordersWired.routes);
  const { training, routes: trainingRoutes } = trainingModule({
    db,
    clock,
    ledger,
    storage: drivers.storage,
    resources,
    datasets,
    catalogue,
    trainer: drivers.trainer,
    auth,
    capacity: config.TRAINER_CAPACITY,
    tickMs: config.IMAGE_BACKEND_TICK_MS,
    bus: database.bus,
  });
  routes.push(trainingRoutes);
  const { certification, routes: certificationRoutes } = certificationModule({
    db,
    clock,
    verifier: drivers.realName,
    storage: drivers.storage,
    box: new PasswordBox(await loadOrCreateSecret(db, 'identity-number-key', clock.now())),
    users,
    log: opts.log,
    auth,
  });
  routes.push(certificationRoutes);
  const { students, routes: studentsRoutes } = studentsModule({
    db,
    clock,
    codes,
    storage: drivers.storage,
    catalogue: catalogueStore,
    reviews: certification,
    users,
    auth,
  });
  routes.push(studentsRoutes);
  const { counters, why: countersWhy } = await chooseCounters(config.REDIS_URL, database, (e) => opts.log.warn({ err: e }, '限流计数的过期清理失败'));
  opts.log.info(`限流计数：${countersWhy}`);
  const model = modelModule({
    db,
    clock,
    log: opts.log,
    catalogue: catalogueStore,
    ledger,
    resources,
    users,
    sessions,
    auth,
    embeddedTokensPerSecond: config.MODEL_EMBEDDED_TOKENS_PER_SECOND,
    callRetentionDays: config.MODEL_CALL_RETENTION_DAYS,
    counters,
  });
  routes.push(model.routes);
  const { models, apiKeys, modelGateway, modelUsage, conversations } = model;
  // A child disabled, removed or refused usingLLM is refused by the gateway at once. Registered here: the model
  // module reads accounts through the users module, so the users module cannot be handed the model's keys.
  children.onChange((id) => apiKeys.forgetAccount(id));
  const { diffusion, routes: diffusionRoutes } = diffusionModule({
    db,
    clock,
    ledger,
    storage: drivers.storage,
    catalogue,
    training,
    resources,
    painter: drivers.painter,
    comfy: drivers.comfy,
    auth,
    capacity: config.PAINTER_CAPACITY,
    tickMs: config.IMAGE_BACKEND_TICK_MS,
  });
  routes.push(diffusionRoutes);
  const comfyApps = new EmbeddedComfyApps();
  const { comfyWorkflows, routes: comfyuiRoutes } = comfyuiModule({ db, clock, diffusion, auth, comfy: drivers.comfy, comfyApps });
  routes.push(comfyuiRoutes);
  const machineOrigins = new MachineOrigins({ baseUrl: config.MACHINE_BASE_URL ?? null, publicBaseUrl: config.publicBaseUrl, sessionKey, clock, counters });
  const instancesWired = instancesModule({
    db,
    clock,
    log: opts.log,
    auth,
    driver: drivers.compute,
    catalogue: catalogueStore,
    pricing: quotes,
    inventory,
    images,
    users,
    children,
    notices,
    floors: balanceFloors,
    ledger,
    gifts,
    orders,
    checkout,
    usage,
    fulfillers: ordersWired.fulfillers,
    resources,
    machinePages: machineOrigins,
    passwordKey: await loadOrCreateSecret(db, 'instance-password-key', clock.now()),
    publicBaseUrl: config.publicBaseUrl,
    billingTickSeconds: config.BILLING_TICK_SECONDS,
    // A meter tick charges its batches in parallel lanes on PostgreSQL (one connection each); PGlite has one connection.
    meterLanes: database.kind === 'postgres' ? METER_LANES : 1,
    balanceLowHours: config.NOTICE_BALANCE_LOW_HOURS,
    autoRenewLeadHours: config.AUTO_RENEW_LEAD_HOURS,
    prepaidRefundFeeRate: config.PREPAID_REFUND_FEE_RATE,
    computeOpRetryMs: config.COMPUTE_OP_RETRY_SECONDS * 1000,
  });
  routes.push(instancesWired.routes);
  // An image is not deleted while instances are being created from it (they hold its row meanwhile).
  images.creatingFrom = (tx, imageId) => instancesWired.creation.pendingFrom(tx, imageId);
  fulfillerOf = fulfillerTable([...resourcesWired.fulfillers, ...instancesWired.fulfillers, ...(opts.fulfillers ?? [])]);
  const {
    instances,
    instanceViews,
    renewals,
    migration,
    saveImage,
    disks,
    instanceBilling,
    prepaid,
    scheduledStops,
    conversions,
    traffic,
    reconciler,
    appTokens,
  } = instancesWired;
  const accessWired = accessModule({
    db,
    clock,
    auth,
    sessions,
    users,
    children,
    instanceViews,
    instances,
    appTokens,
    driver: drivers.compute,
    machineOrigins,
    comfyApps,
    publicBaseUrl: config.publicBaseUrl,
    bus: database.bus,
  });
  routes.push(accessWired.routes);
  const { accessGate, terminals, sshKeys } = accessWired;
  const { monitoring, idleStops, routes: monitoringRoutes } = monitoringModule({ db, clock, auth, driver: drivers.compute, instances, notices });
  routes.push(monitoringRoutes);
  const { fileStore, routes: fileStoreRoutes } = fileStoreModule({ auth, mount: drivers.compute.fileStore });
  routes.push(fileStoreRoutes);
  // `npm start` hands the running server the token `npm run operator` presents (main.ts): kept here, read at each request.
  const localOperator = { token: null as string | null };
  const operatorModuleOut = operatorModule({
    db,
    clock,
    ledger,
    gifts,
    users,
    certification,
    students,
    models,
    catalogueStore,
    auth,
    operatorMobiles: config.OPERATOR_MOBILES,
    approvalThresholdYuan: config.OPERATOR_APPROVAL_THRESHOLD_YUAN,
    localOperatorToken: () => localOperator.token,
    imageRegistration: {
      registrar: new ImageRegistrar(path.join(localComputeDir(config.dataDir), 'oci'), registryOptionsOf(config)),
      inUse: (ids) => instancesUsingImages(db, ids),
      log: (m) => opts.log.warn(m),
    },
  });
  routes.push(operatorModuleOut.routes);
  const { operator, operatorOf, auditOf } = operatorModuleOut;
  const { invoices, routes: invoicesRoutes } = invoicesModule({
    db,
    clock,
    ledger,
    users,
    modelHeld: (payerId, exec) => modelGateway.heldFor(payerId, exec),
    auth,
    operatorOf: operatorOf('invoices.manage'),
    audit: auditOf,
  });
  routes.push(invoicesRoutes);
  // Refunds to the original method: a recharge's bonus is taken back in proportion (payments/refunds.ts).
  const { refunds, routes: refundsRoutes } = refundsModule({
    gifts,
    auth,
    operatorOf: operatorOf('refunds.manage'),
    bonusOf: async (p) => (p.purpose === 'recharge' ? BigInt((await recharge.get(p.userId, p.subjectId)).bonus) : 0n),
  });
  routes.push(refundsRoutes);
  return {
    config,
    database,
    db,
    clock,
    drivers,
    sessions,
    codes,
    users,
    auth,
    catalogueStore,
    catalogue,
    quotes,
    inventory,
    vouchers,
    ledger,
    gifts,
    payments,
    refunds,
    recharge,
    orders,
    purchase,
    checkout,
    resources,
    invoices,
    operator,
    imageGc: { tick: async () => (drivers.compute instanceof LocalComputeDriver ? drivers.compute.collectImages(await keptImageIds(db)) : 0) },
    certification,
    students,
    children,
    instances,
    instanceViews,
    renewals,
    migration,
    saveImage,
    images,
    datasets,
    training,
    diffusion,
    comfyWorkflows,
    disks,
    instanceBilling,
    prepaid,
    scheduledStops,
    balanceFloors,
    conversions,
    traffic,
    reconciler,
    notices,
    gpuSubscriptions,
    monitoring,
    idleStops,
    models,
    apiKeys,
    counters,
    modelGateway,
    modelUsage,
    conversations,
    accessGate,
    terminals,
    fileStore,
    sshEndpoint,
    machineOrigins,
    comfyApps,
    appTokens,
    sshKeys,
    get localOperatorToken() {
      return localOperator.token;
    },
    set localOperatorToken(token: string | null) {
      localOperator.token = token;
    },
    reloadCatalogue,
    routes,
    machineRoutes: accessWired.machineRoutes,
    cookies,
  };
}

/** What the scheduler's jobs call (jobs/scheduler.ts): the app's services, at the configured intervals. */
export function schedulerDeps(ctx: AppContext): SchedulerDeps {
  const { config } = ctx;
  return {
    ...ctx,
    intervals: { reconcileMs: config.RECONCILE_INTERVAL_MS, billingTickSeconds: config.BILLING_TICK_SECONDS, imageBackendTickMs: config.IMAGE_BACKEND_TICK_MS },
  };
}

/** Where the accounts' 文件存储 trees live (the local driver mounts `<root>/<payerId>`). */
export function fileStoreRoot(config: Pick<Config, 'dataDir'>): string {
  return path.join(config.dataDir, 'filestore');
}
