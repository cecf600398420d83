import type { ReactNode } from 'react';
import { Button, Card, Flex, Tag, Typography } from 'antd';
import { MessageOutlined } from '@ant-design/icons';
import { useNavigate } from 'react-router';
import { PAGE, type Model, type ModelType } from '@console/contract';
import { formatUnitPrice } from '../../../components/Price';

export const MODEL_TYPE_LABEL: Record<ModelType, string> = { chat: '对话', embedding: '向量' };

/** The online experience with this model chosen. */
export const experienceUrl = (modelId: string) => `${PAGE.modelExperience}?model=${encodeURIComponent(modelId)}`;

/** A context length as model cards write it: 131072 → "128K", 1048576 → "1M", 8000 → "8K". */
export function contextText(tokens: number): string {
  if (tokens >= 1 << 20 && tokens % (1 << 20) === 0) return `${tokens / (1 << 20)}M`;
  if (tokens >= 1024 && tokens % 1024 === 0) return `${tokens / 1024}K`;
  if (tokens >= 1000 && tokens % 1000 === 0) return `${tokens / 1000}K`;
  return tokens.toLocaleString('en-US');
}

/** "¥0.8 / 百万 Token" with the precision the price was set in. */
export const perMillionText = (units: string) => `¥${formatUnitPrice(units)} / 百万 Token`;

function Row({ label, children }: { label: string; children: ReactNode }) {
  return (
    <Flex justify="space-between" gap={12}>
      <Typography.Text type="secondary">{label}</Typography.Text>
      <span style={{ textAlign: 'right' }}>{children}</span>
    </Flex>
  );
}

/** One model of the square: what it is, what it costs, how to call it, and 在线体验 for chat models. */
export function SquareModelCard({ model: m }: { model: Model }) {
  const navigate = useNavigate();
  return (
    <Card
      size="small"
      role="article"
      aria-label={m.name}
      title={
        <Flex gap={8} align="center" wrap>
          <span>{m.name}</span>
          <Tag color={m.type === 'chat' ? 'purple' : 'blue'} style={{ marginInlineEnd: 0 }}>
            {MODEL_TYPE_LABEL[m.type]}
          </Tag>
        </Flex>
      }
      extra={<Typography.Text type="secondary">{m.provider}</Typography.Text>}
      styles={{ body: { display: 'flex', flexDirection: 'column', gap: 8, flex: 1 } }}
      style={{ display: 'flex', flexDirection: 'column', height: '100%' }}
    >
      <Typography.Text copyable={{ text: m.id, tooltips: ['复制模型 ID', '已复制'] }} code style={{ wordBreak: 'break-all' }}>
        {m.id}
      </Typography.Text>
      <Typography.Paragraph type="secondary" ellipsis={{ rows: 2, tooltip: m.description }} style={{ marginBottom: 0, minHeight: 44 }}>
        {m.description || '暂无介绍'}
      </Typography.Paragraph>
      <Row label="上下文长度">{contextText(m.contextLength)} Token</Row>
      <Row label="输入价格">{perMillionText(m.inputPricePerMillion)}</Row>
      <Row label="输出价格">
        {m.type === 'embedding' ? <Typography.Text type="secondary">无输出 Token</Typography.Text> : perMillionText(m.outputPricePerMillion)}
      </Row>
      {m.tags.length > 0 && (
        <Flex gap={4} wrap>
          {m.tags.map((t) => (
            <Tag key={t} style={{ marginInlineEnd: 0 }}>
              {t}
            </Tag>
          ))}
        </Flex>
      )}
      <Flex justify="flex-end" align="center" style={{ marginTop: 'auto', paddingTop: 4 }}>
        {m.type === 'chat' ? (
          <Button type="primary" size="small" icon={<MessageOutlined />} onClick={() => navigate(experienceUrl(m.id))}>
            在线体验
          </Button>
        ) : (
          <Typography.Text type="secondary" style={{ fontSize: 12 }}>
            向量模型通过 API（/v1/embeddings）调用
          </Typography.Text>
        )}
      </Flex>
    </Card>
  );
}
