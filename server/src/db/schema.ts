/**
 * Every table of the server, one file so drizzle-kit generates migrations from it.
 * Each block says which module owns it; other modules go through that module's service.
 */
import { sql } from 'drizzle-orm';
import { bigint, bigserial, boolean, check, doublePrecision, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

// --- modules/users ---------------------------------------------------------
export const users = pgTable(
  'users',
  {
    id: uuid('id').primaryKey(),
    mobile: text('mobile'),
    email: text('email'),
    passwordHash: text('password_hash'),
    accountType: text('account_type', { enum: ['personal', 'enterprise'] }).notNull().default('personal'),
    name: text('name').notNull().default(''),
    nickname: text('nickname').notNull().default(''),
    logo: text('logo').notNull().default(''),
    certStatus: text('cert_status', { enum: ['Init', 'Pending', 'Succeed', 'Failed'] }).notNull().default('Init'),
    certType: text('cert_type', { enum: ['Uncertified', 'Personal', 'Enterprise'] }).notNull().default('Uncertified'),
    credit: integer('credit').notNull().default(0),
    from: text('from').notNull().default('web'),
    isStudent: boolean('is_student').notNull().default(false),
    isChild: boolean('is_child').notNull().default(false),
    parentId: uuid('parent_id'),
    childName: text('child_name').notNull().default(''),
    userVersion: integer('user_version').notNull().default(1),
    firstVisit: boolean('first_visit').notNull().default(true),
    openModal: boolean('open_modal').notNull().default(false),
    isOperator: boolean('is_operator').notNull().default(false),
    disabled: boolean('disabled').notNull().default(false),
    createGPUInstance: boolean('perm_create_gpu_instance').notNull().default(false),
    createImageAPP: boolean('perm_create_image_app').notNull().default(false),
    openYunBucket: boolean('perm_open_yun_bucket').notNull().default(false),
    gpu: boolean('perm_gpu').notNull().default(false),
    app: boolean('perm_app').notNull().default(false),
    image: boolean('perm_image').notNull().default(false),
    usingLLM: boolean('perm_using_llm').notNull().default(false),
    /** The parent's note on a child account. */
    childRemark: text('child_remark').notNull().default(''),
    /** A deleted child keeps its row (operation logs name it) but frees its name. */
    deletedAt: ts('deleted_at'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('users_mobile_uq').on(t.mobile).where(sql`${t.mobile} is not null`),
    uniqueIndex('users_email_uq').on(t.email).where(sql`${t.email} is not null`),
    uniqueIndex('users_live_child_name_uq').on(t.parentId, t.childName).where(sql`${t.isChild} and ${t.deletedAt} is null`),
  ],
);

// --- modules/certification -------------------------------------------------
/** One application per user and type, updated in place; decisions are kept in account_reviews. */
export const certifications = pgTable(
  'certifications',
  {
    id: uuid('id').primaryKey(),
    userId: uuid('user_id').notNull(),
    type: text('type', { enum: ['Personal', 'Enterprise'] }).notNull(),
    status: text('status', { enum: ['Init', 'Pending', 'Succeed', 'Failed'] }).notNull(),
    realName: text('real_name').notNull().default(''),
    /** AES-GCM sealed; only the masked form is ever shown. */
    idNumberSealed: text('id_number_sealed').notNull().default(''),
    idNumberMasked: text('id_number_masked').notNull().default(''),
    companyName: text('company_name').notNull().default(''),
    creditCode: text('credit_code').notNull().default(''),
    legalPerson: text('legal_person').notNull().default(''),
    contactName: text('contact_name').notNull().default(''),
    contactMobile: text('contact_mobile').notNull().default(''),
    licenceKey: text('licence_key'),
    /** The verifier's reference (personal) for a later query. */
    providerRef: text('provider_ref'),
    reason: text('reason').notNull().default(''),
    submittedAt: ts('submitted_at'),
    decidedAt: ts('decided_at'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [uniqueIndex('certifications_user_type_uq').on(t.userId, t.type), index('certifications_status_idx').on(t.type, t.status, t.submittedAt)],
);

// --- modules/students ------------------------------------------------------
export const studentVerifications = pgTable(
  'student_verifications',
  {
    userId: uuid('user_id').primaryKey(),
    status: text('status', { enum: ['Init', 'Pending', 'Succeed', 'Failed'] }).notNull(),
    school: text('school').notNull().default(''),
    level: text('level', { enum: ['PhD', 'master', 'undergraduate', 'specialist', 'other'] }),
    enrollYear: integer('enroll_year'),
    graduateYear: integer('graduate_year'),
    email: text('email').notNull().default(''),
    emailVerifiedAt: ts('email_verified_at'),
    imageKey: text('image_key'),
    reason: text('reason').notNull().default(''),
    submittedAt: ts('submitted_at'),
    decidedAt: ts('decided_at'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('student_verifications_status_idx').on(t.status, t.submittedAt)],
);

/** Every decision on a certification or student application: the verifier's or an operator's. */
export const accountReviews = pgTable(
  'account_reviews',
  {
    id: uuid('id').primaryKey(),
    kind: text('kind', { enum: ['personal', 'enterprise', 'student'] }).notNull(),
    subjectId: text('subject_id').notNull(),
    userId: uuid('user_id').notNull(),
    decision: text('decision', { enum: ['approve', 'reject'] }).notNull(),
    reason: text('reason').notNull().default(''),
    /** null: the real-name verification service decided. */
    actorId: uuid('actor_id'),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('account_reviews_created_idx').on(t.createdAt), index('account_reviews_user_idx').on(t.userId)],
);

export const loginFailures = pgTable(
  'login_failures',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    account: text('account').notNull(),
    ip: text('ip').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('login_failures_account_idx').on(t.account, t.createdAt)],
);

// --- modules/sessions ------------------------------------------------------
export const sessions = pgTable(
  'sessions',
  {
    id: uuid('id').primaryKey(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    createdAt: ts('created_at').notNull(),
    expiresAt: ts('expires_at').notNull(),
    revokedAt: ts('revoked_at'),
    revokedReason: text('revoked_reason'),
    ip: text('ip').notNull().default(''),
    userAgent: text('user_agent').notNull().default(''),
  },
  (t) => [index('sessions_user_idx').on(t.userId)],
);

/** Keys the server generates once and shares between processes (the session encryption key). */
export const serverSecrets = pgTable('server_secrets', {
  name: text('name').primaryKey(),
  value: text('value').notNull(),
  createdAt: ts('created_at').notNull(),
});

// --- modules/verification --------------------------------------------------
export const verificationCodes = pgTable(
  'verification_codes',
  {
    id: uuid('id').primaryKey(),
    target: text('target').notNull(),
    channel: text('channel', { enum: ['sms', 'email'] }).notNull(),
    scene: text('scene').notNull(),
    codeHash: text('code_hash').notNull(),
    attempts: integer('attempts').notNull().default(0),
    ip: text('ip').notNull(),
    createdAt: ts('created_at').notNull(),
    expiresAt: ts('expires_at').notNull(),
    consumedAt: ts('consumed_at'),
  },
  (t) => [
    index('verification_codes_target_idx').on(t.target, t.createdAt),
    index('verification_codes_ip_idx').on(t.ip, t.createdAt),
  ],
);

/** What the embedded SMS and mail drivers "sent": read by /dev/outbox. */
export const outbox = pgTable(
  'outbox',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    to: text('to').notNull(),
    channel: text('channel', { enum: ['sms', 'email'] }).notNull(),
    text: text('text').notNull(),
    code: text('code').notNull().default(''),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('outbox_to_idx').on(t.to, t.id)],
);

// --- modules/catalogue -----------------------------------------------------
// Loaded from the operator's seed file (server/catalogue/catalogue.json) at start; rows that leave
// the file are deactivated, never deleted, because orders and instances refer to them.
const sortAndActive = {
  sort: integer('sort').notNull().default(0),
  active: boolean('active').notNull().default(true),
};

export const catalogueRegions = pgTable('catalogue_regions', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  area: text('area').notNull().default(''),
  ...sortAndActive,
});

export const catalogueRooms = pgTable('catalogue_rooms', {
  id: text('id').primaryKey(),
  regionId: text('region_id').notNull(),
  name: text('name').notNull(),
  zones: jsonb('zones').$type<string[]>().notNull(),
  isDefault: boolean('is_default').notNull().default(false),
  ...sortAndActive,
});

export const catalogueGpuTypes = pgTable('catalogue_gpu_types', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  memoryGb: integer('memory_gb').notNull(),
  architecture: text('architecture').notNull(),
  cudaCapability: text('cuda_capability').notNull(),
  minCuda: text('min_cuda').notNull(),
  fp32Tflops: doublePrecision('fp32_tflops').notNull(),
  description: text('description').notNull().default(''),
  ...sortAndActive,
});

/** The fleet's hosts. gpu_free is live inventory: the compute side reserves and releases cards. */
export const catalogueHosts = pgTable(
  'catalogue_hosts',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    roomId: text('room_id').notNull(),
    zone: text('zone').notNull(),
    gpuTypeId: text('gpu_type_id').notNull(),
    gpuTotal: integer('gpu_total').notNull(),
    gpuFree: integer('gpu_free').notNull(),
    cpuModel: text('cpu_model').notNull(),
    cpuPerGpu: integer('cpu_per_gpu').notNull(),
    memoryGbPerGpu: integer('memory_gb_per_gpu').notNull(),
    systemDiskGb: integer('system_disk_gb').notNull(),
    dataDiskFreeGb: integer('data_disk_free_gb').notNull(),
    dataDiskMaxGb: integer('data_disk_max_gb').notNull(),
    maxCuda: text('max_cuda').notNull(),
    ...sortAndActive,
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    index('catalogue_hosts_room_idx').on(t.roomId),
    check('catalogue_hosts_free_range', sql`${t.gpuFree} >= 0 and ${t.gpuFree} <= ${t.gpuTotal}`),
  ],
);

export const catalogueSizes = pgTable('catalogue_sizes', {
  id: text('id').primaryKey(),
  category: text('category', { enum: ['Generic', 'Desktop', 'Ebusiness', 'Game'] }).notNull(),
  name: text('name').notNull(),
  cpu: integer('cpu').notNull(),
  memoryGb: integer('memory_gb').notNull(),
  systemDiskGb: integer('system_disk_gb').notNull(),
  bandwidthMbps: integer('bandwidth_mbps').notNull(),
  gpuName: text('gpu_name').notNull().default(''),
  regionIds: jsonb('region_ids').$type<string[]>().notNull(),
  description: text('description').notNull().default(''),
  ...sortAndActive,
});

export const catalogueImages = pgTable('catalogue_images', {
  id: text('id').primaryKey(),
  kind: text('kind', { enum: ['os', 'framework'] }).notNull(),
  name: text('name').notNull(),
  os: text('os').notNull(),
  framework: text('framework').notNull().default(''),
  frameworkVersion: text('framework_version').notNull().default(''),
  cuda: text('cuda').notNull().default(''),
  python: text('python').notNull().default(''),
  forGpu: boolean('for_gpu').notNull(),
  forCategories: jsonb('for_categories').$type<string[]>().notNull(),
  description: text('description').notNull().default(''),
  ...sortAndActive,
});

export const catalogueApplications = pgTable('catalogue_applications', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  category: text('category').notNull(),
  description: text('description').notNull(),
  cover: text('cover').notNull(),
  defaultPort: integer('default_port').notNull(),
  imageId: text('image_id').notNull(),
  minGpuMemoryGb: integer('min_gpu_memory_gb').notNull(),
  tags: jsonb('tags').$type<string[]>().notNull(),
  ...sortAndActive,
});

