/**
 * 「模型渠道」 of the operator area: the upstream channels behind the model square (with each one's
 * health as the answering server process sees it) and the square's models with their prices and
 * 上架 / 下架. Every edit answers the whole list again, which replaces the one on screen.
 */
import { useState } from 'react';
import { Alert, App, Button, Empty, Flex, Popconfirm, Space, Spin, Switch, Table, Tag, Tooltip, Typography, type TableColumnsType } from 'antd';
import { PlusOutlined } from '@ant-design/icons';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { formatClock } from '../../../lib/time';
import {
  MODEL_CHANNEL_KIND_LABELS,
  type ModelChannelSaveRequest,
  type OperatorModel,
  type OperatorModelChannel,
  type OperatorModelChannels,
} from '@console/contract';
import { LoadError } from '../../../components/LoadError';
import { RefreshButton } from '../../../components/PagedTable';
import { MODEL_CHANNEL_KEYS, modelChannelsApi, modelChannelQueries } from '../api/modelChannels';
import { ModelChannelsForm } from './ModelChannelsForm';
import { ModelChannelsModelForm } from './ModelChannelsModelForm';

const none = <Typography.Text type="secondary">--</Typography.Text>;
const PAGE = 20;

/** The channel as a save body: what the list shows, the key left out (kept). */
function bodyOf(c: OperatorModelChannel, patch: Partial<ModelChannelSaveRequest> = {}): ModelChannelSaveRequest {
  return {
    name: c.name,
    kind: c.kind,
    ...(c.baseUrl ? { baseUrl: c.baseUrl } : {}),
    models: c.models,
    modelMap: c.modelMap,
    priority: c.priority,
    weight: c.weight,
    enabled: c.enabled,
    ...patch,
  };
}

/** The 上架 models that no other enabled channel serves: what stops working without `channel`. */
function orphans(channel: OperatorModelChannel, data: OperatorModelChannels): OperatorModel[] {
  return data.models.filter(
    (m) => m.active && channel.models.includes(m.id) && !data.channels.some((c) => c.id !== channel.id && c.enabled && c.models.includes(m.id)),
  );
}

function orphanWarning(channel: OperatorModelChannel, data: OperatorModelChannels): string {
  const lost = orphans(channel, data);
  return lost.length ? `以下模型将没有可用渠道，调用会返回 503：${lost.map((m) => m.name).join('、')}。` : '它提供的模型还有其他渠道可用。';
}

/** A table of catalogue entries: pages only once there are more than a page of them, scrolls sideways past its columns' widths. */
function CatalogueTable<T extends { id: string }>({ rows, columns, empty }: { rows: T[]; columns: TableColumnsType<T>; empty: string }) {
  return (
    <Table<T>
      rowKey="id"
      tableLayout="fixed"
      dataSource={rows}
      columns={columns}
      pagination={rows.length > PAGE ? { pageSize: PAGE, showSizeChanger: false } : false}
      scroll={{ x: columns.reduce((sum, c) => sum + Number(c.width), 0) }}
      locale={{ emptyText: <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description={empty} /> }}
    />
  );
}

/** A catalogue entry's name, with the id that calls and files name it by under it. */
function NameWithId({ name, id }: { name: string; id: string }) {
  return (
    <Flex vertical>
      <Typography.Text strong>{name}</Typography.Text>
      <Typography.Text type="secondary" className="mono" style={{ fontSize: 12 }}>
        {id}
      </Typography.Text>
    </Flex>
  );
}

/** Whether the row with this id is the one the mutation is saving: only its control spins. */
function pendingFor(mutation: { isPending: boolean; variables?: { id: string } }, id: string): boolean {
  return mutation.isPending && mutation.variables?.id === id;
}

function Health({ c }: { c: OperatorModelChannel }) {
  if (!c.enabled) return null;
  if (c.problem) {
    return (
      <Tooltip title={c.problem}>
        <Tag color="error" style={{ marginInlineEnd: 0 }}>
          不可用
        </Tag>
      </Tooltip>
    );
  }
  if (c.health.coolingUntil) {
    return (
      <Tooltip title={`连续失败 ${c.health.failures} 次${c.health.lastError ? `：${c.health.lastError}` : ''}；冷却期间仅在其他渠道都不可用时才会尝试`}>
        <Space size={4} wrap>
          <Tag color="warning" style={{ marginInlineEnd: 0 }}>
            冷却中
          </Tag>
          <Typography.Text type="secondary" style={{ fontSize: 12 }}>
            至 {formatClock(c.health.coolingUntil)}
          </Typography.Text>
        </Space>
      </Tooltip>
    );
  }
  return (
    <Tag color="success" style={{ marginInlineEnd: 0 }}>
      正常
    </Tag>
  );
}

