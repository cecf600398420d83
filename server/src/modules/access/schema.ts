/** The tables of the access module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { index, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';
import { users } from '../users/schema.js';

/**
 * 账号中心's SSH public keys: a key logs into the SSH gateway of every instance its user may manage.
 * `blob` is the key as the SSH wire format has it (base64 of the `.pub` line's second field), the
 * fingerprint OpenSSH's SHA256 of it: a user holds a key once.
 */
export const sshKeys = pgTable(
  'ssh_keys',
  {
    id: uuid('id').primaryKey(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    name: text('name').notNull(),
    algorithm: text('algorithm').notNull(),
    blob: text('blob').notNull(),
    fingerprint: text('fingerprint').notNull(),
    createdAt: ts('created_at').notNull(),
    lastUsedAt: ts('last_used_at'),
  },
  (t) => [uniqueIndex('ssh_keys_user_fingerprint_uq').on(t.userId, t.fingerprint), index('ssh_keys_fingerprint_idx').on(t.fingerprint)],
);

/**
 * The web terminal's open shells, of every replica (terminal-slots.ts): a user's are counted here
 * against the limit per account. The replica running a shell touches its row every few seconds; a
 * row untouched for STALE_SHELL_MS belongs to a replica that died and no longer counts (it is
 * deleted at the user's next open, or by any replica's purge).
 */
export const terminalShells = pgTable(
  'terminal_shells',
  {
    id: uuid('id').primaryKey(),
    userId: uuid('user_id').notNull(),
    instanceId: uuid('instance_id').notNull(),
    /** The replica running it (host and pid), for the operator. */
    replica: text('replica').notNull(),
    openedAt: ts('opened_at').notNull(),
    touchedAt: ts('touched_at').notNull(),
  },
  (t) => [index('terminal_shells_user_idx').on(t.userId), index('terminal_shells_touched_idx').on(t.touchedAt)],
);
