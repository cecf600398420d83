import { useState } from 'react';
import { Alert, Button, Checkbox, Flex, Form, Input, Modal, Popconfirm, Space, Switch, Tag, Typography } from 'antd';
import { PlusOutlined } from '@ant-design/icons';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import dayjs from 'dayjs';
import { PAGE, PERMISSION_FLAGS, PermissionLabel, PASSWORD_RULE, type Child, type ChildPermissions, type PermissionFlag } from '@console/contract';
import { ACCOUNT_KEYS, childApi } from '../../../api/account';
import { PagedTable, usePagedQuery } from '../../../components/PagedTable';
import { useUrlPaging } from '../../../routing/useUrlPaging';
const passwordRules = [
  { required: true, message: '请输入密码' },
  { min: PASSWORD_RULE.min, max: PASSWORD_RULE.max, message: `密码为 ${PASSWORD_RULE.min}-${PASSWORD_RULE.max} 位` },
  { pattern: /^(?=.*[A-Za-z])(?=.*\d)\S+$/, message: '密码须同时包含字母和数字，且不含空格' },
];
const permissionOptions = PERMISSION_FLAGS.map((f) => ({ value: f, label: PermissionLabel[f] }));
const toPermissions = (flags: PermissionFlag[]): ChildPermissions => Object.fromEntries(PERMISSION_FLAGS.map((f) => [f, flags.includes(f)]));
const granted = (c: Child) => PERMISSION_FLAGS.filter((f) => c.permissions[f]);

/** 子账号: create, grant, disable, reset the password of and delete the team's sub-accounts. */
export function ChildrenTab() {
  const { paging, set: setPaging } = useUrlPaging();
  const [editing, setEditing] = useState<Child | 'new' | null>(null);
  const [resetting, setResetting] = useState<Child | null>(null);
  const queryClient = useQueryClient();
  const list = usePagedQuery({
    queryKey: ACCOUNT_KEYS.childList(paging.page, paging.pageSize),
    queryFn: () => childApi.list(paging.page, paging.pageSize),
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: ACCOUNT_KEYS.children });
  const toggle = useMutation({ mutationFn: (c: Child) => childApi.update(c.id, { disabled: !c.disabled }), onSettled: refresh });
  const remove = useMutation({ mutationFn: (c: Child) => childApi.remove(c.id), onSettled: refresh });

  return (
    <Flex vertical gap={16}>
      <Alert
        type="info"
        showIcon
        message="子账号使用「主账号手机号 + 子账号名 + 密码」登录，消费主账号余额，只能使用授予的功能。子账号的操作记录可在操作日志中按子账号查看。"
      />
      <Flex justify="flex-end">
        <Button type="primary" icon={<PlusOutlined />} onClick={() => setEditing('new')}>
          创建子账号
        </Button>
      </Flex>
      <PagedTable<Child>
        list={list}
        paging={paging}
        onPage={setPaging}
        unit="个"
        empty="还没有子账号，点击「创建子账号」为团队成员开通"
        rowKey="id"
        tableLayout="auto"
        columns={[
          {
            title: '子账号名',
            dataIndex: 'childName',
            render: (name: string, c) => (
              <Space direction="vertical" size={0}>
                {name}
                {c.remark && <Typography.Text type="secondary">{c.remark}</Typography.Text>}
              </Space>
            ),
          },
          {
            title: '权限',
            render: (_, c) =>
              granted(c).length ? granted(c).map((f) => <Tag key={f}>{PermissionLabel[f]}</Tag>) : <Typography.Text type="secondary">无</Typography.Text>,
          },
          {
            title: '状态',
            render: (_, c) => (
              <Popconfirm
                title={c.disabled ? `启用子账号 ${c.childName}？` : `停用子账号 ${c.childName}？停用后其登录立即失效。`}
                onConfirm={() => toggle.mutate(c)}
              >
                <Switch checked={!c.disabled} checkedChildren="启用" unCheckedChildren="停用" loading={toggle.isPending && toggle.variables?.id === c.id} />
              </Popconfirm>
            ),
          },
          { title: '最近登录', dataIndex: 'lastLoginAt', render: (t: string | null) => (t ? dayjs(t).format('YYYY-MM-DD HH:mm') : '从未登录') },
          { title: '创建时间', dataIndex: 'createdAt', render: (t: string) => dayjs(t).format('YYYY-MM-DD HH:mm') },
          {
            title: '操作',
            render: (_, c) => (
              <Space>
                <a onClick={() => setEditing(c)}>修改权限</a>
                <a onClick={() => setResetting(c)}>重置密码</a>
                <Link to={`${PAGE.log}?actor=${c.id}`}>操作记录</Link>
                <Popconfirm
                  title={`删除子账号 ${c.childName}？`}
                  description="删除后该子账号无法登录，其操作记录仍保留。"
                  okButtonProps={{ danger: true }}
                  okText="删除"
                  onConfirm={() => remove.mutate(c)}
                >
                  <a style={{ color: '#ff4d4f' }}>删除</a>
                </Popconfirm>
              </Space>
            ),
          },
        ]}
      />
      {editing && <ChildModal child={editing === 'new' ? null : editing} onClose={() => setEditing(null)} onSaved={refresh} />}
      {resetting && <PasswordModal child={resetting} onClose={() => setResetting(null)} />}
    </Flex>
  );
}

