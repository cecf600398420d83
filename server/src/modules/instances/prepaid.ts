/**
 * Prepaid (Day/Week/Month) instances: auto-renewal from the balance and refund of unused time.
 *
 * Auto-renew: with the switch on, `autoRenewTick` renews an instance whose expiry is within
 * AUTO_RENEW_LEAD_HOURS (at most half a cycle unit: 12 h for Day) by one unit of its cycle: a Renew order created, paid from the balance (gift
 * credit by earliest expiry, then cash) and applied in one transaction under the instance's row
 * lock. The order's id is derived from the instance and the expiry it renews, so a repeated or
 * concurrent tick renews once. When the balance cannot pay nothing is written, the switch stays on,
 * the owner is told once per expiry, and the normal expiry path (billing.ts expiryTick) takes over.
 * Without the switch, the owner is told before expiry instead (expiringNoticeTick).
 *
 * Refund (退订): the owner releases a prepaid instance before it expires and gets back the unused
 * whole days (a started day counts as used) of what was paid for its time in cash and gift credit:
 * per paying order (purchase, renewals), newest first, each order's cash and gift parts × unused
 * days of that order / its days, rounded down to 0.0001 yuan. Vouchers are not returned; gift credit
 * whose grant has expired is not returned; data-disk expansion orders are not refunded. A fee of
 * PREPAID_REFUND_FEE_RATE (default 0) of each part is kept. One Refund order and one ledger transfer
 * per instance (its derived id and key), then the normal release.
 */
import { and, asc, eq, gt, isNull, lte, notInArray } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import {
  canAct,
  formatYuan,
  InstanceStatus,
  payerIdOf,
  isPostpaid,
  POSTPAID_CYCLES,
  type Instance,
  type PrepaidRefundQuote,
  type PrepaidRefundResult,
} from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import { instances } from './schema.js';
import { AppError, isAppError } from '../../http/errors.js';
import { HOURS_PER_UNIT } from '../catalogue/index.js';
import type { GiftService } from '../gifts/index.js';
import type { UserService } from '../users/index.js';
import type { Checkout } from '../orders/index.js';
import type { OrderService } from '../orders/index.js';
import type { UserRow } from '../users/index.js';
import type { RenewalService } from './renewal.js';
import { type InstanceService } from './service.js';
import { instanceIdFor, type InstanceRow } from './rows.js';
import type { InstanceViews } from './views.js';
import { notices, type NoticeService } from '../notices/index.js';

const DAY_MS = 86_400_000;
const BATCH = 200;
const HOUR_MS = 3_600_000;
/** How long before a prepaid instance expires its owner is told (without auto-renew). */
export const EXPIRY_NOTICE_LEADS = [3 * DAY_MS, DAY_MS];
/** The lead of cycles too short for EXPIRY_NOTICE_LEADS (Day). */
const SHORT_CYCLE_LEAD = 2 * HOUR_MS;

/**
 * The expiry notice due `left` ms before expiry, if any: the shortest lead already reached among
 * those that fit the cycle (at most half a unit, so an instance is not warned the moment it is bought).
 */
export function expiryLeadDue(cycle: keyof typeof HOURS_PER_UNIT, left: number): number | null {
  const half = (Number(HOURS_PER_UNIT[cycle]) * HOUR_MS) / 2;
  const fitting = EXPIRY_NOTICE_LEADS.filter((l) => l <= half);
  const leads = fitting.length ? fitting : [SHORT_CYCLE_LEAD];
  const reached = leads.filter((l) => left <= l);
  return reached.length ? Math.min(...reached) : null;
}

export const REFUND_RULE =
  '按未使用的整天数退还（不足一天按已使用计），按各笔订单实付的现金与赠送金比例原路退回；代金券抵扣部分不退，已过期的赠送金不退，数据盘扩容与带宽升级费用不退。';

