/** 我的算力: the account's GPU 时长包, the LoRA jobs and image tasks running now, and its compute instances. */
import { useState, type ReactNode } from 'react';
import { Alert, Button, Card, Empty, Flex, Progress, Table, Tag, Typography, type TableColumnsType } from 'antd';
import { ReloadOutlined } from '@ant-design/icons';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import {
  DIFFUSION_STATUS_LABELS,
  PAGE,
  RESOURCE_USAGE_KINDS,
  formatBeijing,
  type DiffusionStatus,
  type DiffusionTask,
  type Instance,
  type LoraJob,
  type ResourcePackage,
} from '@console/contract';
import { computeQueries } from '../api/compute';
import { detailPathOf, InstanceStatusTags, instanceQueries } from '../../instances';
import { orderQueries } from '../../../api/orders';
import { isAllowed, PERMS } from '../../../auth/permissions';
import { LoadError } from '../../../components/LoadError';
import { PackageStateTag, packageQuantity, remainPercent } from '../../../components/resourceViews';
import { useSession } from '../../../session/useSession';
import { epochText, JobProgress, LoraStatusTag } from '../../training';
import { computeDetailPath, trainJobPath, useGpuNames } from './computeViews';

/** While something runs, the running work is asked for again this often. */
const WORK_POLL_MS = 5_000;
const INSTANCE_PAGE_SIZE = 10;

export function ComputeMine({ toShop }: { toShop: () => void }) {
  return (
    <Flex vertical gap={16}>
      <MyPackages toShop={toShop} />
      <RunningWork />
      <ComputeInstances />
    </Flex>
  );
}

function MyPackages({ toShop }: { toShop: () => void }) {
  const packages = useQuery(orderQueries.packages());
  const gpu = useGpuNames();
  const items = packages.data?.items.filter((p) => p.gpuTypeId) ?? [];
  const columns: TableColumnsType<ResourcePackage> = [
    { title: '名称', dataIndex: 'name', render: (n: string) => <Typography.Text strong>{n}</Typography.Text> },
    { title: 'GPU', dataIndex: 'gpuTypeId', width: 140, render: (id: string) => gpu.name(id) },
    {
      title: '剩余 / 总量',
      key: 'remain',
      width: 240,
      render: (_, r) => {
        const percent = remainPercent(r.remain, r.total);
        return (
          <Flex vertical gap={0}>
            <span>
              <span title={`剩余 ${r.remain} 小时`}>{packageQuantity(r.remain, r)}</span>
              <Typography.Text type="secondary"> / {packageQuantity(r.total, r)}</Typography.Text>
            </span>
            <Progress percent={percent} size="small" status="normal" format={(p) => `${p}%`} aria-label={`剩余 ${percent}%`} />
          </Flex>
        );
      },
    },
    {
      title: '到期时间（北京时间）',
      dataIndex: 'expiresAt',
      width: 230,
      render: (v: string, r) => (
        <Flex gap={6} align="center" wrap>
          {formatBeijing(v)}
          <PackageStateTag pkg={r} />
        </Flex>
      ),
    },
    {
      title: '操作',
      key: 'actions',
      width: 90,
      render: (_, r) => (
        <Link to={computeDetailPath(r.id)} aria-label={`详情 ${r.name}`}>
          详情
        </Link>
      ),
    },
  ];
  return (
    <Card
      title="我的时长包"
      extra={
        <Link to={PAGE.resource}>
          <Button type="link" size="small">
            全部资源包
          </Button>
        </Link>
      }
    >
      {packages.isError ? (
        <LoadError error={packages.error} onRetry={() => void packages.refetch()} />
      ) : (
        <Table<ResourcePackage>
          rowKey="id"
          loading={packages.isPending}
          dataSource={items}
          columns={columns}
          pagination={items.length > 10 ? { pageSize: 10, showTotal: (t) => `共 ${t} 个` } : false}
          scroll={{ x: 800 }}
          locale={{
            emptyText: (
              <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="还没有 GPU 时长包：LoRA 训练、AI 绘图和按量计费实例都可先用时长包抵扣">
                <Button type="primary" onClick={toShop}>
                  去算力商城
                </Button>
              </Empty>
            ),
          }}
        />
      )}
    </Card>
  );
}

