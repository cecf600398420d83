/** The tables of the certification module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { index, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';

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