export interface PrepaidDeps {
  db: Db;
  clock: Clock;
  instances: InstanceService;
  views: InstanceViews;
  renewals: RenewalService;
  orders: OrderService;
  /** Pays an auto-renewal from the balance; posts the refund of unused time. */
  checkout: Checkout;
  gifts: GiftService;
  /** The payer an auto-renewal is priced for (student discount). */
  users: Pick<UserService, 'findById'>;
  log: FastifyBaseLogger;
  /** AUTO_RENEW_LEAD_HOURS */
  leadHours: number;
  /** PREPAID_REFUND_FEE_RATE, e.g. "0" or "0.05" */
  refundFeeRate: string;
  /** Which expiry notices went out already (expiringNoticeTick). */
  notices: Pick<NoticeService, 'sentOccasions'>;
}

interface RefundPlan {
  quote: PrepaidRefundQuote;
  cash: bigint;
  gift: { grantId: string; amount: bigint }[];
}

export class PrepaidService {
  private feeBp: bigint;

  constructor(private deps: PrepaidDeps) {
    this.feeBp = BigInt(Math.round(Number(deps.refundFeeRate) * 10_000));
  }

  // --- auto-renew -------------------------------------------------------------------------

  async setAutoRenew(user: UserRow, id: string, on: boolean): Promise<Instance> {
    await this.deps.instances.mustFind(user, id);
    await this.deps.db.transaction(async (tx) => {
      const cur = await this.deps.instances.lock(tx, id);
      if (isPostpaid(cur.cycle)) throw new AppError('INSTANCE_NOT_PREPAID', '按量计费实例随用随付，没有自动续费');
      if (cur.status === 'Deleting' || cur.status === 'Failed')
        throw new AppError('INSTANCE_STATE_INVALID', `实例${InstanceStatus.label(cur.status)}，不能设置自动续费`);
      if (cur.autoRenew === on) return;
      await tx.update(instances).set({ autoRenew: on, autoRenewFailedFor: null, updatedAt: this.deps.clock.now() }).where(eq(instances.id, id));
      await this.deps.instances.logOp(tx, cur, { action: on ? 'autoRenewOn' : 'autoRenewOff', actorId: user.id, from: cur.status, to: cur.status, detail: '' });
    });
    return this.deps.views.get(user, id);
  }

  /** Renews (once) every instance with the switch on whose expiry is within the lead time. Returns how many were renewed. */
  async autoRenewTick(): Promise<number> {
    const now = this.deps.clock.now();
    const by = new Date(now.getTime() + this.deps.leadHours * 3_600_000);
    const due = await this.deps.db
      .select({ id: instances.id, userId: instances.userId, expireAt: instances.expireAt, cycle: instances.cycle })
      .from(instances)
      .where(
        and(
          eq(instances.autoRenew, true),
          gt(instances.expireAt, now),
          lte(instances.expireAt, by),
          isNull(instances.releasedAt),
          notInArray(instances.status, ['Deleting', 'Failed']),
          notInArray(instances.cycle, [...POSTPAID_CYCLES]),
        ),
      )
      .limit(BATCH);
    let n = 0;
    for (const c of due) {
      // Never earlier than half a cycle unit before expiry: a Day instance is not renewed the moment it is bought.
      const lead = Math.min(this.deps.leadHours, Number(HOURS_PER_UNIT[c.cycle]) / 2) * 3_600_000;
      if (c.expireAt!.getTime() - now.getTime() > lead) continue;
      try {
        if (await this.renewOne(c.id, c.userId, c.expireAt!)) n++;
      } catch (e) {
        this.deps.log.error({ instance: c.id, err: (e as Error).message }, 'auto-renewal failed; next round retries');
      }
    }
    return n;
  }

