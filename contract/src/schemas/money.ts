import { z } from 'zod';
import { moneySchema } from './common.js';

/** GET /billing/api/v1/user/money: what the header and the balance page show. */
export const userMoneySchema = z.object({
  cash: moneySchema.describe('现金余额'),
  gift: moneySchema.describe('赠送金余额'),
  voucher: moneySchema.describe('代金券余额'),
  deposit: moneySchema.describe('押金'),
  available: moneySchema.describe('可用于支付：现金 + 赠送金'),
});
export type UserMoney = z.infer<typeof userMoneySchema>;
