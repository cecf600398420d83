import { useState } from 'react';
import { App, Button, Flex, Form, Input, InputNumber, Modal, Radio, Segmented, Space, Tag, Tooltip, Typography } from 'antd';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { formatYuan, moneyRequestDecisionSchema, type MoneyRequest, type OperatorMe } from '@console/contract';
import { PagedTable, usePagedQuery } from '../../../components/PagedTable';
import type { Paging } from '../../../routing/useUrlPaging';
import { OPERATOR_KEYS } from '../../account';
import { GOVERNANCE_KEYS, governanceApi } from '../api/governance';
import { formatMinute, RejectModal } from './operatorViews';

export const REQUEST_FILTERS = ['pending', 'approved', 'rejected', 'all'] as const;
export type RequestFilter = (typeof REQUEST_FILTERS)[number];
const FILTER_LABEL: Record<RequestFilter, string> = { pending: '待审批', approved: '已通过', rejected: '已驳回', all: '全部' };
const STATUS_TAG: Record<MoneyRequest['status'], React.ReactNode> = {
  pending: <Tag color="processing">待审批</Tag>,
  approved: <Tag color="success">已通过</Tag>,
  rejected: <Tag color="error">已驳回</Tag>,
};
const yuan = (units: string) => `¥${formatYuan(units)}`;

/** 待审批: credits and debits above the threshold waiting for a second operator; and the form that starts one. */
export function ApprovalsTab({
  me,
  status,
  paging,
  onStatus,
  onPage,
}: {
  me: OperatorMe;
  status: RequestFilter;
  paging: Paging;
  onStatus: (s: RequestFilter) => void;
  onPage: (next: Paging) => void;
}) {
  const queryClient = useQueryClient();
  const list = usePagedQuery({
    queryKey: GOVERNANCE_KEYS.requests(status, paging.page, paging.pageSize),
    queryFn: (signal) => governanceApi.requests(status, paging.page, paging.pageSize, signal),
  });
  const done = () => queryClient.invalidateQueries({ queryKey: OPERATOR_KEYS.all });
  const [approving, setApproving] = useState<MoneyRequest | null>(null);
  const [rejecting, setRejecting] = useState<MoneyRequest | null>(null);
  const [moving, setMoving] = useState(false);
  const approve = useMutation({ mutationFn: (r: MoneyRequest) => governanceApi.approve(r.id), onSuccess: done, onSettled: () => setApproving(null) });
  const reject = useMutation({ mutationFn: (v: { id: string; reason: string }) => governanceApi.reject(v.id, v.reason), onSuccess: done });
  const mayApprove = me.permissions.includes('money.approve');
  const mayMove = me.permissions.includes('money.credit') || me.permissions.includes('money.creditSmall');

  return (
    <Flex vertical gap={16}>
      <Flex justify="space-between" wrap gap={8}>
        <Segmented<RequestFilter> value={status} onChange={onStatus} options={REQUEST_FILTERS.map((f) => ({ value: f, label: FILTER_LABEL[f] }))} />
        {mayMove && (
          <Button type="primary" onClick={() => setMoving(true)}>
            加款 / 扣款
          </Button>
        )}
      </Flex>
      <Typography.Text type="secondary">
        非管理员单笔超过 {yuan(me.approvalThreshold)} 的加款、扣款须由另一位有审批权限的运营人员通过后才入账；发起人不能审批自己的申请。
      </Typography.Text>
      <PagedTable<MoneyRequest>
        list={list}
        paging={paging}
        onPage={onPage}
        empty={status === 'pending' ? '没有待审批的资金申请' : '暂无资金申请'}
        rowKey="id"
        scroll={{ x: 1240 }}
        columns={[
          { title: '发起时间', dataIndex: 'createdAt', width: 150, render: (v: string) => formatMinute(v) },
          { title: '用户', dataIndex: 'mobile', width: 130 },
          {
            title: '操作',
            key: 'what',
            width: 130,
            render: (_, r) => `${r.direction === 'credit' ? '加款' : '扣款'}（${r.to === 'gift' ? '赠送金' : '现金'}）`,
          },
          { title: '金额', dataIndex: 'amount', width: 120, align: 'right', render: (v: string) => yuan(v) },
          { title: '状态', dataIndex: 'status', width: 90, render: (s: MoneyRequest['status']) => STATUS_TAG[s] },
          { title: '原因', dataIndex: 'reason', render: (v: string) => <Typography.Text ellipsis={{ tooltip: v }}>{v}</Typography.Text> },
          { title: '发起人', dataIndex: 'requestedBy', width: 130 },
          {
            title: '审批',
            key: 'decision',
            width: 180,
            fixed: 'right',
            render: (_, r) =>
              r.status !== 'pending' ? (
                <Typography.Text type="secondary">
                  {r.decidedBy || '--'} {r.decidedAt ? formatMinute(r.decidedAt) : ''}
                  {r.decisionReason ? `：${r.decisionReason}` : ''}
                </Typography.Text>
              ) : !mayApprove ? (
                <Typography.Text type="secondary">等待审批</Typography.Text>
              ) : r.requestedById === me.userId ? (
                <Tooltip title="不能审批自己发起的申请，请由另一位运营人员审批">
                  <Typography.Text type="secondary">待他人审批</Typography.Text>
                </Tooltip>
              ) : (
                <Space>
                  <Button size="small" type="primary" onClick={() => setApproving(r)}>
                    通过
                  </Button>
                  <Button size="small" danger onClick={() => setRejecting(r)}>
                    驳回
                  </Button>
                </Space>
              ),
          },
        ]}
      />
      <Modal
        open={!!approving}
        title="审批通过"
        okText="确认通过并入账"
        okButtonProps={{ loading: approve.isPending }}
        cancelText="取消"
        onOk={() => approving && approve.mutate(approving)}
        onCancel={() => setApproving(null)}
      >
        {approving &&
          `确认给 ${approving.mobile} ${approving.direction === 'credit' ? '加款' : '扣款'} ${yuan(approving.amount)}（${approving.to === 'gift' ? '赠送金' : '现金'}）？原因：${approving.reason}。通过后立即入账，且只入账一次。`}
      </Modal>
      <RejectModal
        open={!!rejecting}
        loading={reject.isPending}
        title="驳回资金申请"
        extra="驳回原因记入审计日志，发起人可在此列表看到"
        placeholder="如：金额与工单不符"
        check={(reason) => {
          const parsed = moneyRequestDecisionSchema.safeParse({ reason });
          return parsed.success ? undefined : parsed.error.issues[0]?.message;
        }}
        onCancel={() => setRejecting(null)}
        onReject={(reason) => reject.mutateAsync({ id: rejecting!.id, reason }).then(() => setRejecting(null))}
      />
      <MoneyMoveModal open={moving} me={me} onClose={() => setMoving(false)} onDone={done} />
    </Flex>
  );
}

