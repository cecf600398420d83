/**
 * Buying a product (spec §6, DESIGN.md "Orders and instances"): who may buy it, the server's own
 * quote (the client's price is never used) and the new order. A prepaid purchase is an Unpaid order
 * paid through checkout; a post-paid one (Usage/Hour) is a Usage order that bills from the start and
 * is fulfilled at once. GPU instances and the other instance categories (sizes) take the same path;
 * model resource packages are always prepaid.
 */
import { eq } from 'drizzle-orm';
import {
  MANAGE_PERMISSIONS,
  payerIdOf,
  isPostpaid,
  type AiResourceOrderRequest,
  type BillingCycle,
  type GpuOrderRequest,
  type InstanceCategory,
  type Order,
  type OrderPrice,
  type OrderKind,
  type OrderType,
  type PermissionFlag,
  type Quote,
  type SizeOrderRequest,
  isCertified,
} from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import { orders } from './schema.js';
import { AppError } from '../../http/errors.js';
import type { Quotes, ResourceProductEntry } from '../catalogue/index.js';
import type { UserRow } from '../users/index.js';
import { PURCHASE_TYPES, type Fulfillers } from './fulfillers.js';
import { moveOrder, newOrderRow, orderView, type NewOrder } from './rows.js';
import type { OrderService } from './service.js';
import type { UsageCharges } from './usage.js';

/** Spec §6: what a child account needs to buy each category (a main account may buy all). */
export const BUY_PERMISSION: Record<string, PermissionFlag> = { Gpu: 'createGPUInstance', App: 'createImageAPP', Ai: 'usingLLM' };

/** What buying model resource packages asks of the resources module (which fulfils them, so it imports orders, not the reverse). */
export interface ResourcePricing {
  price(productId: string, count: number): Promise<{ product: ResourceProductEntry; price: OrderPrice }>;
  describe(product: ResourceProductEntry, count: number): string;
}

export interface PurchaseDeps {
  db: Db;
  clock: Clock;
  orders: OrderService;
  usage: UsageCharges;
  fulfillers: Fulfillers;
  /** The catalogue's price function. */
  pricing: Pick<Quotes, 'quoteGpu' | 'quoteSize'>;
  resources: ResourcePricing;
  /** REQUIRE_REALNAME_FOR_PURCHASE */
  requireRealName: boolean;
}

export class PurchaseService {
  constructor(private deps: PurchaseDeps) {}

  /**
   * Who may buy this category: a child only with its flag, and only where spec §6 names one (CPU,
   * desktop, e-commerce and game machines are the main account's); anyone only when certified if the
   * operator requires real names for purchases (spec §5's gate, code 40311001).
   */
  assertMayBuy(user: UserRow, category: string): void {
    const flag = BUY_PERMISSION[category];
    if (user.isChild && (!flag || !user[flag])) throw new AppError('PERMISSION_DENIED', flag ? `需要权限：${flag}` : '子账号不能购买该类产品');
    if (category !== 'Ai' && this.deps.requireRealName && !isCertified(user)) throw new AppError('CERTIFICATION_REQUIRED');
  }

  /**
   * Whether this account may pay, open a QR for or cancel an order of this category and type: what
   * it needed to place it — the buy permission for a purchase, the permission to manage such
   * instances for a renewal, disk, bandwidth or billing change (spec §6).
   */
  assertMayActOn(user: UserRow, order: { category: string; type: string }): void {
    if (PURCHASE_TYPES.includes(order.type as OrderType)) return this.assertMayBuy(user, order.category);
    const flags = MANAGE_PERMISSIONS[order.category as InstanceCategory] ?? [];
    if (user.isChild && !flags.some((f) => user[f]))
      throw new AppError('PERMISSION_DENIED', flags.length ? `需要权限：${flags.join(' 或 ')}` : '子账号不能管理该类实例');
  }

  /** A GPU instance (or an image application on one): a Personal order. */
  async buyGpu(user: UserRow, body: GpuOrderRequest): Promise<Order> {
    const { voucherId: _v, name, ...asked } = body;
    const config = pricedForOneHourIfPostpaid(asked);
    return this.buyInstance(user, 'Personal', config.cycle, { ...config, name: name ?? '' }, await this.deps.pricing.quoteGpu(config, user));
  }

