/**
 * 新建渠道 / 编辑渠道: one upstream channel. The body is checked with the contract's own schema before
 * it is sent, so the dialog refuses what the server would, with the server's words; a key is sent
 * only when typed (left empty, the stored key stays), and never shown.
 */
import { useState } from 'react';
import { App, Button, Flex, Form, Input, InputNumber, Radio, Select, Switch, Typography, type FormRule } from 'antd';
import type { z } from 'zod';
import { DeleteOutlined, PlusOutlined } from '@ant-design/icons';
import {
  MODEL_CHANNEL_KIND_LABELS,
  MODEL_CHANNEL_KINDS,
  MODEL_CHANNEL_PRIORITY_LIMIT,
  MODEL_CHANNEL_WEIGHT_MAX,
  modelChannelParamsSchema,
  modelChannelSaveSchema,
  type ModelChannelKind,
  type ModelChannelSaveRequest,
  type OperatorModel,
  type OperatorModelChannel,
  type OperatorModelChannels,
} from '@console/contract';
import { isApiError } from '../../../api/errors';
import { modelChannelsApi } from '../api/modelChannels';
import { FormModal } from '../../../components/FormModal';

interface Values {
  id: string;
  name: string;
  kind: ModelChannelKind;
  baseUrl?: string;
  apiKey?: string;
  models: string[];
  /** Model id → the upstream's name, a row each. */
  modelMap?: { model?: string; upstream?: string }[];
  priority: number | null;
  weight: number | null;
  enabled: boolean;
}

const fields = modelChannelSaveSchema.shape;

/** A form rule that applies the contract's schema of one field (its message is the server's). */
const schemaRule =
  (schema: z.ZodType): FormRule =>
  () => ({
    validator: async (_, value: unknown) => {
      if (value === null || value === undefined || value === '') return;
      const parsed = schema.safeParse(value);
      if (!parsed.success) throw new Error(parsed.error.issues[0]!.message);
    },
  });

const FIELDS = ['id', 'name', 'kind', 'baseUrl', 'apiKey', 'models', 'modelMap', 'priority', 'weight', 'enabled'] as const;

function initialValues(channel: OperatorModelChannel | null): Values {
  if (!channel) return { id: '', name: '', kind: 'openai', baseUrl: '', apiKey: '', models: [], modelMap: [], priority: 0, weight: 1, enabled: true };
  return {
    id: channel.id,
    name: channel.name,
    kind: channel.kind,
    baseUrl: channel.baseUrl ?? '',
    apiKey: '',
    models: channel.models,
    modelMap: Object.entries(channel.modelMap).map(([model, upstream]) => ({ model, upstream })),
    priority: channel.priority,
    weight: channel.weight,
    enabled: channel.enabled,
  };
}

/** What PUT /operator/model-channels/:id gets from the dialog's values. */
export function channelBody(v: Values): ModelChannelSaveRequest {
  const rows = (v.modelMap ?? []).filter((r) => r.model || r.upstream?.trim());
  const body: ModelChannelSaveRequest = {
    name: v.name.trim(),
    kind: v.kind,
    models: v.models,
    modelMap: Object.fromEntries(rows.map((r) => [r.model ?? '', (r.upstream ?? '').trim()])),
    priority: v.priority ?? 0,
    weight: v.weight ?? 1,
    enabled: v.enabled,
  };
  if (v.kind === 'openai') {
    body.baseUrl = v.baseUrl?.trim() || undefined;
    const key = v.apiKey?.trim();
    if (key) body.apiKey = key;
  }
  return body;
}

/** A server's 400 names its field as `field：message`: shown under that field when the dialog has it. */
function fieldOf(detail: string | undefined): { name: (typeof FIELDS)[number]; message: string } | null {
  const m = /^([A-Za-z]+)[.\w-]*：(.+)$/.exec(detail ?? '');
  const name = FIELDS.find((f) => f === m?.[1]);
  return name && m ? { name, message: m[2]! } : null;
}

