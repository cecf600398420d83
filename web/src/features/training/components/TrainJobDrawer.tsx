/** A job's detail: progress, loss curve, log, each epoch's sample and LoRA file, and its money. Live while it runs. */
import { useEffect, useMemo, useRef } from 'react';
import { Alert, Button, Card, Descriptions, Drawer, Empty, Flex, Image, Statistic, Typography, theme } from 'antd';
import { DownloadOutlined } from '@ant-design/icons';
import type { ComposeOption } from 'echarts/core';
import type { LineSeriesOption } from 'echarts/charts';
import type { GridComponentOption, TooltipComponentOption } from 'echarts/components';
import { formatBeijing, formatYuan, isLoraJobActive, LORA_PARAM_HINTS, type LoraJob, type LoraParams } from '@console/contract';
import { trainApi, useLoraJobLive } from '../api/training';
import { formatBytes } from '../../../components/format';
import { LoadError } from '../../../components/LoadError';
import { PageLoading } from '../../../components/PageLoading';
import { SimulatedMark } from '../../../components/Simulated';
import { StatsChart } from '../../model';
import { useJobActions } from './TrainJobs';
import { PARAM_LABELS } from './TrainParamFields';
import { baseModelName, epochText, formatDuration, formatEstimate, JobProgress, LoraStatusTag } from './trainViews';

type LossOption = ComposeOption<LineSeriesOption | GridComponentOption | TooltipComponentOption>;

/** The loss per step as a line in the theme's colour; x is the step (the server thins long curves, so not every step is there). */
export function useLossOption(loss: LoraJob['loss']): LossOption {
  const { colorPrimary } = theme.useToken().token;
  return useMemo(
    () => ({
      color: [colorPrimary],
      tooltip: { trigger: 'axis', valueFormatter: (v) => (typeof v === 'number' ? v.toFixed(4) : String(v)) },
      grid: { left: 8, right: 16, top: 24, bottom: 8, outerBoundsMode: 'same', outerBoundsContain: 'all' },
      xAxis: { type: 'value', name: '步', min: 0, minInterval: 1 },
      yAxis: { type: 'value', name: 'loss', scale: true },
      series: [{ name: 'loss', type: 'line', showSymbol: false, data: loss, animation: false }],
    }),
    [loss, colorPrimary],
  );
}

function LossChart({ loss }: { loss: LoraJob['loss'] }) {
  const option = useLossOption(loss);
  if (loss.length === 0) return <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="开始训练后显示损失曲线" />;
  return <StatsChart option={option} label="损失曲线" height={240} />;
}

/** The trainer's last lines, following new ones unless the reader scrolled up to read. */
function LogView({ lines }: { lines: string[] }) {
  const box = useRef<HTMLPreElement>(null);
  const following = useRef(true);
  useEffect(() => {
    const el = box.current;
    if (el && following.current) el.scrollTop = el.scrollHeight;
  }, [lines]);
  const onScroll = () => {
    const el = box.current;
    if (el) following.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
  };
  if (lines.length === 0) return <Typography.Text type="secondary">暂无日志</Typography.Text>;
  return (
    <pre ref={box} onScroll={onScroll} className="mono" data-testid="train-log" style={{ maxHeight: 240, overflow: 'auto', margin: 0, whiteSpace: 'pre-wrap' }}>
      {lines.join('\n')}
    </pre>
  );
}

function Progress({ job }: { job: LoraJob }) {
  const active = isLoraJobActive(job.status);
  return (
    <Flex vertical gap={8}>
      <JobProgress job={job} size="medium" />
      <Flex gap={32} wrap>
        <Statistic title="步数" value={`${job.step}/${job.steps.total}`} />
        <Statistic title="轮次" value={epochText(job)} />
        <Statistic
          title={active ? '预计剩余' : '预计总时长'}
          value={active ? (job.etaSeconds === null ? '计算中' : formatDuration(job.etaSeconds)) : formatEstimate(job.estimateSeconds)}
        />
      </Flex>
    </Flex>
  );
}

function Money({ job }: { job: LoraJob }) {
  return (
    <Flex gap={32} wrap>
      <Statistic title="预扣" value={formatYuan(job.held, { symbol: true })} />
      <Statistic title="已结算" value={formatYuan(job.charged, { symbol: true })} />
      <Statistic title="已退回" value={formatYuan(job.refunded, { symbol: true })} />
      {job.packageSeconds > 0 && (
        <Statistic title="时长包已用 / 预留" value={`${formatDuration(job.packageUsedSeconds)} / ${formatDuration(job.packageSeconds)}`} />
      )}
    </Flex>
  );
}

