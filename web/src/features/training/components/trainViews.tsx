/** Small pieces the LoRA training page shows in the list and the detail alike. */
import { Progress, Tag, type ProgressProps } from 'antd';
import { isLoraJobActive, LORA_JOB_STATUS_LABELS, SD_BASE_MODELS, type LoraJob, type LoraJobStatus, type SdBaseModelId } from '@console/contract';

/** antd's status colours: a running job in the theme's own colour ('processing'), never a fixed one. */
const STATUS_COLOR: Record<LoraJobStatus, string | undefined> = {
  queued: 'default',
  preparing: 'processing',
  training: 'processing',
  saving: 'processing',
  done: 'success',
  failed: 'error',
  cancelled: 'warning',
};

export function LoraStatusTag({ status }: { status: LoraJobStatus }) {
  return (
    <Tag color={STATUS_COLOR[status]} style={{ marginInlineEnd: 0 }}>
      {LORA_JOB_STATUS_LABELS[status]}
    </Tag>
  );
}

export const baseModelName = (id: SdBaseModelId) => SD_BASE_MODELS.find((m) => m.id === id)?.name ?? id;

/** A remaining time as it is read: 45 秒, 3 分 05 秒, 1 小时 20 分. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} 秒`;
  if (s < 3600) return `${Math.floor(s / 60)} 分 ${String(s % 60).padStart(2, '0')} 秒`;
  return `${Math.floor(s / 3600)} 小时 ${Math.floor((s % 3600) / 60)} 分`;
}

/** An estimate in whole minutes, rounded up (an estimate reads as "about"): 约 12 分钟, 约 1 小时 5 分钟. */
export function formatEstimate(seconds: number): string {
  const minutes = Math.max(1, Math.ceil(seconds / 60));
  if (minutes < 60) return `约 ${minutes} 分钟`;
  const rest = minutes % 60;
  return `约 ${Math.floor(minutes / 60)} 小时${rest ? ` ${rest} 分钟` : ''}`;
}

/** The epoch a job is on while it trains (epochs count finished ones), else how many it finished. */
export function epochText(job: Pick<LoraJob, 'status' | 'epoch' | 'params'>): string {
  const total = job.params.epochs;
  if (job.status === 'training' || job.status === 'saving') return `第 ${Math.min(job.epoch + 1, total)}/${total} 轮`;
  return `已完成 ${job.epoch}/${total} 轮`;
}

const PROGRESS_STATUS: Partial<Record<LoraJobStatus, ProgressProps['status']>> = { done: 'success', failed: 'exception' };

export function JobProgress({ job, size = 'small' }: { job: Pick<LoraJob, 'status' | 'step' | 'steps'>; size?: ProgressProps['size'] }) {
  const percent = job.steps.total > 0 ? Math.floor((job.step / job.steps.total) * 100) : 0;
  const status = PROGRESS_STATUS[job.status] ?? (isLoraJobActive(job.status) ? 'active' : 'normal');
  return <Progress percent={job.status === 'done' ? 100 : percent} status={status} size={size} aria-label="训练进度" />;
}
