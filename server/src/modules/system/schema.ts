/** The tables of the system module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { pgTable, text } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';

/** Keys the server generates once and shares between processes (the session encryption key). */
export const serverSecrets = pgTable('server_secrets', {
  name: text('name').primaryKey(),
  value: text('value').notNull(),
  createdAt: ts('created_at').notNull(),
});
