import { useState } from 'react';
import { Alert, App, Button, Card, Empty, Flex, Popconfirm, Space, Switch, Tag, Tooltip, Typography, type TableColumnsType } from 'antd';
import { PlusOutlined } from '@ant-design/icons';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { ApiKey, ApiKeyCreated } from '@console/contract';
import { API_KEY_KEYS, apiKeysApi } from '../api/model';
import { formatTime } from '../../../components/orderViews';
import { PageFrame } from '../../../components/PageFrame';
import { PagedTable, RefreshButton, usePagedQuery } from '../../../components/PagedTable';
import { formatUnitPrice } from '../../../components/Price';
import { useUrlPaging } from '../../../routing/useUrlPaging';
import { KeyFormModal } from '../components/KeyFormModal';
import { KeySecretModal } from '../components/KeySecretModal';
import { KeyUsagePanel } from '../components/KeyUsagePanel';

const NOWRAP = { whiteSpace: 'nowrap' } as const;

/** A few items as tags, the rest behind "+N"; none reads as `none`. */
function TagList({ items, none }: { items: string[]; none: string }) {
  if (items.length === 0) return <Typography.Text type="secondary">{none}</Typography.Text>;
  const shown = items.slice(0, 2);
  const rest = items.slice(2);
  return (
    <Flex gap={4} wrap>
      {shown.map((i) => (
        <Tag key={i} style={{ marginInlineEnd: 0 }}>
          {i}
        </Tag>
      ))}
      {rest.length > 0 && (
        <Tooltip title={rest.join('、')}>
          <Tag style={{ marginInlineEnd: 0 }}>+{rest.length}</Tag>
        </Tooltip>
      )}
    </Flex>
  );
}

function SpendLimitCell({ k }: { k: ApiKey }) {
  if (k.spendLimit === null) return <Typography.Text type="secondary">不限</Typography.Text>;
  return (
    <Space size={4} wrap>
      <span>¥{formatUnitPrice(k.spendLimit)}</span>
      {BigInt(k.spent) >= BigInt(k.spendLimit) && <Tag color="error">已用完</Tag>}
    </Space>
  );
}

