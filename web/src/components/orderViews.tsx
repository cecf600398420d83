/**
 * What the cost-center pages share: how an order, a time, an amount and a ledger entry are shown,
 * where an order's detail lives, and the confirmed cancel of an unpaid order.
 */
import { useEffect, useState } from 'react';
import { App, Tag, Typography, type TableColumnsType } from 'antd';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import {
  InstanceCategory,
  OrderStatus,
  OrderStatusColor,
  PAGE,
  formatYuan,
  PaymentMethod,
  TransferKind,
  formatBeijing,
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
import { formatTime } from '../lib/time';
import { PagedTable, usePagedQuery } from './PagedTable';

export { formatTime };

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
function categoryLabel(category: string): string {
  if (category === 'Ai') return '模型资源包';
  return InstanceCategory.label(category as Category) ?? category;
}

/** What an order bought: its instance category, or the kind of resource package (GPU 时长包 or 模型资源包). */
export function orderProductLabel(order: Pick<Order, 'category' | 'packageKind'>): string {
  return order.packageKind === 'gpuHours' ? 'GPU 时长包' : categoryLabel(order.category);
}

export const PAY_SOURCE_LABEL: Record<Order['paid'][number]['source'], string> = { voucher: '代金券', gift: '赠送金', cash: '现金' };

/** A payment part as the payer knows it: a QR payment lands as cash and is spent at once, so it reads as that wallet. */
export function paySourceLabel(source: Order['paid'][number]['source'], payMethod: Order['payMethod']): string {
  if (source === 'cash' && (payMethod === 'Alipay' || payMethod === 'Wechat')) return PaymentMethod.label(payMethod);
  return PAY_SOURCE_LABEL[source];
}

/**
 * How the money of a paid order came, as the ledger has it: a QR payment's money came through
 * Alipay or WeChat Pay (it lands in cash and is spent at once), anything else from the balance.
 */
export function paidViaLabel(order: Pick<Order, 'payMethod'>): string {
  if (order.payMethod === 'Alipay') return '支付宝实付';
  if (order.payMethod === 'Wechat') return '微信实付';
  return '余额实付';
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

/**
 * A statement amount: to the fen as a page shows money, except an amount under half a fen, which
 * would read 0.00: it is shown to the 0.0001 yuan the ledger keeps, so no row ever reads 0.00.
 */
export function statementYuan(units: string): string {
  const text = formatYuan(units);
  if (!/^-?0\.00$/.test(text) || BigInt(units) === 0n) return text;
  const abs = BigInt(units) < 0n ? -BigInt(units) : BigInt(units);
  return `${BigInt(units) < 0n ? '-' : ''}0.${String(abs).padStart(4, '0')}`;
}

/** A signed amount: income green with '+', spending in the default colour with '-'. */
export function SignedYuan({ units }: { units: string }) {
  const negative = units.startsWith('-');
  return (
    <Typography.Text type={negative ? undefined : 'success'} className="amount-cell">
      {negative ? '' : '+'}
      {statementYuan(units)}
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

type Entry = StatementPage['items'][number];

/** "2026-11-23 17:00–18:00": the Beijing hour a roll-up covers (the server rolls up by Beijing hours). */
function hourText(periodStart: string): string {
  const from = Date.parse(periodStart);
  return `${formatBeijing(new Date(from))}–${formatBeijing(new Date(from + 3_600_000)).slice(11)}`;
}

/** What a row says: its memo, how many charges a roll-up holds, and the order it belongs to. */
function EntryMemo({ entry: e }: { entry: Entry }) {
  return (
    <span>
      {e.memo || '--'}
      {e.group && (
        <Typography.Text type="secondary" style={{ marginInlineStart: 6 }}>
          （{hourText(e.periodStart ?? e.createdAt)}，共 {e.entries} 笔）
        </Typography.Text>
      )}
      {e.orderId && (
        <>
          {' '}
          <Link to={PAGE.serverBillDetail.replace(':id', encodeURIComponent(e.orderId))} className="muted-link">
            订单 {e.orderId}
          </Link>
        </>
      )}
    </span>
  );
}

const statementColumns = (): TableColumnsType<Entry> => [
  { title: '时间', dataIndex: 'createdAt', width: 180, render: (v: string) => formatTime(v) },
  { title: '类型', dataIndex: 'kind', width: 120, render: (k: string) => TransferKind.label(k) },
  { title: '说明', dataIndex: 'memo', render: (_: string, e) => <EntryMemo entry={e} /> },
  { title: '金额（元）', dataIndex: 'amount', align: 'right', width: 140, render: (v: string) => <SignedYuan units={v} /> },
  {
    title: '余额（元）',
    dataIndex: 'balanceAfter',
    align: 'right',
    width: 140,
    render: (v: string) => <span className="amount-cell">{formatYuan(v)}</span>,
  },
];

/**
 * One account's statement, paged by the server. Post-paid charges come rolled up per instance and
 * hour (one row, its charges counted); expanding the row lists each ledger entry under it. Each
 * account keeps its own page in the URL (`?giftPage=2`), so switching accounts starts the other one
 * where it was left.
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
      rowKey={(e) => e.group ?? String(e.id)}
      tableLayout="auto"
      scroll={{ x: 760 }}
      columns={statementColumns()}
      expandable={{
        rowExpandable: (e) => Boolean(e.group),
        expandedRowRender: (e) => <GroupEntries kind={kind} group={e.group!} />,
        columnTitle: '',
      }}
    />
  );
}

/** The ledger entries under one roll-up row, newest first, paged on their own (not in the URL). */
function GroupEntries({ kind, group }: { kind: StatementKind; group: string }) {
  const [paging, setPaging] = useState({ page: 1, pageSize: 20 });
  const list = usePagedQuery({
    queryKey: BILLING_KEYS.statementGroup(kind, group, paging.page, paging.pageSize),
    queryFn: (signal) => billingApi.statementGroup({ kind, group, ...paging }, signal),
  });
  return (
    <div aria-label="逐笔账目">
      <PagedTable<Entry>
        list={list}
        paging={paging}
        onPage={setPaging}
        empty="没有账目"
        unit="笔"
        sizes={[20]}
        rowKey="id"
        size="small"
        tableLayout="auto"
        columns={statementColumns()}
      />
    </div>
  );
}
