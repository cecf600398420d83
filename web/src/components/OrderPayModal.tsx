import { useEffect, useMemo, useState } from 'react';
import { Alert, App, Button, Flex, Modal, Radio, Result, Select, Skeleton, Spin, theme, Typography } from 'antd';
import { WalletOutlined } from '@ant-design/icons';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { formatDay } from '../lib/time';
import {
  OrderStatus,
  PAGE,
  formatYuan,
  roundUpToFen,
  type Order,
  type OrderStatus as Status,
  type PaymentMethod,
  type Voucher,
  type OrderPayStatus,
  type OrderQr,
} from '@console/contract';
import { isApiError } from '../api/errors';
import { ORDER_KEYS, ordersApi, orderQueries } from '../api/orders';
import { formatCountdown, orderProductLabel, invalidateOrderViews, paySourceLabel, useCancelOrder } from './orderViews';
import { QrClosed, QrPayPanel, useQrPayment, WALLET_LABEL, WalletOptions } from './QrPayPanel';
import { useMoneyQuery, useSession } from '../session/useSession';
import { seesFinance } from '../auth/permissions';

/** While an order is in one of these, its payment is still under way: keep asking. */
const IN_PROGRESS: readonly Status[] = ['Unpaid', 'Paid'];

/** Gateways move whole fen: the server rounds what is left after the voucher up to 0.01 yuan. */

export interface OrderPayModalProps {
  order: Order;
  onClose: () => void;
  /** Called once the order is paid and delivered (status 已完成). */
  onPaid?: (orderUid: string) => void;
  /**
   * Called when the order's payment has ended one way or another while the dialog is open: paid
   * and delivered (also onPaid), refunded, failed, expired, or cancelled from the dialog.
   */
  onSettled?: (status: Status) => void;
  /** A voucher to start with (the one chosen on the purchase page), if it is still usable. */
  voucherId?: string;
}

/**
 * 支付订单: a voucher, then the balance (paid at once after confirming the amount) or an
 * Alipay/WeChat QR code polled every 2 s until the order completes, is refunded or expires.
 * The unpaid order can be cancelled from here too.
 */
