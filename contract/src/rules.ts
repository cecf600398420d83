/** Rules of spec §1/§3 that client and server both apply: written once here. */
import type { BillingCycle } from './enums.js';

/** Post-paid cycles (spec §3): metered while the instance runs and charged at each tick; the others are prepaid. */
export const POSTPAID_CYCLES: readonly BillingCycle[] = ['Usage', 'Hour'];

export function isPostpaid(cycle: BillingCycle): boolean {
  return POSTPAID_CYCLES.includes(cycle);
}

/** The session cookie (DESIGN.md "API conventions"): a JWE named jweToken, valid 7 days. */
export const SESSION_COOKIE = 'jweToken';
export const SESSION_TTL_SECONDS = 7 * 24 * 3600;

/** Whose balance an account spends (spec §1): a child account spends its parent's, a main account its own. */
export function payerIdOf(user: { id: string; isChild: boolean; parentId: string | null }): string {
  return user.isChild && user.parentId ? user.parentId : user.id;
}

/**
 * Whether an account sees its payer's money (balance, recharges, statement) and everything bought with
 * it (every order, instance and log line): a main account, or a child granted 财务 (finance). Any other
 * child sees only what it created itself.
 */
export function seesPayerFinance(user: { isChild: boolean; finance?: boolean }): boolean {
  return !user.isChild || user.finance === true;
}

/** Whether an account has passed real-name certification (spec §4/§5's gate): personal or enterprise, succeeded. */
export function isCertified(user: { certStatus: string; certType: string }): boolean {
  return user.certStatus === 'Succeed' && user.certType !== 'Uncertified';
}