/** List price of one cycle unit (0.0001 yuan) and the operator's discount for it (10000 = none). */
export const cataloguePrices = pgTable(
  'catalogue_prices',
  {
    productKind: text('product_kind', { enum: ['gpu', 'size'] }).notNull(),
    productId: text('product_id').notNull(),
    cycle: text('cycle', { enum: ['Usage', 'Hour', 'Day', 'Week', 'Month'] }).notNull(),
    listPrice: bigint('list_price', { mode: 'bigint' }).notNull(),
    discountBp: integer('discount_bp').notNull(),
  },
  (t) => [primaryKey({ columns: [t.productKind, t.productId, t.cycle] })],
);

/** Catalogue-wide settings and the state of the seed (its hash, a version bumped on every change). */
export const catalogueState = pgTable('catalogue_state', {
  key: text('key').primaryKey(),
  value: jsonb('value').notNull(),
  updatedAt: ts('updated_at').notNull(),
});

// --- modules/vouchers ------------------------------------------------------
// 代金券. Quotes read them; the money issue grants, locks and redeems them through the ledger.
export const vouchers = pgTable(
  'vouchers',
  {
    id: uuid('id').primaryKey(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    amount: bigint('amount', { mode: 'bigint' }).notNull(),
    minSpend: bigint('min_spend', { mode: 'bigint' }).notNull().default(sql`0`),
    /** Instance categories it may pay for; empty means all. */
    categories: jsonb('categories').$type<string[]>().notNull(),
    status: text('status', { enum: ['Unused', 'Used', 'Expired', 'Revoked'] }).notNull().default('Unused'),
    validFrom: ts('valid_from').notNull(),
    expiresAt: ts('expires_at').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('vouchers_user_idx').on(t.userId, t.status)],
);

// --- modules/ledger --------------------------------------------------------
// Double-entry (DESIGN.md "Money"): every change of a balance is a transfer whose entries sum to
// zero. `balance` is a cache of the account's entries, updated in the same transaction.
export const ledgerAccounts = pgTable(
  'ledger_accounts',
  {
    id: uuid('id').primaryKey(),
    /** `user:<id>:cash`, `platform:revenue` … one row per owner and kind. */
    code: text('code').notNull(),
    userId: uuid('user_id').references(() => users.id, { onDelete: 'restrict' }),
    kind: text('kind', {
      enum: ['cash', 'gift', 'voucher', 'deposit', 'resource', 'revenue', 'clearing', 'promotion', 'compensation', 'refund'],
    }).notNull(),
    balance: bigint('balance', { mode: 'bigint' }).notNull().default(sql`0`),
    /** Platform accounts are the other side of user money and go negative by design. */
    mayGoNegative: boolean('may_go_negative').notNull().default(false),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [
    uniqueIndex('ledger_accounts_code_uq').on(t.code),
    index('ledger_accounts_user_idx').on(t.userId),
    check('ledger_accounts_not_negative', sql`${t.mayGoNegative} or ${t.balance} >= 0`),
  ],
);

export const ledgerTransfers = pgTable(
  'ledger_transfers',
  {
    id: uuid('id').primaryKey(),
    /** One business event, one transfer: a replay finds this key and posts nothing. */
    idempotencyKey: text('idempotency_key').notNull(),
    kind: text('kind').notNull(),
    memo: text('memo').notNull().default(''),
    /** Who caused it: a user, an operator, or the system (null). */
    actorId: uuid('actor_id'),
    orderId: text('order_id'),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [uniqueIndex('ledger_transfers_key_uq').on(t.idempotencyKey), index('ledger_transfers_order_idx').on(t.orderId)],
);

export const ledgerEntries = pgTable(
  'ledger_entries',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    // No foreign keys: entries are written only by LedgerService, always with their transfer and
    // locked accounts in the same transaction, and their per-row checks cost a quarter of a billing
    // tick. `npm run ledger:check` reports any entry without its transfer or account instead.
    transferId: uuid('transfer_id').notNull(),
    accountId: uuid('account_id').notNull(),
    amount: bigint('amount', { mode: 'bigint' }).notNull(),
    /** The account's balance right after this entry: a statement without summing history. */
    balanceAfter: bigint('balance_after', { mode: 'bigint' }).notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('ledger_entries_account_idx').on(t.accountId, t.id), index('ledger_entries_transfer_idx').on(t.transferId)],
);

// --- modules/payments ------------------------------------------------------
/** One attempt to collect money through a gateway (Alipay/WeChat QR), for a recharge or an order. */
export const payments = pgTable(
  'payments',
  {
    id: uuid('id').primaryKey(),
    outTradeNo: text('out_trade_no').notNull(),
    method: text('method', { enum: ['Alipay', 'Wechat'] }).notNull(),
    purpose: text('purpose', { enum: ['recharge', 'order'] }).notNull(),
    subjectId: uuid('subject_id').notNull(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    amount: bigint('amount', { mode: 'bigint' }).notNull(),
    status: text('status', { enum: ['Pending', 'Succeeded', 'Closed'] }).notNull().default('Pending'),
    gatewayTradeNo: text('gateway_trade_no'),
    qrContent: text('qr_content').notNull(),
    expiresAt: ts('expires_at').notNull(),
    paidAt: ts('paid_at'),
    lastQueriedAt: ts('last_queried_at'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [uniqueIndex('payments_out_trade_no_uq').on(t.outTradeNo), index('payments_subject_idx').on(t.subjectId), index('payments_pending_idx').on(t.status, t.expiresAt)],
);

/** Every notification a gateway sent us, applied or not, and why: the audit trail of money in. */
export const paymentNotifications = pgTable(
  'payment_notifications',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    method: text('method').notNull(),
    outTradeNo: text('out_trade_no').notNull().default(''),
    outcome: text('outcome', { enum: ['applied', 'replayed', 'refused'] }).notNull(),
    reason: text('reason').notNull().default(''),
    body: text('body').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('payment_notifications_trade_idx').on(t.outTradeNo)],
);

/** What the embedded sandbox gateway knows about its trades (it plays the gateway's own database). */
export const sandboxTrades = pgTable('sandbox_trades', {
  outTradeNo: text('out_trade_no').primaryKey(),
  data: jsonb('data').notNull(),
  /** Compared on every write, so a pay and a close racing in two processes cannot both win. */
  version: integer('version').notNull().default(0),
  updatedAt: ts('updated_at').notNull(),
});

// --- modules/recharge ------------------------------------------------------
export const recharges = pgTable(
  'recharges',
  {
    id: uuid('id').primaryKey(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    amount: bigint('amount', { mode: 'bigint' }).notNull(),
    bonus: bigint('bonus', { mode: 'bigint' }).notNull(),
    method: text('method', { enum: ['Alipay', 'Wechat'] }).notNull(),
    status: text('status', { enum: ['Unpaid', 'Paid', 'Expired', 'Cancelled'] }).notNull().default('Unpaid'),
    expiresAt: ts('expires_at').notNull(),
    paidAt: ts('paid_at'),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('recharges_user_idx').on(t.userId, t.createdAt)],
);

// --- modules/gifts ---------------------------------------------------------
/**
 * Gift credit (赠送金) arrives in grants with their own expiry; spending takes the earliest expiry
 * first, and what expires leaves the gift account through a ledger transfer. status 1 is active,
 * 0 is waiting for renewal (spec §3).
 */
export const giftGrants = pgTable(
  'gift_grants',
  {
    id: uuid('id').primaryKey(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    source: text('source').notNull(),
    amount: bigint('amount', { mode: 'bigint' }).notNull(),
    remain: bigint('remain', { mode: 'bigint' }).notNull(),
    status: integer('status').notNull().default(1),
    expireAt: ts('expire_at').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('gift_grants_user_idx').on(t.userId, t.expireAt), check('gift_grants_remain_range', sql`${t.remain} >= 0 and ${t.remain} <= ${t.amount}`)],
);

// --- modules/orders --------------------------------------------------------
/** An order (spec §3/§4): priced by the server, paid from the balance or a gateway, then fulfilled. */
export const orders = pgTable(
  'orders',
  {
    id: uuid('id').primaryKey(),
    orderUid: text('order_uid').notNull(),
    /** Whose money: the parent when a child account buys. */
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    createdBy: uuid('created_by').notNull(),
    kind: text('kind', { enum: ['Personal', 'Ai', 'default'] }).notNull(),
    type: text('type', {
      enum: ['NewBuy', 'Renew', 'Usage', 'Refund', 'OrderRefund', 'TrafficUpgrade', 'TrafficDowngrade', 'DayToMonth', 'TransferToLong', 'Time', 'ChangeDataDisk'],
    }).notNull(),
    category: text('category').notNull(),
    status: text('status', { enum: ['Unpaid', 'Paid', 'Success', 'Failed', 'Expired', 'Abated', 'Cancelled', 'Refunded', 'Time'] }).notNull(),
    /** What was asked for, as validated: the fulfiller builds from this. */
    request: jsonb('request').notNull(),
    /** The server's quote at creation (lines without a voucher). */
    quote: jsonb('quote').notNull(),
    description: text('description').notNull(),
    amount: bigint('amount', { mode: 'bigint' }).notNull(),
    voucherId: uuid('voucher_id'),
    voucherDeduction: bigint('voucher_deduction', { mode: 'bigint' }).notNull().default(sql`0`),
    payMethod: text('pay_method', { enum: ['Balance', 'Alipay', 'Wechat'] }),
    resourceId: text('resource_id'),
    failReason: text('fail_reason'),
    expiresAt: ts('expires_at').notNull(),
    paidAt: ts('paid_at'),
    fulfilledAt: ts('fulfilled_at'),
    refundedAt: ts('refunded_at'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('orders_uid_uq').on(t.orderUid),
    index('orders_user_idx').on(t.userId, t.createdAt),
    index('orders_status_idx').on(t.status, t.updatedAt),
    // At most one unpaid order per account (40011007), enforced by the database as well.
    uniqueIndex('orders_one_unpaid_uq').on(t.userId).where(sql`${t.status} = 'Unpaid'`),
  ],
);

/** Where an order's money came from, part by part, so a refund puts each part back. */
export const orderPayments = pgTable(
  'order_payments',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    orderId: uuid('order_id')
      .notNull()
      .references(() => orders.id),
    source: text('source', { enum: ['voucher', 'gift', 'cash'] }).notNull(),
    amount: bigint('amount', { mode: 'bigint' }).notNull(),
    giftGrantId: uuid('gift_grant_id'),
    voucherId: uuid('voucher_id'),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('order_payments_order_idx').on(t.orderId)],
);

// --- modules/resources -----------------------------------------------------
/** 资源包: prepaid quantities (model tokens, GPU hours) consumed before money. */
export const resourcePackages = pgTable(
  'resource_packages',
  {
    id: uuid('id').primaryKey(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    orderId: uuid('order_id').notNull(),
    productId: text('product_id').notNull(),
    name: text('name').notNull(),
    unit: text('unit').notNull(),
    total: bigint('total', { mode: 'bigint' }).notNull(),
    remain: bigint('remain', { mode: 'bigint' }).notNull(),
    /** GPU-hour packages: the card type whose post-paid runs they pay for (null: model tokens). */
    gpuTypeId: text('gpu_type_id'),
    /** Stored units per unit shown: 3,600,000 for card hours (kept in card-milliseconds), else 1. */
    unitScale: bigint('unit_scale', { mode: 'bigint' }).notNull().default(sql`1`),
    expiresAt: ts('expires_at').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [
    uniqueIndex('resource_packages_order_uq').on(t.orderId),
    index('resource_packages_user_idx').on(t.userId),
    check('resource_packages_remain_range', sql`${t.remain} >= 0 and ${t.remain} <= ${t.total}`),
  ],
);

/** What a package paid for: one row per package and metered period, unique by its key. */
export const resourcePackageUsages = pgTable(
  'resource_package_usages',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    packageId: uuid('package_id').notNull(),
    userId: uuid('user_id').notNull(),
    /** The post-paid instance run it covered: instance and the run's start (its meter segment). */
    instanceId: uuid('instance_id').notNull(),
    segment: ts('segment').notNull(),
    amount: bigint('amount', { mode: 'bigint' }).notNull(),
    key: text('key').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [
    uniqueIndex('resource_package_usages_key_uq').on(t.key),
    index('resource_package_usages_run_idx').on(t.instanceId, t.segment),
    index('resource_package_usages_package_idx').on(t.packageId),
  ],
);

// --- modules/invoices ------------------------------------------------------
/** 发票申请: an account holder asks for a VAT invoice; the operator issues or rejects it. */
export const invoices = pgTable(
  'invoices',
  {
    id: uuid('id').primaryKey(),
    /** Whose money was invoiced (the payer: a child's request is its parent's). */
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    requestedBy: uuid('requested_by').notNull(),
    kind: text('kind', { enum: ['normal', 'special'] }).notNull(),
    titleType: text('title_type', { enum: ['personal', 'enterprise'] }).notNull(),
    title: text('title').notNull(),
    taxNo: text('tax_no').notNull().default(''),
    email: text('email').notNull(),
    amount: bigint('amount', { mode: 'bigint' }).notNull(),
    status: text('status', { enum: ['Pending', 'Issued', 'Rejected', 'Cancelled'] }).notNull().default('Pending'),
    invoiceNo: text('invoice_no'),
    rejectReason: text('reject_reason'),
    operatorId: uuid('operator_id'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
    closedAt: ts('closed_at'),
  },
  (t) => [index('invoices_user_idx').on(t.userId, t.createdAt), index('invoices_status_idx').on(t.status, t.createdAt), check('invoices_amount_positive', sql`${t.amount} > 0`)],
);

// --- modules/instances -------------------------------------------------------
const INSTANCE_STATUSES = ['Pending', 'Starting', 'Pending_Migrate', 'Running', 'Stopped', 'Shutdowning', 'Shutdown', 'Restarting', 'Stopping', 'Operating', 'Unknown', 'Failed', 'Deleting', 'OperateFail'] as const;

export const instances = pgTable(
  'instances',
  {
    id: uuid('id').primaryKey(),
    /** Whose instance and whose money: the parent when a child account bought it. */
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    createdBy: uuid('created_by').notNull(),
    category: text('category', { enum: ['Gpu', 'Game', 'App', 'Generic', 'Desktop', 'Ebusiness'] }).notNull(),
    name: text('name').notNull(),
    status: text('status', { enum: INSTANCE_STATUSES }).notNull(),
    noCard: boolean('no_card').notNull().default(false),
    lastError: text('last_error'),
    regionId: text('region_id').notNull(),
    roomId: text('room_id'),
    hostId: text('host_id'),
    gpuTypeId: text('gpu_type_id'),
    gpuCount: integer('gpu_count').notNull().default(0),
    /** Cards taken from the host's inventory now (0 when stopped or in no-card mode; a migrated instance keeps its new host's until cardsHeldUntil). */
    gpuHeld: integer('gpu_held').notNull().default(0),
    /** After a migration: when the cards reserved on the new host go back if the instance has not started (settings.migrateHoldMinutes). */
    cardsHeldUntil: ts('cards_held_until'),
    sizeId: text('size_id'),
    cpu: integer('cpu').notNull(),
    memoryGb: integer('memory_gb').notNull(),
    imageId: text('image_id'),
    /** The image of my images (modules/images) it was created from, if any; imageId is then its base image. */
    userImageId: uuid('user_image_id'),
    applicationId: text('application_id'),
    dataDiskGb: integer('data_disk_gb').notNull(),
    freeDataDiskGb: integer('free_data_disk_gb').notNull(),
    /** Public bandwidth (size-based instances); what the size includes is not charged (modules/instances/traffic.ts). */
    bandwidthMbps: integer('bandwidth_mbps').notNull().default(0),
    includedBandwidthMbps: integer('included_bandwidth_mbps').notNull().default(0),
    cycle: text('cycle', { enum: ['Usage', 'Hour', 'Day', 'Week', 'Month'] }).notNull(),
    hourlyPrice: bigint('hourly_price', { mode: 'bigint' }).notNull(),
    noCardHourlyPrice: bigint('no_card_hourly_price', { mode: 'bigint' }).notNull(),
    /** Post-paid: what the bandwidth beyond the included costs per hour, metered with the run (added to hourlyPrice). */
    bandwidthHourlyPrice: bigint('bandwidth_hourly_price', { mode: 'bigint' }).notNull().default(sql`0`),
    diskDailyPrice: bigint('disk_daily_price', { mode: 'bigint' }).notNull(),
    expireAt: ts('expire_at'),
    /** Prepaid: renew one unit of the cycle from the balance before expiry (modules/instances/prepaid.ts). */
    autoRenew: boolean('auto_renew').notNull().default(false),
    /** The expiry an auto-renewal last failed for (no balance): its notice is sent once per expiry. */
    autoRenewFailedFor: ts('auto_renew_failed_for'),
    releaseAt: ts('release_at'),
    releaseNoticeAt: ts('release_notice_at'),
    orderId: uuid('order_id'),
    /** The post-paid order (status Time) the ticks of this instance are charged to. */
    usageOrderId: uuid('usage_order_id'),
    /** Metering of the current run (see modules/instances/billing.ts): rate, segment start, last tick, milliseconds and amount so far. */
    meterRate: bigint('meter_rate', { mode: 'bigint' }).notNull().default(sql`0`),
    meterSince: ts('meter_since'),
    meterSegment: ts('meter_segment'),
    meterMs: bigint('meter_ms', { mode: 'bigint' }).notNull().default(sql`0`),
    meterCharged: bigint('meter_charged', { mode: 'bigint' }).notNull().default(sql`0`),
    diskBilledUntil: ts('disk_billed_until'),
    /** What a tick could not take from an empty balance; starting again collects it first. */
    arrears: bigint('arrears', { mode: 'bigint' }).notNull().default(sql`0`),
    sshHost: text('ssh_host'),
    sshPort: integer('ssh_port'),
    sshUser: text('ssh_user').notNull().default('root'),
    /** AES-GCM under a server secret: the console shows it to its owner, so it cannot be a hash. */
    sshPasswordEnc: text('ssh_password_enc').notNull(),
    jupyterToken: text('jupyter_token').notNull(),
    pendingOpId: text('pending_op_id'),
    pendingAction: text('pending_action'),
    opStartedAt: ts('op_started_at'),
    startedAt: ts('started_at'),
    stoppedAt: ts('stopped_at'),
    releasedAt: ts('released_at'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    index('instances_user_idx').on(t.userId, t.category, t.createdAt),
    index('instances_order_idx').on(t.orderId),
    // The meter tick's scan: metered runs by owner (a tick lane is a range of owners) then id. It holds
    // no column the tick writes, so the tick's updates stay HOT (see the fillfactor of migration 0014).
    index('instances_meter_run_idx').on(t.userId, t.id).where(sql`${t.meterSegment} is not null`),
    index('instances_busy_idx').on(t.opStartedAt).where(sql`${t.pendingOpId} is not null`),
    index('instances_release_idx').on(t.releaseAt).where(sql`${t.releaseAt} is not null and ${t.releasedAt} is null`),
    index('instances_expire_idx').on(t.expireAt).where(sql`${t.expireAt} is not null and ${t.releasedAt} is null`),
  ],
);

/** Every transition of every instance: what /console/log shows. */
export const instanceOperations = pgTable(
  'instance_operations',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    instanceId: uuid('instance_id').notNull(),
    userId: uuid('user_id').notNull(),
    actorId: uuid('actor_id'),
    action: text('action').notNull(),
    fromStatus: text('from_status', { enum: INSTANCE_STATUSES }),
    toStatus: text('to_status', { enum: INSTANCE_STATUSES }).notNull(),
    detail: text('detail').notNull().default(''),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('instance_operations_user_idx').on(t.userId, t.id), index('instance_operations_instance_idx').on(t.instanceId, t.id)],
);

// --- modules/images ----------------------------------------------------------
/**
 * 我的镜像: an image saved from a stopped instance (spec §3 image statuses: Build → Active or
 * BuildFail). Deleted images keep their row (deletedAt) for the instances created from them.
 */
export const userImages = pgTable(
  'user_images',
  {
    id: uuid('id').primaryKey(),
    /** Whose image: the payer (the parent when a child account saved it). */
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    createdBy: uuid('created_by').notNull(),
    name: text('name').notNull(),
    status: text('status', { enum: ['Active_NotAllowedMigrate', 'Active', 'BuildFail', 'Build', 'Migrate'] }).notNull(),
    failReason: text('fail_reason'),
    /** The category of the source instance: the kind of instance it can create. */
    category: text('category', { enum: ['Gpu', 'Game', 'App', 'Generic', 'Desktop', 'Ebusiness'] }).notNull(),
    sourceInstanceId: uuid('source_instance_id').notNull(),
    sourceInstanceName: text('source_instance_name').notNull(),
    baseImageId: text('base_image_id'),
    gpuTypeId: text('gpu_type_id'),
    sizeGb: integer('size_gb'),
    shared: boolean('shared').notNull().default(false),
    /** The compute driver's operation that builds it. */
    opId: text('op_id').notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
    deletedAt: ts('deleted_at'),
  },
  (t) => [
    index('user_images_user_idx').on(t.userId, t.createdAt),
    // A name is unique among the images an account keeps (40921001).
    uniqueIndex('user_images_name_uq').on(t.userId, t.name).where(sql`${t.deletedAt} is null`),
    uniqueIndex('user_images_op_uq').on(t.opId),
  ],
);

/** How far each process-independent reader has read a driver's event stream. */
export const computeCursors = pgTable('compute_cursors', {
  driver: text('driver').primaryKey(),
  seq: bigint('seq', { mode: 'number' }).notNull(),
  updatedAt: ts('updated_at').notNull(),
});

// --- drivers/compute/simulated: the simulated fleet's own state (an outside system's, kept apart) ---
export const simMachines = pgTable('sim_machines', {
  instanceId: uuid('instance_id').primaryKey(),
  hostId: text('host_id'),
  power: text('power', { enum: ['creating', 'running', 'stopped', 'destroyed'] }).notNull(),
  gpu: boolean('gpu').notNull(),
  diskGb: integer('disk_gb').notNull(),
  bandwidthMbps: integer('bandwidth_mbps').notNull().default(0),
  sshPort: integer('ssh_port').notNull(),
  spec: jsonb('spec').notNull(),
  updatedAt: ts('updated_at').notNull(),
});

export const simOperations = pgTable(
  'sim_operations',
  {
    opId: text('op_id').primaryKey(),
    instanceId: uuid('instance_id').notNull(),
    kind: text('kind').notNull(),
    params: jsonb('params').notNull(),
    dueAt: ts('due_at').notNull(),
    state: text('state', { enum: ['pending', 'done', 'failed'] }).notNull(),
    error: text('error'),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('sim_operations_due_idx').on(t.dueAt).where(sql`${t.state} = 'pending'`)],
);

export const simEvents = pgTable('sim_events', {
  seq: bigserial('seq', { mode: 'number' }).primaryKey(),
  opId: text('op_id'),
  instanceId: uuid('instance_id').notNull(),
  kind: text('kind').notNull(),
  ok: boolean('ok').notNull(),
  error: text('error'),
  data: jsonb('data').notNull(),
  at: ts('at').notNull(),
});

/** Faults an operator or a test injects: the next `remaining` operations of a kind (on a host) fail. */
export const simFaults = pgTable('sim_faults', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  kind: text('kind').notNull(),
  hostId: text('host_id'),
  remaining: integer('remaining').notNull(),
  message: text('message').notNull(),
});

export const simLostHosts = pgTable('sim_lost_hosts', {
  hostId: text('host_id').primaryKey(),
  lostAt: ts('lost_at').notNull(),
});
