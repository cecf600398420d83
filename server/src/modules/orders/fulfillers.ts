/**
 * Who delivers what an order paid for: one fulfiller per (category, order type), from the table the
 * composition root builds of what the selling modules return (context.ts). An order of a pair nobody
 * delivers cannot be created: it is not on sale.
 */
import type { OrderType } from '@console/contract';
import { AppError } from '../../http/errors.js';
import type { OrderRow } from './rows.js';

/** The domain that turns a paid order into what was bought. Must be idempotent per order id. */
export interface Fulfiller {
  fulfil(order: OrderRow): Promise<{ resourceId: string }>;
}

/** One line of the table: this fulfiller delivers these order types of these categories. */
export interface FulfillerLine {
  categories: readonly string[];
  types: readonly OrderType[];
  fulfiller: Fulfiller;
}

/** The fulfiller of a (category, order type), if anyone delivers it. */
export type FulfillerOf = (category: string, type: OrderType) => Fulfiller | undefined;

/** Buying a product: prepaid (NewBuy), or post-paid (a Usage order billed while it runs). */
export const PURCHASE_TYPES: readonly OrderType[] = ['NewBuy', 'Usage'];

/** The lookup over a table's lines; a later line for the same pair replaces an earlier one. */
export function fulfillerTable(lines: readonly FulfillerLine[]): FulfillerOf {
  const byPair = new Map<string, Fulfiller>();
  for (const { categories, types, fulfiller } of lines)
    for (const category of categories) for (const type of types) byPair.set(pair(category, type), fulfiller);
  return (category, type) => byPair.get(pair(category, type));
}

export class Fulfillers {
  constructor(private readonly fulfillerOf: FulfillerOf) {}

  assertOnSale(category: string, type: OrderType): void {
    if (!this.fulfillerOf(category, type)) throw new AppError('PRODUCT_NOT_ON_SALE', `${category} 暂不能下单`);
  }

  /** Hands the order to its fulfiller; without one it fails (and the caller refunds it). */
  async fulfil(order: OrderRow): Promise<{ resourceId: string }> {
    const fulfiller = this.fulfillerOf(order.category, order.type);
    if (!fulfiller) throw new Error(`没有 ${order.category} 的交付方`);
    return fulfiller.fulfil(order);
  }
}

function pair(category: string, type: OrderType): string {
  return `${category}/${type}`;
}
