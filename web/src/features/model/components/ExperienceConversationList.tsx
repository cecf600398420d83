import { Alert, Button, Card, Empty, Flex, Popconfirm, Spin, Tooltip, Typography } from 'antd';
import { DeleteOutlined, PlusOutlined } from '@ant-design/icons';
import type { UseQueryResult } from '@tanstack/react-query';
import { CONVERSATION_LIMIT, type ConversationSummary } from '@console/contract';
import { formatTime } from '../../../components/orderViews';

interface Props {
  conversations: UseQueryResult<{ list: ConversationSummary[] }>;
  currentId: string | null;
  /** While an answer streams the conversation cannot change. */
  busy: boolean;
  openingId: string | null;
  onNew: () => void;
  onOpen: (id: string) => void;
  onDelete: (id: string) => Promise<unknown>;
}

/** The left column: the user's saved conversations, newest first; 新建会话, switch, delete. */
export function ExperienceConversationList({ conversations, currentId, busy, openingId, onNew, onOpen, onDelete }: Props) {
  const list = conversations.data?.list ?? [];
  const full = list.length >= CONVERSATION_LIMIT;
  const busyHint = busy ? '回答生成中，请先停止或等待完成' : undefined;
  return (
    <Card
      size="small"
      title="会话"
      extra={
        <Tooltip title={busyHint}>
          <Button type="primary" size="small" icon={<PlusOutlined />} onClick={onNew} disabled={busy}>
            新建会话
          </Button>
        </Tooltip>
      }
      styles={{ body: { padding: 8 } }}
    >
      {conversations.isPending ? (
        <Flex justify="center" style={{ padding: 24 }}>
          <Spin description="加载中…" />
        </Flex>
      ) : conversations.isError ? (
        <Alert
          type="error"
          showIcon
          title="会话列表加载失败"
          description={conversations.error.message}
          action={
            <Button size="small" onClick={() => void conversations.refetch()}>
              重试
            </Button>
          }
        />
      ) : list.length === 0 ? (
        <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="暂无会话，发送第一条消息后会自动保存" />
      ) : (
        <nav aria-label="会话列表" style={{ maxHeight: 'calc(100vh - 300px)', overflow: 'auto' }}>
          {list.map((c) => {
            const active = c.id === currentId;
            return (
              <Flex
                key={c.id}
                align="center"
                gap={4}
                style={{
                  padding: '6px 8px',
                  borderRadius: 6,
                  marginBottom: 2,
                  background: active ? 'var(--ant-color-primary-bg)' : undefined,
                }}
              >
                <Tooltip title={busyHint} placement="right">
                  <button
                    type="button"
                    aria-current={active ? 'true' : undefined}
                    disabled={busy && !active}
                    onClick={() => !active && onOpen(c.id)}
                    style={{
                      flex: 1,
                      minWidth: 0,
                      textAlign: 'left',
                      background: 'none',
                      border: 'none',
                      padding: 0,
                      cursor: busy && !active ? 'not-allowed' : 'pointer',
                      color: 'inherit',
                      font: 'inherit',
                    }}
                  >
                    <Typography.Text ellipsis strong={active} style={{ display: 'block', color: active ? 'var(--ant-color-primary)' : undefined }}>
                      {openingId === c.id && <Spin size="small" style={{ marginRight: 6 }} />}
                      {c.title}
                    </Typography.Text>
                    <Typography.Text type="secondary" ellipsis style={{ display: 'block', fontSize: 12 }}>
                      {formatTime(c.updatedAt)} · {c.messageCount} 条
                    </Typography.Text>
                  </button>
                </Tooltip>
                <Popconfirm
                  title="删除这个会话？"
                  description="删除后无法恢复"
                  okText="删除"
                  okButtonProps={{ danger: true }}
                  cancelText="取消"
                  onConfirm={() => onDelete(c.id).catch(() => undefined)}
                  disabled={busy && active}
                >
                  <Button type="text" size="small" icon={<DeleteOutlined />} aria-label={`删除会话 ${c.title}`} disabled={busy && active} />
                </Popconfirm>
              </Flex>
            );
          })}
        </nav>
      )}
      {conversations.isSuccess && (
        <Typography.Paragraph type={full ? 'warning' : 'secondary'} style={{ fontSize: 12, margin: '8px 4px 0' }}>
          {full ? `会话已达上限 ${CONVERSATION_LIMIT} 个：删除不需要的会话后，新会话才能保存` : `已保存 ${list.length} / ${CONVERSATION_LIMIT} 个会话`}
        </Typography.Paragraph>
      )}
    </Card>
  );
}
