import type { ReactNode } from 'react';
import { Button, Radio, Segmented, Select, Skeleton, Typography } from 'antd';
import type { UseQueryResult } from '@tanstack/react-query';
import type { GpuType, Region } from '@console/contract';
import { CYCLE_OPTIONS, GPU_COUNT_CHOICES, type MarketFilters, type PriceSort } from '../utils/marketQuery';

const ALL = '';
const SORT_OPTIONS: { value: PriceSort; label: string }[] = [
  { value: '', label: '默认排序' },
  { value: 'asc', label: '按日价格从低到高' },
  { value: 'desc', label: '按日价格从高到低' },
];

function FilterRow({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="filter-row">
      <span className="filter-label">{label}</span>
      <div className="filter-options">{children}</div>
    </div>
  );
}

/** A filter whose options come from the API: skeleton while loading, a retry link if it failed. */
function OptionsOf<T>({ query, children }: { query: UseQueryResult<T>; children: (data: T) => ReactNode }) {
  if (query.isPending) return <Skeleton.Input active size="small" style={{ width: 320 }} />;
  if (query.isError)
    return (
      <Typography.Text type="secondary">
        选项加载失败，
        <Button type="link" size="small" style={{ padding: 0 }} onClick={() => void query.refetch()}>
          重试
        </Button>
      </Typography.Text>
    );
  return <>{children(query.data)}</>;
}

/** The market's filters; every change goes through onChange into the URL. */
export function MarketFilterBar({
  filters,
  regions,
  gpuTypes,
  onChange,
}: {
  filters: MarketFilters;
  regions: UseQueryResult<Region[]>;
  gpuTypes: UseQueryResult<GpuType[]>;
  onChange: (change: Partial<MarketFilters>) => void;
}) {
  const region = regions.data?.find((r) => r.id === filters.regionId);
  return (
    <section className="market-filters" aria-label="筛选">
      <FilterRow label="计费方式">
        <Segmented aria-label="计费方式" options={CYCLE_OPTIONS} value={filters.cycle} onChange={(cycle) => onChange({ cycle })} />
      </FilterRow>
      <FilterRow label="地区">
        <OptionsOf query={regions}>
          {(list) => (
            <Radio.Group
              aria-label="地区"
              optionType="button"
              value={filters.regionId ?? ALL}
              onChange={(e) => onChange({ regionId: e.target.value || undefined })}
              options={[{ value: ALL, label: '全部地区' }, ...list.map((r) => ({ value: r.id, label: r.name }))]}
            />
          )}
        </OptionsOf>
      </FilterRow>
      {region && region.rooms.length > 1 && (
        <FilterRow label="机房">
          <Radio.Group
            aria-label="机房"
            optionType="button"
            size="small"
            value={filters.roomId ?? ALL}
            onChange={(e) => onChange({ roomId: e.target.value || undefined })}
            options={[{ value: ALL, label: '全部机房' }, ...region.rooms.map((r) => ({ value: r.id, label: r.name }))]}
          />
        </FilterRow>
      )}
      <FilterRow label="GPU 型号">
        <OptionsOf query={gpuTypes}>
          {(list) => (
            <Radio.Group
              aria-label="GPU 型号"
              optionType="button"
              value={filters.gpuTypeId ?? ALL}
              onChange={(e) => onChange({ gpuTypeId: e.target.value || undefined })}
              // A type the host lacks is no choice: a real host sells its own cards only (HostNote says which).
              options={[{ value: ALL, label: '全部型号' }, ...list.filter((t) => !t.unavailable).map((t) => ({ value: t.id, label: t.name }))]}
            />
          )}
        </OptionsOf>
      </FilterRow>
      <FilterRow label="GPU 数量">
        <Radio.Group
          aria-label="GPU 数量"
          optionType="button"
          value={filters.gpuCount ?? 0}
          onChange={(e) => onChange({ gpuCount: e.target.value || undefined })}
          options={[{ value: 0, label: '不限' }, ...GPU_COUNT_CHOICES.map((n) => ({ value: n, label: `${n} 卡` }))]}
        />
        <Typography.Text type="secondary" className="filter-hint">
          只看空闲卡数不少于所选数量的主机
        </Typography.Text>
      </FilterRow>
      <FilterRow label="排序">
        <Select aria-label="排序" style={{ width: 180 }} value={filters.sort} options={SORT_OPTIONS} onChange={(sort) => onChange({ sort })} />
      </FilterRow>
    </section>
  );
}
