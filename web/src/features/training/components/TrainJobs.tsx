/** 训练任务: the account's LoRA jobs, their progress and money, with 详情 / 取消 / 删除. */
import { useState } from 'react';
import { App, Button, Card, Empty, Flex, Segmented, Space, Typography, type TableColumnsType } from 'antd';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { formatBeijing, formatYuan, isLoraJobActive, type LoraJob } from '@console/contract';
import { BILLING_KEYS } from '../../../api/billing';
import { TRAIN_KEYS, trainApi, type LoraJobFilter } from '../api/training';
import { PagedTable, RefreshButton, usePagedQuery } from '../../../components/PagedTable';
import { useUrlPaging } from '../../../routing/useUrlPaging';
import { baseModelName, epochText, JobProgress, LoraStatusTag } from './trainViews';

/** While a job on the page runs, the page is fetched again this often (the open job follows its own stream). */
const LIST_POLL_MS = 5_000;

type Filter = 'all' | LoraJobFilter;
const FILTERS: { value: Filter; label: string }[] = [
  { value: 'all', label: '全部' },
  { value: 'active', label: '进行中' },
  { value: 'done', label: '已结束' },
];
const EMPTY_TEXT: Record<Filter, string> = {
  all: '还没有训练任务：在上方选择数据集和底模，确认参数与费用后点「开始训练」',
  active: '没有进行中的任务',
  done: '还没有已结束的任务',
};

/** 取消 and 删除, each confirmed first; shared by the list and the detail. */
export function useJobActions(onDeleted?: (id: string) => void) {
  const { modal } = App.useApp();
  const queryClient = useQueryClient();
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: TRAIN_KEYS.lists });
    void queryClient.invalidateQueries({ queryKey: BILLING_KEYS.money });
  };
  const cancel = useMutation({
    mutationFn: (id: string) => trainApi.cancel(id),
    onSuccess: (job) => queryClient.setQueryData(TRAIN_KEYS.one(job.id), job),
    onSettled: refresh,
  });
  const remove = useMutation({
    mutationFn: (id: string) => trainApi.remove(id),
    onSuccess: (_, id) => {
      // Closed first: an open detail would otherwise ask for the job it just lost.
      onDeleted?.(id);
      queryClient.removeQueries({ queryKey: TRAIN_KEYS.one(id) });
    },
    onSettled: refresh,
  });
  const confirmCancel = (job: LoraJob) =>
    modal.confirm({
      title: `确认取消训练任务「${job.name}」？`,
      content: `已完成的 ${job.epoch} 轮照常结算，模型文件保留；其余预扣金额退回现金余额。`,
      okText: '确认取消',
      okButtonProps: { danger: true },
      cancelText: '继续训练',
      onOk: () => cancel.mutateAsync(job.id).catch(() => undefined),
    });
  const confirmDelete = (job: LoraJob) =>
    modal.confirm({
      title: `确认删除训练任务「${job.name}」？`,
      content: '各轮的模型文件和样图将一并删除，无法恢复；请先下载需要的模型。',
      okText: '确认删除',
      okButtonProps: { danger: true },
      cancelText: '取消',
      onOk: () => remove.mutateAsync(job.id).catch(() => undefined),
    });
  return { confirmCancel, confirmDelete };
}

/** What the job cost so far: settled, with what is held or was returned under it. */
function MoneyCell({ job }: { job: LoraJob }) {
  const active = isLoraJobActive(job.status);
  return (
    <Flex vertical className="amount-cell">
      <span>已结算 ¥{formatYuan(job.charged)}</span>
      <Typography.Text type="secondary" style={{ fontSize: 12 }}>
        {active ? `预扣 ¥${formatYuan(job.held)}` : job.refunded !== '0' ? `已退回 ¥${formatYuan(job.refunded)}` : `预扣 ¥${formatYuan(job.held)}`}
      </Typography.Text>
    </Flex>
  );
}

function columns(open: (id: string) => void, actions: ReturnType<typeof useJobActions>): TableColumnsType<LoraJob> {
  return [
    {
      title: '模型名称',
      key: 'name',
      width: 150,
      render: (_, j) => (
        <Button type="link" size="small" style={{ padding: 0 }} onClick={() => open(j.id)}>
          {j.name}
        </Button>
      ),
    },
    { title: '数据集', key: 'dataset', width: 130, ellipsis: true, render: (_, j) => j.datasetName },
    { title: '底模', key: 'base', width: 150, render: (_, j) => baseModelName(j.baseModel) },
    { title: '状态', key: 'status', width: 80, render: (_, j) => <LoraStatusTag status={j.status} /> },
    {
      title: '进度',
      key: 'progress',
      width: 190,
      render: (_, j) => (
        <Flex vertical>
          <JobProgress job={j} />
          <Typography.Text type="secondary" style={{ fontSize: 12 }}>
            {j.step}/{j.steps.total} 步 · {epochText(j)}
          </Typography.Text>
        </Flex>
      ),
    },
    { title: '费用', key: 'money', width: 130, render: (_, j) => <MoneyCell job={j} /> },
    { title: '创建时间', key: 'createdAt', width: 140, render: (_, j) => formatBeijing(j.createdAt) },
    {
      title: '操作',
      key: 'actions',
      width: 130,
      fixed: 'right',
      render: (_, j) => (
        <Space size={0} wrap>
          <Button type="link" size="small" onClick={() => open(j.id)}>
            详情
          </Button>
          {isLoraJobActive(j.status) ? (
            <Button type="link" size="small" danger onClick={() => actions.confirmCancel(j)}>
              取消
            </Button>
          ) : (
            <Button type="link" size="small" danger onClick={() => actions.confirmDelete(j)}>
              删除
            </Button>
          )}
        </Space>
      ),
    },
  ];
}

export function TrainJobs({ open, onDeleted }: { open: (id: string) => void; onDeleted: (id: string) => void }) {
  const { paging, set } = useUrlPaging();
  const [filter, setFilter] = useState<Filter>('all');
  const status = filter === 'all' ? undefined : filter;
  const actions = useJobActions(onDeleted);
  const list = usePagedQuery({
    queryKey: TRAIN_KEYS.list(paging.page, paging.pageSize, status),
    queryFn: (signal) => trainApi.list({ ...paging, status }, signal),
    // Not after a failed refresh: the user retries.
    refetchInterval: (data, failed) => (!failed && data?.items.some((j) => isLoraJobActive(j.status)) ? LIST_POLL_MS : false),
  });

  return (
    <Card
      title="训练任务"
      extra={
        <Flex gap={8} align="center">
          <Segmented<Filter>
            value={filter}
            options={FILTERS}
            onChange={(v) => {
              setFilter(v);
              set({ ...paging, page: 1 });
            }}
          />
          <RefreshButton list={list} />
        </Flex>
      }
    >
      <PagedTable<LoraJob>
        rowKey="id"
        columns={columns(open, actions)}
        scroll={{ x: 1100 }}
        list={list}
        paging={paging}
        onPage={set}
        unit="个任务"
        empty={<Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description={EMPTY_TEXT[filter]} />}
      />
    </Card>
  );
}
