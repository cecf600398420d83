/**
 * 代金券 as far as a price quote needs them: is this voucher the caller's, unused, valid now and
 * good for this product? Granting, locking at checkout and redemption belong to the money issue and
 * will post ledger transfers; they extend this service.
 */
import { eq } from 'drizzle-orm';
import { InstanceCategory } from '@console/contract';
import type { Db } from '../../db/client.js';
import { vouchers } from '../../db/schema.js';
import { AppError } from '../../http/errors.js';

export type VoucherRow = typeof vouchers.$inferSelect;

const STATUS_TEXT: Record<VoucherRow['status'], string> = {
  Unused: '',
  Used: '该代金券已使用',
  Expired: '该代金券已过期',
  Revoked: '该代金券已作废',
};

export class VoucherService {
  constructor(private db: Db) {}

  /** The voucher, if `userId` may spend it on `category` at `at`; a VOUCHER_UNUSABLE error saying why not otherwise. */
  async usableFor(userId: string, voucherId: string, category: InstanceCategory, at: Date): Promise<VoucherRow> {
    const [v] = await this.db.select().from(vouchers).where(eq(vouchers.id, voucherId));
    // Someone else's voucher is reported exactly like a missing one: ids are not an oracle.
    if (!v || v.userId !== userId) throw new AppError('VOUCHER_UNUSABLE', '代金券不存在或不属于当前账号');
    if (v.status !== 'Unused') throw new AppError('VOUCHER_UNUSABLE', STATUS_TEXT[v.status]);
    if (at < v.validFrom) throw new AppError('VOUCHER_UNUSABLE', '该代金券尚未到可用时间');
    if (at >= v.expiresAt) throw new AppError('VOUCHER_UNUSABLE', STATUS_TEXT.Expired);
    if (v.categories.length > 0 && !v.categories.includes(category)) {
      throw new AppError('VOUCHER_UNUSABLE', `该代金券不适用于${InstanceCategory.label(category)}`);
    }
    return v;
  }
}
