/** 运行记录: the runs of workflows, newest first, each node's state while it runs, its money, its pictures, 取消. */
import { useState } from 'react';
import { App, Button, Card, Empty, Flex, Pagination, Skeleton, Space, Typography, theme } from 'antd';
import { PictureOutlined } from '@ant-design/icons';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { formatBeijing, formatYuan, PAGE, type DiffusionTask } from '@console/contract';
import { cancelOutcome, DIFFUSION_KEYS, diffusionApi, isTaskActive, Note, TaskStatusTag } from '../../diffusion';
import { afterRunChanged, RUN_PAGE_SIZES, useComfyRuns } from '../api/comfyui';
import { LoadError } from '../../../components/LoadError';
import { RefreshButton } from '../../../components/PagedTable';
import { nextPaging, type Paging } from '../../../routing/useUrlPaging';
import { nodeRunState, RunNodes, RunOutputs } from './comfyViews';

function useCancelRun() {
  const { modal } = App.useApp();
  const queryClient = useQueryClient();
  const cancel = useMutation({
    mutationFn: (id: string) => diffusionApi.cancel(id),
    onSettled: () => {
      afterRunChanged(queryClient);
      void queryClient.invalidateQueries({ queryKey: DIFFUSION_KEYS.images });
    },
  });
  return (task: DiffusionTask) =>
    modal.confirm({
      title: `确认取消运行「${task.workflow?.name ?? task.prompt}」？`,
      content: cancelOutcome(task),
      okText: '确认取消',
      okButtonProps: { danger: true },
      cancelText: '继续运行',
      onOk: () => cancel.mutateAsync(task.id).catch(() => undefined),
    });
}

/** What the run holds, settled and returned, in one line. */
function moneyText(task: DiffusionTask): string {
  const parts = [`输出 ${task.done}/${task.batchCount} 张`, `预扣 ¥${formatYuan(task.held)}`, `已结算 ¥${formatYuan(task.charged)}`];
  if (task.refunded !== '0') parts.push(`已退回 ¥${formatYuan(task.refunded)}`);
  if (task.packageImages > 0) parts.push(`时长包 ${task.packageImages} 张`);
  return parts.join(' · ');
}

/** The node list of a finished run folds into one line; a running one, or one that failed at a node, shows it. */
function NodesSummary({ task }: { task: DiffusionTask }) {
  const nodes = task.workflow?.nodes ?? [];
  const stopsAtNode = !!task.workflow?.state.error;
  const [open, setOpen] = useState(isTaskActive(task.status) || stopsAtNode);
  if (nodes.length === 0) return null;
  const shown = open || isTaskActive(task.status);
  const done = nodes.filter((n) => nodeRunState(task, n.id) === 'done').length;
  return (
    <Flex vertical gap={6}>
      <Flex justify="space-between" align="center" gap={8}>
        <Note>
          节点 {done}/{nodes.length} 已完成
        </Note>
        {!isTaskActive(task.status) && (
          <Button type="link" size="small" style={{ padding: 0, height: 'auto' }} onClick={() => setOpen(!open)}>
            {shown ? '收起节点' : '查看节点'}
          </Button>
        )}
      </Flex>
      {shown && <RunNodes task={task} />}
    </Flex>
  );
}

function RunItem({ task, onCancel }: { task: DiffusionTask; onCancel: (task: DiffusionTask) => void }) {
  const { token } = theme.useToken();
  const active = isTaskActive(task.status);
  return (
    <div
      data-testid="comfy-run"
      style={{
        border: `1px solid ${active ? token.colorPrimaryBorder : token.colorBorderSecondary}`,
        borderRadius: token.borderRadiusLG,
        padding: 12,
      }}
    >
      <Flex vertical gap={8}>
        <Flex align="center" gap={8}>
          <TaskStatusTag status={task.status} />
          <Typography.Text strong ellipsis style={{ flex: 1, minWidth: 0 }} title={task.workflow?.name}>
            {task.workflow?.name ?? task.prompt}
          </Typography.Text>
          <Note>{formatBeijing(task.createdAt)}</Note>
          {active && (
            <Button type="link" size="small" danger onClick={() => onCancel(task)}>
              取消
            </Button>
          )}
        </Flex>
        {task.status === 'queued' && <Note>排队中，等待 GPU</Note>}
        <Note>{moneyText(task)}</Note>
        <NodesSummary task={task} />
        {task.status === 'failed' && (
          <Typography.Text type="danger" style={{ fontSize: 12 }} data-testid="run-error">
            失败原因：{task.error ?? task.workflow?.state.error?.message ?? '未知原因'}（未生成部分已退款）
          </Typography.Text>
        )}
        <RunOutputs task={task} />
      </Flex>
    </div>
  );
}

export function WorkflowRuns({ paging, onPage }: { paging: Paging; onPage: (next: Paging) => void }) {
  const runs = useComfyRuns(paging);
  const confirmCancel = useCancelRun();
  const total = runs.data?.total ?? 0;
  return (
    <Card
      title="运行记录"
      className="card-head-wrap"
      extra={
        <Space>
          <Link to={PAGE.sdDiffusion}>
            <Button type="link" icon={<PictureOutlined />} style={{ paddingInline: 0 }}>
              在画廊中查看全部
            </Button>
          </Link>
          <RefreshButton list={runs} />
        </Space>
      }
    >
      {runs.isError && !runs.data ? (
        <LoadError error={runs.error} onRetry={() => void runs.refetch()} />
      ) : runs.isPending ? (
        <Skeleton active paragraph={{ rows: 3 }} />
      ) : runs.data.items.length === 0 ? (
        <Empty
          image={Empty.PRESENTED_IMAGE_SIMPLE}
          description="还没有运行记录：打开一个工作流，确认费用后点「运行」，每个节点的进度和输出的图片都会显示在这里"
        />
      ) : (
        <Flex vertical gap={12}>
          {runs.isError && (
            <Typography.Text type="warning" style={{ fontSize: 12 }}>
              刷新失败：{runs.error.message}（显示的是上次的进度）
            </Typography.Text>
          )}
          {runs.data.items.map((t) => (
            <RunItem key={t.id} task={t} onCancel={confirmCancel} />
          ))}
          {total > RUN_PAGE_SIZES[0]! && (
            <Pagination
              align="end"
              size="small"
              current={paging.page}
              pageSize={paging.pageSize}
              total={total}
              showSizeChanger
              pageSizeOptions={[...RUN_PAGE_SIZES]}
              showTotal={(t) => `共 ${t} 次`}
              onChange={(page, pageSize) => onPage(nextPaging(paging, page, pageSize))}
            />
          )}
        </Flex>
      )}
    </Card>
  );
}
