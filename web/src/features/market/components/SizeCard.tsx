import { Button, Tag } from 'antd';
import { BillingCycle, BillingCycleUnit, discountText, PAGE, type CyclePrice, type Size } from '@console/contract';
import { Price } from '../../../components/Price';
import { SHOP_CYCLES, type ShopCycle } from '../utils/marketQuery';

/** The purchase page in size mode, with this size, its first region and the chosen cycle. */
export function buySizeUrl(size: Size, cycle: ShopCycle): string {
  const q = new URLSearchParams({ category: size.category, sizeId: size.id, cycle });
  if (size.regionIds[0]) q.set('regionId', size.regionIds[0]);
  return `${PAGE.purchase}?${q.toString()}`;
}

/** One size (a CPU flavour, a cloud-game machine…) with its price for the chosen cycle. */
export function SizeCard({ size, cycle, regionNames, onBuy }: { size: Size; cycle: ShopCycle; regionNames: string[]; onBuy: (size: Size) => void }) {
  const discount = discountText(size.price.discountRate);
  const others = SHOP_CYCLES.filter((c) => c !== cycle)
    .map((c) => size.prices.find((p) => p.cycle === c))
    .filter((p): p is CyclePrice => p !== undefined);
  return (
    <article className="gpu-card" aria-label={size.name}>
      <header className="gpu-card-head">
        <span className="gpu-card-place">{regionNames.length ? regionNames.join(' · ') : '暂无可售地区'}</span>
        {discount && (
          <Tag color="volcano" variant="solid">
            {discount}
          </Tag>
        )}
      </header>
      <div className="gpu-card-model">{size.name}</div>
      {size.description && <div className="gpu-card-free">{size.description}</div>}
      <dl className="gpu-card-specs">
        {size.gpuName && (
          <>
            <dt>显卡</dt>
            <dd>{size.gpuName}</dd>
          </>
        )}
        <dt>CPU</dt>
        <dd>{size.cpu} 核</dd>
        <dt>内存</dt>
        <dd>{size.memoryGb} GB</dd>
        <dt>系统盘</dt>
        <dd>{size.systemDiskGb} GB</dd>
        <dt>带宽</dt>
        <dd>{size.bandwidthMbps} Mbps</dd>
      </dl>
      <div className="gpu-card-price">
        <Price units={size.price.price} per={`台·${BillingCycleUnit[cycle]}`} size="lg" />
        {size.price.listPrice !== size.price.price && <Price units={size.price.listPrice} size="sm" strike />}
      </div>
      <div className="gpu-card-others">
        {others.map((p) => (
          <span key={p.cycle}>
            {BillingCycle.label(p.cycle)} <Price units={p.price} size="sm" />
          </span>
        ))}
      </div>
      {size.unavailable && <div className="gpu-card-free">{size.unavailable}</div>}
      <Button type="primary" block disabled={size.regionIds.length === 0 || !!size.unavailable} onClick={() => onBuy(size)}>
        {size.unavailable ? '本主机不销售' : '立即购买'}
      </Button>
    </article>
  );
}
