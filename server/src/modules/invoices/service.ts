/**
 * 发票申请: an account holder asks for a VAT invoice over money it actually paid in; the
 * operator issues it with the invoice number or rejects it with a reason; a pending request may be
 * cancelled by its owner. Invoices move no money: they only describe money the ledger already has.
 *
 * 可开票金额 follows the ledger: the cash actually consumed (spent on orders, post-paid charges and
 * model calls — less what refunds gave back, a QR-paid 日转月 refunded by 退订 is not consumed, and
 * less what is only held for model calls under way), at most what came
 * in through gateways (recharges, QR payments) less what was sent back out, − issued − pending. Gift
 * credit and vouchers are never invoiced, nor cash the platform gave (compensation) beyond money paid in.
 * Two requests racing for the same amount are serialised by a transaction-scoped advisory lock on
 * the payer, taken before the amount is read: the second sees the first one's pending row.
 */
import { randomUUID } from 'node:crypto';
import { and, count, desc, eq, inArray, sql, type SQL } from 'drizzle-orm';
import { InvoiceStatus, invoiceRequestSchema, yuanToUnits, fenFloorText, type Invoice } from '@console/contract';
import type { z } from 'zod';
import type { Clock } from '../../clock.js';
import type { Db, Executor } from '../../db/client.js';
import { invoices } from './schema.js';
import { AppError } from '../../http/errors.js';
import type { LedgerService } from '../ledger/index.js';
import type { UserService } from '../users/index.js';

export type InvoiceRow = typeof invoices.$inferSelect;
type InvoiceInput = z.output<typeof invoiceRequestSchema>;

export function invoiceView(r: InvoiceRow): Invoice {
  return {
    id: r.id,
    kind: r.kind,
    titleType: r.titleType,
    title: r.title,
    taxNo: r.taxNo,
    email: r.email,
    amount: String(r.amount),
    status: r.status,
    invoiceNo: r.invoiceNo,
    rejectReason: r.rejectReason,
    createdAt: r.createdAt.toISOString(),
    closedAt: r.closedAt?.toISOString() ?? null,
  };
}

export class InvoiceService {
  constructor(
    private deps: {
      db: Db;
      clock: Clock;
      ledger: LedgerService;
      /** The requesting accounts' mobile numbers, for the operator's queue. */
      users: Pick<UserService, 'mobilesOf'>;
      /** Cash held right now for model calls under way: taken from the cash, not yet consumed. */
      modelHeld?: (payerId: string, exec: Executor) => Promise<bigint>;
    },
  ) {}

  /** What the payer may still invoice, with the figures it is made of. */
  async invoiceable(payerId: string, exec: Executor = this.deps.db) {
    const { paidIn, refunded, consumed } = await this.deps.ledger.externalCash(payerId, exec);
    const rows = await exec
      .select({ status: invoices.status, total: sql<string>`sum(${invoices.amount})::text` })
      .from(invoices)
      .where(and(eq(invoices.userId, payerId), inArray(invoices.status, ['Pending', 'Issued'])))
      .groupBy(invoices.status);
    const sum = (s: InvoiceStatus) => BigInt(rows.find((r) => r.status === s)?.total ?? '0');
    const invoiced = sum('Issued');
    const pending = sum('Pending');
    const ownMoney = paidIn - refunded;
    const held = (await this.deps.modelHeld?.(payerId, exec)) ?? 0n;
    const spent = consumed - held > 0n ? consumed - held : 0n;
    const left = (spent < ownMoney ? spent : ownMoney) - invoiced - pending;
    return { invoiceable: left > 0n ? left : 0n, paidIn, refunded, consumed: spent, invoiced, pending };
  }

