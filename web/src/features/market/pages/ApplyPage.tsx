import { Button, Empty, Input, Pagination, Segmented, Skeleton, Spin, Tag, Typography } from 'antd';
import { keepPreviousData, useQuery, type UseQueryResult } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { useUrlState } from '../../../routing/useUrlState';
import { BillingCycleUnit, isCpuApplication, PAGE, type Application, type ApplicationsPage, type Size } from '@console/contract';
import { Price } from '../../../components/Price';
import { catalogueQueries } from '../api/catalogue';
import { LoadError } from '../../../components/LoadError';
import { AppCover } from '../components/AppCover';
import { HostNote } from '../components/HostNote';
import { PublicPage } from '../../../components/PublicPage';

const PAGE_SIZE = 12;
const ALL = '全部';

/** /stats/cloud/apply: the image applications gallery; search, category and page live in the URL. */
export default function ApplyPage() {
  const url = useUrlState(
    (p) => p,
    (p) => p,
  );
  const params = url.value;
  const navigate = useNavigate();
  const keyword = params.get('keyword') ?? '';
  const category = params.get('category') ?? '';
  const page = Math.max(1, Number(params.get('page')) || 1);
  const query = useQuery({
    ...catalogueQueries.applications({ keyword: keyword || undefined, category: category || undefined, page, pageSize: PAGE_SIZE }),
    placeholderData: keepPreviousData,
  });

  function update(change: Record<string, string | number>) {
    const next = new URLSearchParams(url.latest());
    for (const [key, value] of Object.entries(change)) {
      if (value === '' || value === 1) next.delete(key);
      else next.set(key, String(value));
    }
    url.set(next);
  }

  const categories = query.data?.categories ?? [];
  return (
    <PublicPage
      title="镜像应用"
      intro="预装好模型与环境的应用镜像，选好 GPU（不需要 GPU 的应用选 CPU 规格）即可一键部署。"
      extra={
        <Input.Search
          key={keyword}
          allowClear
          defaultValue={keyword}
          placeholder="搜索应用名称、描述或标签"
          aria-label="搜索应用"
          style={{ width: 320 }}
          onSearch={(value) => update({ keyword: value.trim(), page: 1 })}
        />
      }
    >
      <HostNote />
      {categories.length > 0 && (
        <Segmented
          className="apply-categories"
          aria-label="应用分类"
          value={category || ALL}
          options={[ALL, ...categories]}
          onChange={(value) => update({ category: value === ALL ? '' : value, page: 1 })}
          style={{ marginBottom: 16 }}
        />
      )}
      <Gallery
        query={query}
        page={page}
        onDeploy={(app) => navigate(deployUrl(app))}
        onReset={() => url.set(new URLSearchParams())}
        onPage={(p) => update({ page: p })}
        filtered={!!(keyword || category)}
      />
    </PublicPage>
  );
}

function Gallery({
  query,
  page,
  filtered,
  onDeploy,
  onReset,
  onPage,
}: {
  query: UseQueryResult<ApplicationsPage>;
  page: number;
  filtered: boolean;
  onDeploy: (app: Application) => void;
  onReset: () => void;
  onPage: (page: number) => void;
}) {
  if (query.isPending)
    return (
      <div className="card-grid" aria-busy="true" aria-label="加载中">
        {Array.from({ length: 8 }, (_, i) => (
          <div key={i} className="app-card" style={{ padding: 16 }}>
            <Skeleton.Image active style={{ width: 238, height: 120 }} />
            <Skeleton active paragraph={{ rows: 3 }} />
          </div>
        ))}
      </div>
    );
  if (query.isError) return <LoadError error={query.error} onRetry={() => void query.refetch()} />;
  const { items, total } = query.data;
  if (items.length === 0)
    return (
      <Empty className="market-empty" description={filtered ? '没有找到相关应用，换个关键词或分类试试' : '暂无上架的镜像应用'}>
        {filtered && (
          <Button type="primary" onClick={onReset}>
            查看全部应用
          </Button>
        )}
      </Empty>
    );
  return (
    <Spin spinning={query.isPlaceholderData} description="加载中…">
      <div className="card-grid" aria-label="应用列表">
        {items.map((app) => (
          <AppCard key={app.id} app={app} onDeploy={onDeploy} />
        ))}
      </div>
      {total > PAGE_SIZE && (
        <Pagination className="market-pagination" current={page} pageSize={PAGE_SIZE} total={total} showSizeChanger={false} onChange={onPage} />
      )}
    </Spin>
  );
}

function AppCard({ app, onDeploy }: { app: Application; onDeploy: (app: Application) => void }) {
  return (
    <article className="app-card" aria-label={app.name}>
      <AppCover src={app.cover} name={app.name} />
      <div className="app-card-body">
        <div className="app-card-name">{app.name}</div>
        <Typography.Paragraph className="app-card-desc" ellipsis={{ rows: 2, tooltip: app.description }}>
          {app.description}
        </Typography.Paragraph>
        <div>
          <Tag color="purple">{app.category}</Tag>
          {app.tags.map((tag) => (
            <Tag key={tag}>{tag}</Tag>
          ))}
        </div>
        <div className="app-card-meta">
          <span>{isCpuApplication(app) ? '无需 GPU' : `显存 ≥ ${app.minGpuMemoryGb} GB`}</span>
          <span>默认端口 {app.defaultPort}</span>
        </div>
        {app.sizes && <CpuSizes app={app} sizes={app.sizes} />}
        {app.unavailable && <Typography.Text type="secondary">{app.unavailable}</Typography.Text>}
        <Button type="primary" block disabled={!!app.unavailable} onClick={() => onDeploy(app)}>
          {app.unavailable ? '本主机不销售' : '立即部署'}
        </Button>
      </div>
    </article>
  );
}

/** The configurator for an application: on a GPU, or (one that needs no card) on a CPU size. */
function deployUrl(app: Application): string {
  const query = new URLSearchParams({ applicationId: app.id });
  if (isCpuApplication(app)) query.set('category', 'Generic');
  return `${PAGE.purchase}?${query.toString()}`;
}

/** The CPU sizes an application that needs no card is sold on, at their hourly price (what it costs: the size's price). */
function CpuSizes({ app, sizes }: { app: Application; sizes: Size[] }) {
  const onSale = sizes.filter((s) => !s.unavailable);
  if (onSale.length === 0) return null;
  return (
    <ul className="app-card-sizes" aria-label={`${app.name} 可选 CPU 规格`} style={{ listStyle: 'none', margin: 0, padding: 0, fontSize: 12 }}>
      {onSale.map((s) => (
        <li key={s.id} style={{ display: 'flex', justifyContent: 'space-between', gap: 8 }}>
          <span>
            CPU {s.cpu} 核 · {s.memoryGb} GB
          </span>
          <Price units={s.price.price} per={BillingCycleUnit[s.price.cycle]} size="sm" />
        </li>
      ))}
    </ul>
  );
}
