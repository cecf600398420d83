import { useRef, useState, type ReactNode } from 'react';
import { App, Card, Form, Input, InputNumber, Radio, Segmented, Select, Space, Typography } from 'antd';
import { useNavigate } from 'react-router';
import {
  BillingCycle,
  BillingCycleUnit,
  formatYuan,
  MAX_DURATION,
  PAGE,
  isPostpaid,
  type InstanceCategory,
  type Order,
  type OrderStatus,
  type Quote,
  type Region,
  type Voucher,
} from '@console/contract';
import { useQuery, useQueryClient, type UseQueryResult } from '@tanstack/react-query';
import dayjs from 'dayjs';
import { formatDay } from '../../../lib/time';
import { catalogueQueries } from '../api/catalogue';
import { reactToError } from '../../../api/client';
import { ApiError, CLIENT_MESSAGES, isApiError } from '../../../api/errors';
import { INSTANCE_KEYS } from '../../instances';
import { ordersApi } from '../../../api/orders';
import { getApiUi } from '../../../api/ui';
import { OrderPayModal } from '../../../components/OrderPayModal';
import { formatTime, invalidateOrderViews } from '../../../components/orderViews';
import { Price } from '../../../components/Price';
import { UnitNumberInput } from '../../../components/UnitNumberInput';
import { useSession } from '../../../session/useSession';
import { CYCLE_OPTIONS } from '../utils/marketQuery';
import { gpuQuoteRequest, loginUrlFor, NAME_MAX_LENGTH, sizeQuoteRequest, type PurchaseConfig } from '../utils/purchaseQuery';
import { QuotePanel, type SummaryItem } from './QuotePanel';

type Change = (change: Partial<PurchaseConfig>) => void;

/** What a quote asks before its voucher: the amount a voucher's minimum spend is compared with. */
export function payableOf(quote: Quote | undefined): bigint | undefined {
  return quote ? BigInt(quote.total) + BigInt(quote.voucherDeduction) : undefined;
}

/**
 * The purchase page every product shares: the form (计费方式 and 地区 first, then the product's own
 * fields) beside the summary with its price, and the order flow behind 立即购买.
 */
export function PurchaseLayout({
  config,
  regions,
  summary,
  quote,
  ready,
  settling,
  onChange,
  children,
}: {
  config: PurchaseConfig;
  regions: Region[];
  summary: SummaryItem[];
  quote: UseQueryResult<Quote>;
  /** The configuration is complete enough to ask for a price. */
  ready: boolean;
  settling: boolean;
  onChange: Change;
  /** The product's own fields, after the region. */
  children: ReactNode;
}) {
  const { loggedIn } = useSession();
  const checkout = useCheckout(config, summary);
  return (
    <div className="purchase-layout">
      <Card>
        <Form layout="horizontal" labelCol={{ flex: '96px' }} labelAlign="left" colon={false} className="purchase-form">
          <CycleField config={config} onChange={onChange} />
          <Form.Item label="地区">
            <Radio.Group
              aria-label="地区"
              optionType="button"
              value={config.regionId}
              onChange={(e) => onChange({ regionId: e.target.value })}
              options={regions.map((r) => ({ value: r.id, label: r.name }))}
            />
          </Form.Item>
          {children}
        </Form>
      </Card>
      <QuotePanel
        summary={summary}
        query={quote}
        ready={ready}
        settling={settling}
        prepaid={!isPostpaid(config.cycle)}
        loggedIn={loggedIn}
        onBuy={checkout.buy}
      />
      {checkout.holder}
    </div>
  );
}

function CycleField({ config, onChange }: { config: PurchaseConfig; onChange: Change }) {
  return (
    <Form.Item label="计费方式">
      <Segmented aria-label="计费方式" options={CYCLE_OPTIONS} value={config.cycle} onChange={(cycle) => onChange({ cycle })} />
    </Form.Item>
  );
}

/** The data disk field: dataDiskGb is the total size; the part beyond the free size is charged. */
export interface DiskField {
  maxGb: number;
  placeholder: string;
  help: ReactNode;
}