  private async renewOne(id: string, payerId: string, expireAt: Date): Promise<boolean> {
    const owner = await this.deps.users.findById(payerId);
    if (!owner) return false;
    const quote = await this.deps.renewals.renewQuote(owner, id, { duration: 1 });
    const orderId = instanceIdFor(`auto-renew:${id}:${expireAt.getTime()}`, 0);
    try {
      return await this.deps.db.transaction(async (tx) => {
        const cur = await this.deps.instances.lock(tx, id);
        if (!cur.autoRenew || cur.expireAt?.getTime() !== expireAt.getTime()) return false;
        const order = await this.deps.checkout.payNewFromBalance(
          tx,
          {
            payerId,
            createdBy: payerId,
            kind: cur.category === 'Gpu' || cur.category === 'App' ? 'Personal' : 'default',
            type: 'Renew',
            category: cur.category,
            request: { instanceId: id, duration: 1, auto: true },
            quote,
            description: `自动${quote.lines[0]!.name}`,
          },
          orderId,
          id,
        );
        if (!order) return false;
        await this.deps.renewals.extendExpiry(tx, cur, 1, { action: 'autoRenew', actorId: null, detail: order.orderUid });
        return true;
      });
    } catch (e) {
      if (!isAppError(e, 'INSUFFICIENT_BALANCE')) throw e;
      // Nothing was charged. Tell the owner once for this expiry; the switch stays on (a top-up before expiry still renews).
      const [claimed] = await this.deps.db
        .update(instances)
        .set({ autoRenewFailedFor: expireAt })
        .where(and(eq(instances.id, id), eq(instances.expireAt, expireAt), isNull(instances.autoRenewFailedFor)))
        .returning({ id: instances.id, name: instances.name, category: instances.category });
      if (claimed) await this.deps.instances.notifyOwner(payerId, notices.autoRenewFailed({ instance: claimed, expireAt, total: BigInt(quote.total) }));
      return false;
    }
  }

  // --- expiry notices ----------------------------------------------------------------------

  /**
   * Tells owners of prepaid instances without auto-renew that they expire soon: EXPIRY_NOTICE_LEADS
   * before (those no longer than half a cycle unit, 2 hours for a Day instance), only the latest
   * due one, once per expiry and lead. Returns how many were told.
   */
  async expiringNoticeTick(): Promise<number> {
    const now = this.deps.clock.now();
    const horizon = new Date(now.getTime() + Math.max(...EXPIRY_NOTICE_LEADS));
    let told = 0;
    for (let after: string | null = null; ;) {
      const rows = await this.deps.db
        .select({
          id: instances.id,
          userId: instances.userId,
          name: instances.name,
          category: instances.category,
          cycle: instances.cycle,
          expireAt: instances.expireAt,
        })
        .from(instances)
        .where(
          and(
            eq(instances.autoRenew, false),
            gt(instances.expireAt, now),
            lte(instances.expireAt, horizon),
            isNull(instances.releasedAt),
            notInArray(instances.status, ['Deleting', 'Failed']),
            notInArray(instances.cycle, [...POSTPAID_CYCLES]),
            after ? gt(instances.id, after) : undefined,
          ),
        )
        .orderBy(asc(instances.id))
        .limit(BATCH);
      const due = rows.flatMap((r) => {
        const lead = expiryLeadDue(r.cycle, r.expireAt!.getTime() - now.getTime());
        return lead === null ? [] : [{ row: r, lead, period: `${r.expireAt!.toISOString()}:${lead}` }];
      });
      const sent = await this.deps.notices.sentOccasions(
        'PrepaidExpiring',
        due.map((d) => ({ userId: d.row.userId, subject: d.row.id, period: d.period })),
      );
      for (const d of due) {
        if (sent.has(`${d.row.id}|${d.period}`)) continue;
        await this.deps.instances.notifyOwner(d.row.userId, notices.prepaidExpiring({ instance: d.row, expireAt: d.row.expireAt!, lead: d.lead }));
        told++;
      }
      if (rows.length < BATCH) return told;
      after = rows[rows.length - 1]!.id;
    }
  }

  // --- refund of unused prepaid time ------------------------------------------------------

  async refundQuote(user: UserRow, id: string): Promise<PrepaidRefundQuote> {
    await this.assertNotRefunded(user, id);
    const row = await this.deps.instances.mustFind(user, id);
    return this.deps.db.transaction(async (tx) => (await this.plan(tx, row)).quote);
  }

