import { Alert, Avatar, Button, Card, Flex, Space, Tag, Tooltip, Typography } from 'antd';
import { LoadingOutlined, RobotOutlined, UserOutlined } from '@ant-design/icons';
import { Link } from 'react-router';
import { PAGE } from '@console/contract';
import type { ChatError } from '../api/modelPlayground';
import { formatUnitPrice } from '../../../components/Price';

/** One message as the page shows it: what is saved, plus how the answer went. */
export interface ChatEntry {
  key: string;
  role: 'user' | 'assistant';
  content: string;
  usage?: { promptTokens: number; completionTokens: number; cost: string };
  status: 'done' | 'streaming' | 'stopped' | 'error';
  finishReason?: string | null;
  error?: ChatError;
}

export const EXAMPLE_PROMPTS = [
  '用三句话介绍一下你自己，以及你擅长做什么',
  '写一首关于秋天的七言绝句，并解释其中的意象',
  '用 Python 写一个快速排序，并说明它的时间复杂度',
  '把这句话翻译成英文：今天天气很好，适合出去散步。',
];

/** What to do about a failed answer, beyond the gateway's own message. */
function ErrorAdvice({ error }: { error: ChatError }) {
  if (error.status === 402 || error.type === 'insufficient_quota') {
    return (
      <span>
        账户余额不足以支付本次调用。<Link to={PAGE.recharge}>去充值</Link>
        {'，或调小「最大输出 Tokens」后重试。'}
      </span>
    );
  }
  if (error.status === 403) return <span>当前账号没有使用大模型服务的权限，请联系主账号在「子账号管理」中开通「大模型」权限。</span>;
  if (error.status === 401) return <span>登录已过期，请重新登录后再试。</span>;
  if (error.status === 429) return <span>请求过于频繁，请稍等片刻再重试。</span>;
  if (error.midStream) return <span>回答中途出错，已生成的部分不会保存，可点击「重试」重新生成。</span>;
  return <span>请稍后点击「重试」，或换一个模型试试。</span>;
}

function Usage({ entry }: { entry: ChatEntry }) {
  if (entry.status === 'stopped') {
    return (
      <Typography.Text type="secondary" style={{ fontSize: 12 }}>
        <Tag>已停止生成</Tag>已生成的部分按实际 Token 计费，详见 <Link to={PAGE.modelStats}>用量统计</Link>
      </Typography.Text>
    );
  }
  if (entry.status !== 'done' || !entry.usage) return null;
  const u = entry.usage;
  return (
    <Typography.Text type="secondary" style={{ fontSize: 12 }}>
      输入 {u.promptTokens} Tokens · 输出 {u.completionTokens} Tokens ·{' '}
      <Tooltip title="按模型单价估算；如有大模型 Token 包会优先抵扣，实际扣费以「用量统计」为准">
        <span>约 ¥{formatUnitPrice(u.cost)}</span>
      </Tooltip>
      {entry.finishReason === 'length' && (
        <Tag color="warning" style={{ marginLeft: 8 }}>
          已达最大输出 Tokens，回答被截断，可在右侧调大后重试
        </Tag>
      )}
    </Typography.Text>
  );
}

function Bubble({ entry, onRetry, canRetry }: { entry: ChatEntry; onRetry: () => void; canRetry: boolean }) {
  const mine = entry.role === 'user';
  return (
    <Flex gap={8} justify={mine ? 'flex-end' : 'flex-start'} align="flex-start" style={{ marginBottom: 16 }} data-role={entry.role}>
      {!mine && <Avatar icon={<RobotOutlined />} style={{ background: 'var(--ant-color-primary)', flex: 'none' }} />}
      <Flex vertical gap={4} align={mine ? 'flex-end' : 'flex-start'} style={{ maxWidth: '80%', minWidth: 0 }}>
        {(entry.content || entry.status === 'streaming') && (
          <div
            aria-label={mine ? '我的消息' : '模型回答'}
            style={{
              whiteSpace: 'pre-wrap',
              wordBreak: 'break-word',
              padding: '8px 12px',
              borderRadius: 8,
              lineHeight: 1.7,
              background: mine ? 'var(--ant-color-primary)' : '#f5f5f7',
              color: mine ? '#fff' : undefined,
            }}
          >
            {entry.content}
            {entry.status === 'streaming' && (
              <span style={{ marginLeft: entry.content ? 4 : 0, color: 'var(--ant-color-text-tertiary)' }}>
                <LoadingOutlined /> {entry.content ? '' : '正在思考…'}
              </span>
            )}
          </div>
        )}
        {entry.status === 'error' && entry.error && (
          <Alert
            type="error"
            showIcon
            role="alert"
            title={entry.error.message}
            description={<ErrorAdvice error={entry.error} />}
            action={
              canRetry && entry.error.status !== 401 ? (
                <Button size="small" onClick={onRetry}>
                  重试
                </Button>
              ) : undefined
            }
          />
        )}
        {!mine && <Usage entry={entry} />}
      </Flex>
      {mine && <Avatar icon={<UserOutlined />} style={{ flex: 'none' }} />}
    </Flex>
  );
}

/** The chat itself: the messages, or a welcome with example prompts while there are none. */
export function ExperienceMessages({
  entries,
  modelName,
  busy,
  onExample,
  onRetry,
}: {
  entries: ChatEntry[];
  modelName: string | undefined;
  busy: boolean;
  onExample: (prompt: string) => void;
  onRetry: () => void;
}) {
  if (entries.length === 0) {
    return (
      <Flex vertical align="center" justify="center" gap={16} style={{ minHeight: '100%', padding: '32px 16px' }}>
        <Avatar size={56} icon={<RobotOutlined />} style={{ background: 'var(--ant-color-primary)' }} />
        <Typography.Title level={4} style={{ margin: 0 }}>
          {modelName ? `开始与 ${modelName} 对话` : '欢迎使用在线体验'}
        </Typography.Title>
        <Typography.Text type="secondary" style={{ textAlign: 'center' }}>
          在下方输入问题即可体验模型效果；按实际使用的 Tokens 计费（优先抵扣大模型 Token 包），可在右侧调整参数，并通过「查看代码」获取 API 调用示例。
        </Typography.Text>
        <Flex wrap gap={12} justify="center" style={{ maxWidth: 640 }}>
          {EXAMPLE_PROMPTS.map((p) => (
            <Card key={p} size="small" hoverable style={{ width: 300 }} onClick={() => onExample(p)}>
              <Space>
                <Typography.Text>{p}</Typography.Text>
              </Space>
            </Card>
          ))}
        </Flex>
      </Flex>
    );
  }
  const last = entries[entries.length - 1];
  return (
    <div>
      {entries.map((e) => (
        <Bubble key={e.key} entry={e} onRetry={onRetry} canRetry={!busy && e === last} />
      ))}
    </div>
  );
}