/**
 * Duration, data disk, instance name and voucher: the terms every order has, whatever it buys.
 * A cleared duration is ignored rather than written as 0, which no order accepts.
 */
export function OrderTermsFields({
  config,
  onChange,
  disk,
  voucherCategory,
  payable,
}: {
  config: PurchaseConfig;
  onChange: Change;
  disk: DiskField;
  /** The product the order is for: vouchers may be limited to some. */
  voucherCategory: InstanceCategory;
  /** What the order costs before any voucher, once quoted: a voucher's minimum spend is checked against it. */
  payable?: bigint;
}) {
  const { loggedIn } = useSession();
  const unit = BillingCycleUnit[config.cycle];
  const postpaid = isPostpaid(config.cycle);
  return (
    <>
      <Form.Item
        label={postpaid ? '预估时长' : '购买时长'}
        extra={postpaid ? '按时计费为后付费，按实际开机时长扣费，此处仅用于估算费用' : `最长 ${MAX_DURATION[config.cycle]} ${unit}`}
      >
        <UnitNumberInput
          label="时长"
          unit={unit}
          min={1}
          max={MAX_DURATION[config.cycle]}
          value={config.duration}
          onChange={(duration) => onChange({ duration })}
        />
      </Form.Item>
      <Form.Item label="数据盘" extra={disk.help}>
        <Space.Compact>
          <InputNumber
            aria-label="数据盘"
            min={0}
            max={disk.maxGb}
            precision={0}
            step={50}
            // 0 means "only what comes free": shown as the empty box with the free size as placeholder.
            value={config.dataDiskGb || null}
            placeholder={disk.placeholder}
            onChange={(v) => onChange({ dataDiskGb: v ?? 0 })}
            style={{ width: 160 }}
          />
          <Space.Addon>GB</Space.Addon>
        </Space.Compact>
      </Form.Item>
      <Form.Item label="实例名称">
        <NameInput value={config.name} onChange={(name) => onChange({ name })} />
      </Form.Item>
      {/* Vouchers pay for prepaid orders; a post-paid one is charged from the balance as it runs. */}
      {loggedIn && !postpaid && (
        <Form.Item label="代金券">
          <VoucherSelect category={voucherCategory} value={config.voucherId} payable={payable} onChange={(voucherId) => onChange({ voucherId })} />
        </Form.Item>
      )}
    </>
  );
}

/** The buyer's usable vouchers; the server's quote has the last word on whether one applies. */
function VoucherSelect({
  category,
  value,
  payable,
  onChange,
}: {
  category: InstanceCategory;
  value?: string;
  payable?: bigint;
  onChange: (id: string | undefined) => void;
}) {
  const vouchers = useQuery(catalogueQueries.usableVouchers(category));
  const list = vouchers.data ?? [];
  const placeholder = vouchers.isPending ? '加载中…' : vouchers.isError ? '代金券加载失败' : list.length ? '不使用代金券' : '暂无可用代金券';
  return (
    <Select
      aria-label="代金券"
      allowClear
      loading={vouchers.isPending}
      disabled={!list.length}
      value={value}
      placeholder={placeholder}
      style={{ width: '100%', maxWidth: 420 }}
      onChange={(id?: string) => onChange(id)}
      options={list.map((v) => {
        const short = payable !== undefined && payable < BigInt(v.minSpend);
        return { value: v.id, label: voucherLabel(v) + (short ? '（未满使用门槛）' : ''), disabled: short && v.id !== value };
      })}
    />
  );
}

function voucherLabel(v: Voucher): string {
  const threshold = v.minSpend === '0' ? '无门槛' : `满 ¥${formatYuan(v.minSpend)} 可用`;
  return `${v.name} · ¥${formatYuan(v.amount)}（${threshold}，${formatDay(v.expiresAt)} 到期）`;
}

/**
 * The name keeps its own state while typing: the URL it is saved to updates a moment later, and a
 * Chinese IME composing pinyin must not see its text replaced by that older value.
 */
