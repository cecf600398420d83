/**
 * 资源包: quantities bought as Ai orders (model tokens, card hours), valid for some days, consumed
 * before money by the services that meter them. This module sells them (an order fulfiller), shows
 * them, lets the instance meter consume card hours (coverRuns) and the model gateway consume tokens
 * (reserveTokens at a call's hold, settleTokens when it ends).
 *
 * Consumption is not a ledger transfer: a package's price became revenue when its order was paid
 * (the ledger holds money, and the user's `resource` account was never credited), so using the
 * package moves no money. What a package paid for is a usage row instead, under a unique key, in
 * the same transaction as the run it covers and its decremented `remain`.
 */
import { randomUUID } from 'node:crypto';
import { and, asc, count, desc, eq, gt, isNotNull, isNull, sql } from 'drizzle-orm';
import { formatYuan, yuanToUnits, type OrderPrice, type PageOf, type ResourceUsage, type resourceUsageSchema } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import { pgArray } from '../../db/arrays.js';
import { rowsOf } from '../../db/results.js';
import { resourcePackageUsages, resourcePackages } from './schema.js';
import { AppError } from '../../http/errors.js';
import type { CatalogueStore } from '../catalogue/index.js';
import type { ResourceProductEntry } from '../catalogue/index.js';
import type { Fulfiller, OrderRow, OrderService } from '../orders/index.js';

/** Card-hour packages are kept in card-milliseconds so a run is covered to the millisecond. */
export const CARD_HOUR_SCALE = 3_600_000n;

/** A post-paid GPU run a tick is charging: what it has used in total, and what it had used at the last tick. */
export interface RunToCover {
  instanceId: string;
  /** The run (the instance's meter segment): coverage is counted per run. */
  segment: Date;
  userId: string;
  gpuTypeId: string;
  /** Card-milliseconds used by the run up to this tick (run ms × cards). */
  cardMs: bigint;
  /** Card-milliseconds used by the run up to the previous tick: what this tick adds is the difference. */
  prevCardMs: bigint;
}

export class ResourceService implements Fulfiller {
  constructor(
    private deps: {
      db: Db;
      clock: Clock;
      catalogue: CatalogueStore;
      /** The order numbers (orderUid) of the orders that bought packages. */
      orders: Pick<OrderService, 'uidsOf'>;
    },
  ) {}

  /** What is on sale; a GPU-hour package with its hours' price at the card's hourly rate (`rateOf`), so its discount shows. */
  async products(rateOf: (gpuTypeId: string) => Promise<bigint | null> = async () => null) {
    const { resourceProducts } = await this.deps.catalogue.get();
    return Promise.all(
      resourceProducts.map(async (p) => {
        const rate = p.gpuTypeId ? await rateOf(p.gpuTypeId) : null;
        return {
          ...p,
          price: String(yuanToUnits(p.price)),
          gpuTypeId: p.gpuTypeId ?? null,
          listPrice: rate === null ? null : String(rate * BigInt(p.quantity)),
        };
      }),
    );
  }

