/**
 * 资源包: quantities bought as Ai orders (model tokens, card hours), valid for some days, consumed
 * before money by the services that meter them. This module sells them (an order fulfiller) and
 * shows them; the model and instance domains consume them.
 */
import { randomUUID } from 'node:crypto';
import { desc, eq } from 'drizzle-orm';
import { formatYuan, yuanToUnits, type OrderPrice } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import { orders, resourcePackages } from '../../db/schema.js';
import { AppError } from '../../http/errors.js';
import type { CatalogueStore } from '../catalogue/store.js';
import type { ResourceProductEntry } from '../catalogue/seed-file.js';
import type { Fulfiller, OrderRow } from '../orders/service.js';

export class ResourceService implements Fulfiller {
  constructor(private deps: { db: Db; clock: Clock; catalogue: CatalogueStore }) {}

  async products() {
    const { resourceProducts } = await this.deps.catalogue.get();
    return resourceProducts.map((p) => ({ ...p, price: String(yuanToUnits(p.price)) }));
  }

  async product(id: string): Promise<ResourceProductEntry> {
    const { resourceProducts } = await this.deps.catalogue.get();
    const p = resourceProducts.find((x) => x.id === id);
    if (!p) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `资源包 ${id} 不存在或已下架`);
    return p;
  }

  /** The price of `count` packages: no cycle, no discount; vouchers apply at payment. */
  async price(id: string, count: number): Promise<{ product: ResourceProductEntry; price: OrderPrice }> {
    const product = await this.product(id);
    const unit = yuanToUnits(product.price);
    const total = unit * BigInt(count);
    const line = { kind: 'compute' as const, name: `${product.name} × ${count}`, unitPrice: String(unit), quantity: count, amount: String(total) };
    return { product, price: { lines: [line], listTotal: String(total), discountTotal: '0', voucherDeduction: '0', total: String(total) } };
  }

  /** Fulfils an Ai order: one package row per order (the unique order id makes a retry a no-op). */
  async fulfil(order: OrderRow): Promise<{ resourceId: string }> {
    const req = order.request as { productId: string; count: number };
    const product = await this.product(req.productId);
    const now = this.deps.clock.now();
    const total = BigInt(product.quantity) * BigInt(req.count);
    await this.deps.db
      .insert(resourcePackages)
      .values({
        id: randomUUID(),
        userId: order.userId,
        orderId: order.id,
        productId: product.id,
        name: req.count > 1 ? `${product.name} × ${req.count}` : product.name,
        unit: product.unit,
        total,
        remain: total,
        expiresAt: new Date(now.getTime() + product.validDays * 86400_000),
        createdAt: now,
      })
      .onConflictDoNothing({ target: resourcePackages.orderId });
    const [pkg] = await this.deps.db.select({ id: resourcePackages.id }).from(resourcePackages).where(eq(resourcePackages.orderId, order.id));
    return { resourceId: pkg!.id };
  }

  async list(userId: string) {
    const rows = await this.deps.db
      .select({ p: resourcePackages, orderUid: orders.orderUid })
      .from(resourcePackages)
      .innerJoin(orders, eq(orders.id, resourcePackages.orderId))
      .where(eq(resourcePackages.userId, userId))
      .orderBy(desc(resourcePackages.createdAt));
    return rows.map(({ p, orderUid }) => ({
      id: p.id,
      name: p.name,
      unit: p.unit,
      total: String(p.total),
      remain: String(p.remain),
      expiresAt: p.expiresAt.toISOString(),
      createdAt: p.createdAt.toISOString(),
      orderUid,
    }));
  }

  describe(product: ResourceProductEntry, count: number) {
    return `${product.name} × ${count}（¥${formatYuan(yuanToUnits(product.price) * BigInt(count))}）`;
  }
}
