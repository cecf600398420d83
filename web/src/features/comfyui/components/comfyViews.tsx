/** What the ComfyUI area shows of nodes and runs: names, order, a run's node states, its pictures. */
import type { ReactNode } from 'react';
import { Button, Flex, Image, Progress, Tooltip, Typography, theme } from 'antd';
import { CheckCircleFilled, ClockCircleOutlined, CloseCircleFilled, DownloadOutlined, LoadingOutlined, MinusCircleOutlined } from '@ant-design/icons';
import { COMFY_NODES, type ComfyAnalysis, type ComfyGraph, type ComfyNodeSpec, type DiffusionTask } from '@console/contract';
import { diffusionApi, isTaskActive } from '../../diffusion';
import { SimulatedMark } from '../../../components/Simulated';

export const nodeSpecOf = (classType: string): ComfyNodeSpec | undefined => (COMFY_NODES as Record<string, ComfyNodeSpec>)[classType];

/** A node as people call it: our Chinese name and ComfyUI's English title (the workflow's own if it set one). */
export function nodeNames(node: { class_type: string; _meta?: { title?: string } }): { label: string; title: string } {
  const spec = nodeSpecOf(node.class_type);
  return { label: spec?.label ?? node.class_type, title: node._meta?.title ?? spec?.title ?? node.class_type };
}

/** The Chinese name of the inputs the supported nodes take, beside ComfyUI's own. */
export const INPUT_LABELS: Record<string, string> = {
  ckpt_name: '模型文件',
  lora_name: 'LoRA 文件',
  strength_model: '模型强度',
  strength_clip: 'CLIP 强度',
  stop_at_clip_layer: '停止层',
  text: '提示词',
  width: '宽度',
  height: '高度',
  batch_size: '批次张数',
  seed: '种子',
  steps: '步数',
  cfg: 'CFG',
  sampler_name: '采样方法',
  scheduler: '调度器',
  denoise: '降噪强度',
  filename_prefix: '文件名前缀',
  model: '模型',
  clip: 'CLIP',
  vae: 'VAE',
  positive: '正向条件',
  negative: '反向条件',
  latent_image: '潜空间图像',
  samples: '采样结果',
  images: '图像',
};

/** Node ids as ComfyUI orders them: numeric ones by number, then the rest by name. */
export function sortNodeIds(ids: string[]): string[] {
  return [...ids].sort((a, b) => {
    const [na, nb] = [Number(a), Number(b)];
    if (Number.isInteger(na) && Number.isInteger(nb)) return na - nb;
    if (Number.isInteger(na) !== Number.isInteger(nb)) return Number.isInteger(na) ? -1 : 1;
    return a < b ? -1 : a > b ? 1 : 0;
  });
}

/**
 * The nodes in the order they run (the check's plan when the workflow is sound), then those no output
 * needs (they do not run). While it has errors the same walk is made over the links that are there,
 * so the cards stay where they were while a value is being fixed.
 */
export function nodeOrder(graph: ComfyGraph, analysis: ComfyAnalysis): { id: string; runs: boolean }[] {
  const order = analysis.ok ? analysis.plan.order : walkFromOutputs(graph);
  const unused = sortNodeIds(Object.keys(graph).filter((id) => !order.includes(id)));
  return [...order.map((id) => ({ id, runs: true })), ...unused.map((id) => ({ id, runs: false }))];
}

/** The check's walk, tolerant of what it refuses: from each output node, inputs first, in the node's input order. */
function walkFromOutputs(graph: ComfyGraph): string[] {
  const order: string[] = [];
  const seen = new Set<string>();
  const visit = (id: string) => {
    if (seen.has(id) || !graph[id]) return;
    seen.add(id);
    const node = graph[id];
    const known = Object.keys(nodeSpecOf(node.class_type)?.inputs ?? {});
    for (const name of [...known, ...Object.keys(node.inputs).filter((k) => !known.includes(k))]) {
      const value = node.inputs[name];
      if (Array.isArray(value)) visit(value[0]);
    }
    order.push(id);
  };
  for (const id of sortNodeIds(Object.keys(graph).filter((id) => nodeSpecOf(graph[id]!.class_type)?.output))) visit(id);
  return order;
}

