import { useState } from 'react';
import { Alert, Button, Flex } from 'antd';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { formatYuan, type Order } from '@console/contract';
import { orderQueries } from '../api/orders';
import { OrderPayModal } from './OrderPayModal';
import { formatCountdown, orderDetailPath, useCancelOrder, useSecondsLeft } from './orderViews';

/**
 * An account has at most one unpaid order (a second is refused with UNPAID_ORDER_EXISTS): when it exists,
 * say so where the user buys or looks at bills, with 去支付 and 取消订单 at hand.
 */
export function UnpaidOrderBanner() {
  const unpaid = useQuery(orderQueries.unpaid());
  // The dialog outlives the banner: once paid, the order leaves the unpaid list but the result stays on screen.
  const [paying, setPaying] = useState<Order | null>(null);
  const order = unpaid.data?.items[0];
  return (
    <>
      {order && <Banner order={order} onPay={() => setPaying(order)} />}
      {paying && <OrderPayModal order={paying} onClose={() => setPaying(null)} />}
    </>
  );
}

function Banner({ order, onPay }: { order: Order; onPay: () => void }) {
  const left = useSecondsLeft(order.expiresAt);
  const { confirm, isPending } = useCancelOrder();
  if (left === 0) return null;
  return (
    <Alert
      type="warning"
      showIcon
      className="unpaid-banner"
      title={
        <span>
          您有一笔未支付订单：<Link to={orderDetailPath(order)}>{order.description}</Link>，应付 ¥{formatYuan(order.amount)}，剩余支付时间{' '}
          {formatCountdown(left)}
        </span>
      }
      description="同一账号同时只能有一笔未支付订单，请先支付或取消后再下新单。"
      action={
        <Flex gap={8}>
          <Button size="small" type="primary" onClick={onPay}>
            去支付
          </Button>
          <Button size="small" danger loading={isPending} onClick={() => confirm(order)}>
            取消订单
          </Button>
        </Flex>
      }
    />
  );
}
