/**
 * Everything a route needs, built once per server: configuration, the database, the drivers of
 * the outside worlds and the domain services. Tests build the same thing with other drivers.
 */
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
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
import { LocalStorageDriver } from './drivers/storage/local.js';
import type { StorageDriver } from './drivers/storage/types.js';
import path from 'node:path';
import { makeAuthGuards, type AuthGuards } from './http/auth.js';
import { SESSION_COOKIE, SESSION_TTL_SECONDS, SessionService } from './modules/sessions/service.js';
import { loadOrCreateSecret } from './modules/system/secrets.js';
import { UserService } from './modules/users/service.js';
import { VerificationService } from './modules/verification/service.js';
import { CatalogueService } from './modules/catalogue/service.js';
import { InventoryService } from './modules/catalogue/inventory.js';
import { applyCatalogue, readCatalogueFile } from './modules/catalogue/seed-file.js';
import { CatalogueStore } from './modules/catalogue/store.js';
import { VoucherService } from './modules/vouchers/service.js';
import { LedgerService } from './modules/ledger/service.js';
import { GiftService } from './modules/gifts/service.js';
import { PaymentService } from './modules/payments/service.js';
import { DbSandboxStore, sandboxGatewayKeys } from './modules/payments/sandbox-store.js';
import { RechargeService } from './modules/recharge/service.js';
import { OrderService } from './modules/orders/service.js';
import { ResourceService } from './modules/resources/service.js';
import { InvoiceService } from './modules/invoices/service.js';
import { OperatorService } from './modules/operator/service.js';
import { makePaymentDrivers, type PaymentDrivers } from './drivers/payment/index.js';
import type { ComputeDriver } from './drivers/compute/types.js';
import { SimulatedComputeDriver, parseSimDelays } from './drivers/compute/simulated.js';
import { AgentComputeDriver } from './drivers/compute/agent.js';
import { InstanceService } from './modules/instances/service.js';
import { DiskService } from './modules/instances/disks.js';
import { ImageService } from './modules/images/service.js';
import { InstanceBilling, METER_LANES, Meter } from './modules/instances/billing.js';
import { Reconciler } from './modules/instances/reconciler.js';
import { PrepaidService } from './modules/instances/prepaid.js';
import { ConversionService } from './modules/instances/conversions.js';
import { TrafficService } from './modules/instances/traffic.js';
import { CertificationService } from './modules/certification/service.js';
import { ChildService } from './modules/children/service.js';
import { StudentService } from './modules/students/service.js';
import { PasswordBox } from './modules/instances/secrets.js';
import { users as usersTable } from './db/schema.js';
import { eq } from 'drizzle-orm';

export interface Drivers {
  sms: SmsDriver;
  mail: MailDriver;
  storage: StorageDriver;
  payment: PaymentDrivers;
  compute: ComputeDriver;
  realName: RealNameDriver;
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
  inventory: InventoryService;
  vouchers: VoucherService;
  ledger: LedgerService;
  gifts: GiftService;
  payments: PaymentService;
  recharge: RechargeService;
  orders: OrderService;
  resources: ResourceService;
  invoices: InvoiceService;
  operator: OperatorService;
  certification: CertificationService;
  students: StudentService;
  children: ChildService;
  instances: InstanceService;
  images: ImageService;
  disks: DiskService;
  instanceBilling: InstanceBilling;
  /** Prepaid instances: auto-renewal and refund of unused time. */
  prepaid: PrepaidService;
  conversions: ConversionService;
  traffic: TrafficService;
  reconciler: Reconciler;
  /** Set by `npm start`: the secret `npm run operator` on this machine presents (see cli/operator.ts). */
  localOperatorToken: string | null;
  /** Re-reads the catalogue file and applies it if it changed (start, file watcher, operator). */
  reloadCatalogue(): Promise<boolean>;
  cookies: { set(reply: FastifyReply, token: string): void; clear(reply: FastifyReply): void };
}

