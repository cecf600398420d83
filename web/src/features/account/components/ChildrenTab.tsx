import { useState } from 'react';
import { Alert, App, Button, Checkbox, Flex, Form, Input, Modal, Popconfirm, Radio, Space, Switch, Tag, Typography } from 'antd';
import { PlusOutlined } from '@ant-design/icons';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { formatMinute } from '../../../lib/time';
import {
  PAGE,
  PERMISSION_FLAGS,
  PermissionLabel,
  SpendLimitPeriod,
  formatYuan,
  yuanToUnits,
  type Child,
  type ChildPermissions,
  type PermissionFlag,
  type SpendLimit,
} from '@console/contract';
import { ACCOUNT_KEYS, childApi } from '../api/account';
import { PagedTable, usePagedQuery } from '../../../components/PagedTable';
import { useUrlPaging } from '../../../routing/useUrlPaging';
import { passwordRules } from '../../../lib/passwordRules';
const childPasswordRules = passwordRules('请输入密码');
const permissionOptions = PERMISSION_FLAGS.map((f) => ({ value: f, label: PermissionLabel[f] }));
const toPermissions = (flags: PermissionFlag[]): ChildPermissions => Object.fromEntries(PERMISSION_FLAGS.map((f) => [f, flags.includes(f)]));
const granted = (c: Child) => PERMISSION_FLAGS.filter((f) => c.permissions[f]);
/** A tag shows the permission's name only ("财务", not what it opens). */
const tagLabel = (f: PermissionFlag) => PermissionLabel[f].split('：')[0];

type LimitChoice = 'none' | SpendLimit['period'];
const limitOptions: { value: LimitChoice; label: string }[] = [
  { value: 'none', label: '不限' },
  { value: 'Month', label: `${SpendLimitPeriod.label('Month')}（北京时间自然月）` },
  { value: 'Total', label: SpendLimitPeriod.label('Total') },
];
/** Cells that must stay on one line (names, times, the switch, the links). */
const NOWRAP = { whiteSpace: 'nowrap' } as const;

/** Yuan to the fen, as typed in the limit field. */
const YUAN = /^\d{1,9}(\.\d{1,2})?$/;

