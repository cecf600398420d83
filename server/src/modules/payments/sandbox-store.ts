/**
 * The embedded sandbox gateway's own records, kept in the database so that its trades survive a
 * restart and every server process sees the same ones. Writes compare versions (see SandboxStore).
 */
import { and, eq } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { sandboxTrades } from './schema.js';
import { loadOrCreateText } from '../system/index.js';
import type { SandboxStore, SandboxTrade } from '../../drivers/payment/index.js';
import { SandboxPaymentDriver } from '../../drivers/payment/index.js';

export class DbSandboxStore implements SandboxStore {
  constructor(private db: Db) {}

  async get(outTradeNo: string): Promise<SandboxTrade | undefined> {
    const [row] = await this.db.select().from(sandboxTrades).where(eq(sandboxTrades.outTradeNo, outTradeNo));
    return row ? (row.data as SandboxTrade) : undefined;
  }

  async put(trade: SandboxTrade, expectedVersion: number | null): Promise<boolean> {
    const now = new Date();
    if (expectedVersion === null) {
      const rows = await this.db
        .insert(sandboxTrades)
        .values({ outTradeNo: trade.outTradeNo, data: trade, version: trade.version, updatedAt: now })
        .onConflictDoNothing()
        .returning({ v: sandboxTrades.version });
      return rows.length === 1;
    }
    const rows = await this.db
      .update(sandboxTrades)
      .set({ data: trade, version: trade.version, updatedAt: now })
      .where(and(eq(sandboxTrades.outTradeNo, trade.outTradeNo), eq(sandboxTrades.version, expectedVersion)))
      .returning({ v: sandboxTrades.version });
    return rows.length === 1;
  }
}

/** The sandbox gateway's RSA key pair: made once, kept in the database, shared by every process. */
export async function sandboxGatewayKeys(db: Db, now: Date): Promise<{ privateKey: string; publicKey: string }> {
  const value = await loadOrCreateText(db, 'sandbox-gateway-keys', now, () => JSON.stringify(SandboxPaymentDriver.generateKeys()));
  return JSON.parse(value) as { privateKey: string; publicKey: string };
}
