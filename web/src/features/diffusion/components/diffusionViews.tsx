/** Small pieces the generation page shows in the queue and the gallery alike. */
import type { ReactNode } from 'react';
import { Flex, Image, Progress, Tag, Typography } from 'antd';
import { DIFFUSION_STATUS_LABELS, formatYuan, type DiffusionImage, type DiffusionStatus, type DiffusionTask } from '@console/contract';
import { diffusionApi } from '../api/diffusion';
import { SimulatedMark } from '../../../components/Simulated';

/** antd's status colours: a running task in the theme's own colour ('processing'), never a fixed one. */
const STATUS_COLOR: Record<DiffusionStatus, string> = {
  queued: 'default',
  running: 'processing',
  done: 'success',
  failed: 'error',
  cancelled: 'warning',
};

/** What a cancel of the task does with its money, for the confirmation (a generation or a workflow run). */
export function cancelOutcome(task: Pick<DiffusionTask, 'done' | 'batchCount' | 'held' | 'packageImages'>): string {
  return task.done > 0
    ? `已生成的 ${task.done} 张照常结算并保留在画廊中；其余 ${task.batchCount - task.done} 张的预扣金额退回现金余额（时长包支付的退回时长包）。`
    : `还没有生成图片，预扣的 ¥${formatYuan(task.held)} 将全部退回现金余额${task.packageImages > 0 ? '，时长包的时长也全部退回' : ''}。`;
}

export const isTaskActive = (status: DiffusionStatus) => status === 'queued' || status === 'running';

export function TaskStatusTag({ status }: { status: DiffusionStatus }) {
  return (
    <Tag color={STATUS_COLOR[status]} style={{ marginInlineEnd: 0 }}>
      {DIFFUSION_STATUS_LABELS[status]}
    </Tag>
  );
}

/** Where a running task is: the image being made and its sampling step. */
export function taskProgressText(task: Pick<DiffusionTask, 'status' | 'done' | 'batchCount' | 'step' | 'steps'>): string {
  if (task.status === 'queued') return `排队中，等待 GPU · 共 ${task.batchCount} 张`;
  const current = Math.min(task.done + 1, task.batchCount);
  return `第 ${current}/${task.batchCount} 张 · 步数 ${task.step}/${task.steps}`;
}

export function TaskProgress({ task }: { task: Pick<DiffusionTask, 'status' | 'done' | 'batchCount' | 'step' | 'steps'> }) {
  const total = task.batchCount * task.steps;
  const percent = total > 0 ? Math.floor(((task.done * task.steps + Math.min(task.step, task.steps)) / total) * 100) : 0;
  return <Progress percent={Math.min(percent, 99)} status={task.status === 'running' ? 'active' : 'normal'} size="small" aria-label="生成进度" />;
}

/** The LoRAs an image was made with, as WebUI writes them: name:weight. */
export function UsedLoras({ loras }: { loras: DiffusionImage['loras'] }) {
  if (loras.length === 0) return null;
  return (
    <Flex wrap gap={4}>
      {loras.map((l) => (
        <Tag key={`${l.source}:${l.ref}`} style={{ marginInlineEnd: 0 }} variant="filled">
          {l.name}:{l.weight}
        </Tag>
      ))}
    </Flex>
  );
}

/** A task's images so far, small, each opening the full picture. */
export function TaskThumbs({ task }: { task: Pick<DiffusionTask, 'images'> }) {
  if (task.images.length === 0) return null;
  return (
    <Image.PreviewGroup>
      <Flex wrap gap={6}>
        {task.images.map((img) => (
          <SimulatedMark key={img.id} service="images">
            <Image
              src={diffusionApi.thumbUrl(img.id)}
              preview={{ src: diffusionApi.imageUrl(img.id) }}
              alt={`第 ${img.index + 1} 张`}
              width={48}
              height={48}
              style={{ objectFit: 'cover', borderRadius: 4 }}
            />
          </SimulatedMark>
        ))}
      </Flex>
    </Image.PreviewGroup>
  );
}

/** One line of small print under a field or an amount. */
export const Note = ({ children }: { children: ReactNode }) => (
  <Typography.Text type="secondary" style={{ fontSize: 12 }}>
    {children}
  </Typography.Text>
);
