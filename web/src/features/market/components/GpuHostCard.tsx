import { Button, Progress, Tag, Tooltip } from 'antd';
import { BellOutlined, EnvironmentOutlined } from '@ant-design/icons';
import { BillingCycle, BillingCycleUnit, discountText, PAGE, type CyclePrice, type GpuHost } from '@console/contract';
import { Price } from '../../../components/Price';
import { SHOP_CYCLES, type ShopCycle } from '../utils/marketQuery';

/** Where 立即租用 goes: the purchase page, configured with this host and the market's choices. */
export function rentUrl(host: GpuHost, cycle: ShopCycle, gpuCount: number): string {
  const q = new URLSearchParams({
    hostId: host.id,
    gpuTypeId: host.gpuTypeId,
    regionId: host.regionId,
    roomId: host.roomId,
    cycle,
    gpuCount: String(Math.max(1, Math.min(gpuCount, host.gpuFree || 1))),
  });
  return `${PAGE.purchase}?${q.toString()}`;
}

/** Room names usually repeat their region's ("北京 B 区 1 号机房"): say the region once. */
export function placeName(host: Pick<GpuHost, 'regionName' | 'roomName'>): string {
  return host.roomName.startsWith(host.regionName) ? host.roomName : `${host.regionName} · ${host.roomName}`;
}

function otherCyclePrices(host: GpuHost, cycle: ShopCycle): CyclePrice[] {
  return SHOP_CYCLES.filter((c) => c !== cycle)
    .map((c) => host.prices.find((p) => p.cycle === c))
    .filter((p): p is CyclePrice => p !== undefined);
}

/**
 * One host of the GPU market: what it is, how many cards are free, and what a card costs. A full
 * host offers 有卡时通知我 (`onNotify`): a notice when its type has free cards in its region again.
 */
export function GpuHostCard({
  host,
  cycle,
  onRent,
  onNotify,
  notifying,
}: {
  host: GpuHost;
  cycle: ShopCycle;
  onRent: (host: GpuHost) => void;
  onNotify?: (host: GpuHost) => void;
  notifying?: boolean;
}) {
  const full = host.gpuFree <= 0;
  const discount = discountText(host.price.discountRate);
  const discounted = host.price.listPrice !== host.price.price;
  return (
    <article className={`gpu-card${full ? ' is-full' : ''}`} aria-label={`${host.regionName} ${host.roomName} ${host.gpuName}`}>
      <header className="gpu-card-head">
        <span className="gpu-card-place">
          <EnvironmentOutlined /> {placeName(host)}
        </span>
        {discount && (
          <Tag color="volcano" variant="solid">
            {discount}
          </Tag>
        )}
      </header>
      <div className="gpu-card-model">
        {host.gpuName}
        <span className="gpu-card-memory">{host.gpuMemoryGb} GB</span>
      </div>
      <div className="gpu-card-free">
        <span>
          空闲 <b>{host.gpuFree}</b> / 总 {host.gpuTotal} 卡
        </span>
        <Progress percent={host.gpuTotal ? (host.gpuFree / host.gpuTotal) * 100 : 0} showInfo={false} size="small" aria-label="空闲卡占比" />
      </div>
      <dl className="gpu-card-specs">
        <dt>CPU</dt>
        <dd>
          <Tooltip title={host.cpuModel}>{host.cpuPerGpu} 核/卡</Tooltip>
        </dd>
        <dt>内存</dt>
        <dd>{host.memoryGbPerGpu} GB/卡</dd>
        <dt>数据盘</dt>
        <dd>免费 {host.dataDiskFreeGb} GB/卡</dd>
        <dt>扩容上限</dt>
        <dd>{host.dataDiskMaxGb} GB</dd>
        <dt>最高 CUDA</dt>
        <dd>{host.maxCuda}</dd>
      </dl>
      <div className="gpu-card-price">
        <Price units={host.price.price} per={`卡·${BillingCycleUnit[cycle]}`} size="lg" />
        {discounted && <Price units={host.price.listPrice} size="sm" strike />}
      </div>
      <div className="gpu-card-others">
        {otherCyclePrices(host, cycle).map((p) => (
          <span key={p.cycle}>
            {BillingCycle.label(p.cycle)} <Price units={p.price} size="sm" />
          </span>
        ))}
      </div>
      <Button type="primary" block disabled={full} onClick={() => onRent(host)}>
        {full ? '已租满' : '立即租用'}
      </Button>
      {full && onNotify && (
        <Button block icon={<BellOutlined />} loading={notifying} onClick={() => onNotify(host)} style={{ marginTop: 8 }}>
          有卡时通知我
        </Button>
      )}
    </article>
  );
}