export async function makeDrivers(config: Config, db: Db, log: FastifyBaseLogger, clock: Clock, given: Partial<Drivers> = {}): Promise<Drivers> {
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
  const mail: MailDriver =
    config.MAIL_DRIVER === 'smtp' ? new SmtpMailDriver(config.SMTP_URL!, config.MAIL_FROM) : new OutboxMailDriver(db, log, clock);
  const payment =
    given.payment ??
    makePaymentDrivers(
      { ...config, PUBLIC_BASE_URL: config.publicBaseUrl },
      {
        now: () => clock.now(),
        sandbox: config.PAYMENT_DRIVER === 'sandbox' ? { store: new DbSandboxStore(db), gatewayKeys: await sandboxGatewayKeys(db, clock.now()), log } : undefined,
      },
    );
  const compute =
    given.compute ??
    (config.COMPUTE_DRIVER === 'agent'
      ? new AgentComputeDriver({ baseUrl: config.COMPUTE_AGENT_URL!, keyId: config.COMPUTE_AGENT_KEY_ID!, secret: config.COMPUTE_AGENT_SECRET! })
      : new SimulatedComputeDriver(db, clock, parseSimDelays(config.COMPUTE_SIM_DELAYS), config.COMPUTE_SIM_DOMAIN));
  const realName: RealNameDriver =
    config.REALNAME_DRIVER === 'aliyun'
      ? new AliyunRealNameDriver({
          accessKeyId: config.ALIYUN_REALNAME_ACCESS_KEY_ID!,
          accessKeySecret: config.ALIYUN_REALNAME_ACCESS_KEY_SECRET!,
          endpoint: config.ALIYUN_REALNAME_ENDPOINT,
        })
      : new SandboxRealNameDriver(config.REALNAME_SANDBOX_REJECT);
  return { sms, mail, storage: new LocalStorageDriver(path.join(config.dataDir, 'files')), payment, compute, realName, ...given };
}

