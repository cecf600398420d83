/**
 * Resource packages as every page that sells or shows them does (/console/cost/resource,
 * /compute/center, /compute/detail): a product's card with its buy path (a model order paid in
 * the pay dialog), a package's quantities and its expiry.
 */
import { useState } from 'react';
import { App, Button, Flex, InputNumber, Tag, Typography } from 'antd';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { discountText, formatYuan, type Order, type ResourcePackage, type ResourceProduct } from '@console/contract';
import { ORDER_KEYS, ordersApi } from '../api/orders';
import { formatQuantity } from './orderViews';
import { Price } from './Price';

/** A package near its end: this many days or fewer left. */
export const EXPIRING_DAYS = 7;
const DAY_MS = 24 * 3600_000;

/**
 * A package's quantity as shown: card hours arrive as decimal hours (metered to the millisecond)
 * and are shown to 0.01 h, rounded down so the page never promises more than is left; tokens
 * are whole numbers in 万 / 亿.
 */
export function packageQuantity(quantity: string, p: Pick<ResourcePackage, 'unit' | 'gpuTypeId'>): string {
  if (!p.gpuTypeId) return formatQuantity(quantity, p.unit);
  const [whole = '0', frac = ''] = quantity.split('.');
  const cents = frac.slice(0, 2).replace(/0+$/, '');
  return `${whole}${cents ? `.${cents}` : ''} ${p.unit}`;
}

/** What is left as a share of the total, to 0.1 %. */
export function remainPercent(remain: string, total: string): number {
  const t = Number(total);
  return t > 0 ? Math.floor((Number(remain) / t) * 1000) / 10 : 0;
}

/** Where a package stands: past its end (or marked so), ending within a week, used up, or none of these. */
export function packageState(p: Pick<ResourcePackage, 'expired' | 'expiresAt' | 'remain'>, now = Date.now()): 'expired' | 'expiring' | 'empty' | null {
  const end = Date.parse(p.expiresAt);
  if (p.expired || end <= now) return 'expired';
  if (Number(p.remain) <= 0) return 'empty';
  if (end - now <= EXPIRING_DAYS * DAY_MS) return 'expiring';
  return null;
}

/** 已过期 / 即将过期 / 已用完 next to a package's end. */
export function PackageStateTag({ pkg }: { pkg: Pick<ResourcePackage, 'expired' | 'expiresAt' | 'remain'> }) {
  const state = packageState(pkg);
  if (state === 'expired') return <Tag style={{ marginInlineEnd: 0 }}>已过期</Tag>;
  if (state === 'empty') return <Tag style={{ marginInlineEnd: 0 }}>已用完</Tag>;
  if (state === 'expiring')
    return (
      <Tag color="warning" style={{ marginInlineEnd: 0 }}>
        即将过期
      </Tag>
    );
  return null;
}

/** A GPU-hour package against its hours' price at the card's hourly rate: "4.2 折", or '' when it is no cheaper. */
export function productDiscount(p: Pick<ResourceProduct, 'price' | 'listPrice'>): string {
  if (!p.listPrice || BigInt(p.listPrice) <= 0n) return '';
  return discountText(String(Number(p.price) / Number(p.listPrice)));
}

/** A GPU-hour package's price per card hour (rounded to 0.0001 yuan), or null for anything else. */
function pricePerHour(p: Pick<ResourceProduct, 'price' | 'quantity' | 'gpuTypeId'>): string | null {
  if (!p.gpuTypeId || !/^\d+$/.test(p.quantity) || p.quantity === '0') return null;
  return String(BigInt(p.price) / BigInt(p.quantity));
}

export interface ResourceProductCardProps {
  product: ResourceProduct;
  /** The order was created (Unpaid): the page opens the pay dialog on it. */
  onOrdered: (order: Order) => void;
  /** Ask "确认购买…？" with the amount before the order is created. */
  confirm?: boolean;
}

/**
 * One product on sale: what it is, for how long, its price (with the list price struck through
 * and the discount when it is a GPU-hour package cheaper than its hours), a count and 立即购买,
 * which creates a model order and hands it to `onOrdered`.
 */
