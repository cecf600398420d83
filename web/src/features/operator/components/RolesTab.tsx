import { useState } from 'react';
import { Alert, Button, Flex, Form, Input, Modal, Select, Space, Table, Tag, Typography } from 'antd';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import {
  OPERATOR_PERMISSION_LABELS,
  OPERATOR_ROLE_LABELS,
  OPERATOR_ROLES,
  ROLE_PERMISSIONS,
  operatorRoleChangeSchema,
  type OperatorAccount,
  type OperatorRole,
} from '@console/contract';
import { LoadError } from '../../../components/LoadError';
import { OPERATOR_KEYS } from '../../account';
import { governanceApi, governanceQueries } from '../api/governance';
import { formatMinute } from './operatorViews';

const ROLE_COLOR: Record<OperatorRole, string> = { admin: 'red', finance: 'gold', support: 'blue', ops: 'green' };

export function RoleTag({ role, onClose }: { role: OperatorRole; onClose?: () => void }) {
  return (
    <Tag color={ROLE_COLOR[role]} closable={!!onClose} onClose={(e) => (e.preventDefault(), onClose?.())}>
      {OPERATOR_ROLE_LABELS[role]}
    </Tag>
  );
}

/** 角色与权限: who holds which operator role, what each role may do, and (管理员) granting and revoking. */
export function RolesTab({ myUserId }: { myUserId: string | null }) {
  const queryClient = useQueryClient();
  const list = useQuery(governanceQueries.accounts());
  const [revoking, setRevoking] = useState<{ account: OperatorAccount; role: OperatorRole } | null>(null);
  const done = () => queryClient.invalidateQueries({ queryKey: OPERATOR_KEYS.all });
  const grant = useMutation({ mutationFn: governanceApi.grant, onSuccess: done });
  const revoke = useMutation({ mutationFn: governanceApi.revoke, onSuccess: done, onSettled: () => setRevoking(null) });
  const [form] = Form.useForm<{ mobile: string; role: OperatorRole; reason: string }>();

  return (
    <Flex vertical gap={16}>
      <Form
        form={form}
        layout="inline"
        aria-label="授予角色"
        onFinish={(v) => grant.mutateAsync(operatorRoleChangeSchema.parse(v)).then(() => form.resetFields())}
      >
        <Form.Item
          name="mobile"
          rules={[
            { required: true, message: '请输入手机号' },
            { pattern: /^1[3-9]\d{9}$/, message: '请输入正确的 11 位手机号' },
          ]}
        >
          <Input placeholder="运营人员手机号" aria-label="手机号" maxLength={11} style={{ width: 160 }} />
        </Form.Item>
        <Form.Item name="role" rules={[{ required: true, message: '请选择角色' }]}>
          <Select
            placeholder="角色"
            aria-label="角色"
            style={{ width: 120 }}
            options={OPERATOR_ROLES.map((r) => ({ value: r, label: OPERATOR_ROLE_LABELS[r] }))}
          />
        </Form.Item>
        <Form.Item name="reason">
          <Input placeholder="原因（记入审计日志）" aria-label="原因" maxLength={200} style={{ width: 220 }} />
        </Form.Item>
        <Button type="primary" htmlType="submit" loading={grant.isPending}>
          授予角色
        </Button>
      </Form>

      {list.isError && !list.data ? (
        <LoadError error={list.error} onRetry={() => void list.refetch()} />
      ) : (
        <Table<OperatorAccount>
          rowKey="userId"
          loading={list.isLoading}
          dataSource={list.data?.items}
          pagination={false}
          locale={{ emptyText: '暂无运营人员' }}
          columns={[
            { title: '手机号', dataIndex: 'mobile', width: 140 },
            {
              title: '角色',
              key: 'roles',
              render: (_, a) => (
                <Space size={4} wrap>
                  {a.roles.map((role) => {
                    const locked = (a.byConfiguration && role === 'admin') || (role === 'admin' && a.userId === myUserId);
                    return <RoleTag key={role} role={role} onClose={locked ? undefined : () => setRevoking({ account: a, role })} />;
                  })}
                  {a.byConfiguration && <Typography.Text type="secondary">（OPERATOR_MOBILES 配置）</Typography.Text>}
                </Space>
              ),
            },
            { title: '授予时间', dataIndex: 'grantedAt', width: 160, render: (v: string | null) => (v ? formatMinute(v) : '--') },
          ]}
        />
      )}
      <Modal
        open={!!revoking}
        title="收回角色"
        okText="确认收回"
        okButtonProps={{ danger: true, loading: revoke.isPending }}
        cancelText="取消"
        onOk={() => revoking && revoke.mutate({ mobile: revoking.account.mobile, role: revoking.role, reason: '' })}
        onCancel={() => setRevoking(null)}
      >
        {revoking && `收回 ${revoking.account.mobile} 的「${OPERATOR_ROLE_LABELS[revoking.role]}」角色？收回后对方的下一次请求即失去该角色的权限。`}
      </Modal>

      <Alert
        type="info"
        showIcon
        message="各角色的权限"
        description={
          <Table
            size="small"
            rowKey="role"
            pagination={false}
            dataSource={OPERATOR_ROLES.map((role) => ({ role }))}
            columns={[
              { title: '角色', dataIndex: 'role', width: 90, render: (r: OperatorRole) => <RoleTag role={r} /> },
              {
                title: '权限',
                dataIndex: 'role',
                key: 'permissions',
                render: (r: OperatorRole) => ROLE_PERMISSIONS[r].map((p) => OPERATOR_PERMISSION_LABELS[p]).join('；'),
              },
            ]}
          />
        }
      />
    </Flex>
  );
}