export function ModelChannelsForm({
  channel,
  models,
  channels,
  onClose,
  onSaved,
}: {
  /** null: a new channel. */
  channel: OperatorModelChannel | null;
  models: OperatorModel[];
  /** Every channel, so a new one cannot take an id in use (that would replace it). */
  channels: OperatorModelChannel[];
  onClose: () => void;
  onSaved: (next: OperatorModelChannels) => void;
}) {
  const [form] = Form.useForm<Values>();
  const [busy, setBusy] = useState(false);
  const { message } = App.useApp();
  const kind = Form.useWatch('kind', form) ?? channel?.kind ?? 'openai';
  const chosen = Form.useWatch('models', form) ?? channel?.models ?? [];
  const keyKept = channel?.kind === 'openai' && channel.apiKeySet;

  const save = async () => {
    const v = await form.validateFields().catch(() => null);
    if (!v) return; // the form says what is wrong
    const body = channelBody(v);
    const parsed = modelChannelSaveSchema.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const name = FIELDS.find((f) => f === issue.path[0] && f !== 'modelMap');
      // The mapping is a list of rows with no message line of its own.
      if (name) form.setFields([{ name, errors: [issue.message] }]);
      else void message.error(issue.message);
      return;
    }
    setBusy(true);
    try {
      const id = channel?.id ?? v.id.trim();
      const next = await modelChannelsApi.saveChannel(id, body, channel ? `渠道「${body.name}」已保存` : `渠道「${body.name}」已创建`);
      onSaved(next);
      onClose();
    } catch (e) {
      // The request layer showed the message; a field the server named is marked too.
      const field = isApiError(e) ? fieldOf(e.detail) : null;
      if (field && field.name !== 'modelMap') form.setFields([{ name: field.name, errors: [field.message] }]);
    } finally {
      setBusy(false);
    }
  };

  const modelOptions = models.map((m) => ({ value: m.id, label: m.active ? `${m.name}（${m.id}）` : `${m.name}（${m.id}，已下架）` }));

  return (
    <FormModal
      title={channel ? `编辑渠道「${channel.name}」` : '新建渠道'}
      okText={channel ? '保存' : '创建'}
      width={640}
      busy={busy}
      onSave={save}
      onClose={onClose}
    >
      <Form form={form} layout="vertical" requiredMark={false} initialValues={initialValues(channel)}>
        <Form.Item
          name="id"
          label="渠道编号"
          extra={channel ? '编号创建后不能修改' : '用于区分渠道和调用日志，如 openai-main；创建后不能修改'}
          rules={
            channel
              ? []
              : [
                  { required: true, whitespace: true, message: '请填写渠道编号' },
                  {
                    validator: async (_, v: string | undefined) => {
                      const id = v?.trim() ?? '';
                      if (!id) return;
                      const parsed = modelChannelParamsSchema.shape.id.safeParse(id);
                      if (!parsed.success) throw new Error(parsed.error.issues[0]!.message);
                      if (channels.some((c) => c.id === id)) throw new Error(`渠道编号 ${id} 已存在，请换一个，或编辑那个渠道`);
                    },
                  },
                ]
          }
        >
          <Input disabled={Boolean(channel)} maxLength={64} placeholder="如：openai-main" spellCheck={false} />
        </Form.Item>
        <Form.Item name="name" label="名称" rules={[{ required: true, whitespace: true, message: '请填写渠道名称' }]}>
          <Input maxLength={50} placeholder="如：OpenAI 主账号" />
        </Form.Item>
        <Form.Item name="kind" label="类型">
          <Radio.Group options={MODEL_CHANNEL_KINDS.map((k) => ({ value: k, label: MODEL_CHANNEL_KIND_LABELS[k] }))} optionType="button" buttonStyle="solid" />
        </Form.Item>
        {kind === 'openai' ? (
          <>
            <Form.Item
              name="baseUrl"
              label="Base URL"
              extra="写到版本号为止，如 https://api.openai.com/v1；请求发往 {Base URL}/chat/completions 等"
              rules={[{ required: true, whitespace: true, message: '请填写 Base URL' }]}
            >
              <Input maxLength={500} placeholder="https://api.example.com/v1" spellCheck={false} />
            </Form.Item>
            <Form.Item
              name="apiKey"
              label="API Key"
              extra={
                keyKept
                  ? `已设置${channel.apiKeyEnv ? `（读取服务器环境变量 ${channel.apiKeyEnv}）` : ''}，留空则保留原密钥；填写则替换`
                  : '可填写 env:变量名，从服务器的环境变量读取密钥（推荐，密钥不进数据库）'
              }
              rules={keyKept ? [] : [{ required: true, whitespace: true, message: '请填写 API Key，或 env:变量名' }]}
            >
              <Input.Password maxLength={500} placeholder={keyKept ? '留空则不修改' : 'sk-… 或 env:OPENAI_API_KEY'} autoComplete="new-password" />
            </Form.Item>
          </>
        ) : (
          <Typography.Paragraph type="secondary">内置模型在本服务器上离线生成回答，无需地址和密钥。</Typography.Paragraph>
        )}
        <Form.Item name="models" label="模型" rules={[{ required: true, message: '请至少选择一个模型' }]} extra="该渠道可以提供的模型（模型列表中的模型）">
          <Select mode="multiple" aria-label="模型" placeholder="选择模型" optionFilterProp="label" options={modelOptions} />
        </Form.Item>
        <Form.Item label="模型映射" extra="上游对模型的叫法不同时填写，如 gpt-4o-mini-sim → gpt-4o-mini；不填则按模型名称调用">
          <Form.List name="modelMap">
            {(rows, { add, remove }) => (
              <Flex vertical gap={8}>
                {rows.map((row) => (
                  <Flex key={row.key} gap={8} align="baseline">
                    <Form.Item name={[row.name, 'model']} noStyle rules={[{ required: true, message: '请选择模型' }]}>
                      <Select aria-label="映射的模型" placeholder="模型" style={{ width: 240 }} options={chosen.map((id) => ({ value: id, label: id }))} />
                    </Form.Item>
                    <span>→</span>
                    <Form.Item name={[row.name, 'upstream']} noStyle rules={[{ required: true, whitespace: true, message: '请填写上游模型名称' }]}>
                      <Input aria-label="上游模型名称" placeholder="上游模型名称" maxLength={200} style={{ width: 220 }} />
                    </Form.Item>
                    <Button type="text" aria-label="删除映射" icon={<DeleteOutlined />} onClick={() => remove(row.name)} />
                  </Flex>
                ))}
                <Button type="dashed" icon={<PlusOutlined />} onClick={() => add({})} style={{ alignSelf: 'flex-start' }}>
                  添加映射
                </Button>
              </Flex>
            )}
          </Form.List>
        </Form.Item>
        <Flex gap={24} wrap>
          {/* No min / max on the inputs: a number out of range stays as typed and the schema's message says why. */}
          <Form.Item
            name="priority"
            label="优先级"
            extra={`-${MODEL_CHANNEL_PRIORITY_LIMIT} 到 ${MODEL_CHANNEL_PRIORITY_LIMIT}，数字大的先用；同优先级按权重分配`}
            rules={[{ required: true, message: '请填写优先级' }, schemaRule(fields.priority)]}
          >
            <InputNumber aria-label="优先级" precision={0} style={{ width: 160 }} />
          </Form.Item>
          <Form.Item
            name="weight"
            label="权重"
            extra={`1 到 ${MODEL_CHANNEL_WEIGHT_MAX}，同优先级的渠道按比例分配请求`}
            rules={[{ required: true, message: '请填写权重' }, schemaRule(fields.weight)]}
          >
            <InputNumber aria-label="权重" precision={0} style={{ width: 160 }} />
          </Form.Item>
          <Form.Item name="enabled" label="状态" valuePropName="checked">
            <Switch checkedChildren="启用" unCheckedChildren="停用" aria-label="启用渠道" />
          </Form.Item>
        </Flex>
      </Form>
    </FormModal>
  );
}
