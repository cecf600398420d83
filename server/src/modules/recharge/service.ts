/**
 * Recharge (充值): the user pays a gateway, the amount lands in cash, and the operator's bonus
 * (18% by default, spec §1) lands as gift credit with its own expiry. A recharge is the `recharge`
 * purpose of the payment service, so both credits happen in the transaction that marks it paid.
 */
import { randomUUID } from 'node:crypto';
import { and, count, desc, eq } from 'drizzle-orm';
import { formatYuan, yuanToUnits, type Recharge, type RechargeRequest } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import { recharges } from './schema.js';
import { AppError } from '../../http/errors.js';
import type { CatalogueStore } from '../catalogue/index.js';
import { bpToRate } from '../catalogue/index.js';
import type { GiftService } from '../gifts/index.js';
import type { PaymentRow, PaymentService } from '../payments/index.js';

export type RechargeRow = typeof recharges.$inferSelect;
const PRESETS_YUAN = ['50', '100', '500', '1000', '5000'];

/** The bonus of an amount: rounded down to 0.0001 yuan, never in the user's favour by accident. */
export function bonusOf(amount: bigint, bonusBp: number): bigint {
  return (amount * BigInt(bonusBp)) / 10000n;
}

export class RechargeService {
  constructor(private deps: { db: Db; clock: Clock; catalogue: CatalogueStore; payments: PaymentService; gifts: GiftService }) {
    deps.payments.register('recharge', { onPaid: (tx, p) => this.onPaid(tx, p), onClosed: (tx, p) => this.onClosed(tx, p) });
  }

  async options() {
    const { settings } = await this.deps.catalogue.get();
    const presets = PRESETS_YUAN.map(yuanToUnits).filter((p) => p >= settings.rechargeMin && p <= settings.rechargeMax);
    return {
      min: String(settings.rechargeMin),
      max: String(settings.rechargeMax),
      presets: presets.map(String),
      bonusRate: settings.rechargeBonusBp ? bpToRate(settings.rechargeBonusBp) : '0',
      giftValidDays: settings.giftValidDays,
      paymentTimeoutMinutes: settings.paymentTimeoutMinutes,
    };
  }

  async create(userId: string, req: RechargeRequest): Promise<Recharge> {
    const { settings } = await this.deps.catalogue.get();
    const amount = yuanToUnits(req.amount);
    if (amount < settings.rechargeMin || amount > settings.rechargeMax) {
      throw new AppError('VALIDATION_FAILED', `amount：单次充值金额须在 ${formatYuan(settings.rechargeMin)} 到 ${formatYuan(settings.rechargeMax)} 元之间`);
    }
    const now = this.deps.clock.now();
    const row: RechargeRow = {
      id: randomUUID(),
      userId,
      amount,
      bonus: bonusOf(amount, settings.rechargeBonusBp),
      method: req.method,
      status: 'Unpaid',
      expiresAt: new Date(now.getTime() + settings.paymentTimeoutMinutes * 60_000),
      paidAt: null,
      createdAt: now,
    };
    await this.deps.db.insert(recharges).values(row);
    try {
      const payment = await this.deps.payments.create({
        purpose: 'recharge',
        subjectId: row.id,
        userId,
        method: req.method,
        amount,
        subject: `算力云账户充值 ${formatYuan(amount)} 元`,
        expiresAt: row.expiresAt,
      });
      return view(row, payment);
    } catch (e) {
      await this.deps.db.update(recharges).set({ status: 'Cancelled' }).where(eq(recharges.id, row.id));
      throw e;
    }
  }

  /** The recharge as a polling page sees it: asks the gateway when the notification is late. */
  async get(userId: string, id: string): Promise<Recharge> {
    const row = await this.find(userId, id);
    let payment = await this.paymentOf(row.id);
    if (row.status === 'Unpaid') payment = await this.deps.payments.refresh(payment.id);
    return view(await this.find(userId, id), payment);
  }

  async cancel(userId: string, id: string): Promise<Recharge> {
    const row = await this.find(userId, id);
    if (row.status !== 'Unpaid') return this.get(userId, id);
    const payment = await this.paymentOf(row.id);
    await this.deps.payments.close(payment, 'cancelled');
    return this.get(userId, id);
  }

  async list(userId: string, paging: { page: number; pageSize: number }) {
    const where = eq(recharges.userId, userId);
    const [{ total } = { total: 0 }] = await this.deps.db.select({ total: count() }).from(recharges).where(where);
    const rows = await this.deps.db
      .select()
      .from(recharges)
      .where(where)
      .orderBy(desc(recharges.createdAt))
      .limit(paging.pageSize)
      .offset((paging.page - 1) * paging.pageSize);
    const items = await Promise.all(rows.map(async (r) => view(r, await this.paymentOf(r.id))));
    return { items, total, ...paging };
  }

  private async onPaid(tx: Tx, payment: PaymentRow) {
    const [row] = await tx.select().from(recharges).where(eq(recharges.id, payment.subjectId)).for('update');
    if (!row) throw new Error(`recharge ${payment.subjectId} missing`);
    // Paid after it expired or was cancelled on our side: the money is credited all the same.
    await tx.update(recharges).set({ status: 'Paid', paidAt: payment.paidAt }).where(eq(recharges.id, row.id));
    const { settings } = this.deps.catalogue.peek();
    await this.deps.gifts.grant(tx, {
      userId: row.userId,
      amount: row.bonus,
      source: 'recharge_bonus',
      validDays: settings.giftValidDays,
      key: `recharge-bonus:${row.id}`,
      memo: `充值 ${formatYuan(row.amount)} 元赠送`,
    });
  }

  private async onClosed(tx: Tx, payment: PaymentRow) {
    const [row] = await tx.select().from(recharges).where(eq(recharges.id, payment.subjectId)).for('update');
    if (!row || row.status !== 'Unpaid') return;
    const expired = this.deps.clock.now() >= row.expiresAt;
    await tx
      .update(recharges)
      .set({ status: expired ? 'Expired' : 'Cancelled' })
      .where(eq(recharges.id, row.id));
  }

  private async find(userId: string, id: string): Promise<RechargeRow> {
    const [row] = await this.deps.db
      .select()
      .from(recharges)
      .where(and(eq(recharges.id, id), eq(recharges.userId, userId)));
    if (!row) throw new AppError('RECORD_NOT_FOUND', '充值记录不存在');
    return row;
  }

  private async paymentOf(rechargeId: string): Promise<PaymentRow> {
    return this.deps.payments.bySubject(rechargeId);
  }
}

function view(r: RechargeRow, p: PaymentRow): Recharge {
  return {
    id: r.id,
    amount: String(r.amount),
    bonus: String(r.bonus),
    method: r.method,
    status: r.status,
    outTradeNo: p.outTradeNo,
    qrContent: r.status === 'Unpaid' ? p.qrContent : '',
    expiresAt: r.expiresAt.toISOString(),
    paidAt: r.paidAt?.toISOString() ?? null,
    createdAt: r.createdAt.toISOString(),
  };
}
