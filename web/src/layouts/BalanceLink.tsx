import type { ReactNode } from 'react';
import { Spin, Tooltip } from 'antd';
import { WalletOutlined } from '@ant-design/icons';
import { Link } from 'react-router';
import { formatDay } from '../lib/time';
import { PAGE, formatYuan, type User } from '@console/contract';
import { seesFinance } from '../auth/permissions';
import { useMeQuery, useMoneyQuery, useSession } from '../session/useSession';

/**
 * What the user object says about gift credit (spec §3: remain counts only active, unexpired items
 * with money left; renewStatus when an item waits for renewal), for the balance tooltip.
 */
export function giftHint(user: Pick<User, 'remain' | 'expireAt' | 'renewStatus'> | undefined | null): string {
  if (!user || user.remain === undefined) return '';
  const parts: string[] = [];
  if (user.remain !== '0' && user.expireAt) parts.push(`有效赠送金 ¥${formatYuan(user.remain)}，最早 ${formatDay(user.expireAt)} 到期`);
  if (user.renewStatus) parts.push('有赠送金待续期，可在「我的余额」续期');
  return parts.join('；');
}

/** Header balance linking to recharge; '--' whenever the real figure is unavailable; nothing for a child without 财务. */
export function BalanceLink() {
  const money = useMoneyQuery();
  const me = useMeQuery();
  const { user } = useSession();
  if (!seesFinance(user)) return null;
  let value: ReactNode = '--';
  if (money.isPending && money.fetchStatus !== 'idle') value = <Spin size="small" />;
  else if (money.data) value = formatYuan(money.data.available ?? money.data.cash, { symbol: true });
  const gift = giftHint(me.data);
  const detail =
    money.data?.gift !== undefined
      ? `现金 ¥${formatYuan(money.data.cash)}，赠送金 ¥${formatYuan(money.data.gift)}${gift ? `（${gift}）` : ''}；点击充值`
      : '去充值';
  return (
    <Tooltip title={money.isError ? '余额暂不可用' : detail}>
      <Link to={PAGE.recharge} aria-label="余额">
        <WalletOutlined /> 余额：{value}
      </Link>
    </Tooltip>
  );
}