  /** What one of the payer's packages paid for, newest first (in the package's unit). */
  async usages(payerId: string, packageId: string, q: { page: number; pageSize: number }): Promise<PageOf<typeof resourceUsageSchema>> {
    const [pkg] = await this.deps.db
      .select()
      .from(resourcePackages)
      .where(and(eq(resourcePackages.id, packageId), eq(resourcePackages.userId, payerId)));
    if (!pkg) throw new AppError('RESOURCE_PACKAGE_NOT_FOUND');
    const where = eq(resourcePackageUsages.packageId, packageId);
    const [{ n } = { n: 0 }] = await this.deps.db.select({ n: count() }).from(resourcePackageUsages).where(where);
    // Each row with what the package had given up to and including it (oldest first), so that rows
    // rounded one by one still add up to what the package shows as used.
    const through = sql<string>`(sum(${resourcePackageUsages.amount}) over (order by ${resourcePackageUsages.createdAt}, ${resourcePackageUsages.id}))::text`;
    const rows = await this.deps.db
      .select({ u: resourcePackageUsages, through })
      .from(resourcePackageUsages)
      .where(where)
      .orderBy(desc(resourcePackageUsages.createdAt), desc(resourcePackageUsages.id))
      .limit(q.pageSize)
      .offset((q.page - 1) * q.pageSize);
    return {
      items: rows.map(({ u, through: upTo }) => ({
        ...usageOf(u),
        amount: shareInUnits(BigInt(upTo) - u.amount, BigInt(upTo), pkg.unitScale),
        createdAt: u.createdAt.toISOString(),
      })),
      total: n,
      page: q.page,
      pageSize: q.pageSize,
    };
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
    const unitScale = product.gpuTypeId ? CARD_HOUR_SCALE : 1n;
    const total = BigInt(product.quantity) * BigInt(req.count) * unitScale;
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
        gpuTypeId: product.gpuTypeId ?? null,
        unitScale,
        expiresAt: new Date(now.getTime() + product.validDays * 86400_000),
        createdAt: now,
      })
      .onConflictDoNothing({ target: resourcePackages.orderId });
    const [pkg] = await this.deps.db.select({ id: resourcePackages.id }).from(resourcePackages).where(eq(resourcePackages.orderId, order.id));
    return { resourceId: pkg!.id };
  }

  async list(userId: string) {
    const packages = await this.deps.db.select().from(resourcePackages).where(eq(resourcePackages.userId, userId)).orderBy(desc(resourcePackages.createdAt));
    const uids = await this.deps.orders.uidsOf(packages.map((p) => p.orderId));
    return packages.map((p) => ({
      id: p.id,
      name: p.name,
      unit: p.unit,
      total: inUnits(p.total, p.unitScale),
      remain: inUnits(p.remain, p.unitScale),
      gpuTypeId: p.gpuTypeId,
      expired: p.expiresAt <= this.deps.clock.now(),
      expiresAt: p.expiresAt.toISOString(),
      createdAt: p.createdAt.toISOString(),
      orderUid: uids.get(p.orderId) ?? '',
    }));
  }

  /**
   * Covers post-paid GPU runs from the payers' card-hour packages of the run's GPU type, earliest
   * expiry first, never below zero. Returns, per instance, the card-milliseconds of its run covered
   * so far (earlier ticks included); runs absent from the map were never covered. Set-based: a
   * handful of statements per batch however many runs, and one cheap query when nobody in the batch
   * holds a card-hour package. The caller holds the instance rows' locks, which makes a replayed
   * tick (same run, same length) find nothing new to cover; the keys make it fail rather than count twice.
   */
  async coverRuns(tx: Tx, runs: RunToCover[]): Promise<Map<string, bigint>> {
    const covered = new Map<string, bigint>();
    if (!runs.length) return covered;
    const holders = await tx.execute(sql`select distinct user_id from resource_packages
      where user_id = any(${pgArray([...new Set(runs.map((r) => r.userId))])}::uuid[]) and gpu_type_id is not null`);
    const holding = new Set(rowsOf<{ user_id: string }>(holders).map((r) => r.user_id));
    const mine = runs.filter((r) => holding.has(r.userId));
    if (!mine.length) return covered;

    const before = await tx.execute(sql`select u.instance_id, sum(u.amount)::text as amount
      from resource_package_usages u
      join unnest(${pgArray(mine.map((r) => r.instanceId))}::uuid[], ${pgArray(mine.map((r) => r.segment.toISOString()))}::timestamptz[]) as v(id, seg)
        on u.instance_id = v.id and u.segment = v.seg
      group by u.instance_id`);
    for (const r of rowsOf<{ instance_id: string; amount: string }>(before)) covered.set(r.instance_id, BigInt(r.amount));

    const now = this.deps.clock.now();
    const packages = await tx
      .select({ id: resourcePackages.id, userId: resourcePackages.userId, gpuTypeId: resourcePackages.gpuTypeId, remain: resourcePackages.remain })
      .from(resourcePackages)
      .where(
        and(
          sql`${resourcePackages.userId} = any(${pgArray([...new Set(mine.map((r) => r.userId))])}::uuid[])`,
          isNotNull(resourcePackages.gpuTypeId),
          gt(resourcePackages.remain, 0n),
          gt(resourcePackages.expiresAt, now),
        ),
      )
      .orderBy(asc(resourcePackages.userId), asc(resourcePackages.expiresAt), asc(resourcePackages.createdAt), asc(resourcePackages.id))
      .for('update');
    const pools = new Map<string, typeof packages>();
    for (const p of packages) {
      const k = `${p.userId}:${p.gpuTypeId}`;
      pools.set(k, [...(pools.get(k) ?? []), p]);
    }

    const usages: { packageId: string; userId: string; instanceId: string; segment: string; amount: bigint; key: string }[] = [];
    const taken = new Map<string, bigint>();
    for (const run of mine) {
      let need = run.cardMs - run.prevCardMs;
      for (const p of pools.get(`${run.userId}:${run.gpuTypeId}`) ?? []) {
        if (need <= 0n) break;
        const left = p.remain - (taken.get(p.id) ?? 0n);
        const take = left < need ? left : need;
        if (take <= 0n) continue;
        taken.set(p.id, (taken.get(p.id) ?? 0n) + take);
        need -= take;
        covered.set(run.instanceId, (covered.get(run.instanceId) ?? 0n) + take);
        usages.push({
          packageId: p.id,
          userId: run.userId,
          instanceId: run.instanceId,
          segment: run.segment.toISOString(),
          amount: take,
          key: `pkg:${run.instanceId}:${run.segment.getTime()}:${run.cardMs}:${p.id}`,
        });
      }
    }
    if (!usages.length) return covered;
    await tx.execute(sql`update resource_packages p set remain = p.remain - v.amount
      from unnest(${pgArray([...taken.keys()])}::uuid[], ${pgArray([...taken.values()])}::bigint[]) as v(id, amount) where p.id = v.id`);
    await tx.execute(sql`insert into resource_package_usages (package_id, user_id, instance_id, segment, amount, key, created_at)
      select v.p, v.u, v.i, v.s, v.a, v.k, ${now.toISOString()}::timestamptz
      from unnest(${pgArray(usages.map((u) => u.packageId))}::uuid[], ${pgArray(usages.map((u) => u.userId))}::uuid[], ${pgArray(usages.map((u) => u.instanceId))}::uuid[],
        ${pgArray(usages.map((u) => u.segment))}::timestamptz[], ${pgArray(usages.map((u) => u.amount))}::bigint[], ${pgArray(usages.map((u) => u.key))}::text[])
        as v(p, u, i, s, a, k)`);
    return covered;
  }

  /** Whether the payer holds a token package with tokens left (read without a lock: the gateway's fast path). */
  async holdsTokens(payerId: string): Promise<boolean> {
    const [row] = await this.deps.db
      .select({ id: resourcePackages.id })
      .from(resourcePackages)
      .where(
        and(
          eq(resourcePackages.userId, payerId),
          isNull(resourcePackages.gpuTypeId),
          gt(resourcePackages.remain, 0n),
          gt(resourcePackages.expiresAt, this.deps.clock.now()),
        ),
      )
      .limit(1);
    return row !== undefined;
  }

  /**
   * Reserves up to `tokens` from the payer's token packages for a model call, earliest expiry first,
   * in the caller's transaction (the package rows stay locked until it ends). Returns how many it
   * reserved: 0 when the payer holds no usable package.
   */
  async reserveTokens(tx: Tx, payerId: string, callId: string, tokens: number): Promise<number> {
    if (tokens <= 0) return 0;
    const packages = await tx
      .select({ id: resourcePackages.id, remain: resourcePackages.remain })
      .from(resourcePackages)
      .where(
        and(
          eq(resourcePackages.userId, payerId),
          isNull(resourcePackages.gpuTypeId),
          gt(resourcePackages.remain, 0n),
          gt(resourcePackages.expiresAt, this.deps.clock.now()),
        ),
      )
      .orderBy(asc(resourcePackages.expiresAt), asc(resourcePackages.createdAt), asc(resourcePackages.id))
      .for('update');
    let need = BigInt(tokens);
    const takes: { id: string; amount: bigint }[] = [];
    for (const p of packages) {
      if (need <= 0n) break;
      const take = p.remain < need ? p.remain : need;
      takes.push({ id: p.id, amount: take });
      need -= take;
    }
    if (!takes.length) return 0;
    const now = this.deps.clock.now().toISOString();
    await tx.execute(sql`update resource_packages p set remain = p.remain - v.amount
      from unnest(${pgArray(takes.map((t) => t.id))}::uuid[], ${pgArray(takes.map((t) => t.amount))}::bigint[]) as v(id, amount) where p.id = v.id`);
    await tx.execute(sql`insert into resource_package_usages (package_id, user_id, model_call_id, amount, key, created_at)
      select v.p, ${payerId}::uuid, ${callId}::uuid, v.a, 'model:' || ${callId} || ':' || v.p, ${now}::timestamptz
      from unnest(${pgArray(takes.map((t) => t.id))}::uuid[], ${pgArray(takes.map((t) => t.amount))}::bigint[]) as v(p, a)
      on conflict (key) do update set amount = resource_package_usages.amount + excluded.amount`);
    return Number(BigInt(tokens) - need);
  }

  /**
   * Ends a model call's reservation at the `used` tokens: what it reserved beyond them goes back to
   * the packages (the latest-expiring first), and when it used more than it reserved the rest is
   * reserved now, as far as the packages go (only for a call that reserved some at its hold). Returns the tokens the packages pay for. The caller
   * holds the call's row lock, so a call is settled once.
   */
  async settleTokens(tx: Tx, payerId: string, callId: string, reserved: number, used: number): Promise<number> {
    // A call that found no package at its hold is paid in cash (a package bought meanwhile pays for the next call).
    if (reserved === 0) return 0;
    if (used > reserved) return reserved + (await this.reserveTokens(tx, payerId, callId, used - reserved));
    const back = BigInt(reserved - used);
    if (back === 0n) return used;
    const rows = rowsOf<{ id: string; package_id: string; amount: string }>(
      await tx.execute(sql`select u.id, u.package_id, u.amount::text as amount from resource_package_usages u
        join resource_packages p on p.id = u.package_id
        where u.model_call_id = ${callId}::uuid order by p.expires_at desc, p.id desc for update of u, p`),
    );
    await giveBack(tx, rows, back);
    return used;
  }

  /** The card time (ms) the payer's usable packages of a GPU type have left, read without a lock (quotes). */
  async cardTimeLeft(payerId: string, gpuTypeId: string): Promise<bigint> {
    const [row] = await this.deps.db
      .select({ left: sql<string>`coalesce(sum(${resourcePackages.remain}), 0)::text` })
      .from(resourcePackages)
      .where(this.usableCardTime(payerId, gpuTypeId));
    return BigInt(row?.left ?? '0');
  }

  /**
   * Reserves card time of the payer's `gpuTypeId` packages for a job (`ref`: `train:<id>`,
   * `gen:<id>`), earliest expiry first, in the caller's transaction: up to `ms`, and in whole
   * multiples of `grain` (an image is paid by a package or by cash, never by both). Returns the
   * milliseconds reserved. The job uses them as it goes; what it does not use is given back.
   */
  async reserveCardTime(tx: Tx, payerId: string, ref: string, gpuTypeId: string, ms: bigint, grain = 1n): Promise<bigint> {
    if (ms <= 0n) return 0n;
    const packages = await tx
      .select({ id: resourcePackages.id, remain: resourcePackages.remain })
      .from(resourcePackages)
      .where(this.usableCardTime(payerId, gpuTypeId))
      .orderBy(asc(resourcePackages.expiresAt), asc(resourcePackages.createdAt), asc(resourcePackages.id))
      .for('update');
    const left = packages.reduce((n, p) => n + p.remain, 0n);
    const want = ((left < ms ? left : ms) / grain) * grain;
    let need = want;
    const takes: { id: string; amount: bigint }[] = [];
    for (const p of packages) {
      if (need <= 0n) break;
      const take = p.remain < need ? p.remain : need;
      takes.push({ id: p.id, amount: take });
      need -= take;
    }
    if (!takes.length) return 0n;
    const now = this.deps.clock.now().toISOString();
    await tx.execute(sql`update resource_packages p set remain = p.remain - v.amount
      from unnest(${pgArray(takes.map((t) => t.id))}::uuid[], ${pgArray(takes.map((t) => t.amount))}::bigint[]) as v(id, amount) where p.id = v.id`);
    await tx.execute(sql`insert into resource_package_usages (package_id, user_id, job_ref, amount, key, created_at)
      select v.p, ${payerId}::uuid, ${ref}, v.a, ${ref} || ':' || v.p, ${now}::timestamptz
      from unnest(${pgArray(takes.map((t) => t.id))}::uuid[], ${pgArray(takes.map((t) => t.amount))}::bigint[]) as v(p, a)`);
    return want;
  }

  /** Gives `ms` of a job's reserved card time back to its packages, the latest-expiring first (a cancel, a failure). */
  async releaseCardTime(tx: Tx, ref: string, ms: bigint): Promise<void> {
    const back = ms;
    if (back <= 0n) return;
    const rows = rowsOf<{ id: string; package_id: string; amount: string }>(
      await tx.execute(sql`select u.id, u.package_id, u.amount::text as amount from resource_package_usages u
        join resource_packages p on p.id = u.package_id
        where u.job_ref = ${ref} order by p.expires_at desc, p.id desc for update of u, p`),
    );
    await giveBack(tx, rows, back);
  }

  private usableCardTime(payerId: string, gpuTypeId: string) {
    return and(
      eq(resourcePackages.userId, payerId),
      eq(resourcePackages.gpuTypeId, gpuTypeId),
      gt(resourcePackages.remain, 0n),
      gt(resourcePackages.expiresAt, this.deps.clock.now()),
    );
  }

  describe(product: ResourceProductEntry, count: number) {
    return `${product.name} × ${count}（¥${formatYuan(yuanToUnits(product.price) * BigInt(count))}）`;
  }
}