function NameInput({ value, onChange }: { value: string; onChange: (name: string) => void }) {
  const [text, setText] = useState(value);
  return (
    <Input
      aria-label="实例名称"
      placeholder="选填，便于在控制台中识别"
      maxLength={NAME_MAX_LENGTH}
      showCount
      value={text}
      onChange={(e) => {
        setText(e.target.value);
        onChange(e.target.value);
      }}
      style={{ maxWidth: 360 }}
    />
  );
}

/** The summary lines for the terms every order has, whatever it buys: after the product's own lines. */
export function termsSummary(config: PurchaseConfig): SummaryItem[] {
  return [
    { label: '计费方式', value: BillingCycle.label(config.cycle) },
    { label: config.cycle === 'Hour' ? '预估时长' : '购买时长', value: `${config.duration} ${BillingCycleUnit[config.cycle]}` },
    ...(config.dataDiskGb ? [{ label: '数据盘', value: `${config.dataDiskGb} GB` }] : []),
    ...nameSummary(config),
  ];
}

/** The name the buyer typed, as a line of the order summary (none when left empty). */
function nameSummary(config: PurchaseConfig): SummaryItem[] {
  const name = config.name.trim();
  return name ? [{ label: '实例名称', value: name }] : [];
}

/** The console list each kind of instance is shown in (CPU instances under /console/generic/cpu). */
const INSTANCE_LIST: Record<string, string> = {
  Gpu: PAGE.gpuGeneric,
  App: PAGE.app,
  Generic: PAGE.cpu,
  Desktop: PAGE.desktop,
  Ebusiness: PAGE.ebusiness,
  Game: PAGE.game,
};

/** The instance list an order's machines appear in. */
export function instanceListOf(category: string): string {
  return INSTANCE_LIST[category] ?? PAGE.gpuGeneric;
}

/** What one hour of a post-paid configuration costs: the quote is for the estimated hours. */
export function hourlyOf(quote: Quote): bigint {
  // The server takes no voucher on a post-paid order: price it without one.
  const beforeVoucher = BigInt(quote.total) + BigInt(quote.voucherDeduction);
  const hours = BigInt(Math.max(1, quote.duration));
  return (beforeVoucher + hours / 2n) / hours;
}

/** The order for the configuration on screen: the GPU endpoint for GPU/App, the generic one for sizes. */
function createOrder(config: PurchaseConfig): Promise<Order> {
  const name = config.name.trim() || undefined;
  if (config.category === 'Gpu') {
    const request = gpuQuoteRequest(config);
    if (!request) return Promise.reject(new ApiError('http', '请先选择 GPU 型号'));
    const { voucherId: _voucher, ...body } = request; // the voucher is applied when paying
    return ordersApi.createGpuOrder({ ...body, name });
  }
  const request = sizeQuoteRequest(config);
  if (!request) return Promise.reject(new ApiError('http', '请先选择地区和规格'));
  const { voucherId: _voucher, ...body } = request;
  return ordersApi.createSizeOrder({ ...body, name });
}

/**
 * 立即购买: a visitor logs in first and comes back to this configuration. A buyer confirms the
 * order with its cost, then the server creates it. Post-paid (按时): the instance is already being
 * created, so the buyer goes to its console list. Prepaid: the order is Unpaid and the pay dialog
 * opens (with the voucher chosen here); paid, the buyer goes to the list; closed unpaid, the order
 * waits on the bill page until it expires. Render `holder` once where the hook is used.
 */