export function OrderPayModal({ order, onClose, onPaid, onSettled, voucherId: initialVoucherId }: OrderPayModalProps) {
  const queryClient = useQueryClient();
  const [qr, setQr] = useState<OrderQr | null>(null);
  /** A status the pay call answered with that ends the dialog's work (balance payments). */
  const [answered, setAnswered] = useState<Status | null>(order.status === 'Unpaid' ? null : order.status);
  const [waiting, setWaiting] = useState(false);

  const statusKey = ORDER_KEYS.payStatus(order.orderUid);
  // GET …/pay: asked once on opening (a QR opened earlier is picked up again, a stale order shows
  // where it really is), then every 2 s while a QR is shown or the delivery is under way.
  const payment = useQrPayment({
    queryKey: statusKey,
    queryFn: (signal) => ordersApi.payStatus(order, signal),
    enabled: answered === null,
    pollWhile: (data) => {
      const s = data?.status ?? 'Unpaid';
      return IN_PROGRESS.includes(s) && (qr !== null || waiting || s === 'Paid');
    },
    expiresAt: order.expiresAt,
  });
  const poll = payment.query;
  const polled = poll.data?.status;
  const done: Status | null = answered ?? (polled && !IN_PROGRESS.includes(polled) ? polled : null);
  const delivering = !done && (waiting || (polled === 'Paid' && qr === null));

  const [resumed, setResumed] = useState(false);
  useEffect(() => {
    if (resumed || !poll.data) return;
    setResumed(true);
    const p = poll.data.payment;
    if (poll.data.status === 'Unpaid' && p?.status === 'Pending' && p.qrContent) setQr(p);
  }, [poll.data, resumed]);

  useEffect(() => {
    if (!done) return;
    invalidateOrderViews(queryClient);
    onSettled?.(done);
    if (done === 'Success') onPaid?.(order.orderUid);
    // onPaid and onSettled are callbacks of the parent: only the transition matters.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [done, order.orderUid, queryClient]);

  const { confirm: confirmCancel, isPending: cancelling } = useCancelOrder(() => {
    onSettled?.('Cancelled');
    onClose();
  });
  const left = payment.secondsLeft;
  const timedOut = !done && payment.expired;

  let body;
  if (done) body = <PayOutcome order={order} status={done} onClose={onClose} />;
  else if (timedOut) body = <PayOutcome order={order} status="Expired" onClose={onClose} />;
  else if (qr) body = <QrStep qr={qr} status={poll.data} left={left} checking={payment.checking} onCheck={payment.check} onBack={() => setQr(null)} />;
  else
    body = (
      <ChooseStep
        order={order}
        initialVoucherId={initialVoucherId}
        left={left}
        onAnswer={(res) => {
          queryClient.setQueryData(statusKey, res); // the new QR replaces any earlier one at once
          if (res.status === 'Unpaid' && res.payment?.status === 'Pending' && res.payment.qrContent) setQr(res.payment);
          else if (res.status === 'Paid')
            setWaiting(true); // paid, delivery under way
          else if (res.status !== 'Unpaid') setAnswered(res.status);
        }}
        onCancel={() => confirmCancel(order)}
        cancelling={cancelling}
      />
    );

  return (
    <Modal open title="支付订单" onCancel={onClose} footer={null} width={560} destroyOnHidden mask={{ closable: false }}>
      {delivering ? (
        <Flex vertical align="center" gap={12} style={{ padding: '32px 0' }}>
          <Spin size="large" />
          <Typography.Text>支付成功，正在为您开通…</Typography.Text>
        </Flex>
      ) : (
        body
      )}
    </Modal>
  );
}

function ChooseStep({
  order,
  initialVoucherId,
  left,
  onAnswer,
  onCancel,
  cancelling,
}: {
  order: Order;
  initialVoucherId?: string;
  left: number;
  onAnswer: (res: OrderPayStatus) => void;
  onCancel: () => void;
  cancelling: boolean;
}) {
  const { modal } = App.useApp();
  const { token } = theme.useToken();
  const money = useMoneyQuery();
  const session = useSession();
  const queryClient = useQueryClient();
  const vouchers = useQuery(orderQueries.usableVouchers(order.category));
  // The voucher is kept on the order (PUT …/voucher): reopening or refreshing the dialog starts from it.
  const [picked, setVoucherId] = useState<string | undefined>(initialVoucherId ?? order.voucherId ?? undefined);
  const [saved, setSaved] = useState<string | null>(order.voucherId ?? null);
  const [method, setMethod] = useState<PaymentMethod>('Balance');

  const amount = BigInt(order.amount);
  // A voucher (handed in from outside or kept on the order) counts only while the list still offers it as usable here.
  const voucherId = picked && vouchers.data?.items.some((v) => v.id === picked && BigInt(v.minSpend) <= amount) ? picked : undefined;
  const voucher = vouchers.data?.items.find((v) => v.id === voucherId);
  const deduction = voucher ? (BigInt(voucher.amount) < amount ? BigInt(voucher.amount) : amount) : 0n;
  const forfeited = voucher && BigInt(voucher.amount) > amount ? BigInt(voucher.amount) - amount : 0n;

  const choose = useMutation({
    mutationFn: (id: string | null) => ordersApi.chooseVoucher(order, id),
    onSuccess: (o) => {
      setSaved(o.voucherId);
      void queryClient.invalidateQueries({ queryKey: ORDER_KEYS.all });
    },
    // Refused (spent elsewhere meanwhile): the dialog shows what the order really has. Any other
    // failure keeps the choice on screen: the payment names the voucher itself.
    onError: (e) => {
      if (isApiError(e, 'VOUCHER_UNUSABLE')) setVoucherId(saved ?? undefined);
    },
  });
  const want = voucherId ?? null;
  const syncing = choose.isPending;
  useEffect(() => {
    // Once the list says what is usable, the order keeps what the dialog shows.
    if (vouchers.isSuccess && want !== saved && !choose.isPending && !choose.isError) choose.mutate(want);
  }, [vouchers.isSuccess, want, saved, choose]);
  const rest = amount - deduction;
  const due = method === 'Balance' ? rest : roundUpToFen(rest);
  const available = money.data ? BigInt(money.data.available ?? money.data.cash) : null;
  const short = method === 'Balance' && available !== null && available < rest ? rest - available : 0n;
  const gatewayImpossible = rest === 0n; // the voucher pays it all: only the balance path can settle it

  const pay = useMutation({
    // The voucher on screen, named (null: none), so the payment is exactly what the dialog shows.
    mutationFn: (m: PaymentMethod) => ordersApi.pay(order, { method: m, voucherId: voucherId ?? null }),
    onSuccess: onAnswer,
  });

  const submit = () => {
    if (method !== 'Balance') return pay.mutate(method);
    modal.confirm({
      title: `确认支付 ¥${formatYuan(due)}`,
      content:
        deduction > 0n
          ? rest > 0n
            ? `代金券抵扣 ¥${formatYuan(deduction)}，其余 ¥${formatYuan(rest)} 从账户余额扣除（先用赠送金，再用现金）。`
            : `代金券抵扣全部 ¥${formatYuan(deduction)}，不从账户余额扣款。${forfeited > 0n ? `代金券剩余 ¥${formatYuan(forfeited)} 将作废。` : ''}`
          : `将从账户余额扣除 ¥${formatYuan(rest)}（先用赠送金，再用现金）。`,
      okText: '确认支付',
      cancelText: '再想想',
      onOk: () => pay.mutateAsync('Balance').catch(() => undefined),
    });
  };

  const options = useMemo(() => (vouchers.data?.items ?? []).map((v) => voucherOption(v, amount)), [vouchers.data, amount]);

  return (
    <Flex vertical gap={16}>
      <div className="pay-order-head">
        <Typography.Text strong className="pay-order-name">
          {order.description}
        </Typography.Text>
        <Typography.Text type="secondary" style={{ fontSize: 12 }}>
          订单号 {order.orderUid} · {orderProductLabel(order)} · 请在 <span className="pay-countdown">{formatCountdown(left)}</span> 内完成支付
        </Typography.Text>
      </div>

      <div className="pay-row">
        <span className="pay-label">代金券</span>
        {vouchers.isPending ? (
          <Skeleton.Input active size="small" />
        ) : (
          <Select
            aria-label="代金券"
            style={{ flex: 1 }}
            allowClear
            value={voucherId}
            onChange={(v) => {
              choose.reset();
              setVoucherId(v);
            }}
            placeholder={
              vouchers.isError ? '代金券加载失败' : options.length ? `不使用代金券（${options.filter((o) => !o.disabled).length} 张可用）` : '暂无可用代金券'
            }
            disabled={options.length === 0}
            options={options}
          />
        )}
      </div>

      <div className="pay-row">
        <span className="pay-label">支付方式</span>
        <Radio.Group value={method} onChange={(e) => setMethod(e.target.value as PaymentMethod)} className="pay-methods">
          <Radio.Button value="Balance">
            <WalletOutlined style={{ color: token.colorPrimary }} /> 余额
          </Radio.Button>
          <WalletOptions disabled={gatewayImpossible} />
        </Radio.Group>
      </div>
      <div className="pay-row pay-row-note">
        <span className="pay-label" />
        <Typography.Text type="secondary" style={{ fontSize: 12 }}>
          {method === 'Balance'
            ? !seesFinance(session.user)
              ? '从主账号余额支付（子账号没有财务权限，不显示余额）'
              : money.isPending
                ? '正在查询余额…'
                : money.data
                  ? `可用余额 ¥${formatYuan(money.data.available ?? money.data.cash)}（现金 ¥${formatYuan(money.data.cash)} + 赠送金 ¥${formatYuan(money.data.gift ?? '0')}）`
                  : '余额暂不可用'
            : gatewayImpossible
              ? '代金券已抵扣全部金额，请使用余额支付'
              : `使用${WALLET_LABEL[method]}扫码支付，款项到账后自动完成订单`}
        </Typography.Text>
      </div>

      {forfeited > 0n && (
        <Alert
          type="warning"
          showIcon
          title={`代金券面额 ¥${formatYuan(voucher!.amount)} 大于订单金额，剩余 ¥${formatYuan(forfeited)} 将作废`}
          description="代金券只能使用一次，未抵扣完的部分不退回、不找零。"
        />
      )}

      {short > 0n && (
        <Alert
          type="warning"
          showIcon
          title={`余额不足，还差 ¥${formatYuan(short)}`}
          description="请先充值，或改用支付宝/微信扫码支付。"
          action={
            <Link to={PAGE.recharge}>
              <Button size="small" type="primary" ghost>
                去充值
              </Button>
            </Link>
          }
        />
      )}

      <div className="pay-summary">
        <Flex justify="space-between">
          <span>订单金额</span>
          <span className="amount-cell">¥{formatYuan(amount)}</span>
        </Flex>
        {deduction > 0n && (
          <Flex justify="space-between" className="pay-deduction">
            <span>代金券抵扣</span>
            <span className="amount-cell">-¥{formatYuan(deduction)}</span>
          </Flex>
        )}
        <Flex justify="space-between" align="baseline" className="pay-due">
          <span>应付金额</span>
          <span className="price price-lg" data-testid="pay-due">
            <span className="price-symbol">¥</span>
            {formatYuan(due)}
          </span>
        </Flex>
      </div>

      <Flex justify="space-between" align="center">
        <Button type="link" danger style={{ paddingInline: 0 }} loading={cancelling} onClick={onCancel}>
          取消订单
        </Button>
        <Button
          type="primary"
          size="large"
          loading={pay.isPending}
          disabled={syncing || short > 0n || (method !== 'Balance' && gatewayImpossible)}
          onClick={submit}
        >
          {method === 'Balance' ? `余额支付 ¥${formatYuan(due)}` : `${WALLET_LABEL[method]}扫码支付 ¥${formatYuan(due)}`}
        </Button>
      </Flex>
    </Flex>
  );
}

function voucherOption(v: Voucher, amount: bigint) {
  const tooSmall = BigInt(v.minSpend) > amount;
  const condition = v.minSpend === '0' ? '无门槛' : `满 ¥${formatYuan(v.minSpend)} 可用`;
  return {
    value: v.id,
    disabled: tooSmall,
    label: `${v.name} · ¥${formatYuan(v.amount)}（${condition}，${formatDay(v.expiresAt)} 到期）${tooSmall ? ' · 未达使用门槛' : ''}`,
  };
}

function QrStep({
  qr,
  status,
  left,
  checking,
  onCheck,
  onBack,
}: {
  qr: OrderQr;
  status: OrderPayStatus | undefined;
  left: number;
  checking: boolean;
  onCheck: () => void;
  onBack: () => void;
}) {
  const current = status?.payment ?? qr;
  if (status?.status === 'Paid') {
    return (
      <Flex vertical align="center" gap={12} style={{ padding: '32px 0' }}>
        <Spin size="large" />
        <Typography.Text>已收到付款，正在为您开通…</Typography.Text>
      </Flex>
    );
  }
  if (current.status === 'Closed' || !current.qrContent) {
    return (
      <QrClosed
        title="二维码已失效"
        subTitle="如已付款，款项会在确认后自动到账并完成订单；未付款请重新选择支付方式。"
        action={<Button onClick={onBack}>重新选择支付方式</Button>}
      />
    );
  }
  return (
    <QrPayPanel
      payment={{ method: current.method, amount: current.amount, qrContent: current.qrContent }}
      secondsLeft={left}
      verb="支付"
      checking={checking}
      onCheck={onCheck}
      otherAction={<Button onClick={onBack}>更换支付方式</Button>}
    />
  );
}

/** Where the order ended up; a refund says why, and where the money went back to. */
function PayOutcome({ order, status, onClose }: { order: Order; status: Status; onClose: () => void }) {
  const failed = status === 'Refunded' || status === 'Failed';
  const detail = useQuery({
    ...orderQueries.one(order),
    enabled: failed || status === 'Success',
  });
  if (status === 'Success') {
    const parts = detail.data?.paid ?? [];
    return (
      <Result
        status="success"
        title="支付成功"
        subTitle={
          <Flex vertical gap={4}>
            <span>{order.description} 已开通</span>
            {parts.length > 0 && (
              <span>{parts.map((p) => `${paySourceLabel(p.source, detail.data?.payMethod ?? null)} ¥${formatYuan(p.amount)}`).join('，')}</span>
            )}
          </Flex>
        }
        extra={
          <Button type="primary" onClick={onClose}>
            完成
          </Button>
        }
      />
    );
  }
  if (failed) {
    return (
      <Result
        status="error"
        title={status === 'Refunded' ? '订单处理失败，款项已原路退回' : '订单处理失败'}
        subTitle={detail.isPending ? '正在查询原因…' : `原因：${detail.data?.failReason ?? '未知'}。代金券、赠送金和现金已退回原账户，可稍后重新下单。`}
        extra={<Button onClick={onClose}>关闭</Button>}
      />
    );
  }
  const text: Partial<Record<Status, { title: string; sub: string }>> = {
    Expired: { title: '订单已超时', sub: '订单超过支付时间已自动关闭；如已扫码付款，款项会作为现金退回到账户余额。请重新下单。' },
    Cancelled: { title: '订单已取消', sub: '该订单已取消，如需购买请重新下单。' },
    Abated: { title: '订单已失效', sub: '该订单已失效，如需购买请重新下单。' },
  };
  const t = text[status] ?? { title: `订单${OrderStatus.label(status)}`, sub: '该订单无需支付。' };
  return <Result status="warning" title={t.title} subTitle={t.sub} extra={<Button onClick={onClose}>关闭</Button>} />;
}
