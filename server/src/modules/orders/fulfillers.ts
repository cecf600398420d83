/**
 * Who delivers what an order paid for: one fulfiller per (category, order type), registered at
 * start (context.ts, one line each). An order of a pair nobody delivers cannot be created: it is
 * not on sale.
 */
import type { OrderType } from '@console/contract';
import { AppError } from '../../http/errors.js';
import type { OrderRow } from './rows.js';

/** The domain that turns a paid order into what was bought. Must be idempotent per order id. */
export interface Fulfiller {
  fulfil(order: OrderRow): Promise<{ resourceId: string }>;
}

/** Buying a product: prepaid (NewBuy), or post-paid (a Usage order billed while it runs). */
export const PURCHASE_TYPES: readonly OrderType[] = ['NewBuy', 'Usage'];

export class Fulfillers {
  private byPair = new Map<string, Fulfiller>();

  register(category: string, fulfiller: Fulfiller, types: readonly OrderType[]): void {
    for (const type of types) this.byPair.set(pair(category, type), fulfiller);
  }

  assertOnSale(category: string, type: OrderType): void {
    if (!this.byPair.has(pair(category, type))) throw new AppError('PRODUCT_NOT_ON_SALE', `${category} 暂不能下单`);
  }

  /** Hands the order to its fulfiller; without one it fails (and the caller refunds it). */
  async fulfil(order: OrderRow): Promise<{ resourceId: string }> {
    const fulfiller = this.byPair.get(pair(order.category, order.type));
    if (!fulfiller) throw new Error(`没有 ${order.category} 的交付方`);
    return fulfiller.fulfil(order);
  }
}

function pair(category: string, type: OrderType): string {
  return `${category}/${type}`;
}
