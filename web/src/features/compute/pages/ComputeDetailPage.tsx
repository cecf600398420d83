import { Button, Card, Descriptions, Flex, Progress, Result, Skeleton, Typography, type TableColumnsType } from 'antd';
import { ArrowLeftOutlined } from '@ant-design/icons';
import { useQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { DIFFUSION_GPU, PAGE, RESOURCE_USAGE_KINDS, formatBeijing, type ResourcePackage, type ResourceUsage } from '@console/contract';
import { isApiError } from '../../../api/errors';
import { ORDER_KEYS, ordersApi, orderQueries } from '../../../api/orders';
import { LoadError } from '../../../components/LoadError';
import { PagedTable, RefreshButton, usePagedQuery } from '../../../components/PagedTable';
import { PageFrame } from '../../../components/PageFrame';
import { formatQuantity, orderDetailPath } from '../../../components/orderViews';
import { PackageStateTag, packageQuantity, remainPercent } from '../../../components/resourceViews';
import { useUrlPaging } from '../../../routing/useUrlPaging';
import { computeTabPath, instancePath, trainJobPath, trimDecimal, useGpuNames } from '../components/computeViews';

/** Someone else's package (40450008), or an id that is not a package id at all (400): both "not found". */
const isNotFound = (e: unknown) => isApiError(e) && (e.status === 404 || e.status === 400);

function BackToMine({ primary = false }: { primary?: boolean }) {
  return (
    <Link to={computeTabPath('mine')}>
      <Button type={primary ? 'primary' : 'default'} icon={primary ? undefined : <ArrowLeftOutlined />}>
        返回我的算力
      </Button>
    </Link>
  );
}

/** /compute/detail?id=<packageId> — one 时长包: what it is, what is left, and what it paid for. */
export default function ComputeDetailPage() {
  const [params] = useSearchParams();
  const id = params.get('id')?.trim() ?? '';
  return (
    <PageFrame extra={<BackToMine />}>
      {id ? (
        <PackageDetail id={id} />
      ) : (
        <Card>
          <Result status="warning" title="未指定资源包" subTitle="链接里缺少资源包 ID，请在「我的算力」中选择要查看的时长包。" extra={<BackToMine primary />} />
        </Card>
      )}
    </PageFrame>
  );
}

function PackageDetail({ id }: { id: string }) {
  // There is no single-package endpoint: the account's list has it (and is cached from 我的算力).
  const packages = useQuery(orderQueries.packages());
  const { paging, set } = useUrlPaging();
  const usages = usePagedQuery({
    queryKey: ORDER_KEYS.packageUsages(id, paging.page, paging.pageSize),
    queryFn: (signal) => ordersApi.resourcePackageUsages(id, paging, signal),
  });
  const pkg = packages.data?.items.find((p) => p.id === id);

  if ((packages.data && !pkg) || (usages.isError && isNotFound(usages.error)))
    return (
      <Card>
        <Result status="404" title="资源包不存在" subTitle={`没有找到资源包 ${id}，它可能不属于当前账号。`} extra={<BackToMine primary />} />
      </Card>
    );
  if (packages.isError)
    return (
      <Card>
        <LoadError error={packages.error} onRetry={() => void packages.refetch()} />
      </Card>
    );
  if (!pkg)
    return (
      <Card>
        <Skeleton active paragraph={{ rows: 6 }} />
      </Card>
    );
  return (
    <Flex vertical gap={16}>
      <PackageFacts pkg={pkg} />
      <Card title="抵扣明细" extra={<RefreshButton list={usages} />}>
        <PagedTable<ResourceUsage>
          rowKey={(u) => `${u.kind}:${u.ref}:${u.createdAt}`}
          columns={usageColumns(pkg)}
          scroll={{ x: 760 }}
          list={usages}
          paging={paging}
          onPage={set}
          empty="这个资源包还没有抵扣记录"
        />
      </Card>
    </Flex>
  );
}

/** What the package pays for, as its card type decides. */
function coverText(pkg: ResourcePackage, gpuName: string): string {
  if (!pkg.gpuTypeId) return '大模型调用（按 Token 抵扣）';
  if (pkg.gpuTypeId === DIFFUSION_GPU) return `LoRA 训练、AI 绘图、按量计费的 ${gpuName} 实例`;
  return `按量计费的 ${gpuName} 实例`;
}

function PackageFacts({ pkg }: { pkg: ResourcePackage }) {
  const gpu = useGpuNames();
  const gpuName = pkg.gpuTypeId ? gpu.name(pkg.gpuTypeId) : null;
  const percent = remainPercent(pkg.remain, pkg.total);
  return (
    <Card title={pkg.name}>
      <Descriptions bordered size="small" column={{ xs: 1, md: 2 }}>
        <Descriptions.Item label="名称">{pkg.name}</Descriptions.Item>
        <Descriptions.Item label="GPU">{gpuName ?? '—'}</Descriptions.Item>
        <Descriptions.Item label="总量">{packageQuantity(pkg.total, pkg)}</Descriptions.Item>
        <Descriptions.Item label="剩余">
          <Flex vertical gap={0} style={{ maxWidth: 280 }}>
            <span title={pkg.gpuTypeId ? `剩余 ${pkg.remain} 小时` : undefined}>{packageQuantity(pkg.remain, pkg)}</span>
            <Progress percent={percent} size="small" status="normal" format={(p) => `${p}%`} aria-label={`剩余 ${percent}%`} />
          </Flex>
        </Descriptions.Item>
        <Descriptions.Item label="购买时间">{formatBeijing(pkg.createdAt, 'second')}</Descriptions.Item>
        <Descriptions.Item label="到期时间">
          <Flex gap={6} align="center" wrap>
            {formatBeijing(pkg.expiresAt, 'second')}
            <PackageStateTag pkg={pkg} />
          </Flex>
        </Descriptions.Item>
        <Descriptions.Item label="抵扣范围">{coverText(pkg, gpuName ?? '')}</Descriptions.Item>
        <Descriptions.Item label="订单号">
          <Link to={orderDetailPath({ kind: 'Ai', orderUid: pkg.orderUid })} className="mono">
            {pkg.orderUid}
          </Link>
        </Descriptions.Item>
      </Descriptions>
      <Typography.Text type="secondary" style={{ display: 'block', marginTop: 12, fontSize: 12 }}>
        时间均为北京时间；同型号的多个时长包先到期的先用，用完再扣余额。
      </Typography.Text>
    </Card>
  );
}

/** An amount in the package's unit: card hours to the 0.0001 h the server keeps, tokens in 万 / 亿. */
function usageAmount(amount: string, pkg: ResourcePackage): string {
  if (!pkg.gpuTypeId && /^\d+$/.test(amount)) return formatQuantity(amount, pkg.unit);
  return `${trimDecimal(amount)} ${pkg.unit}`;
}

/** What a usage paid for, with a way to it where the console has a page for it. */
function UsageRef({ usage: u }: { usage: ResourceUsage }) {
  const id = (
    <Typography.Text type="secondary" className="mono" style={{ fontSize: 12 }} copyable={{ text: u.ref, tooltips: ['复制 ID', '已复制'] }}>
      {u.ref}
    </Typography.Text>
  );
  const link = (to: string, text: string) => (
    <Flex vertical gap={0} align="start">
      <Link to={to}>{text}</Link>
      {id}
    </Flex>
  );
  switch (u.kind) {
    case 'train':
      return link(trainJobPath(u.ref), '查看训练任务');
    case 'gen':
      return link(PAGE.sdDiffusion, '查看 AI 绘图');
    case 'instance':
      return link(instancePath(u.ref), '查看实例');
    default:
      return id;
  }
}

function usageColumns(pkg: ResourcePackage): TableColumnsType<ResourceUsage> {
  return [
    { title: '时间（北京时间）', dataIndex: 'createdAt', width: 180, render: (v: string) => formatBeijing(v, 'second') },
    { title: '类型', dataIndex: 'kind', width: 120, render: (k: ResourceUsage['kind']) => RESOURCE_USAGE_KINDS[k] },
    { title: '内容', key: 'ref', render: (_, u) => <UsageRef usage={u} /> },
    {
      title: '抵扣量',
      dataIndex: 'amount',
      width: 150,
      align: 'right',
      render: (v: string) => <span className="amount-cell">{usageAmount(v, pkg)}</span>,
    },
  ];
}
