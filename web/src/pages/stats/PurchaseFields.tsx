import { useState, type ReactNode } from 'react';
import { App, Form, Input, InputNumber, Segmented, Select, Space, Typography } from 'antd';
import { useNavigate } from 'react-router';
import { BillingCycleUnit, formatYuan, MAX_DURATION, type InstanceCategory, type Quote, type Voucher } from '@console/contract';
import { useQuery } from '@tanstack/react-query';
import dayjs from 'dayjs';
import { catalogueQueries } from '../../api/catalogue';
import { Price } from '../../components/Price';
import { useSession } from '../../session/useSession';
import { CYCLE_OPTIONS } from './marketQuery';
import { loginUrlFor, NAME_MAX_LENGTH, type PurchaseConfig } from './purchaseQuery';
import type { SummaryItem } from './QuotePanel';

type Change = (change: Partial<PurchaseConfig>) => void;

/** What a quote asks before its voucher: the amount a voucher's minimum spend is compared with. */
export function payableOf(quote: Quote | undefined): bigint | undefined {
  return quote ? BigInt(quote.total) + BigInt(quote.voucherDeduction) : undefined;
}

export function CycleField({ config, onChange }: { config: PurchaseConfig; onChange: Change }) {
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
  const postpaid = config.cycle === 'Hour';
  return (
    <>
      <Form.Item
        label={postpaid ? '预估时长' : '购买时长'}
        extra={postpaid ? '按时计费为后付费，按实际开机时长扣费，此处仅用于估算费用' : `最长 ${MAX_DURATION[config.cycle]} ${unit}`}
      >
        <Space.Compact>
          <InputNumber
            aria-label="时长"
            min={1}
            max={MAX_DURATION[config.cycle]}
            precision={0}
            value={config.duration}
            onChange={(v) => v !== null && onChange({ duration: v })}
            style={{ width: 140 }}
          />
          <Space.Addon>{unit}</Space.Addon>
        </Space.Compact>
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
      {loggedIn && (
        <Form.Item label="代金券">
          <VoucherSelect category={voucherCategory} value={config.voucherId} payable={payable} onChange={(voucherId) => onChange({ voucherId })} />
        </Form.Item>
      )}
    </>
  );
}

/** The buyer's usable vouchers; the server's quote has the last word on whether one applies. */
function VoucherSelect({ category, value, payable, onChange }: { category: InstanceCategory; value?: string; payable?: bigint; onChange: (id: string | undefined) => void }) {
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
  return `${v.name} · ¥${formatYuan(v.amount)}（${threshold}，${dayjs(v.expiresAt).format('YYYY-MM-DD')} 到期）`;
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

/**
 * 立即购买: a visitor logs in first and comes back to this configuration. Ordering itself arrives
 * with the money issue, so a logged-in buyer sees the confirmation and is told so, not a fake order.
 */
export function useCheckout(config: PurchaseConfig, summary: SummaryItem[]) {
  const { loggedIn } = useSession();
  const navigate = useNavigate();
  const { modal, message } = App.useApp();
  return (quote: Quote) => {
    if (!loggedIn) {
      navigate(loginUrlFor(config));
      return;
    }
    modal.confirm({
      title: '确认订单',
      width: 480,
      okText: '提交订单',
      cancelText: '再看看',
      content: <OrderConfirmation summary={summary} quote={quote} />,
      onOk: () => {
        message.info('下单功能即将开放，敬请期待');
      },
    });
  };
}

function OrderConfirmation({ summary, quote }: { summary: SummaryItem[]; quote: Quote }) {
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
      <div className="quote-total" style={{ borderTop: 'none' }}>
        <Typography.Text strong>应付金额</Typography.Text>
        <Price units={quote.total} size="lg" />
      </div>
      <Typography.Paragraph type="secondary" style={{ margin: '8px 0 0', fontSize: 12 }}>
        在线下单与余额支付即将开放，当前可先确认配置与价格。
      </Typography.Paragraph>
    </div>
  );
}