export async function createContext(opts: {
  config: Config;
  database: Database;
  clock: Clock;
  log: FastifyBaseLogger;
  drivers?: Partial<Drivers>;
}): Promise<AppContext> {
  const { config, database, clock } = opts;
  const db = database.db;
  const drivers = await makeDrivers(config, db, opts.log, clock, opts.drivers);
  const sessionKey = config.SESSION_SECRET
    ? Buffer.from(config.SESSION_SECRET, 'base64url')
    : await loadOrCreateSecret(db, 'session-key', clock.now());
  const codeKey = await loadOrCreateSecret(db, 'code-hmac-key', clock.now());
  const sessions = new SessionService(db, sessionKey, clock);
  const codes = new VerificationService({ db, clock, sms: drivers.sms, mail: drivers.mail, secret: codeKey, ipLimitPerHour: config.CODE_IP_LIMIT_PER_HOUR });
  const catalogueStore = new CatalogueStore(db);
  const ledger = new LedgerService(db, clock);
  const vouchers = new VoucherService(db, ledger, catalogueStore, clock);
  const reloadCatalogue = async () => {
    const changed = await applyCatalogue(db, readCatalogueFile(config.catalogueFile), clock.now());
    if (changed) catalogueStore.invalidateAll();
    return changed;
  };
  await reloadCatalogue();
  await catalogueStore.get();
  const users = new UserService({
    db,
    clock,
    sessions,
    codes,
    storage: drivers.storage,
    operatorMobiles: config.OPERATOR_MOBILES,
    onRegistered: [(userId, tx) => vouchers.grantNewUser(userId, tx)],
  });
  const gifts = new GiftService(db, ledger, clock, catalogueStore);
  const payments = new PaymentService({ db, clock, ledger, drivers: drivers.payment, publicBaseUrl: config.publicBaseUrl, log: opts.log });
  const recharge = new RechargeService({ db, clock, catalogue: catalogueStore, payments, gifts });
  const orders = new OrderService({ db, clock, ledger, gifts, vouchers, payments, catalogue: catalogueStore, log: opts.log });
  const resources = new ResourceService({ db, clock, catalogue: catalogueStore });
  orders.registerFulfiller('Ai', resources);
  const inventory = new InventoryService(catalogueStore, clock);
  const images = new ImageService({ db, clock, catalogue: catalogueStore });
  const catalogue = new CatalogueService(catalogueStore, vouchers, clock, images);
  const meter = new Meter(orders, resources);
  const instances = new InstanceService({
    db,
    clock,
    driver: drivers.compute,
    inventory,
    catalogue: catalogueStore,
    orders,
    meter,
    pricing: catalogue,
    images,
    passwords: new PasswordBox(await loadOrCreateSecret(db, 'instance-password-key', clock.now())),
    log: opts.log,
    notify: async (userId, text) => {
      // Notices go out by SMS only while the SMS driver is the embedded outbox; a provider needs a notice template.
      if (!drivers.sms.embedded) return;
      const [u] = await db.select({ mobile: usersTable.mobile }).from(usersTable).where(eq(usersTable.id, userId));
      if (u?.mobile) await drivers.sms.send({ to: u.mobile, code: '', scene: 'notice', text: `【算力云】${text}` });
    },
    publicBaseUrl: config.publicBaseUrl,
  });
  for (const category of ['Gpu', 'App', 'Generic', 'Desktop', 'Ebusiness', 'Game']) orders.registerFulfiller(category, instances);
  const disks = new DiskService({ db, clock, driver: drivers.compute, catalogue: catalogueStore, pricing: catalogue, orders, instances, ledger });
  // A meter tick charges its batches in parallel lanes on PostgreSQL (one connection each); PGlite has one connection.
  const instanceBilling = new InstanceBilling({
    db,
    clock,
    meter,
    instances,
    orders,
    catalogue: catalogueStore,
    tickSeconds: config.BILLING_TICK_SECONDS,
    workers: database.kind === 'postgres' ? METER_LANES : 1,
  });
  const prepaid = new PrepaidService({ db, clock, instances, orders, gifts, log: opts.log, leadHours: config.AUTO_RENEW_LEAD_HOURS, refundFeeRate: config.PREPAID_REFUND_FEE_RATE });
  const conversions = new ConversionService({ db, clock, instances, orders, pricing: catalogue, catalogue: catalogueStore, meter });
  instances.useConversions(conversions);
  const traffic = new TrafficService({ db, clock, catalogue: catalogueStore, pricing: catalogue, orders, gifts, instances });
  const reconciler = new Reconciler({ db, clock, driver: drivers.compute, instances, log: opts.log, retryAfterMs: config.COMPUTE_OP_RETRY_SECONDS * 1000 });
  const cookieOptions = {
    httpOnly: true,
    sameSite: 'lax' as const,
    path: '/',
    secure: config.COOKIE_SECURE,
    ...(config.COOKIE_DOMAIN ? { domain: config.COOKIE_DOMAIN } : {}),
  };
  return {
    config,
    database,
    db,
    clock,
    drivers,
    sessions,
    codes,
    users,
    auth: makeAuthGuards(sessions),
    catalogueStore,
    catalogue,
    inventory,
    vouchers,
    ledger,
    gifts,
    payments,
    recharge,
    orders,
    resources,
    invoices: new InvoiceService({ db, clock, ledger }),
    operator: new OperatorService({ db, ledger, gifts }),
    certification: new CertificationService({
      db,
      clock,
      verifier: drivers.realName,
      storage: drivers.storage,
      box: new PasswordBox(await loadOrCreateSecret(db, 'identity-number-key', clock.now())),
      log: opts.log,
    }),
    students: new StudentService({ db, clock, codes, storage: drivers.storage, catalogue: catalogueStore }),
    children: new ChildService({ db, clock, sessions, limit: config.CHILD_ACCOUNT_LIMIT }),
    instances,
    images,
    disks,
    instanceBilling,
    prepaid,
    conversions,
    traffic,
    reconciler,
    localOperatorToken: null,
    reloadCatalogue,
    cookies: {
      set: (reply, token) => void reply.setCookie(SESSION_COOKIE, token, { ...cookieOptions, maxAge: SESSION_TTL_SECONDS }),
      clear: (reply) => void reply.clearCookie(SESSION_COOKIE, cookieOptions),
    },
  };
}