  /** Refunds the unused time and releases the instance through the normal release path, once. */
  async refund(user: UserRow, id: string): Promise<PrepaidRefundResult> {
    await this.assertNotRefunded(user, id);
    await this.deps.instances.mustFind(user, id);
    const { quote, orderUid, row } = await this.deps.db.transaction(async (tx) => {
      const cur = await this.deps.instances.lock(tx, id);
      // Checked again under the lock: a concurrent refund that got there first is the same answer as a replay.
      if (await this.deps.orders.byId(cur.userId, refundOrderId(id), tx)) throw new AppError('REFUND_DONE');
      const p = await this.plan(tx, cur);
      const order = await this.deps.checkout.postRefund(
        tx,
        {
          payerId: cur.userId,
          createdBy: user.id,
          kind: cur.category === 'Gpu' || cur.category === 'App' ? 'Personal' : 'default',
          type: 'Refund',
          category: cur.category,
          request: {
            instanceId: id,
            unusedDays: p.quote.unusedDays,
            totalDays: p.quote.totalDays,
            fee: p.quote.fee,
            toCash: p.quote.toCash,
            toGift: p.quote.toGift,
          },
          quote: {
            lines: [
              {
                kind: 'compute',
                name: `退订 ${cur.name}：未使用 ${p.quote.unusedDays} 天`,
                unitPrice: p.quote.refundable,
                quantity: 1,
                amount: p.quote.refund,
              },
            ],
            listTotal: p.quote.refundable,
            discountTotal: p.quote.fee,
            voucherDeduction: '0',
            total: p.quote.refund,
          },
          description: `退订 ${cur.name}（未使用 ${p.quote.unusedDays} 天）`,
        },
        refundOrderId(id),
        { cash: p.cash, gift: p.gift },
      );
      await tx.update(instances).set({ autoRenew: false }).where(eq(instances.id, id));
      const row = await this.deps.instances.begin(tx, { ...cur, autoRenew: false }, 'release', {
        actor: 'user',
        actorId: user.id,
        detail: `退订 ${order.orderUid}，退还 ${formatYuan(order.amount)} 元`,
      });
      return { quote: p.quote, orderUid: order.orderUid, row };
    });
    await this.deps.instances.submit(row);
    return { ...quote, orderUid, instance: await this.deps.views.get(user, id) };
  }

  private async assertNotRefunded(user: UserRow, id: string) {
    const payer = payerIdOf(user);
    if (await this.deps.orders.byId(payer, refundOrderId(id))) throw new AppError('REFUND_DONE');
  }

  /** The rules and the arithmetic: what goes back where, from the orders that paid for the time. */
  private async plan(tx: Tx, row: InstanceRow): Promise<RefundPlan> {
    const now = this.deps.clock.now();
    if (isPostpaid(row.cycle)) throw new AppError('INSTANCE_NOT_PREPAID', '按量计费实例随用随付，没有可退的预付费用；不用时直接释放即可');
    if (!row.expireAt || row.expireAt <= now) throw new AppError('REFUND_EXPIRED');
    if (!canAct('release', row.status, 'user')) {
      const on = ['Running', 'Starting', 'Restarting', 'Stopping', 'Shutdowning'];
      if (on.includes(row.status)) throw new AppError('INSTANCE_MUST_BE_STOPPED', `实例${InstanceStatus.label(row.status)}，请先关机再退订`);
      throw new AppError('INSTANCE_STATE_INVALID', `实例${InstanceStatus.label(row.status)}，不能退订`);
    }
    if (row.status === 'Failed') throw new AppError('INSTANCE_STATE_INVALID', '创建失败的实例已原路退款，直接释放即可');
    const paying = await this.deps.orders.prepaidPaymentsOf(tx, row.id, row.orderId);
    const grants = await this.deps.gifts.unexpired(tx, [...new Set(paying.flatMap((p) => p.parts.flatMap((x) => (x.giftGrantId ? [x.giftGrantId] : []))))]);
    const slices = paidSlices(paying, row).map((s) => ({ days: Number(s.hours / 24n), share: s.share, parts: s.parts }));
    const totalDays = slices.reduce((n, s) => n + s.days, 0);
    const unusedDays = Math.min(totalDays, Math.floor((row.expireAt.getTime() - now.getTime()) / DAY_MS));
    let left = unusedDays;
    let paid = 0n;
    let paidVoucher = 0n;
    let cash = 0n;
    const gift = new Map<string, bigint>();
    for (const s of [...slices].reverse()) {
      const unused = BigInt(Math.min(left, s.days));
      left -= Number(unused);
      const den = BigInt(s.days) * s.share;
      for (const p of s.parts) {
        paid += p.amount / s.share;
        if (p.source === 'voucher') {
          paidVoucher += p.amount / s.share;
          continue;
        }
        if (den === 0n || unused === 0n) continue;
        const back = (p.amount * unused) / den;
        if (p.source === 'cash') cash += back;
        else if (p.giftGrantId && grants.has(p.giftGrantId)) gift.set(p.giftGrantId, (gift.get(p.giftGrantId) ?? 0n) + back);
      }
    }
    const refundableGift = [...gift.values()].reduce((n, v) => n + v, 0n);
    const refundable = cash + refundableGift;
    const feeOf = (v: bigint) => (v * this.feeBp) / 10_000n;
    const toCash = cash - feeOf(cash);
    const giftBack = [...gift].map(([grantId, amount]) => ({ grantId, amount: amount - feeOf(amount) }));
    const toGift = giftBack.reduce((n, g) => n + g.amount, 0n);
    const refund = toCash + toGift;
    if (refund <= 0n) throw new AppError('REFUND_NOTHING', unusedDays === 0 ? '剩余不足 1 天' : '所付费用均为代金券抵扣，代金券不退');
    return {
      quote: {
        instanceId: row.id,
        instanceName: row.name,
        expireAt: row.expireAt.toISOString(),
        paid: String(paid),
        paidVoucher: String(paidVoucher),
        totalDays,
        usedDays: totalDays - unusedDays,
        unusedDays,
        refundable: String(refundable),
        feeRate: this.deps.refundFeeRate,
        fee: String(refundable - refund),
        refund: String(refund),
        toCash: String(toCash),
        toGift: String(toGift),
        rule: REFUND_RULE + (this.feeBp > 0n ? `收取可退金额 ${Number(this.feeBp) / 100}% 的手续费。` : '不收手续费。'),
      },
      cash: toCash,
      gift: giftBack,
    };
  }
}

