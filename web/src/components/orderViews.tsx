/**
 * What the cost-center pages share: how an order, a time, an amount and a ledger entry are shown,
 * where an order's detail lives, and the confirmed cancel of an unpaid order.
 */
import { useEffect, useState } from 'react';
import { App, Tag, Typography } from 'antd';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import dayjs from 'dayjs';
import {
  InstanceCategory,
  OrderStatus,
  OrderStatusColor,
  PAGE,
  formatYuan,
  PaymentMethod,
  type InstanceCategory as Category,
  type Order,
  type OrderStatus as Status,
  type StatementKind,
  type StatementPage,
} from '@console/contract';
import { BILLING_KEYS, billingApi } from '../api/billing';
import { ORDER_KEYS, ordersApi } from '../api/orders';
import { USER_KEYS } from '../api/user';
import { useUrlPaging } from '../routing/useUrlPaging';
import { PagedTable, usePagedQuery } from './PagedTable';

export const TIME_FORMAT = 'YYYY-MM-DD HH:mm:ss';
export const formatTime = (iso: string | null | undefined) => (iso ? dayjs(iso).format(TIME_FORMAT) : '--');

/** antd Tag colours for the contract's order colours (grey is antd's default tag). */
const TAG_COLOR = { red: 'error', green: 'success', grey: undefined, purple: 'purple' } as const;

export function OrderStatusTag({ status }: { status: Status }) {
  return (
    <Tag color={TAG_COLOR[OrderStatusColor[status]]} style={{ marginInlineEnd: 0 }}>
      {OrderStatus.label(status)}
    </Tag>
  );
}

/** Product names of order categories: instance categories, plus model resource packages. */
export function categoryLabel(category: string): string {
  if (category === 'Ai') return '模型资源包';
  return InstanceCategory.label(category as Category) ?? category;
}

export const PAY_SOURCE_LABEL: Record<Order['paid'][number]['source'], string> = { voucher: '代金券', gift: '赠送金', cash: '现金' };

/** A payment part as the payer knows it: a QR payment lands as cash and is spent at once, so it reads as that wallet. */
export function paySourceLabel(source: Order['paid'][number]['source'], payMethod: Order['payMethod']): string {
  if (source === 'cash' && (payMethod === 'Alipay' || payMethod === 'Wechat')) return PaymentMethod.label(payMethod);
  return PAY_SOURCE_LABEL[source];
}

/** What left the balance for an order (gift credit and cash; the voucher is a deduction). */
export function balancePaid(order: Pick<Order, 'paid'>): bigint {
  return order.paid.filter((p) => p.source !== 'voucher').reduce((n, p) => n + BigInt(p.amount), 0n);
}

/** The detail page of an order. The kind rides along so the page asks the right path first. */
export function orderDetailPath(order: Pick<Order, 'kind' | 'orderUid'>): string {
  if (order.kind === 'Ai') return PAGE.modelBillDetail.replace(':id', encodeURIComponent(order.orderUid));
  return `${PAGE.serverBillDetail.replace(':id', encodeURIComponent(order.orderUid))}?kind=${order.kind}`;
}

/** A signed amount: income green with '+', spending in the default colour with '-'. */
export function SignedYuan({ units }: { units: string }) {
  const negative = units.startsWith('-');
  return (
    <Typography.Text type={negative ? undefined : 'success'} className="amount-cell">
      {negative ? '' : '+'}
      {formatYuan(units)}
    </Typography.Text>
  );
}

/** Seconds until `until`, ticking every second (never below 0). */
export function useSecondsLeft(until: string | null | undefined): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!until) return;
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [until]);
  return until ? Math.max(0, Math.floor((Date.parse(until) - now) / 1000)) : 0;
}

export const formatCountdown = (seconds: number) => `${Math.floor(seconds / 60)} 分 ${String(seconds % 60).padStart(2, '0')} 秒`;