/** /model/key — the account's API keys: make one (its secret shown once), limit, switch off, delete; and how to call the gateway. */
export default function KeyPage() {
  const { paging, set: setPaging } = useUrlPaging();
  const { modal } = App.useApp();
  const queryClient = useQueryClient();
  const [editing, setEditing] = useState<ApiKey | 'new' | null>(null);
  const [created, setCreated] = useState<ApiKeyCreated | null>(null);
  const list = usePagedQuery({
    queryKey: API_KEY_KEYS.list(paging.page, paging.pageSize),
    queryFn: (signal) => apiKeysApi.list(paging, signal),
  });
  const refresh = () => void queryClient.invalidateQueries({ queryKey: API_KEY_KEYS.keys });
  const toggle = useMutation({
    mutationFn: (v: { id: string; enabled: boolean }) => apiKeysApi.update(v.id, { enabled: v.enabled }, v.enabled ? '密钥已启用' : '密钥已停用'),
    onSettled: refresh,
  });
  const remove = useMutation({ mutationFn: (id: string) => apiKeysApi.remove(id), onSettled: refresh });

  const data = list.data;
  const full = data ? data.total >= data.limit : false;

  const confirmDelete = (k: ApiKey) =>
    modal.confirm({
      title: `删除密钥「${k.name}」？`,
      content: '删除后该密钥立即失效，正在使用它的应用的请求将被拒绝，且无法恢复。已产生的用量和账单不受影响。',
      okText: '确认删除',
      okButtonProps: { danger: true },
      cancelText: '取消',
      onOk: () => remove.mutateAsync(k.id).catch(() => undefined),
    });

  const columns: TableColumnsType<ApiKey> = [
    { title: '名称', dataIndex: 'name', width: 160, render: (name: string) => <Typography.Text strong>{name}</Typography.Text> },
    { title: '密钥', dataIndex: 'maskedKey', width: 170, render: (m: string) => <Typography.Text code>{m}</Typography.Text> },
    {
      title: '状态',
      key: 'status',
      width: 190,
      render: (_, k) => (
        <Flex vertical gap={4}>
          <Space size={8}>
            {k.enabled ? (
              <Popconfirm
                title={`停用密钥「${k.name}」？`}
                description="停用后使用该密钥的请求立即被拒绝，可随时重新启用。"
                okText="停用"
                okButtonProps={{ danger: true }}
                cancelText="取消"
                onConfirm={() => toggle.mutate({ id: k.id, enabled: false })}
              >
                <Switch
                  aria-label={`启用 ${k.name}`}
                  checked
                  checkedChildren="启用"
                  unCheckedChildren="停用"
                  loading={toggle.isPending && toggle.variables?.id === k.id}
                />
              </Popconfirm>
            ) : (
              <Switch
                aria-label={`启用 ${k.name}`}
                checked={false}
                checkedChildren="启用"
                unCheckedChildren="停用"
                loading={toggle.isPending && toggle.variables?.id === k.id}
                onChange={() => toggle.mutate({ id: k.id, enabled: true })}
              />
            )}
            {k.expired && (
              <Tooltip title="已过期的密钥不能使用：点「编辑」修改过期时间即可恢复">
                <Tag color="error" style={{ marginInlineEnd: 0 }}>
                  已过期
                </Tag>
              </Tooltip>
            )}
          </Space>
          <Typography.Text type="secondary" style={{ fontSize: 12 }}>
            {k.expiresAt ? `${k.expired ? '已于' : '有效期至'} ${formatTime(k.expiresAt)}${k.expired ? ' 过期' : ''}` : '永不过期'}
          </Typography.Text>
        </Flex>
      ),
    },
    { title: '累计消费', dataIndex: 'spent', width: 110, onCell: () => ({ style: NOWRAP }), render: (v: string) => `¥${formatUnitPrice(v)}` },
    { title: '消费上限', key: 'spendLimit', width: 120, render: (_, k) => <SpendLimitCell k={k} /> },
    { title: '可用模型', key: 'models', width: 200, render: (_, k) => <TagList items={k.allowedModels} none="全部模型" /> },
    { title: 'IP 白名单', key: 'ips', width: 180, render: (_, k) => <TagList items={k.allowedIps} none="不限" /> },
    {
      title: 'RPM / TPM',
      key: 'rate',
      width: 140,
      render: (_, k) => `${k.rpmLimit?.toLocaleString('en-US') ?? '不限'} / ${k.tpmLimit?.toLocaleString('en-US') ?? '不限'}`,
    },
    { title: '最近使用', dataIndex: 'lastUsedAt', width: 160, render: (v: string | null) => (v ? formatTime(v) : '从未使用') },
    { title: '创建时间', dataIndex: 'createdAt', width: 160, render: (v: string) => formatTime(v) },
    {
      title: '操作',
      key: 'op',
      width: 120,
      fixed: 'end',
      render: (_, k) => (
        <Space size={0}>
          <Button type="link" size="small" onClick={() => setEditing(k)}>
            编辑
          </Button>
          <Button type="link" size="small" danger loading={remove.isPending && remove.variables === k.id} onClick={() => confirmDelete(k)}>
            删除
          </Button>
        </Space>
      ),
    },
  ];

  const createButton = (
    <Tooltip title={full ? `已达上限 ${data!.limit} 个，请先删除不再使用的密钥` : undefined}>
      <Button type="primary" icon={<PlusOutlined />} disabled={!data || full} onClick={() => setEditing('new')}>
        新建密钥
      </Button>
    </Tooltip>
  );

  return (
    <PageFrame
      extra={
        <Space>
          <RefreshButton list={list} />
          {createButton}
        </Space>
      }
    >
      <Flex vertical gap={16}>
        <Card>
          <Flex vertical gap={16}>
            <Alert
              type="info"
              showIcon
              title={data ? `已创建 ${data.total} / ${data.limit} 个密钥` : 'API 密钥'}
              description="密钥用于通过 API 调用模型服务，费用从本账户扣除。可为每个密钥限定可用模型、来源 IP、有效期、消费上限和每分钟请求数 / Token 数；停用、过期或删除的密钥立即无法调用。完整密钥只在创建时显示一次，请妥善保管。"
            />
            <PagedTable<ApiKey>
              list={list}
              paging={paging}
              onPage={setPaging}
              unit="个密钥"
              rowKey="id"
              scroll={{ x: 1700 }}
              columns={columns}
              empty={
                <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="还没有 API 密钥：新建一个，即可通过 API 调用模型">
                  <Button type="primary" icon={<PlusOutlined />} onClick={() => setEditing('new')}>
                    新建密钥
                  </Button>
                </Empty>
              }
            />
          </Flex>
        </Card>
        <KeyUsagePanel />
      </Flex>
      {editing && (
        <KeyFormModal
          apiKey={editing === 'new' ? null : editing}
          onClose={() => setEditing(null)}
          onSaved={refresh}
          onCreated={(k) => {
            setEditing(null);
            setCreated(k);
          }}
        />
      )}
      {created && <KeySecretModal created={created} onClose={() => setCreated(null)} />}
    </PageFrame>
  );
}
