import { Empty, Segmented, Skeleton } from 'antd';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useNavigate, useSearchParams } from 'react-router';
import { catalogueQueries } from '../api/catalogue';
import { LoadError } from '../../../components/LoadError';
import { CYCLE_OPTIONS, isShopCycle } from '../utils/marketQuery';
import { PublicPage } from '../../../components/PublicPage';
import { buySizeUrl, SizeCard } from '../components/SizeCard';

/** /stats/game: the cloud-game machines (sizes of category Game) and what they cost. */
export default function GamePage() {
  const [params, setParams] = useSearchParams();
  const navigate = useNavigate();
  const cycleParam = params.get('cycle');
  const cycle = isShopCycle(cycleParam) ? cycleParam : 'Hour';
  const sizes = useQuery({ ...catalogueQueries.sizes({ category: 'Game', cycle, pageSize: 100 }), placeholderData: keepPreviousData });
  const regions = useQuery(catalogueQueries.regions('Game'));
  const regionName = (id: string) => regions.data?.find((r) => r.id === id)?.name ?? id;

  return (
    <PublicPage
      title="云游戏"
      intro="带独立显卡的云端游戏主机，开机即玩，按需计费。"
      extra={
        <Segmented
          aria-label="计费方式"
          options={CYCLE_OPTIONS}
          value={cycle}
          onChange={(c) => setParams(c === 'Hour' ? {} : { cycle: c }, { replace: true })}
        />
      }
    >
      {sizes.isPending ? (
        <div className="card-grid" aria-busy="true">
          {Array.from({ length: 4 }, (_, i) => (
            <div key={i} className="gpu-card">
              <Skeleton active paragraph={{ rows: 6 }} />
            </div>
          ))}
        </div>
      ) : sizes.isError ? (
        <LoadError error={sizes.error} onRetry={() => void sizes.refetch()} />
      ) : sizes.data.items.length === 0 ? (
        <Empty className="market-empty" description="暂无上架的云游戏主机，敬请期待" />
      ) : (
        <div className="card-grid" aria-label="云游戏主机">
          {sizes.data.items.map((size) => (
            <SizeCard key={size.id} size={size} cycle={cycle} regionNames={size.regionIds.map(regionName)} onBuy={(s) => navigate(buySizeUrl(s, cycle))} />
          ))}
        </div>
      )}
    </PublicPage>
  );
}