/** 10000000 tokens → "1000 万 tokens"; 100 卡时 → "100 卡时". */
export function formatQuantity(quantity: string, unit: string): string {
  const n = BigInt(quantity);
  const scaled = (div: bigint, name: string) => {
    const whole = n / div;
    const frac = ((n % div) * 100n) / div; // two decimals at most, trailing zeros dropped
    const text = frac === 0n ? String(whole) : `${whole}.${String(frac).padStart(2, '0').replace(/0+$/, '')}`;
    return `${text} ${name}`;
  };
  const number = n >= 100_000_000n ? scaled(100_000_000n, '亿') : n >= 10_000n ? scaled(10_000n, '万') : String(n);
  return `${number} ${unit}`;
}

/** Everything a paid, cancelled or expired order changes on screen. */
export function invalidateOrderViews(queryClient: ReturnType<typeof useQueryClient>) {
  // me/info carries the gift fields (remain, expiry) the header shows: refresh it with the balance.
  for (const queryKey of [
    BILLING_KEYS.money,
    USER_KEYS.me,
    ORDER_KEYS.all,
    ORDER_KEYS.packages,
    BILLING_KEYS.vouchers,
    BILLING_KEYS.statements,
    BILLING_KEYS.gifts,
  ]) {
    void queryClient.invalidateQueries({ queryKey });
  }
}

/** 取消订单 with a confirmation; resolves once the order is cancelled and the views refreshed. */
export function useCancelOrder(onCancelled?: () => void) {
  const { modal } = App.useApp();
  const queryClient = useQueryClient();
  const cancel = useMutation({
    mutationFn: (order: Pick<Order, 'kind' | 'orderUid'>) => ordersApi.cancel(order),
    onSettled: () => invalidateOrderViews(queryClient),
    onSuccess: () => onCancelled?.(),
  });
  const confirm = (order: Pick<Order, 'kind' | 'orderUid' | 'description'>) =>
    modal.confirm({
      title: '确认取消订单？',
      content: `订单 ${order.orderUid}（${order.description}）取消后不可恢复，如需购买请重新下单。`,
      okText: '取消订单',
      okButtonProps: { danger: true },
      cancelText: '再想想',
      onOk: () => cancel.mutateAsync(order).catch(() => undefined),
    });
  return { confirm, isPending: cancel.isPending };
}

/** What each kind of ledger transfer means to the account holder. */
export const TRANSFER_LABEL: Record<string, string> = {
  gateway_in: '充值到账',
  gift_grant: '赠送金发放',
  voucher_grant: '代金券发放',
  compensation: '平台补偿',
  order: '订单支付',
  refund: '订单退款',
  gift_expire: '赠送金过期',
  voucher_expire: '代金券过期',
};

type Entry = StatementPage['items'][number];

/**
 * One account's ledger entries, paged by the server. Each account keeps its own page in the URL
 * (`?giftPage=2`), so switching accounts starts the other one where it was left.
 */
export function StatementTable({ kind, emptyText }: { kind: StatementKind; emptyText: string }) {
  const { paging, set } = useUrlPaging({ key: kind });
  const list = usePagedQuery({
    queryKey: BILLING_KEYS.statement(kind, paging.page, paging.pageSize),
    queryFn: (signal) => billingApi.statement({ kind, ...paging }, signal),
  });
  return (
    <PagedTable<Entry>
      list={list}
      paging={paging}
      onPage={set}
      empty={emptyText}
      rowKey="id"
      tableLayout="auto"
      scroll={{ x: 760 }}
      columns={[
        { title: '时间', dataIndex: 'createdAt', width: 180, render: (v: string) => formatTime(v) },
        { title: '类型', dataIndex: 'kind', width: 120, render: (k: string) => TRANSFER_LABEL[k] ?? k },
        {
          title: '说明',
          dataIndex: 'memo',
          render: (memo: string, e) => (
            <span>
              {memo || '--'}
              {e.orderId && (
                <>
                  {' '}
                  <Link to={PAGE.serverBillDetail.replace(':id', encodeURIComponent(e.orderId))} className="muted-link">
                    订单 {e.orderId}
                  </Link>
                </>
              )}
            </span>
          ),
        },
        { title: '金额（元）', dataIndex: 'amount', align: 'right', width: 140, render: (v: string) => <SignedYuan units={v} /> },
        {
          title: '余额（元）',
          dataIndex: 'balanceAfter',
          align: 'right',
          width: 140,
          render: (v: string) => <span className="amount-cell">{formatYuan(v)}</span>,
        },
      ]}
    />
  );
}