/** One saved epoch: its sample image and its LoRA file. */
function EpochCard({ job, epoch: e }: { job: LoraJob; epoch: LoraJob['epochs'][number] }) {
  return (
    <Card size="small" data-testid="train-epoch">
      <Flex vertical gap={6}>
        {e.samples > 0 ? (
          <SimulatedMark service="training">
            <Image src={trainApi.sampleUrl(job.id, e.epoch)} alt={`第 ${e.epoch} 轮样图`} height={140} style={{ objectFit: 'cover' }} />
          </SimulatedMark>
        ) : (
          <Typography.Text type="secondary">无样图</Typography.Text>
        )}
        <Typography.Text strong>第 {e.epoch} 轮</Typography.Text>
        <Typography.Text type="secondary" style={{ fontSize: 12 }}>
          {formatBytes(e.bytes)} · {formatBeijing(e.createdAt)}
        </Typography.Text>
        <Button
          size="small"
          block
          icon={<DownloadOutlined />}
          href={trainApi.loraUrl(job.id, e.epoch)}
          download={`${job.name}-${String(e.epoch).padStart(6, '0')}.safetensors`}
          aria-label={`下载第 ${e.epoch} 轮 .safetensors（${formatBytes(e.bytes)}）`}
        >
          下载 .safetensors
        </Button>
      </Flex>
    </Card>
  );
}

/** Each saved epoch, the newest first. */
function Epochs({ job }: { job: LoraJob }) {
  if (job.epochs.length === 0) return <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="每轮结束后在这里保存模型和样图" />;
  return (
    <div style={{ display: 'grid', gridTemplateColumns: 'repeat(auto-fill, minmax(200px, 1fr))', gap: 12 }}>
      {[...job.epochs]
        .sort((a, b) => b.epoch - a.epoch)
        .map((e) => (
          <EpochCard key={e.epoch} job={job} epoch={e} />
        ))}
    </div>
  );
}

function Params({ params }: { params: LoraParams }) {
  const text = (v: LoraParams[keyof LoraParams]) => (typeof v === 'boolean' ? (v ? '是' : '否') : String(v));
  return (
    <Descriptions column={{ xs: 1, md: 2 }} size="small">
      {(Object.keys(PARAM_LABELS) as (keyof LoraParams)[]).map((k) => (
        <Descriptions.Item key={k} label={<span title={LORA_PARAM_HINTS[k]}>{PARAM_LABELS[k]}</span>}>
          {text(params[k])}
        </Descriptions.Item>
      ))}
    </Descriptions>
  );
}

function JobDetail({ job }: { job: LoraJob }) {
  return (
    <Flex vertical gap={16}>
      {job.status === 'failed' && <Alert type="error" showIcon title="训练失败，预扣金额已全部退回" description={job.error ?? '未知原因'} />}
      {job.status === 'cancelled' && <Alert type="warning" showIcon title="任务已取消" description="已完成轮次照常结算，其余预扣金额已退回。" />}
      <Descriptions column={{ xs: 1, md: 2 }} size="small">
        <Descriptions.Item label="状态">
          <LoraStatusTag status={job.status} />
        </Descriptions.Item>
        <Descriptions.Item label="数据集">
          {job.datasetName}（{job.images} 张）
        </Descriptions.Item>
        <Descriptions.Item label="底模">{baseModelName(job.baseModel)}</Descriptions.Item>
        <Descriptions.Item label="触发词">{job.triggerWord ? <Typography.Text code>{job.triggerWord}</Typography.Text> : '未设置'}</Descriptions.Item>
        <Descriptions.Item label="创建时间">{formatBeijing(job.createdAt)}</Descriptions.Item>
        <Descriptions.Item label="结束时间">{job.finishedAt ? formatBeijing(job.finishedAt) : '--'}</Descriptions.Item>
      </Descriptions>
      <Card size="small" title="进度">
        <Progress job={job} />
      </Card>
      <Card size="small" title="费用">
        <Money job={job} />
      </Card>
      <Card size="small" title="损失曲线">
        <LossChart loss={job.loss} />
      </Card>
      <Card size="small" title="模型与样图">
        <Epochs job={job} />
      </Card>
      <Card size="small" title="训练日志">
        <LogView lines={job.log} />
      </Card>
      <Card size="small" title="训练参数">
        <Params params={job.params} />
      </Card>
    </Flex>
  );
}

function DrawerActions({ job, onClose }: { job: LoraJob; onClose: () => void }) {
  const actions = useJobActions(onClose);
  return isLoraJobActive(job.status) ? (
    <Button danger onClick={() => actions.confirmCancel(job)}>
      取消训练
    </Button>
  ) : (
    <Button danger onClick={() => actions.confirmDelete(job)}>
      删除任务
    </Button>
  );
}

/** The drawer of the job in the URL (?job=): a reload opens it again. */
export function TrainJobDrawer({ id, onClose }: { id: string | null; onClose: () => void }) {
  const job = useLoraJobLive(id);
  return (
    <Drawer
      title={job.data ? `训练任务 · ${job.data.name}` : '训练任务'}
      open={id !== null}
      onClose={onClose}
      size={760}
      destroyOnHidden
      extra={job.data && <DrawerActions job={job.data} onClose={onClose} />}
    >
      {job.isError ? <LoadError error={job.error} onRetry={() => void job.refetch()} /> : job.data ? <JobDetail job={job.data} /> : <PageLoading />}
    </Drawer>
  );
}
