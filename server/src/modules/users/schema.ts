/** The tables of the users module: accounts, their login failures and their sessions (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { sql } from 'drizzle-orm';
import { bigint, bigserial, boolean, index, integer, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';

export const users = pgTable(
  'users',
  {
    id: uuid('id').primaryKey(),
    mobile: text('mobile'),
    email: text('email'),
    passwordHash: text('password_hash'),
    accountType: text('account_type', { enum: ['personal', 'enterprise'] })
      .notNull()
      .default('personal'),
    name: text('name').notNull().default(''),
    nickname: text('nickname').notNull().default(''),
    logo: text('logo').notNull().default(''),
    certStatus: text('cert_status', { enum: ['Init', 'Pending', 'Succeed', 'Failed'] })
      .notNull()
      .default('Init'),
    certType: text('cert_type', { enum: ['Uncertified', 'Personal', 'Enterprise'] })
      .notNull()
      .default('Uncertified'),
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
    /** 财务: a child sees its parent's balance, recharges, every bill and the whole operation log (else only its own). */
    finance: boolean('perm_finance').notNull().default(false),
    /** A child's spending limit in 0.0001 yuan, set by its parent (null: unlimited); per Beijing calendar month or in total. */
    spendLimit: bigint('spend_limit', { mode: 'bigint' }),
    spendLimitPeriod: text('spend_limit_period', { enum: ['Month', 'Total'] }),
    /** 余额保底 (a main account's): below this spendable balance its running post-paid instances are stopped (instances/billing.ts); null: off. */
    balanceFloor: bigint('balance_floor', { mode: 'bigint' }),
    /** The parent's note on a child account. */
    childRemark: text('child_remark').notNull().default(''),
    /** A deleted child keeps its row (operation logs name it) but frees its name. */
    deletedAt: ts('deleted_at'),
    /** When the holder agreed to the user agreement and privacy policy (registration); null for accounts made before consent was asked, and for children. */
    agreedAt: ts('agreed_at'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('users_mobile_uq')
      .on(t.mobile)
      .where(sql`${t.mobile} is not null`),
    uniqueIndex('users_email_uq')
      .on(t.email)
      .where(sql`${t.email} is not null`),
    uniqueIndex('users_live_child_name_uq')
      .on(t.parentId, t.childName)
      .where(sql`${t.isChild} and ${t.deletedAt} is null`),
  ],
);

export const loginFailures = pgTable(
  'login_failures',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    account: text('account').notNull(),
    ip: text('ip').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('login_failures_account_idx').on(t.account, t.createdAt), index('login_failures_ip_idx').on(t.ip, t.createdAt)],
);

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
