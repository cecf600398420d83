/** 生成队列: the running and queued tasks with their progress and 取消, then the last few finished ones. */
import { Alert, App, Button, Card, Divider, Empty, Flex, Skeleton, Typography, theme } from 'antd';
import { ReloadOutlined } from '@ant-design/icons';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { formatBeijing, formatYuan, type DiffusionTask } from '@console/contract';
import { afterTaskEnded, DIFFUSION_KEYS, diffusionApi, type useDiffusionTasks } from '../api/diffusion';
import { LoadError } from '../../../components/LoadError';
import { cancelOutcome, Note, TaskProgress, taskProgressText, TaskStatusTag, TaskThumbs } from './diffusionViews';
import { baseModelName } from '../../training';

type Tasks = ReturnType<typeof useDiffusionTasks>;

function useCancelTask() {
  const { modal } = App.useApp();
  const queryClient = useQueryClient();
  const cancel = useMutation({
    mutationFn: (id: string) => diffusionApi.cancel(id),
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: DIFFUSION_KEYS.tasks });
      void queryClient.invalidateQueries({ queryKey: DIFFUSION_KEYS.images });
      afterTaskEnded(queryClient);
    },
  });
  return (task: DiffusionTask) =>
    modal.confirm({
      title: '确认取消这个生成任务？',
      content: cancelOutcome(task),
      okText: '确认取消',
      okButtonProps: { danger: true },
      cancelText: '继续生成',
      onOk: () => cancel.mutateAsync(task.id).catch(() => undefined),
    });
}

/** The images the 时长包 pays for (the first ones made), after the cash figures. */
const packageNote = (task: DiffusionTask) => (task.packageImages > 0 ? ` · 时长包 ${task.packageImages} 张` : '');

/** The first words of the prompt, whole on hover. */
const PromptLine = ({ prompt }: { prompt: string }) => (
  <Typography.Text ellipsis title={prompt} style={{ flex: 1, minWidth: 0 }}>
    {prompt}
  </Typography.Text>
);

function ActiveTask({ task, onCancel }: { task: DiffusionTask; onCancel: (task: DiffusionTask) => void }) {
  const { token } = theme.useToken();
  return (
    <div data-testid="diffusion-task" style={{ border: `1px solid ${token.colorBorderSecondary}`, borderRadius: token.borderRadiusLG, padding: 12 }}>
      <Flex vertical gap={6}>
        <Flex align="center" gap={8}>
          <TaskStatusTag status={task.status} />
          <PromptLine prompt={task.prompt} />
          <Button type="link" size="small" danger onClick={() => onCancel(task)}>
            取消
          </Button>
        </Flex>
        <TaskProgress task={task} />
        <Flex justify="space-between" gap={8} wrap>
          <Note>
            <span data-testid="task-progress">{taskProgressText(task)}</span>
          </Note>
          <Note>
            {baseModelName(task.baseModel)} · 预扣 ¥{formatYuan(task.held)} · 已结算 ¥{formatYuan(task.charged)}
            {packageNote(task)}
          </Note>
        </Flex>
        <TaskThumbs task={task} />
      </Flex>
    </div>
  );
}

/** A finished task in one or two lines: what it made and cost, or why it failed. */
function FinishedTask({ task }: { task: DiffusionTask }) {
  const returned = task.refunded !== '0' ? ` · 已退回 ¥${formatYuan(task.refunded)}` : '';
  return (
    <Flex vertical gap={4} data-testid="diffusion-finished">
      <Flex align="center" gap={8}>
        <TaskStatusTag status={task.status} />
        <PromptLine prompt={task.prompt} />
        <Note>{task.finishedAt ? formatBeijing(task.finishedAt) : ''}</Note>
      </Flex>
      <Note>
        已生成 {task.done}/{task.batchCount} 张 · 已结算 ¥{formatYuan(task.charged)}
        {returned}
        {packageNote(task)}
      </Note>
      {task.status === 'failed' && (
        <Typography.Text type="danger" style={{ fontSize: 12 }}>
          失败原因：{task.error ?? '未知原因'}（未生成部分已退款）
        </Typography.Text>
      )}
      <TaskThumbs task={task} />
    </Flex>
  );
}

export function DiffusionQueue({ tasks }: { tasks: Tasks }) {
  const { active, recent } = tasks;
  const confirmCancel = useCancelTask();
  const running = active.data?.items ?? [];
  const finished = recent.data?.items ?? [];
  return (
    <Card
      title="生成队列"
      extra={
        <Button
          icon={<ReloadOutlined />}
          aria-label="刷新"
          // Not the active list's: it is fetched every second while a task runs.
          loading={recent.isFetching && !recent.isPending}
          onClick={() => void Promise.all([active.refetch(), recent.refetch()])}
        />
      }
    >
      {active.isError && !active.data ? (
        <LoadError error={active.error} onRetry={() => void active.refetch()} />
      ) : active.isPending ? (
        <Skeleton active paragraph={{ rows: 2 }} />
      ) : running.length === 0 && finished.length === 0 && !recent.isPending ? (
        <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="还没有生成任务：在左侧填写提示词、选好参数后点「生成」" />
      ) : (
        <Flex vertical gap={12}>
          {active.isError && (
            // The progress below is from before the failed refresh, and polling stopped: say so, with a way on.
            <Alert
              type="warning"
              showIcon
              title={`队列刷新失败：${active.error.message}`}
              action={
                <Button size="small" onClick={() => void active.refetch()}>
                  重试
                </Button>
              }
            />
          )}
          {running.length > 0 ? (
            running.map((t) => <ActiveTask key={t.id} task={t} onCancel={confirmCancel} />)
          ) : (
            <Typography.Text type="secondary">没有进行中的任务</Typography.Text>
          )}
          {recent.isError ? (
            <LoadError error={recent.error} onRetry={() => void recent.refetch()} />
          ) : (
            finished.length > 0 && (
              <>
                <Divider plain titlePlacement="start" style={{ margin: '4px 0' }}>
                  最近完成
                </Divider>
                {finished.map((t) => (
                  <FinishedTask key={t.id} task={t} />
                ))}
              </>
            )
          )}
        </Flex>
      )}
    </Card>
  );
}
