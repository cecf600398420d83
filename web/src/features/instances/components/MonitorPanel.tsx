/**
 * 实例监控 on the 概览 tab (AutoPanel): the instance's CPU, memory, GPU, disk and network over 1 小时 /
 * 24 小时 / 7 天, and its GPU 空闲自动关机 setting. The charts (and ECharts with them) load only here.
 */
import { lazy, Suspense, useState } from 'react';
import { Alert, Button, Empty, Flex, Segmented, Select, Skeleton, Space, Tag, Tooltip, Typography } from 'antd';
import { useMutation, useQuery, useQueryClient, type UseQueryResult } from '@tanstack/react-query';
import {
  formatBeijing,
  IDLE_STOP_HOURS,
  IDLE_STOP_NOTICE_MINUTES,
  METRIC_RANGES,
  MetricRangeLabel,
  type IdleStop,
  type Instance,
  type InstanceMetrics,
  type MetricRange,
} from '@console/contract';
import { MONITOR_KEYS, monitorApi, monitorQueries } from '../api/monitoring';

const MonitorCharts = lazy(() => import('./MonitorCharts'));

export const SIMULATED_TITLE = '模拟数据：实例运行在模拟集群上，以下曲线由模拟器生成，并非真实机器的数据。';
const SIMULATED_HOW =
  '运营方把控制台部署在一台 Linux 主机上并设置 COMPUTE_DRIVER=local（或 auto：本机沙箱可用时自动启用），实例即运行在本机沙箱中，' +
  '监控数据来自实例的 cgroup（CPU、内存）、网络命名空间、磁盘和 nvidia-smi（GPU），详见 README。';

export function MonitorPanel({ instance: i }: { instance: Instance }) {
  const [range, setRange] = useState<MetricRange>('1h');
  const metrics = useQuery(monitorQueries.metrics(i.id, range));
  return (
    <Flex vertical gap={12} data-testid="instance-monitor">
      <Flex justify="space-between" align="center" wrap gap={8}>
        <Space size={8}>
          <Typography.Title level={5} style={{ margin: 0 }}>
            实例监控
          </Typography.Title>
          {metrics.data?.simulated && (
            <Tooltip title={SIMULATED_HOW}>
              <Tag color="orange">模拟</Tag>
            </Tooltip>
          )}
        </Space>
        <Segmented
          aria-label="监控时间范围"
          value={range}
          onChange={(v) => setRange(v as MetricRange)}
          options={METRIC_RANGES.map((r) => ({ value: r, label: MetricRangeLabel[r] }))}
        />
      </Flex>
      {metrics.data?.simulated && <Alert type="info" showIcon title={SIMULATED_TITLE} description={SIMULATED_HOW} />}
      {i.gpuCount > 0 && <IdleStopSetting instance={i} />}
      <MonitorBody query={metrics} instance={i} />
    </Flex>
  );
}

function MonitorBody({ query, instance: i }: { query: UseQueryResult<InstanceMetrics>; instance: Instance }) {
  if (query.isPending) return <Skeleton active paragraph={{ rows: 6 }} />;
  if (query.isError)
    return (
      <Alert
        type="error"
        showIcon
        title="监控数据加载失败"
        description={query.error instanceof Error ? query.error.message : '请稍后重试'}
        action={
          <Button size="small" onClick={() => void query.refetch()}>
            重试
          </Button>
        }
      />
    );
  const m = query.data;
  if (!m.points.length) {
    const why = i.status === 'Running' ? '实例开机后每 15 秒采集一次，稍等片刻即可看到数据' : '实例运行时每 15 秒采集一次，开机后即可看到数据';
    return <Empty description={`该时间范围内暂无监控数据：${why}`} />;
  }
  return (
    <>
      {m.gpuUnavailable && <Alert type="warning" showIcon title={m.gpuUnavailable} />}
      <Suspense fallback={<Skeleton active paragraph={{ rows: 6 }} />}>
        <MonitorCharts metrics={m} />
      </Suspense>
    </>
  );
}

const OFF = 0;

/** GPU 空闲 N 小时后自动关机: the setting, and while the cards are idle, when it will act. */
function IdleStopSetting({ instance: i }: { instance: Instance }) {
  const queryClient = useQueryClient();
  const query = monitorQueries.idleStop(i.id);
  const idle = useQuery(query);
  const save = useMutation({
    mutationFn: (hours: number) => monitorApi.setIdleStop(i.id, { hours: hours === OFF ? null : hours }),
    onSuccess: (data: IdleStop) => queryClient.setQueryData(MONITOR_KEYS.idleStop(i.id), data),
  });
  if (idle.isPending) return <Skeleton.Input active size="small" />;
  if (idle.isError) return null;
  const s = idle.data;
  return (
    <Flex vertical gap={4}>
      <Space size={8} wrap>
        <Typography.Text>GPU 空闲自动关机</Typography.Text>
        <Select
          aria-label="GPU 空闲自动关机"
          style={{ width: 200 }}
          value={s.hours ?? OFF}
          loading={save.isPending}
          disabled={save.isPending}
          onChange={(h: number) => save.mutate(h)}
          options={[{ value: OFF, label: '关闭' }, ...IDLE_STOP_HOURS.map((h) => ({ value: h, label: `GPU 空闲 ${h} 小时后关机` }))]}
        />
        <Typography.Text type="secondary">
          所有 GPU 使用率持续低于 {s.thresholdPercent}% 即为空闲；关机前 {IDLE_STOP_NOTICE_MINUTES} 分钟发送站内信，数据盘数据保留
        </Typography.Text>
      </Space>
      {s.hours !== null && s.stopAt && (
        <Alert type="warning" showIcon title={`GPU 自 ${formatBeijing(s.idleSince!)} 起空闲，如持续空闲将于 ${formatBeijing(s.stopAt)} 自动关机`} />
      )}
    </Flex>
  );
}
