import { PAGE, type InstanceCategory, type PermissionFlag, type User } from '@console/contract';

/** The user fields the guard needs; a subset of User so tests can build it by hand. */
export type SessionUser = Pick<User, 'isChild' | 'certified' | 'certStatus'> & Partial<Record<PermissionFlag, boolean>> & { isOperator?: boolean };

/**
 * Child-account permissions of spec §6, as "any of these flags opens the route".
 * Routes not listed here are open to every logged-in account, child or not.
 */
export const PERMS = {
  cloudGpu: ['createGPUInstance'],
  gpuGeneric: ['createGPUInstance', 'gpu'],
  cloudApply: ['createImageAPP'],
  app: ['createImageAPP', 'app'],
  // "openYunBucket and image: data disk": either flag opens my data.
  data: ['openYunBucket', 'image'],
  model: ['usingLLM'],
  // The AI 绘图 area (datasets, LoRA training, generation) spends the parent's money on GPU time, as the server checks.
  sd: ['createGPUInstance', 'gpu'],
  // "createGPUInstance or gpu: also IPVM detail and remote desktop".
  instanceDetail: ['createGPUInstance', 'gpu'],
  // 财务: the parent's money (balance, recharge, deposit, the finance page); without it a child sees only what it bought.
  finance: ['finance'],
  // The purchase page sells what createGPUInstance (GPU) or createImageAPP (applications) may buy; sizes are the main account's.
  purchase: ['createGPUInstance', 'createImageAPP'],
} as const satisfies Record<string, readonly PermissionFlag[]>;

export function isAllowed(user: SessionUser | null, perms: readonly PermissionFlag[] | undefined): boolean {
  if (!perms || perms.length === 0 || !user?.isChild) return true;
  return perms.some((flag) => user[flag] === true);
}

/**
 * Where a child account belongs (spec §4): the first page its flags open, in the spec's order.
 * A child with none of the four flags still needs a page it may open: its account page.
 */
export function childHome(user: SessionUser): string {
  if (user.createGPUInstance) return PAGE.cloudGpu;
  if (user.createImageAPP) return PAGE.cloudApply;
  if (user.gpu) return PAGE.gpuGeneric;
  if (user.app) return PAGE.app;
  return PAGE.account;
}

/** Whether this account sees its payer's money and everything it bought: a main account, or a child granted 财务. */
export function seesFinance(user: SessionUser | null): boolean {
  return !user?.isChild || user.finance === true;
}

/** "certified and success status" (spec §4). */
export function isCertified(user: SessionUser | null): boolean {
  return !!user && user.certified && user.certStatus === 'Succeed';
}

/** What a child needs to buy each category (the server's rule); a category without a flag is the main account's. */
const BUY_FLAG: Partial<Record<InstanceCategory, PermissionFlag>> = { Gpu: 'createGPUInstance', App: 'createImageAPP' };

export function mayBuy(user: SessionUser | null, category: InstanceCategory): boolean {
  if (!user?.isChild) return true;
  const flag = BUY_FLAG[category];
  return !!flag && user[flag] === true;
}
