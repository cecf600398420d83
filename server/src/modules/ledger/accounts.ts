/**
 * The ledger's accounts and transfers as values: which account a leg touches, its code, and which
 * shard of a platform account a transfer lands on. No database here: the ledger service posts
 * these, and the hold API (holds.ts) builds them.
 */
import type { TransferKind } from '@console/contract';
import { ledgerAccounts } from './schema.js';

export type AccountKind = (typeof ledgerAccounts.$inferSelect)['kind'];
export const USER_KINDS = ['cash', 'gift', 'voucher', 'deposit', 'resource'] as const satisfies readonly AccountKind[];
export type UserAccountKind = (typeof USER_KINDS)[number];
export type PlatformAccountKind = Exclude<AccountKind, UserAccountKind>;
export const PLATFORM_KINDS = ledgerAccounts.kind.enumValues.filter((k): k is PlatformAccountKind => !(USER_KINDS as readonly string[]).includes(k));

/** Which account a leg touches: one of a user's, or one of the platform's. */
export type AccountRef = { userId: string; kind: UserAccountKind } | { platform: PlatformAccountKind; name?: string };

export interface Leg {
  account: AccountRef;
  /** Positive credits the account, negative debits it. */
  amount: bigint;
}

export interface TransferInput {
  key: string;
  /** What the statement calls it: every kind has its Chinese label in the contract (TransferKind). */
  kind: TransferKind;
  memo?: string;
  actorId?: string | null;
  orderId?: string | null;
  legs: Leg[];
}

export interface PostedTransfer {
  transferId: string;
  replayed: boolean;
}

export function accountCode(ref: AccountRef): string {
  return 'userId' in ref ? `user:${ref.userId}:${ref.kind}` : `platform:${ref.platform}${ref.name ? `:${ref.name}` : ''}`;
}

/**
 * Every payment credits the platform's revenue (and many debit its promotion account): one row
 * would serialise them all. Platform accounts are spread over shards, chosen by the transfer's key
 * so that a replay lands on the same shard; their totals are the sum over shards.
 */
export const PLATFORM_SHARDS = 64;

/**
 * The platform shard for `key` among the shards of one lane (shard numbers ≡ lane.index mod
 * lane.count): batches posted at the same time by different lanes touch disjoint platform rows and
 * never wait for each other on them. Passed as the leg's account `name`, it is a shard like any other.
 */
export function laneShard(key: string, lane: { index: number; count: number }): string {
  const mine = Math.ceil((PLATFORM_SHARDS - lane.index) / lane.count);
  const s = lane.index + lane.count * (fnv1a(key) % mine);
  return `s${String(s).padStart(2, '0')}`;
}

function fnv1a(key: string): number {
  let h = 2166136261;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 16777619);
  return h >>> 0;
}

export function shardPlatformLeg(leg: Leg, key: string): Leg {
  if (!('platform' in leg.account) || leg.account.name) return leg;
  return { ...leg, account: { ...leg.account, name: `s${String(fnv1a(key) % PLATFORM_SHARDS).padStart(2, '0')}` } };
}
