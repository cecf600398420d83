import { useState } from 'react';
import { Alert, Drawer, Flex, Segmented, Spin, Tag, Typography } from 'antd';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { PAGE } from '@console/contract';
import { gatewayBaseUrl, type ChatRequest, playgroundQueries } from '../api/modelPlayground';
import { SNIPPET_LANGUAGES, snippet, type SnippetLanguage } from '../utils/ExperienceSnippets';

/** The account's keys by their masked prefix, so the user knows which saved secret to put in API_KEY. */
function KeyHint({ open }: { open: boolean }) {
  const keys = useQuery({ ...playgroundQueries.keys(), enabled: open });
  const usable = (keys.data?.items ?? []).filter((k) => k.enabled && !k.expired);
  return (
    <Alert
      type="info"
      showIcon
      title="调用需要 API KEY"
      description={
        <Flex vertical gap={6}>
          <span>
            把 <Typography.Text code>$API_KEY</Typography.Text> 换成您的密钥（完整密钥只在创建时显示一次，请使用您保存的那份）。还没有密钥？
            <Link to={PAGE.modelKey}>前往 API KEY 页面创建</Link>
          </span>
          {keys.isPending ? (
            <Spin size="small" />
          ) : usable.length > 0 ? (
            <Flex gap={4} wrap align="center">
              <span>您可用的密钥：</span>
              {usable.slice(0, 10).map((k) => (
                <Tag key={k.id} className="mono">
                  {k.name}：{k.maskedKey}
                </Tag>
              ))}
              {usable.length > 10 && <span>等 {usable.length} 个</span>}
            </Flex>
          ) : keys.isSuccess ? (
            <span>您还没有可用的密钥。</span>
          ) : null}
        </Flex>
      }
    />
  );
}

/** 「查看代码」: the current conversation and settings as curl / Python / Node calls against the gateway. */
export function ExperienceCodeDrawer({ open, onClose, request }: { open: boolean; onClose: () => void; request: ChatRequest }) {
  const [language, setLanguage] = useState<SnippetLanguage>('python');
  const code = snippet(language, request, gatewayBaseUrl());
  return (
    <Drawer title="查看代码" open={open} onClose={onClose} size={720} destroyOnHidden>
      <Flex vertical gap={16}>
        <Typography.Paragraph type="secondary" style={{ margin: 0 }}>
          以下代码用当前会话与参数调用 OpenAI 兼容接口 <Typography.Text code>{gatewayBaseUrl()}</Typography.Text>，可直接使用官方 openai SDK。
        </Typography.Paragraph>
        <KeyHint open={open} />
        <Flex justify="space-between" align="center" gap={8} wrap>
          <Segmented
            value={language}
            onChange={(v) => setLanguage(v as SnippetLanguage)}
            options={SNIPPET_LANGUAGES.map((l) => ({ value: l.key, label: l.label }))}
          />
          <Typography.Text copyable={{ text: code, tooltips: ['复制代码', '已复制'] }}>复制代码</Typography.Text>
        </Flex>
        <pre
          aria-label="示例代码"
          style={{
            background: '#1f1f29',
            color: '#f5f5f7',
            padding: 16,
            borderRadius: 8,
            overflow: 'auto',
            fontSize: 13,
            lineHeight: 1.6,
            margin: 0,
            maxHeight: '60vh',
          }}
        >
          {code}
        </pre>
      </Flex>
    </Drawer>
  );
}