/** The same graph whatever order its keys came back in (the server stores it as jsonb). */
export function sameGraph(a: ComfyGraph, b: ComfyGraph): boolean {
  return canonical(a) === canonical(b);
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

// --- a run ------------------------------------------------------------------------------------------

export type NodeRunState = 'done' | 'running' | 'error' | 'waiting' | 'skipped';

export const NODE_STATE_LABELS: Record<NodeRunState, string> = {
  done: '已完成',
  running: '运行中',
  error: '出错',
  waiting: '等待',
  skipped: '未运行',
};

/** Where one node of a run is, from the ComfyUI messages the server folded into the run. */
export function nodeRunState(task: Pick<DiffusionTask, 'status' | 'workflow'>, nodeId: string): NodeRunState {
  const state = task.workflow?.state;
  if (state?.error?.node === nodeId) return 'error';
  if (state?.executed.includes(nodeId)) return 'done';
  if (state?.executing === nodeId) return isTaskActive(task.status) ? 'running' : 'skipped';
  if (isTaskActive(task.status)) return 'waiting';
  // A finished run went through every node (ComfyUI may not report the cached ones); a stopped one did not.
  return task.status === 'done' ? 'done' : 'skipped';
}

function StateIcon({ state }: { state: NodeRunState }) {
  const { token } = theme.useToken();
  switch (state) {
    case 'done':
      return <CheckCircleFilled style={{ color: token.colorSuccess }} />;
    case 'running':
      return <LoadingOutlined style={{ color: token.colorPrimary }} />;
    case 'error':
      return <CloseCircleFilled style={{ color: token.colorError }} />;
    case 'waiting':
      return <ClockCircleOutlined style={{ color: token.colorTextTertiary }} />;
    default:
      return <MinusCircleOutlined style={{ color: token.colorTextQuaternary }} />;
  }
}

/** Each node of a run on a line: done, running (with the sampler's steps), failed (with why) or waiting. */
export function RunNodes({ task }: { task: DiffusionTask }) {
  const workflow = task.workflow;
  if (!workflow || workflow.nodes.length === 0) return null;
  const { progress, error } = workflow.state;
  return (
    <Flex vertical gap={4} role="list" aria-label="节点进度">
      {workflow.nodes.map((n) => {
        const state = nodeRunState(task, n.id);
        const spec = nodeSpecOf(n.classType);
        const stepping = state === 'running' && progress?.node === n.id && progress.max > 0 ? progress : null;
        return (
          <Flex key={n.id} vertical role="listitem" data-testid="run-node" data-state={state} gap={2}>
            <Flex align="center" gap={8} wrap>
              <StateIcon state={state} />
              <Typography.Text type="secondary" className="mono" style={{ fontSize: 12, minWidth: 28 }}>
                #{n.id}
              </Typography.Text>
              <Typography.Text style={{ fontSize: 13 }}>{spec?.label ?? n.classType}</Typography.Text>
              <Typography.Text type="secondary" style={{ fontSize: 12, flex: 1, minWidth: 0 }} ellipsis>
                {n.title}
              </Typography.Text>
              {stepping ? (
                <Progress
                  percent={Math.floor((stepping.value / stepping.max) * 100)}
                  format={() => `${stepping.value}/${stepping.max} 步`}
                  size="small"
                  status="active"
                  style={{ width: 180, margin: 0 }}
                  aria-label={`节点 ${n.id} 的进度`}
                />
              ) : (
                <Typography.Text type={state === 'error' ? 'danger' : 'secondary'} style={{ fontSize: 12 }}>
                  {NODE_STATE_LABELS[state]}
                </Typography.Text>
              )}
            </Flex>
            {state === 'error' && error && (
              <Typography.Text type="danger" style={{ fontSize: 12, paddingInlineStart: 22 }} data-testid="run-node-error">
                {error.nodeType}：{error.message}
              </Typography.Text>
            )}
          </Flex>
        );
      })}
    </Flex>
  );
}

/** A run's pictures so far: each opens the full picture, and downloads. */
export function RunOutputs({ task }: { task: Pick<DiffusionTask, 'images'> }) {
  const { token } = theme.useToken();
  if (task.images.length === 0) return null;
  return (
    <Image.PreviewGroup>
      <Flex wrap gap={8}>
        {task.images.map((img) => (
          <Flex key={img.id} vertical align="center" gap={2} data-testid="run-output">
            <SimulatedMark service="images">
              <Image
                src={diffusionApi.thumbUrl(img.id)}
                preview={{ src: diffusionApi.imageUrl(img.id), cover: '查看大图' }}
                alt={`输出第 ${img.index + 1} 张`}
                width={72}
                height={72}
                style={{ objectFit: 'cover', borderRadius: token.borderRadiusSM }}
              />
            </SimulatedMark>
            <Tooltip title="下载原图">
              <Button type="text" size="small" icon={<DownloadOutlined />} href={diffusionApi.downloadUrl(img.id)} aria-label={`下载第 ${img.index + 1} 张`} />
            </Tooltip>
          </Flex>
        ))}
      </Flex>
    </Image.PreviewGroup>
  );
}

/** A small labelled block inside a card. */
export const Section = ({ title, extra, children }: { title: ReactNode; extra?: ReactNode; children: ReactNode }) => (
  <Flex vertical gap={8}>
    <Flex justify="space-between" align="center" gap={8}>
      <Typography.Text strong>{title}</Typography.Text>
      {extra}
    </Flex>
    {children}
  </Flex>
);