export function useCheckout(config: PurchaseConfig, summary: SummaryItem[]) {
  const { loggedIn } = useSession();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const { modal, message, notification } = App.useApp();
  const [paying, setPaying] = useState<Order | null>(null);
  /** Where the order in the pay dialog ended up (null: still unpaid), so its closing says the right thing. */
  const outcome = useRef<OrderStatus | null>(null);
  const postpaid = isPostpaid(config.cycle);

  const refresh = () => {
    invalidateOrderViews(queryClient);
    void queryClient.invalidateQueries({ queryKey: INSTANCE_KEYS.all });
  };

  const failed = (e: unknown) => {
    const error = isApiError(e) ? e : new ApiError('network', CLIENT_MESSAGES.network);
    if (!isApiError(error, 'INSUFFICIENT_BALANCE')) return reactToError(error, getApiUi());
    // The buyer stays here with the configuration; recharging is one click away.
    modal.confirm({
      title: '余额不足',
      content: error.detail ? `${error.message}：${error.detail}` : error.message,
      okText: '去充值',
      cancelText: '取消',
      onOk: () => navigate(PAGE.recharge),
    });
  };

  const submit = async () => {
    let order: Order;
    try {
      order = await createOrder(config);
    } catch (e) {
      failed(e);
      return;
    }
    refresh();
    if (order.status === 'Unpaid') {
      outcome.current = null;
      setPaying(order);
      return;
    }
    void message.success('订单已提交，实例正在创建，开机后按秒计费');
    navigate(instanceListOf(order.category));
  };

  const onPaid = () => {
    if (!paying) return;
    refresh();
    void message.success('支付成功，实例正在创建');
    navigate(instanceListOf(paying.category));
  };

  const onClose = () => {
    const order = paying;
    setPaying(null);
    if (!order || outcome.current !== null || dayjs(order.expiresAt).isBefore(dayjs())) return;
    notification.info({
      title: '订单待支付',
      description: (
        <span>
          订单 {order.orderUid} 尚未支付，已保存在
          <a
            href={PAGE.bill}
            onClick={(e) => {
              e.preventDefault();
              navigate(PAGE.bill);
            }}
          >
            账单页
          </a>
          ，可在 {formatTime(order.expiresAt)} 前继续支付，逾期自动失效。
        </span>
      ),
    });
  };

  const buy = (quote: Quote) => {
    if (!loggedIn) {
      navigate(loginUrlFor(config));
      return;
    }
    modal.confirm({
      title: '确认订单',
      width: 480,
      okText: '提交订单',
      cancelText: '再看看',
      content: <OrderConfirmation summary={summary} quote={quote} postpaid={postpaid} />,
      // Never rejects: a failure is shown by `failed` and the dialog closes on the unchanged page.
      onOk: submit,
    });
  };

  const holder = paying ? (
    <OrderPayModal
      key={paying.orderUid}
      order={paying}
      voucherId={config.voucherId}
      onPaid={onPaid}
      onSettled={(status) => {
        outcome.current = status;
      }}
      onClose={onClose}
    />
  ) : null;

  return { buy, holder };
}

function OrderConfirmation({ summary, quote, postpaid }: { summary: SummaryItem[]; quote: Quote; postpaid: boolean }) {
  const voucher = BigInt(quote.voucherDeduction);
  return (
    <div>
      <dl className="gpu-card-specs" style={{ borderTop: 'none' }}>
        {summary.map((item) => (
          <div key={item.label} style={{ display: 'contents' }}>
            <dt>{item.label}</dt>
            <dd>{item.value}</dd>
          </div>
        ))}
      </dl>
      {postpaid ? (
        <>
          <div className="quote-total" style={{ borderTop: 'none' }}>
            <Typography.Text strong>按量单价</Typography.Text>
            <Price units={String(hourlyOf(quote))} per="小时" size="lg" />
          </div>
          <Typography.Paragraph style={{ margin: '8px 0 0' }}>
            按量计费：¥{formatYuan(hourlyOf(quote))}/小时，开机期间按秒计费，余额不足时自动关机
          </Typography.Paragraph>
          <Typography.Paragraph type="secondary" style={{ margin: '4px 0 0', fontSize: 12 }}>
            提交后立即创建实例，无需预付；账户余额需不少于 1 小时费用。
          </Typography.Paragraph>
        </>
      ) : (
        <>
          <div className="quote-total" style={{ borderTop: 'none' }}>
            <Typography.Text strong>应付金额</Typography.Text>
            <Price units={quote.total} size="lg" />
          </div>
          <Typography.Paragraph type="secondary" style={{ margin: '8px 0 0', fontSize: 12 }}>
            {voucher > 0n ? `已含代金券抵扣 ¥${formatYuan(voucher)}。` : ''}
            提交后在支付窗口用余额或支付宝/微信扫码支付，支付成功即创建实例；未支付的订单保留在账单页，逾期自动失效。
          </Typography.Paragraph>
        </>
      )}
    </div>
  );
}