/** Orders that start a new paid period of an instance: what was paid before them was credited to them. */
export const CONVERSION_TYPES = ['DayToMonth', 'TransferToLong'] as const;

type Paying = Awaited<ReturnType<OrderService['prepaidPaymentsOf']>>;

/**
 * The paid slices of an instance's current prepaid period, oldest first: the orders since the last
 * conversion (day-to-month, transfer to long-term), each with the hours it paid for and this
 * instance's share of it (a purchase of several CPU instances paid for all of them).
 */
export function paidSlices(paying: Paying, row: InstanceRow): { hours: bigint; share: bigint; parts: Paying[number]['parts'] }[] {
  let from = 0;
  paying.forEach((p, i) => {
    if ((CONVERSION_TYPES as readonly string[]).includes(p.order.type)) from = i;
  });
  return paying.slice(from).map(({ order, parts }) => {
    const req = order.request as { cycle?: keyof typeof HOURS_PER_UNIT; duration: number; gpuTypeId?: string; count?: number };
    const hours = HOURS_PER_UNIT[order.type === 'Renew' ? row.cycle : (req.cycle ?? row.cycle)] * BigInt(req.duration);
    const share = order.type === 'Renew' || req.gpuTypeId ? 1n : BigInt(req.count ?? 1);
    return { hours, share, parts };
  });
}

/**
 * The unused value of the current paid period after `unusedHours` whole hours: per slice, newest
 * first, its cash and gift parts × its unused hours / its hours (rounded down); vouchers count as
 * used. Day-to-month credits this against the Month price.
 */
export function unusedValue(paying: Paying, row: InstanceRow, unusedHours: bigint): bigint {
  let left = unusedHours;
  let value = 0n;
  for (const s of paidSlices(paying, row).reverse()) {
    const unused = left < s.hours ? left : s.hours;
    left -= unused;
    const den = s.hours * s.share;
    if (den === 0n || unused === 0n) continue;
    for (const p of s.parts) if (p.source !== 'voucher') value += (p.amount * unused) / den;
  }
  return value;
}

/** One Refund order per instance, ever: its id is derived from the instance. */
function refundOrderId(instanceId: string): string {
  return instanceIdFor(`refund:${instanceId}`, 0);
}
