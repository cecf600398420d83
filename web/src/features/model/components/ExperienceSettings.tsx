import { Alert, Button, Card, Flex, Form, Input, InputNumber, Select, Slider, Typography } from 'antd';
import type { UseQueryResult } from '@tanstack/react-query';
import { Link } from 'react-router';
import { PAGE, type Model, type ModelPage } from '@console/contract';
import { formatUnitPrice } from '../../../components/Price';

export interface PlaygroundSettings {
  model: string;
  system: string;
  temperature: number;
  maxTokens: number;
}

export const DEFAULT_SETTINGS: Omit<PlaygroundSettings, 'model'> = { system: '', temperature: 0.7, maxTokens: 1024 };
export const MAX_TOKENS_MAX = 32_768;
export const SYSTEM_MAX = 8_000;

/** "¥2.00 / 百万 Tokens" at the precision the price was set in. */
export const perMillion = (units: string) => `¥${formatUnitPrice(units)} / 百万 Tokens`;

interface Props {
  models: UseQueryResult<ModelPage>;
  chatModels: Model[];
  current: Model | undefined;
  settings: PlaygroundSettings;
  onChange: (patch: Partial<PlaygroundSettings>) => void;
  /** The model the URL asked for is not a chat model of the square. */
  missingModel: string | null;
  disabled: boolean;
}

/** The right column: model, system prompt, temperature and the answer's length. */
export function ExperienceSettings({ models, chatModels, current, settings, onChange, missingModel, disabled }: Props) {
  return (
    <Card size="small" title="参数设置">
      {models.isPending ? (
        <Typography.Text type="secondary">模型加载中…</Typography.Text>
      ) : models.isError ? (
        <Alert
          type="error"
          showIcon
          title="模型列表加载失败"
          description={models.error.message}
          action={
            <Button size="small" onClick={() => void models.refetch()}>
              重试
            </Button>
          }
        />
      ) : null}
      <Form layout="vertical" disabled={disabled} style={{ marginTop: models.isSuccess ? 0 : 12 }}>
        {missingModel && (
          <Alert
            type="warning"
            showIcon
            style={{ marginBottom: 12 }}
            title={`模型「${missingModel}」不存在或不支持对话，已为您选择其他模型`}
            description={
              <span>
                可在 <Link to={PAGE.modelSquare}>模型广场</Link> 查看全部模型
              </span>
            }
          />
        )}
        <Form.Item label="模型" htmlFor="playground-model" style={{ marginBottom: 8 }}>
          <Select
            id="playground-model"
            aria-label="模型"
            showSearch={{ optionFilterProp: 'label' }}
            value={current?.id}
            placeholder={models.isSuccess && chatModels.length === 0 ? '暂无可用的对话模型' : '请选择模型'}
            options={chatModels.map((m) => ({ value: m.id, label: m.name === m.id ? m.id : `${m.name}（${m.id}）` }))}
            onChange={(model: string) => onChange({ model })}
            loading={models.isPending}
          />
        </Form.Item>
        {current && (
          <Typography.Paragraph type="secondary" style={{ fontSize: 12 }}>
            {current.provider} · 上下文 {current.contextLength.toLocaleString('zh-CN')} Tokens
            <br />
            输入 {perMillion(current.inputPricePerMillion)}
            <br />
            输出 {perMillion(current.outputPricePerMillion)}
          </Typography.Paragraph>
        )}
        <Form.Item label="系统提示词" htmlFor="playground-system" tooltip="设定模型的角色与回答要求，会作为 system 消息放在对话最前面">
          <Input.TextArea
            id="playground-system"
            value={settings.system}
            onChange={(e) => onChange({ system: e.target.value })}
            placeholder="例如：你是一名耐心的编程老师，回答简洁并给出示例代码。"
            autoSize={{ minRows: 3, maxRows: 8 }}
            maxLength={SYSTEM_MAX}
            showCount
          />
        </Form.Item>
        <Form.Item label="温度（temperature）" tooltip="越高回答越发散、越有创意；越低越稳定、确定。范围 0 ~ 2">
          <Flex gap={8} align="center">
            <Slider
              min={0}
              max={2}
              step={0.1}
              value={settings.temperature}
              onChange={(temperature: number) => onChange({ temperature })}
              style={{ flex: 1 }}
              aria-label="温度"
            />
            <InputNumber
              aria-label="温度数值"
              min={0}
              max={2}
              step={0.1}
              precision={1}
              value={settings.temperature}
              onChange={(v) => v !== null && onChange({ temperature: v })}
              style={{ width: 72 }}
            />
          </Flex>
        </Form.Item>
        <Form.Item
          label="最大输出 Tokens（max_tokens）"
          htmlFor="playground-max-tokens"
          tooltip="单次回答最多生成的 Token 数，达到后回答会被截断"
          style={{ marginBottom: 0 }}
        >
          <InputNumber
            id="playground-max-tokens"
            min={1}
            max={MAX_TOKENS_MAX}
            precision={0}
            value={settings.maxTokens}
            onChange={(v) => v !== null && onChange({ maxTokens: v })}
            style={{ width: '100%' }}
          />
        </Form.Item>
      </Form>
    </Card>
  );
}