/** One running LoRA job or image task, as the table shows them side by side. */
interface Work {
  key: string;
  kind: 'train' | 'gen';
  title: ReactNode;
  status: ReactNode;
  progress: ReactNode;
  createdAt: string;
}

const GEN_STATUS_COLOR: Record<DiffusionStatus, string> = {
  queued: 'default',
  running: 'processing',
  done: 'success',
  failed: 'error',
  cancelled: 'warning',
};

function jobWork(j: LoraJob): Work {
  return {
    key: `train:${j.id}`,
    kind: 'train',
    title: <Link to={trainJobPath(j.id)}>{j.name}</Link>,
    status: <LoraStatusTag status={j.status} />,
    progress: (
      <Flex vertical>
        <JobProgress job={j} />
        <Typography.Text type="secondary" style={{ fontSize: 12 }}>
          {epochText(j)}
        </Typography.Text>
      </Flex>
    ),
    createdAt: j.createdAt,
  };
}

function taskWork(t: DiffusionTask): Work {
  const current = t.steps > 0 && t.done < t.batchCount ? t.step / t.steps : 0;
  const percent = t.batchCount > 0 ? Math.floor(((t.done + current) / t.batchCount) * 100) : 0;
  return {
    key: `gen:${t.id}`,
    kind: 'gen',
    title: (
      <Link to={PAGE.sdDiffusion} title={t.prompt}>
        <Typography.Text ellipsis style={{ maxWidth: 260, color: 'inherit' }}>
          {t.prompt}
        </Typography.Text>
      </Link>
    ),
    status: (
      <Tag color={GEN_STATUS_COLOR[t.status]} style={{ marginInlineEnd: 0 }}>
        {DIFFUSION_STATUS_LABELS[t.status]}
      </Tag>
    ),
    progress: (
      <Flex vertical>
        <Progress percent={percent} size="small" status={t.status === 'running' ? 'active' : 'normal'} aria-label="生成进度" />
        <Typography.Text type="secondary" style={{ fontSize: 12 }}>
          已生成 {t.done}/{t.batchCount} 张{t.packageImages > 0 ? ` · 时长包支付 ${t.packageImages} 张` : ''}
        </Typography.Text>
      </Flex>
    ),
    createdAt: t.createdAt,
  };
}

const WORK_COLUMNS: TableColumnsType<Work> = [
  { title: '类型', dataIndex: 'kind', width: 100, render: (k: Work['kind']) => <Tag style={{ marginInlineEnd: 0 }}>{RESOURCE_USAGE_KINDS[k]}</Tag> },
  { title: '任务', dataIndex: 'title', width: 280 },
  { title: '状态', dataIndex: 'status', width: 90 },
  { title: '进度', dataIndex: 'progress', width: 220 },
  { title: '创建时间（北京时间）', dataIndex: 'createdAt', width: 170, render: (v: string) => formatBeijing(v) },
];

/** Poll while there is something running, and not after a failed refresh (the user retries). */
const pollWhileRunning = (q: { state: { status: string; data?: { items: unknown[] } } }) =>
  q.state.status !== 'error' && (q.state.data?.items.length ?? 0) > 0 ? WORK_POLL_MS : false;

