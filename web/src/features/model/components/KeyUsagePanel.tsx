import { Button, Card, Flex, Tabs, Typography } from 'antd';
import { CopyOutlined } from '@ant-design/icons';
import { Link } from 'react-router';
import { PAGE } from '@console/contract';
import { gatewayBase } from '../api/model';
import { useAllModels } from './KeyFormModal';
import { useCopy } from './KeySecretModal';

/** The placeholder the examples use where the user's own secret goes. */
export const SECRET_PLACEHOLDER = 'sk-...';

export function curlExample(base: string, model: string) {
  return `curl ${base}/chat/completions \\
  -H "Content-Type: application/json" \\
  -H "Authorization: Bearer ${SECRET_PLACEHOLDER}" \\
  -d '{
    "model": "${model}",
    "messages": [{"role": "user", "content": "你好"}],
    "stream": true
  }'`;
}

function pythonExample(base: string, model: string) {
  return `from openai import OpenAI

client = OpenAI(base_url="${base}", api_key="${SECRET_PLACEHOLDER}")
reply = client.chat.completions.create(
    model="${model}",
    messages=[{"role": "user", "content": "你好"}],
)
print(reply.choices[0].message.content)`;
}

function Snippet({ code, what }: { code: string; what: string }) {
  const copy = useCopy();
  return (
    <Flex vertical gap={8}>
      <pre aria-label={what} style={{ margin: 0, padding: 12, background: 'rgba(0,0,0,0.04)', borderRadius: 6, overflowX: 'auto', fontSize: 13 }}>
        {code}
      </pre>
      <Flex justify="flex-end">
        <Button size="small" icon={<CopyOutlined />} onClick={() => copy(code, '示例')}>
          复制示例
        </Button>
      </Flex>
    </Flex>
  );
}

/** How to call the gateway with a key: the OpenAI-compatible base URL, curl and the official Python client. */
export function KeyUsagePanel() {
  const models = useAllModels();
  const base = gatewayBase();
  const model = models.data?.find((m) => m.type === 'chat')?.id ?? '模型 ID';
  return (
    <Card title="调用示例" size="small">
      <Flex vertical gap={12}>
        <Typography.Text>
          接口兼容 OpenAI，Base URL 为{' '}
          <Typography.Text code copyable={{ text: base, tooltips: ['复制 Base URL', '已复制'] }}>
            {base}
          </Typography.Text>
          ，把下面的 <Typography.Text code>{SECRET_PLACEHOLDER}</Typography.Text> 换成您的完整密钥，model 换成
          <Link to={PAGE.modelSquare}>模型广场</Link>中的模型 ID 即可。
        </Typography.Text>
        <Tabs
          size="small"
          items={[
            { key: 'curl', label: 'curl', children: <Snippet code={curlExample(base, model)} what="curl 调用示例" /> },
            { key: 'python', label: 'Python', children: <Snippet code={pythonExample(base, model)} what="Python 调用示例" /> },
          ]}
        />
      </Flex>
    </Card>
  );
}