export function ResourceProductCard({ product: p, onOrdered, confirm = false }: ResourceProductCardProps) {
  const { modal } = App.useApp();
  const queryClient = useQueryClient();
  const [count, setCount] = useState<number | null>(1);
  const valid = count !== null && Number.isInteger(count) && count >= 1 && count <= 100;
  const total = valid ? String(BigInt(p.price) * BigInt(count)) : null;
  const discount = productDiscount(p);
  const perHour = pricePerHour(p);
  const buy = useMutation({
    mutationFn: (n: number) => ordersApi.createResourceOrder({ productId: p.id, count: n }),
    onSuccess: (order) => {
      void queryClient.invalidateQueries({ queryKey: ORDER_KEYS.all });
      onOrdered(order);
    },
    // A refusal (e.g. UNPAID_ORDER_EXISTS) is shown by the request layer; the banner lists that order.
    onError: () => void queryClient.invalidateQueries({ queryKey: ORDER_KEYS.unpaid }),
  });
  const onBuy = () => {
    if (!valid) return;
    const n = count;
    if (!confirm) return buy.mutate(n);
    modal.confirm({
      title: `确认购买「${p.name}」？`,
      content: (
        <Flex vertical gap={4}>
          <span>
            数量 {n} 份{/^\d+$/.test(p.quantity) ? `，共 ${formatQuantity(String(BigInt(p.quantity) * BigInt(n)), p.unit)}` : ''}，有效期 {p.validDays} 天
          </span>
          <span>
            应付金额 <b>¥{formatYuan(total!)}</b>
            {p.listPrice && discount ? `（原价 ¥${formatYuan(BigInt(p.listPrice) * BigInt(n))}，${discount}）` : ''}
          </span>
          <Typography.Text type="secondary">确认后生成订单，在支付窗口选择支付方式；支付后立即生效。</Typography.Text>
        </Flex>
      ),
      okText: '确认购买',
      cancelText: '取消',
      onOk: () => buy.mutateAsync(n).catch(() => undefined),
    });
  };
  return (
    <section className="resource-card" aria-label={`资源包 ${p.name}`}>
      <Flex justify="space-between" align="start" gap={8}>
        <Typography.Text strong className="resource-card-name">
          {p.name}
        </Typography.Text>
        {discount && (
          <Tag color="volcano" variant="solid" style={{ marginInlineEnd: 0 }}>
            {discount}
          </Tag>
        )}
      </Flex>
      <div className="resource-card-quantity">{formatQuantity(p.quantity, p.unit)}</div>
      <Typography.Paragraph type="secondary" className="resource-card-desc">
        {p.description}
      </Typography.Paragraph>
      <Flex justify="space-between" align="baseline" gap={8} wrap>
        <Flex align="baseline" gap={8}>
          <Price units={p.price} per="份" size="lg" />
          {discount && p.listPrice && <Price units={p.listPrice} size="sm" strike />}
        </Flex>
        <Tag color="purple" style={{ marginInlineEnd: 0 }}>
          有效期 {p.validDays} 天
        </Tag>
      </Flex>
      {perHour && (
        <Typography.Text type="secondary" style={{ fontSize: 12 }}>
          折合 ¥{formatYuan(perHour)}/{p.unit}
        </Typography.Text>
      )}
      <Flex align="center" justify="space-between" gap={8} className="resource-card-buy">
        <Flex align="center" gap={8}>
          <Typography.Text type="secondary">数量</Typography.Text>
          <InputNumber aria-label={`购买数量 ${p.name}`} min={1} max={100} precision={0} value={count} onChange={setCount} style={{ width: 88 }} />
        </Flex>
        <Typography.Text type="secondary">合计 {total ? <Price units={total} /> : '--'}</Typography.Text>
      </Flex>
      <Button type="primary" block disabled={!valid} loading={buy.isPending} onClick={onBuy}>
        立即购买
      </Button>
    </section>
  );
}