  /**
   * CPU, desktop, e-commerce and game machines (a catalogue size): a default order; an application
   * that needs no card on a CPU size is a Personal order, as every application order (spec §3).
   */
  async buySize(user: UserRow, body: SizeOrderRequest): Promise<Order> {
    const { voucherId: _v, name, ...asked } = body;
    const config = pricedForOneHourIfPostpaid(asked);
    const quote = await this.deps.pricing.quoteSize(config, user);
    return this.buyInstance(user, quote.category === 'App' ? 'Personal' : 'default', config.cycle, { ...config, name: name ?? '' }, quote);
  }

  /** A model resource package: an Ai order, always prepaid. */
  async buyResource(user: UserRow, body: AiResourceOrderRequest): Promise<Order> {
    this.assertMayBuy(user, 'Ai');
    const { product, price } = await this.deps.resources.price(body.productId, body.count);
    return this.deps.orders.create({
      payerId: payerIdOf(user),
      createdBy: user.id,
      kind: 'Ai',
      type: 'NewBuy',
      category: 'Ai',
      // Kept with the order so that its bill names what was bought: a GPU-hour package or a model one.
      request: { ...body, packageKind: product.gpuTypeId ? 'gpuHours' : 'tokens' },
      quote: price,
      description: this.deps.resources.describe(product, body.count),
    });
  }

  /** The category comes from the quote (an application makes a GPU order an App order), so the right to buy is checked after it. */
  private async buyInstance(user: UserRow, kind: OrderKind, cycle: BillingCycle, request: object, quote: Quote): Promise<Order> {
    this.assertMayBuy(user, quote.category);
    const order: NewOrder = {
      payerId: payerIdOf(user),
      createdBy: user.id,
      kind,
      type: 'NewBuy',
      category: quote.category,
      request: { ...request, placement: quote.placement },
      quote,
      description: describe(quote.lines[0]!.name, cycle),
    };
    return isPostpaid(cycle) ? this.createPostpaid(order, BigInt(quote.total)) : this.deps.orders.create(order);
  }

  /**
   * A post-paid order: nothing is paid up front, the order is "Time" (billing in progress) from the
   * start and each billing tick charges it (usage.ts). The balance must cover `minBalance` (an hour
   * of use) to begin; the owning domain fulfils it at once.
   */
  async createPostpaid(o: NewOrder, minBalance: bigint): Promise<Order> {
    this.deps.fulfillers.assertOnSale(o.category, 'Usage');
    const now = this.deps.clock.now();
    const row = newOrderRow(o, now, { type: 'Usage', status: 'Time', amount: 0n, payMethod: 'Balance', expiresAt: now });
    // The hour is reserved and the order made visible to the next purchase in one locked step.
    await this.deps.db.transaction(async (tx) => {
      await this.deps.usage.reserveHour(tx, o.payerId, minBalance, { spender: o.createdBy });
      await tx.insert(orders).values(row);
    });
    try {
      const { resourceId } = await this.deps.fulfillers.fulfil(row);
      await this.deps.db.update(orders).set({ resourceId, fulfilledAt: this.deps.clock.now(), updatedAt: this.deps.clock.now() }).where(eq(orders.id, row.id));
    } catch (e) {
      await this.deps.db.transaction((tx) => moveOrder(tx, this.deps.clock, row, 'Failed', { failReason: (e as Error).message.slice(0, 500) }));
      throw e;
    }
    const [fresh] = await this.deps.db.select().from(orders).where(eq(orders.id, row.id));
    return orderView(fresh!, []);
  }
}

/** Post-paid: the order is priced for one hour (what the balance must cover to begin); ticks charge the rest. */
function pricedForOneHourIfPostpaid<T extends { cycle: BillingCycle; duration: number }>(asked: T): T {
  return isPostpaid(asked.cycle) ? { ...asked, duration: 1 } : asked;
}

/** "RTX 4090 × 1（1 小时）" for a post-paid order is "RTX 4090 × 1 · 按量计费": it runs as long as the instance does. */
function describe(firstLine: string, cycle: BillingCycle): string {
  return isPostpaid(cycle) ? `${firstLine.replace(/（[^（）]*）$/, '')} · 按量计费` : firstLine;
}

/** Whose money a purchase spends: a child account spends its parent's balance (spec §1). */