interface MoveForm {
  mobile: string;
  direction: 'credit' | 'debit';
  to: 'cash' | 'gift';
  amount: number;
  reason: string;
}

function MoneyMoveModal({ open, me, onClose, onDone }: { open: boolean; me: OperatorMe; onClose: () => void; onDone: () => void }) {
  const { message } = App.useApp();
  const [form] = Form.useForm<MoveForm>();
  // One id per opened form: a retried submit moves the money once.
  const [requestId, setRequestId] = useState(() => crypto.randomUUID());
  const move = useMutation({
    mutationFn: (v: MoveForm) => governanceApi.move({ ...v, amount: String(v.amount), giftValidDays: 365, requestId }),
    onSuccess: (r) => {
      if (r.state === 'pending') void message.warning(`超过 ${yuan(me.approvalThreshold)}，已提交审批，待另一位运营人员通过后入账`);
      else void message.success(`已入账，该账户余额 ${yuan(r.balance ?? '0')}`);
      setRequestId(crypto.randomUUID());
      form.resetFields();
      onDone();
      onClose();
    },
  });
  const direction = Form.useWatch('direction', form);
  return (
    <Modal
      open={open}
      title="加款 / 扣款"
      okText="提交"
      okButtonProps={{ loading: move.isPending }}
      cancelText="取消"
      onOk={() => form.submit()}
      onCancel={onClose}
      destroyOnHidden
    >
      <Form<MoveForm> form={form} layout="vertical" initialValues={{ direction: 'credit', to: 'cash' }} onFinish={(v) => move.mutate(v)}>
        <Form.Item name="mobile" label="用户手机号" rules={[{ required: true, pattern: /^1[3-9]\d{9}$/, message: '请输入正确的 11 位手机号' }]}>
          <Input maxLength={11} />
        </Form.Item>
        <Form.Item name="direction" label="操作">
          <Radio.Group
            options={[
              { value: 'credit', label: '加款' },
              { value: 'debit', label: '扣款' },
            ]}
          />
        </Form.Item>
        <Form.Item name="to" label="账户" extra={direction === 'debit' ? '扣款只从现金账户扣除' : undefined}>
          <Radio.Group
            options={[
              { value: 'cash', label: '现金' },
              { value: 'gift', label: '赠送金（有效期 365 天）', disabled: direction === 'debit' },
            ]}
          />
        </Form.Item>
        <Form.Item name="amount" label="金额（元）" rules={[{ required: true, message: '请输入金额' }]}>
          <InputNumber min={0.01} max={10_000_000} precision={2} style={{ width: '100%' }} />
        </Form.Item>
        <Form.Item name="reason" label="原因" rules={[{ required: true, min: 2, max: 200, message: '原因 2-200 字' }]}>
          <Input.TextArea rows={3} maxLength={200} showCount placeholder="如：工单 #1024 服务中断补偿" />
        </Form.Item>
      </Form>
    </Modal>
  );
}