function ChildModal({ child, onClose, onSaved }: { child: Child | null; onClose: () => void; onSaved: () => void }) {
  const [form] = Form.useForm<{ childName: string; password: string; remark?: string; flags: PermissionFlag[] }>();
  const [busy, setBusy] = useState(false);
  const save = async () => {
    const v = await form.validateFields().catch(() => null);
    if (!v) return; // the form shows what is missing
    setBusy(true);
    try {
      const permissions = toPermissions(v.flags ?? []);
      if (child) await childApi.update(child.id, { remark: v.remark ?? '', permissions });
      else await childApi.create({ childName: v.childName, password: v.password, remark: v.remark, permissions });
      onSaved();
      onClose();
    } catch {
      // shown by the request layer (e.g. 名称已存在)
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal
      open
      title={child ? `修改子账号 ${child.childName}` : '创建子账号'}
      onOk={save}
      onCancel={onClose}
      confirmLoading={busy}
      okText="保存"
      destroyOnHidden
    >
      <Form form={form} layout="vertical" requiredMark={false} initialValues={{ remark: child?.remark, flags: child ? granted(child) : [] }}>
        {!child && (
          <>
            <Form.Item
              name="childName"
              label="子账号名"
              rules={[
                { required: true, message: '请输入子账号名' },
                { pattern: /^[A-Za-z][A-Za-z0-9_]{2,19}$/, message: '3-20 位字母、数字或下划线，以字母开头' },
              ]}
            >
              <Input placeholder="如 dev_zhang" maxLength={20} />
            </Form.Item>
            <Form.Item name="password" label="登录密码" rules={passwordRules}>
              <Input.Password autoComplete="new-password" />
            </Form.Item>
          </>
        )}
        <Form.Item name="remark" label="备注" rules={[{ max: 50, message: '备注不能超过 50 个字符' }]}>
          <Input placeholder="如：算法组 张三" />
        </Form.Item>
        <Form.Item name="flags" label="权限" extra="未勾选任何权限的子账号只能查看自己的账号信息">
          <Checkbox.Group options={permissionOptions} style={{ display: 'grid', gridTemplateColumns: '1fr 1fr', rowGap: 8 }} />
        </Form.Item>
      </Form>
    </Modal>
  );
}

function PasswordModal({ child, onClose }: { child: Child; onClose: () => void }) {
  const [form] = Form.useForm<{ password: string }>();
  const [busy, setBusy] = useState(false);
  const save = async () => {
    const v = await form.validateFields().catch(() => null);
    if (!v) return;
    const { password } = v;
    setBusy(true);
    try {
      await childApi.setPassword(child.id, password);
      onClose();
    } catch {
      // shown by the request layer
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal open title={`重置 ${child.childName} 的密码`} onOk={save} onCancel={onClose} confirmLoading={busy} okText="重置" destroyOnHidden>
      <Form form={form} layout="vertical" requiredMark={false}>
        <Form.Item name="password" label="新密码" rules={passwordRules} extra="重置后该子账号的登录会话全部失效">
          <Input.Password autoComplete="new-password" />
        </Form.Item>
      </Form>
    </Modal>
  );
}
