/**
 * Where the sandbox gateway keeps its trades. It must outlive a server restart and be shared by
 * every server process (a payer's "pay" may reach another process than the one that precreated),
 * so production wiring passes a database-backed store; tests use the in-memory one.
 *
 * Records are plain JSON (amounts and times as strings) so that a store can keep each one in a
 * single jsonb/text column beside its key and version.
 */
import type { GatewayMethod } from './types.js';

export interface SandboxTrade {
  outTradeNo: string;
  method: GatewayMethod;
  /** The sandbox gateway's own trade number (Alipay trade_no / WeChat transaction_id). */
  gatewayTradeNo: string;
  /** 0.0001-yuan units, decimal string. */
  amount: string;
  subject: string;
  notifyUrl: string;
  /** ISO 8601 instants. */
  createdAt: string;
  expiresAt: string;
  status: 'Pending' | 'Succeeded' | 'Closed';
  /** Why a Closed trade closed: the merchant or payer closed it, or its time ran out. */
  closedReason?: 'Cancelled' | 'Expired';
  paidAt?: string;
  closedAt?: string;
  /** Delivery of the payment notification to notifyUrl. */
  notify: { attempts: number; deliveredAt?: string; lastError?: string };
  /** Refunds of this trade, oldest first (absent on records written before refunds existed). */
  refunds?: SandboxRefund[];
  /** Incremented by every write; the store compares it to refuse lost updates. */
  version: number;
}

/** One refund the sandbox gateway accepted: Processing until settlesAt, then Succeeded (or Failed by hand). */
export interface SandboxRefund {
  refundNo: string;
  gatewayRefundNo: string;
  /** 0.0001-yuan units, decimal string. */
  amount: string;
  reason: string;
  notifyUrl: string;
  requestedAt: string;
  settlesAt: string;
  status: 'Processing' | 'Succeeded' | 'Failed';
  settledAt?: string;
  failReason?: string;
}

export interface SandboxStore {
  get(outTradeNo: string): Promise<SandboxTrade | undefined>;
  /**
   * Writes `trade` only if the stored record's version is still `expectedVersion` (`null`: only if
   * there is no record yet) and says whether it did. With SQL: `INSERT … ON CONFLICT DO NOTHING`
   * for null, else `UPDATE … SET data = $1, version = $2 WHERE out_trade_no = $3 AND version = $4`;
   * true when one row changed.
   */
  put(trade: SandboxTrade, expectedVersion: number | null): Promise<boolean>;
}

/** For tests and throwaway runs. Copies in and out, as a database would. */
export class MemorySandboxStore implements SandboxStore {
  private rows = new Map<string, string>();

  async get(outTradeNo: string) {
    const row = this.rows.get(outTradeNo);
    return row === undefined ? undefined : (JSON.parse(row) as SandboxTrade);
  }

  async put(trade: SandboxTrade, expectedVersion: number | null) {
    const current = await this.get(trade.outTradeNo);
    if ((current?.version ?? null) !== expectedVersion) return false;
    this.rows.set(trade.outTradeNo, JSON.stringify(trade));
    return true;
  }
}