/** What the child list shows of a limit and the spend against it. */
function SpendCell({ child }: { child: Child }) {
  const { spendLimit: limit, spent } = child;
  const used = limit ? BigInt(limit.period === 'Month' ? spent.month : spent.total) : 0n;
  return (
    <Space orientation="vertical" size={0}>
      <span>
        {limit ? `${SpendLimitPeriod.label(limit.period)} ¥${formatYuan(limit.amount)}` : '不限'}
        {limit && used >= BigInt(limit.amount) && (
          <Tag color="error" style={{ marginLeft: 8 }}>
            额度已用完
          </Tag>
        )}
      </span>
      <Typography.Text type="secondary" style={{ fontSize: 12 }}>
        本月已用 ¥{formatYuan(spent.month)} · 累计 ¥{formatYuan(spent.total)}
      </Typography.Text>
    </Space>
  );
}

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
        title="子账号使用「主账号手机号 + 子账号名 + 密码」登录，消费主账号余额，只能使用授予的功能。子账号的操作记录可在操作日志中按子账号查看。"
        description="未授予「财务」权限的子账号看不到主账号的余额、充值记录和收支明细，只能看到自己创建的实例、订单、账单和操作日志。可为每个子账号设置消费额度（每月或累计）：超出额度的订单不能支付，按量实例在额度用完时自动关机。"
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
        // Below this the names, times, switch and links wrap a character at a time (1280 px): scroll instead,
        // the actions staying in view.
        scroll={{ x: 1100 }}
        columns={[
          {
            title: '子账号名',
            dataIndex: 'childName',
            onHeaderCell: () => ({ style: NOWRAP }),
            render: (name: string, c) => (
              <Space orientation="vertical" size={0}>
                {name}
                {c.remark && <Typography.Text type="secondary">{c.remark}</Typography.Text>}
              </Space>
            ),
          },
          {
            title: '权限',
            render: (_, c) =>
              granted(c).length ? granted(c).map((f) => <Tag key={f}>{tagLabel(f)}</Tag>) : <Typography.Text type="secondary">无</Typography.Text>,
          },
          { title: '消费额度', onCell: () => ({ style: NOWRAP }), render: (_, c) => <SpendCell child={c} /> },
          {
            title: '状态',
            onCell: () => ({ style: NOWRAP }),
            render: (_, c) => (
              <Popconfirm
                title={c.disabled ? `启用子账号 ${c.childName}？` : `停用子账号 ${c.childName}？停用后其登录立即失效。`}
                onConfirm={() => toggle.mutate(c)}
              >
                <Switch checked={!c.disabled} checkedChildren="启用" unCheckedChildren="停用" loading={toggle.isPending && toggle.variables?.id === c.id} />
              </Popconfirm>
            ),
          },
          {
            title: '最近登录',
            dataIndex: 'lastLoginAt',
            onCell: () => ({ style: NOWRAP }),
            render: (t: string | null) => (t ? formatMinute(t) : '从未登录'),
          },
          { title: '创建时间', dataIndex: 'createdAt', onCell: () => ({ style: NOWRAP }), render: (t: string) => formatMinute(t) },
          {
            title: '操作',
            fixed: 'end',
            onCell: () => ({ style: NOWRAP }),
            render: (_, c) => (
              <Space>
                <a onClick={() => setEditing(c)}>修改权限与额度</a>
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
  const [form] = Form.useForm<{ childName: string; password: string; remark?: string; flags: PermissionFlag[]; limit: LimitChoice; limitYuan?: string }>();
  // useWatch is undefined until the form has mounted: start from what the child has.
  const limitChoice: LimitChoice = Form.useWatch('limit', form) ?? child?.spendLimit?.period ?? 'none';
  const [busy, setBusy] = useState(false);
  const { message } = App.useApp();
  const save = async () => {
    const v = await form.validateFields().catch(() => null);
    if (!v) return; // the form shows what is missing
    setBusy(true);
    try {
      const permissions = toPermissions(v.flags ?? []);
      const spendLimit: SpendLimit | null = v.limit === 'none' ? null : { amount: String(yuanToUnits(v.limitYuan!.trim())), period: v.limit };
      if (child) await childApi.update(child.id, { remark: v.remark ?? '', permissions, spendLimit });
      else await childApi.create({ childName: v.childName, password: v.password, remark: v.remark, permissions, spendLimit });
      void message.success(child ? `子账号 ${child.childName} 已保存` : `子账号 ${v.childName} 已创建`);
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
      <Form
        form={form}
        layout="vertical"
        requiredMark={false}
        initialValues={{
          remark: child?.remark,
          flags: child ? granted(child) : [],
          limit: child?.spendLimit?.period ?? 'none',
          limitYuan: child?.spendLimit ? formatYuan(child.spendLimit.amount) : undefined,
        }}
      >
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
            <Form.Item name="password" label="登录密码" rules={childPasswordRules}>
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
        <Form.Item
          name="limit"
          label="消费额度"
          extra="子账号创建的订单从主账号余额扣除的金额（赠送金与现金，不含代金券）计入额度；超出额度的订单不能支付，按量实例在额度用完时自动关机"
        >
          <Radio.Group options={limitOptions} />
        </Form.Item>
        {limitChoice !== 'none' && (
          <Form.Item
            name="limitYuan"
            label="额度（元）"
            rules={[
              { required: true, message: '请输入额度' },
              { pattern: YUAN, message: '额度须为金额，最多两位小数' },
            ]}
          >
            <Input prefix="¥" placeholder="如 500" maxLength={12} inputMode="decimal" />
          </Form.Item>
        )}
      </Form>
    </Modal>
  );
}

function PasswordModal({ child, onClose }: { child: Child; onClose: () => void }) {
  const [form] = Form.useForm<{ password: string }>();
  const [busy, setBusy] = useState(false);
  const { message } = App.useApp();
  const save = async () => {
    const v = await form.validateFields().catch(() => null);
    if (!v) return;
    const { password } = v;
    setBusy(true);
    try {
      await childApi.setPassword(child.id, password);
      void message.success(`${child.childName} 的密码已重置`);
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
        <Form.Item name="password" label="新密码" rules={childPasswordRules} extra="重置后该子账号的登录会话全部失效">
          <Input.Password autoComplete="new-password" />
        </Form.Item>
      </Form>
    </Modal>
  );
}
