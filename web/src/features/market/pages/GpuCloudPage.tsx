import { Button, Empty, Pagination, Skeleton, Spin, Typography } from 'antd';
import { keepPreviousData, useQuery, type UseQueryResult } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { useUrlState } from '../../../routing/useUrlState';
import type { GpuHost, GpuHostsPage } from '@console/contract';
import { catalogueQueries } from '../api/catalogue';
import { LoadError } from '../../../components/LoadError';
import { GpuHostCard, rentUrl } from '../components/GpuHostCard';
import { MarketFilterBar } from '../components/MarketFilterBar';
import { changeFilters, marketRequest, MARKET_PAGE_SIZE, readMarketFilters, writeMarketFilters, type MarketFilters } from '../utils/marketQuery';
import { PromoBanner } from '../components/PromoBanner';
import { HostNote, hostHardware, useMarketHost } from '../components/HostNote';
import { PublicPage } from '../../../components/PublicPage';
import { useGpuSubscribe } from '../hooks/useGpuSubscribe';

/** /stats/cloud/gpu: the promotion and the GPU market (算力市场), filtered through the URL. */
export default function GpuCloudPage() {
  const url = useUrlState(readMarketFilters, writeMarketFilters);
  const navigate = useNavigate();
  const filters = url.value;
  const regions = useQuery(catalogueQueries.regions('Gpu'));
  const gpuTypes = useQuery(catalogueQueries.gpuTypes());
  // The previous page stays on screen (dimmed) while the next one loads: no jump on every click.
  const hosts = useQuery({ ...catalogueQueries.gpuList(marketRequest(filters)), placeholderData: keepPreviousData });

  const setFilters = (next: MarketFilters) => url.set(next);
  const onRent = (host: GpuHost) => navigate(rentUrl(host, filters.cycle, filters.gpuCount ?? 1));
  const notify = useGpuSubscribe();

  return (
    <PublicPage title="算力市场" intro="按地区、GPU 型号与卡数挑选主机，价格为每张卡的单价，实时显示空闲卡数。">
      <PromoBanner />
      <HostNote />
      <MarketFilterBar filters={filters} regions={regions} gpuTypes={gpuTypes} onChange={(c) => setFilters(changeFilters(url.latest(), c))} />
      <MarketResult
        query={hosts}
        filters={filters}
        onRent={onRent}
        onNotify={(host) => notify.subscribe({ gpuTypeId: host.gpuTypeId, regionId: host.regionId })}
        notifying={notify.pending}
        onReset={() => setFilters(readMarketFilters(new URLSearchParams()))}
        onPage={(page) => setFilters({ ...url.latest(), page })}
      />
    </PublicPage>
  );
}

function MarketResult({
  query,
  filters,
  onRent,
  onNotify,
  notifying,
  onReset,
  onPage,
}: {
  query: UseQueryResult<GpuHostsPage>;
  filters: MarketFilters;
  onRent: (host: GpuHost) => void;
  onNotify: (host: GpuHost) => void;
  notifying: (host: GpuHost) => boolean;
  onReset: () => void;
  onPage: (page: number) => void;
}) {
  const host = useMarketHost();
  if (query.isPending) return <MarketSkeleton />;
  if (query.isError) return <LoadError error={query.error} onRetry={() => void query.refetch()} />;
  const { items, total } = query.data;
  if (items.length === 0 && host && host.gpus.length === 0)
    return <Empty className="market-empty" description={`本主机没有 GPU（${hostHardware(host)}），暂无 GPU 主机可租用；可购买 CPU 实例`} />;
  if (items.length === 0)
    return (
      <Empty className="market-empty" description="没有符合条件的主机，换个地区或型号试试">
        <Button type="primary" onClick={onReset}>
          重置筛选
        </Button>
      </Empty>
    );
  return (
    <Spin spinning={query.isPlaceholderData} description="加载中…">
      <Typography.Text type="secondary" className="market-count">
        共 {total} 台主机
      </Typography.Text>
      <div className="card-grid" aria-label="主机列表">
        {items.map((host) => (
          <GpuHostCard key={host.id} host={host} cycle={filters.cycle} onRent={onRent} onNotify={onNotify} notifying={notifying(host)} />
        ))}
      </div>
      {total > MARKET_PAGE_SIZE && (
        <Pagination className="market-pagination" current={filters.page} pageSize={MARKET_PAGE_SIZE} total={total} showSizeChanger={false} onChange={onPage} />
      )}
    </Spin>
  );
}

function MarketSkeleton() {
  return (
    <div className="card-grid" aria-busy="true" aria-label="加载中">
      {Array.from({ length: 8 }, (_, i) => (
        <div key={i} className="gpu-card">
          <Skeleton active paragraph={{ rows: 6 }} />
        </div>
      ))}
    </div>
  );
}