/** What a usage row paid for, by the column it names. */
function usageOf(u: typeof resourcePackageUsages.$inferSelect): Pick<ResourceUsage, 'kind' | 'ref'> {
  if (u.instanceId) return { kind: 'instance', ref: u.instanceId };
  if (u.modelCallId) return { kind: 'model', ref: u.modelCallId };
  const [kind, ref] = (u.jobRef ?? 'train:').split(':') as ['train' | 'gen', string];
  return { kind, ref };
}

/** Returns `back` of what usage rows took to their packages, in the rows' order (the caller locked them); a row given back whole is deleted. */
async function giveBack(tx: Tx, rows: { id: string; package_id: string; amount: string }[], back: bigint): Promise<void> {
  for (const r of rows) {
    if (back <= 0n) break;
    const amount = BigInt(r.amount);
    const give = amount < back ? amount : back;
    back -= give;
    await tx.execute(sql`update resource_packages set remain = remain + ${give} where id = ${r.package_id}::uuid`);
    await tx.execute(
      give === amount
        ? sql`delete from resource_package_usages where id = ${r.id}`
        : sql`update resource_package_usages set amount = amount - ${give} where id = ${r.id}`,
    );
  }
}

/** A stored quantity in the unit shown: card-milliseconds as hours to 4 decimals (rounded down, never more than is left). */
export function inUnits(stored: bigint, scale: bigint): string {
  if (scale === 1n) return String(stored);
  return tenThousandthsText((stored * 10_000n) / scale);
}

/**
 * One usage row in the package's unit, as the difference of the package's use before it and through it,
 * each rounded up to the 0.0001 shown: the rows then add up to what the package shows as used (its total
 * less its remain rounded down), where rows rounded down one by one fell short of it.
 */
export function shareInUnits(before: bigint, through: bigint, scale: bigint): string {
  if (scale === 1n) return String(through - before);
  const up = (stored: bigint) => (stored * 10_000n + scale - 1n) / scale;
  return tenThousandthsText(up(through) - up(before));
}

function tenThousandthsText(tenThousandths: bigint): string {
  const whole = tenThousandths / 10_000n;
  const frac = (tenThousandths % 10_000n).toString().padStart(4, '0').replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : String(whole);
}