export function ModelChannelsTab() {
  const queryClient = useQueryClient();
  const { modal } = App.useApp();
  const list = useQuery({
    ...modelChannelQueries.all(),
    // A cooldown ends by itself: look again while one is running.
    refetchInterval: (q) => (q.state.data?.channels.some((c) => c.health.coolingUntil) ? 10_000 : false),
  });
  const [editing, setEditing] = useState<OperatorModelChannel | 'new' | null>(null);
  const [pricing, setPricing] = useState<OperatorModel | null>(null);
  const replace = (next: OperatorModelChannels) => queryClient.setQueryData(MODEL_CHANNEL_KEYS.all, next);
  const refresh = () => queryClient.invalidateQueries({ queryKey: MODEL_CHANNEL_KEYS.all });

  const toggleChannel = useMutation({
    mutationFn: (c: OperatorModelChannel) =>
      modelChannelsApi.saveChannel(c.id, bodyOf(c, { enabled: !c.enabled }), c.enabled ? `渠道「${c.name}」已停用` : `渠道「${c.name}」已启用`),
    onSuccess: replace,
    onError: () => void refresh(),
  });
  const removeChannel = useMutation({ mutationFn: (id: string) => modelChannelsApi.deleteChannel(id), onSuccess: replace, onError: () => void refresh() });
  const toggleModel = useMutation({
    mutationFn: (m: OperatorModel) =>
      modelChannelsApi.updateModel(m.id, { active: !m.active }, m.active ? `模型「${m.name}」已下架` : `模型「${m.name}」已上架`),
    onSuccess: replace,
    onError: () => void refresh(),
  });

  if (list.isPending) return <Spin style={{ display: 'block', margin: '48px auto' }} />;
  if (list.isError && !list.data) return <LoadError error={list.error} onRetry={() => void list.refetch()} />;
  const data = list.data;

  const confirmDelete = (c: OperatorModelChannel) =>
    modal.confirm({
      title: `删除渠道「${c.name}」？`,
      content: `删除后该渠道不再接收请求。${orphanWarning(c, data)}目录文件中的模型或渠道配置下次变化时，文件中的渠道会重新生效。`,
      okText: '确认删除',
      okButtonProps: { danger: true },
      cancelText: '取消',
      onOk: () => removeChannel.mutateAsync(c.id).catch(() => undefined),
    });

  const channelColumns: TableColumnsType<OperatorModelChannel> = [
    {
      title: '名称',
      key: 'name',
      width: 180,
      render: (_, c) => <NameWithId name={c.name} id={c.id} />,
    },
    { title: '类型', dataIndex: 'kind', width: 130, render: (k: OperatorModelChannel['kind']) => MODEL_CHANNEL_KIND_LABELS[k] },
    {
      title: 'Base URL',
      key: 'baseUrl',
      width: 240,
      render: (_, c) =>
        c.baseUrl ? (
          <Flex vertical>
            <Typography.Text className="mono" style={{ fontSize: 12 }} ellipsis={{ tooltip: c.baseUrl }}>
              {c.baseUrl}
            </Typography.Text>
            <Typography.Text type="secondary" style={{ fontSize: 12 }}>
              {c.apiKeyEnv ? `密钥：环境变量 ${c.apiKeyEnv}` : c.apiKeySet ? '密钥：已设置' : '密钥：未设置'}
            </Typography.Text>
          </Flex>
        ) : (
          none
        ),
    },
    {
      title: '模型',
      key: 'models',
      width: 260,
      render: (_, c) => (
        <Flex gap={4} wrap>
          {c.models.map((id) => (
            <Tooltip key={id} title={c.modelMap[id] ? `上游名称：${c.modelMap[id]}` : undefined}>
              <Tag style={{ marginInlineEnd: 0 }}>{c.modelMap[id] ? `${id} → ${c.modelMap[id]}` : id}</Tag>
            </Tooltip>
          ))}
        </Flex>
      ),
    },
    { title: '优先级', dataIndex: 'priority', width: 80, align: 'right' },
    { title: '权重', dataIndex: 'weight', width: 70, align: 'right' },
    {
      title: '状态',
      key: 'status',
      width: 190,
      render: (_, c) => (
        <Space size={8} wrap>
          {c.enabled ? (
            <Popconfirm
              title={`停用渠道「${c.name}」？`}
              description={`停用后该渠道不再接收请求。${orphanWarning(c, data)}`}
              okText="停用"
              okButtonProps={{ danger: true }}
              cancelText="取消"
              onConfirm={() => toggleChannel.mutate(c)}
            >
              <Switch aria-label={`启用渠道 ${c.name}`} checked checkedChildren="启用" unCheckedChildren="停用" loading={pendingFor(toggleChannel, c.id)} />
            </Popconfirm>
          ) : (
            <Switch
              aria-label={`启用渠道 ${c.name}`}
              checked={false}
              checkedChildren="启用"
              unCheckedChildren="停用"
              loading={pendingFor(toggleChannel, c.id)}
              onChange={() => toggleChannel.mutate(c)}
            />
          )}
          <Health c={c} />
        </Space>
      ),
    },
    {
      title: '操作',
      key: 'actions',
      width: 120,
      fixed: 'right',
      render: (_, c) => (
        <Space size={12}>
          <Button type="link" style={{ paddingInline: 0 }} onClick={() => setEditing(c)}>
            编辑
          </Button>
          <Button type="link" danger style={{ paddingInline: 0 }} onClick={() => confirmDelete(c)}>
            删除
          </Button>
        </Space>
      ),
    },
  ];

  const perMillion = (yuan: string) => <span className="amount-cell">¥{yuan}</span>;
  const modelColumns: TableColumnsType<OperatorModel> = [
    {
      title: '模型',
      key: 'model',
      width: 220,
      render: (_, m) => <NameWithId name={m.name} id={m.id} />,
    },
    { title: '类型', dataIndex: 'type', width: 70, render: (t: OperatorModel['type']) => (t === 'chat' ? '对话' : '向量') },
    { title: '输入（¥ / 百万 Token）', dataIndex: 'inputYuanPerMillion', width: 150, align: 'right', render: perMillion },
    { title: '输出（¥ / 百万 Token）', dataIndex: 'outputYuanPerMillion', width: 150, align: 'right', render: perMillion },
    { title: '排序', dataIndex: 'sort', width: 70, align: 'right' },
    {
      title: '标签',
      dataIndex: 'tags',
      width: 180,
      render: (tags: string[]) =>
        tags.length ? (
          <Flex gap={4} wrap>
            {tags.map((t) => (
              <Tag key={t} style={{ marginInlineEnd: 0 }}>
                {t}
              </Tag>
            ))}
          </Flex>
        ) : (
          none
        ),
    },
    {
      title: '状态',
      dataIndex: 'active',
      width: 90,
      render: (active: boolean, m) => {
        const served = data.channels.some((c) => c.enabled && c.models.includes(m.id));
        if (!active) return <Tag>已下架</Tag>;
        return served ? (
          <Tag color="success">已上架</Tag>
        ) : (
          <Tooltip title="没有启用的渠道提供该模型，调用会返回 503：请在上方启用或新建渠道">
            <Tag color="warning">无可用渠道</Tag>
          </Tooltip>
        );
      },
    },
    {
      title: '操作',
      key: 'actions',
      width: 120,
      fixed: 'right',
      render: (_, m) => (
        <Space size={12}>
          <Button type="link" style={{ paddingInline: 0 }} onClick={() => setPricing(m)}>
            编辑
          </Button>
          {m.active ? (
            <Popconfirm
              title={`下架模型「${m.name}」？`}
              description="下架后模型广场不再显示它，使用它的 API 调用将返回 404；可随时重新上架。"
              okText="下架"
              okButtonProps={{ danger: true }}
              cancelText="取消"
              onConfirm={() => toggleModel.mutate(m)}
            >
              <Button type="link" danger style={{ paddingInline: 0 }} loading={pendingFor(toggleModel, m.id)}>
                下架
              </Button>
            </Popconfirm>
          ) : (
            <Button type="link" style={{ paddingInline: 0 }} loading={pendingFor(toggleModel, m.id)} onClick={() => toggleModel.mutate(m)}>
              上架
            </Button>
          )}
        </Space>
      ),
    },
  ];

  return (
    <Flex vertical gap={24}>
      <Alert
        type="info"
        showIcon
        title="此处的修改立即对所有服务器生效，并在重启后保留"
        description="但目录文件（catalogue.json）中的 models 或 modelChannels 下次变化并被应用时，模型与渠道会整体恢复为文件中的配置，这里的修改随之失效（文件其他部分的修改不影响）。需要长期保留的修改，请同步写入目录文件。"
      />
      {list.isError && (
        <Alert
          type="warning"
          showIcon
          title={`刷新失败：${list.error.message}`}
          action={
            <Button size="small" onClick={() => void list.refetch()}>
              重试
            </Button>
          }
        />
      )}
      <Flex vertical gap={12}>
        <Flex justify="space-between" align="center" gap={12} wrap>
          <Typography.Title level={5} style={{ margin: 0 }}>
            上游渠道
          </Typography.Title>
          <Space>
            <RefreshButton list={list} />
            <Button type="primary" icon={<PlusOutlined />} onClick={() => setEditing('new')}>
              新建渠道
            </Button>
          </Space>
        </Flex>
        <Typography.Text type="secondary">
          调用某模型时先用优先级最高的渠道，同优先级按权重分配；渠道失败后冷却 30 秒起（连续失败加倍，最长 10 分钟）。健康状态为当前服务进程所见。
        </Typography.Text>
        <CatalogueTable rows={data.channels} columns={channelColumns} empty="暂无渠道：模型广场的模型都无法调用，请新建渠道" />
      </Flex>
      <Flex vertical gap={12}>
        <Typography.Title level={5} style={{ margin: 0 }}>
          模型
        </Typography.Title>
        <CatalogueTable rows={data.models} columns={modelColumns} empty="目录文件中没有模型：请在 catalogue.json 的 models 中添加" />
      </Flex>
      {editing && (
        <ModelChannelsForm
          channel={editing === 'new' ? null : editing}
          models={data.models}
          channels={data.channels}
          onClose={() => setEditing(null)}
          onSaved={replace}
        />
      )}
      {pricing && <ModelChannelsModelForm model={pricing} onClose={() => setPricing(null)} onSaved={replace} />}
    </Flex>
  );
}
