/**
 * What the operator does to accounts by hand: compensation credited from the platform's
 * compensation account to a user's cash or gift credit, with the operator and the reason on the
 * ledger transfer. Used by `npm run operator -- credit` and by the operator area.
 */
import { yuanToUnits, type OperatorCredit } from '@console/contract';
import type { Db } from '../../db/client.js';
import { AppError } from '../../http/errors.js';
import type { GiftService } from '../gifts/index.js';
import type { LedgerService } from '../ledger/index.js';
import type { UserService } from '../users/index.js';

export class OperatorService {
  constructor(private deps: { db: Db; ledger: LedgerService; gifts: GiftService; users: Pick<UserService, 'findByMobile'> }) {}

  async credit(req: OperatorCredit, operatorId: string | null) {
    const user = await this.deps.users.findByMobile(req.mobile);
    if (!user) throw new AppError('USER_NOT_FOUND', `手机号 ${req.mobile} 未注册`);
    const amount = yuanToUnits(req.amount);
    if (amount <= 0n) throw new AppError('VALIDATION_FAILED', 'amount：金额须大于 0');
    const key = `operator-credit:${req.requestId}`;
    const memo = `平台补偿：${req.reason}`;
    const replayed = await this.deps.db.transaction(async (tx) => {
      if (req.to === 'gift') {
        const id = await this.deps.gifts.grant(tx, {
          userId: user.id,
          amount,
          source: 'compensation',
          validDays: req.giftValidDays,
          key,
          memo,
          actorId: operatorId,
        });
        return id === null;
      }
      const posted = await this.deps.ledger.post(
        {
          key,
          kind: 'compensation',
          memo,
          actorId: operatorId,
          legs: [
            { account: { platform: 'compensation' }, amount: -amount },
            { account: { userId: user.id, kind: 'cash' }, amount },
          ],
        },
        tx,
      );
      return posted.replayed;
    });
    const balances = await this.deps.ledger.balances(user.id);
    return { userId: user.id, mobile: req.mobile, to: req.to, amount: String(amount), balance: String(balances[req.to]), replayed };
  }
}