  async create(payerId: string, requestedBy: string, input: InvoiceInput): Promise<Invoice> {
    const amount = yuanToUnits(input.amount);
    return this.deps.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`invoice:${payerId}`}, 0))`);
      const { invoiceable } = await this.invoiceable(payerId, tx);
      if (amount > invoiceable) throw new AppError('INVOICE_AMOUNT_EXCEEDED', `本次最多可开 ${fenFloorText(invoiceable)} 元`);
      const now = this.deps.clock.now();
      const [row] = await tx
        .insert(invoices)
        .values({
          id: randomUUID(),
          userId: payerId,
          requestedBy,
          kind: input.kind,
          titleType: input.titleType,
          title: input.title,
          taxNo: input.taxNo,
          email: input.email,
          amount,
          createdAt: now,
          updatedAt: now,
        })
        .returning();
      return invoiceView(row!);
    });
  }

  async list(payerId: string, q: { status?: InvoiceStatus; page: number; pageSize: number }) {
    const where = and(eq(invoices.userId, payerId), q.status ? eq(invoices.status, q.status) : undefined);
    const [{ total } = { total: 0 }] = await this.deps.db.select({ total: count() }).from(invoices).where(where);
    const rows = await this.deps.db
      .select()
      .from(invoices)
      .where(where)
      .orderBy(desc(invoices.createdAt), desc(invoices.id))
      .limit(q.pageSize)
      .offset((q.page - 1) * q.pageSize);
    return { items: rows.map(invoiceView), total, page: q.page, pageSize: q.pageSize };
  }

  /** The owner withdraws a request the operator has not handled yet. */
  async cancel(payerId: string, id: string): Promise<Invoice> {
    return invoiceView(await this.close(id, { status: 'Cancelled' }, eq(invoices.userId, payerId)));
  }

  /** The operator has issued the invoice (and e-mailed it): the number is what the user sees. */
  async issue(id: string, invoiceNo: string, operatorId: string | null): Promise<Invoice> {
    return invoiceView(await this.close(id, { status: 'Issued', invoiceNo, operatorId }));
  }

  async reject(id: string, reason: string, operatorId: string | null): Promise<Invoice> {
    return invoiceView(await this.close(id, { status: 'Rejected', rejectReason: reason, operatorId }));
  }

  /** Every request, for the operator: pending first by default (oldest first, as a queue). */
  async queue(q: { status?: InvoiceStatus; page: number; pageSize: number }) {
    const where = q.status ? eq(invoices.status, q.status) : undefined;
    const [{ total } = { total: 0 }] = await this.deps.db.select({ total: count() }).from(invoices).where(where);
    const rows = await this.deps.db
      .select()
      .from(invoices)
      .where(where)
      .orderBy(q.status === 'Pending' ? invoices.createdAt : desc(invoices.createdAt))
      .limit(q.pageSize)
      .offset((q.page - 1) * q.pageSize);
    const mobiles = await this.deps.users.mobilesOf(rows.map((i) => i.userId));
    return {
      items: rows.map((i) => ({ ...invoiceView(i), userId: i.userId, mobile: mobiles.get(i.userId) ?? '' })),
      total,
      page: q.page,
      pageSize: q.pageSize,
    };
  }

  /** Pending → a final state, once: the guarded update makes the second of two decisions fail. */
  private async close(id: string, set: Partial<InvoiceRow> & { status: InvoiceStatus }, owner?: SQL): Promise<InvoiceRow> {
    const now = this.deps.clock.now();
    const [row] = await this.deps.db
      .update(invoices)
      .set({ ...set, closedAt: now, updatedAt: now })
      .where(and(eq(invoices.id, id), eq(invoices.status, 'Pending'), owner))
      .returning();
    if (row) return row;
    const [exists] = await this.deps.db
      .select({ status: invoices.status })
      .from(invoices)
      .where(and(eq(invoices.id, id), owner));
    if (!exists) throw new AppError('RECORD_NOT_FOUND', '发票申请不存在');
    throw new AppError('INVOICE_STATE_INVALID', `当前状态：${InvoiceStatus.label(exists.status)}`);
  }
}