/** LoRA jobs and image tasks still queued or running: what the account's RTX 4090 时长包 and cash are spent on now. */
function RunningWork() {
  const { user } = useSession();
  const allowed = isAllowed(user, PERMS.sd);
  const jobs = useQuery({
    ...computeQueries.activeJobs(),
    enabled: allowed,
    refetchInterval: pollWhileRunning,
  });
  const tasks = useQuery({
    ...computeQueries.activeTasks(),
    enabled: allowed,
    refetchInterval: pollWhileRunning,
  });
  const rows = [...(jobs.data?.items.map(jobWork) ?? []), ...(tasks.data?.items.map(taskWork) ?? [])].sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  const failed = [jobs, tasks].filter((q) => q.isError);
  return (
    <Card
      title="进行中的任务"
      extra={
        allowed && (
          <Button
            icon={<ReloadOutlined />}
            aria-label="刷新"
            loading={(jobs.isFetching && !jobs.isPending) || (tasks.isFetching && !tasks.isPending)}
            onClick={() => {
              void jobs.refetch();
              void tasks.refetch();
            }}
          />
        )
      }
    >
      {!allowed ? (
        <Typography.Text type="secondary">当前子账号没有 GPU 权限，看不到 LoRA 训练与 AI 绘图任务；如需开通请联系主账号。</Typography.Text>
      ) : (
        <Flex vertical gap={12}>
          {failed.map((q) => (
            <Alert
              key={q === jobs ? 'jobs' : 'tasks'}
              type="warning"
              showIcon
              title={`${q === jobs ? 'LoRA 训练' : 'AI 绘图'}任务加载失败：${q.error?.message ?? ''}`}
              action={
                <Button size="small" onClick={() => void q.refetch()}>
                  重试
                </Button>
              }
            />
          ))}
          <Table<Work>
            rowKey="key"
            loading={(jobs.isPending && !jobs.isError) || (tasks.isPending && !tasks.isError)}
            dataSource={rows}
            columns={WORK_COLUMNS}
            pagination={false}
            scroll={{ x: 860 }}
            locale={{
              emptyText: (
                <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="没有进行中的 LoRA 训练或 AI 绘图任务">
                  <Flex gap={8} justify="center">
                    <Link to={PAGE.sdTrain}>
                      <Button>训练 LoRA</Button>
                    </Link>
                    <Link to={PAGE.sdDiffusion}>
                      <Button type="primary">立即生图</Button>
                    </Link>
                  </Flex>
                </Empty>
              ),
            }}
          />
        </Flex>
      )}
    </Card>
  );
}

/** The AI drawing applications the compute center deploys (its 独占模式). */
const AI_APPS = ['comfyui', 'sd-webui'] as const;

/**
 * 我的算力实例 (spec §2: Computer → /compute/center): the ComfyUI and SD WebUI instances the
 * account deployed from the shop's exclusive mode, with the way into each running one.
 */
function ComputeInstances() {
  const [page, setPage] = useState(1);
  const filter = { applications: AI_APPS };
  const list = useQuery(instanceQueries.list(filter, page, INSTANCE_PAGE_SIZE));
  const columns: TableColumnsType<Instance> = [
    {
      title: '实例',
      key: 'name',
      render: (_, i) => (
        <Flex vertical>
          <Link to={detailPathOf(i)}>{i.name}</Link>
          <Typography.Text type="secondary" style={{ fontSize: 12 }}>
            {i.applicationName} · {i.gpuName ? `${i.gpuName} × ${i.gpuCount}` : i.spec}
          </Typography.Text>
        </Flex>
      ),
    },
    { title: '状态', key: 'status', width: 120, render: (_, i) => <InstanceStatusTags instance={i} /> },
    {
      title: '操作',
      key: 'open',
      width: 200,
      render: (_, i) =>
        i.status === 'Running' && i.access?.appUrl ? (
          <a href={i.access.appUrl} target="_blank" rel="noreferrer">
            打开 {i.applicationName}
          </a>
        ) : (
          <Typography.Text type="secondary">{i.status === 'Running' ? '应用启动中' : '开机后可打开应用'}</Typography.Text>
        ),
    },
  ];
  return (
    <Card title="我的算力实例">
      {list.isError ? (
        <LoadError error={list.error} onRetry={() => void list.refetch()} />
      ) : (
        <Table<Instance>
          rowKey="id"
          size="small"
          loading={list.isPending}
          columns={columns}
          dataSource={list.data?.items}
          pagination={{ current: page, pageSize: INSTANCE_PAGE_SIZE, total: list.data?.total, onChange: setPage, hideOnSinglePage: true }}
          locale={{ emptyText: <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="还没有 ComfyUI / SD WebUI 实例：在算力商城的独占模式中部署" /> }}
        />
      )}
    </Card>
  );
}
