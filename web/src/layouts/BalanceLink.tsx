import type { ReactNode } from 'react';
import { Spin, Tooltip } from 'antd';
import { WalletOutlined } from '@ant-design/icons';
import { Link } from 'react-router';
import { PAGE, formatYuan } from '@console/contract';
import { useMoneyQuery } from '../session/useSession';

/** Header balance linking to recharge; '--' whenever the real figure is unavailable. */
export function BalanceLink() {
  const money = useMoneyQuery();
  let value: ReactNode = '--';
  if (money.isPending && money.fetchStatus !== 'idle') value = <Spin size="small" />;
  else if (money.data) value = formatYuan(money.data.available ?? money.data.cash, { symbol: true });
  const detail = money.data?.gift !== undefined ? `现金 ¥${formatYuan(money.data.cash)}，赠送金 ¥${formatYuan(money.data.gift)}；点击充值` : '去充值';
  return (
    <Tooltip title={money.isError ? '余额暂不可用' : detail}>
      <Link to={PAGE.recharge} aria-label="余额">
        <WalletOutlined /> 余额：{value}
      </Link>
    </Tooltip>
  );
}
