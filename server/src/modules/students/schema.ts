/** The tables of the students module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { index, integer, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';

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
