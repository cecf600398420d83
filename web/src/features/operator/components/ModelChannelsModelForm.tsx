/**
 * 编辑模型: a model's prices in yuan per million tokens (as the catalogue file writes them), its
 * place in the square, tags and description. Each field is checked with the contract's schema; only
 * what changed is sent.
 */
import { useState } from 'react';
import { App, Form, Input, InputNumber, Select, type FormRule as Rule } from 'antd';
import type { z } from 'zod';
import { operatorModelUpdateSchema, type OperatorModel, type OperatorModelChannels, type OperatorModelUpdate } from '@console/contract';
import { modelChannelsApi } from '../api/modelChannels';
import { FormModal } from '../../../components/FormModal';

const fields = operatorModelUpdateSchema.shape;

interface Values {
  inputYuanPerMillion: string;
  outputYuanPerMillion: string;
  sort: number | null;
  tags: string[];
  description: string;
}

const schemaRule =
  (schema: z.ZodType): Rule =>
  () => ({
    validator: async (_, value: unknown) => {
      const parsed = schema.safeParse(value);
      if (!parsed.success) throw new Error(parsed.error.issues[0]!.message);
    },
  });

/** The fields that differ from the model as it is (prices compared as typed, trimmed). */
export function modelChanges(model: OperatorModel, v: Values): OperatorModelUpdate {
  const next: OperatorModelUpdate = {};
  const input = v.inputYuanPerMillion.trim();
  const output = v.outputYuanPerMillion.trim();
  if (input !== model.inputYuanPerMillion) next.inputYuanPerMillion = input;
  if (output !== model.outputYuanPerMillion) next.outputYuanPerMillion = output;
  const sort = v.sort ?? 0;
  if (sort !== model.sort) next.sort = sort;
  const tags = v.tags.map((t) => t.trim()).filter(Boolean);
  if (tags.join('\n') !== model.tags.join('\n')) next.tags = tags;
  const description = v.description.trim();
  if (description !== model.description) next.description = description;
  return next;
}

export function ModelChannelsModelForm({
  model,
  onClose,
  onSaved,
}: {
  model: OperatorModel;
  onClose: () => void;
  onSaved: (next: OperatorModelChannels) => void;
}) {
  const [form] = Form.useForm<Values>();
  const [busy, setBusy] = useState(false);
  const { message } = App.useApp();
  const embedding = model.type === 'embedding';

  const save = async () => {
    const v = await form.validateFields().catch(() => null);
    if (!v) return;
    const body = modelChanges(model, v);
    if (Object.keys(body).length === 0) {
      void message.info('没有修改任何内容');
      onClose();
      return;
    }
    setBusy(true);
    try {
      onSaved(await modelChannelsApi.updateModel(model.id, body, `模型「${model.name}」已保存`));
      onClose();
    } catch {
      // shown by the request layer
    } finally {
      setBusy(false);
    }
  };

  return (
    <FormModal title={`编辑模型「${model.name}」`} okText="保存" width={560} busy={busy} onSave={save} onClose={onClose}>
      <Form
        form={form}
        layout="vertical"
        requiredMark={false}
        initialValues={{
          inputYuanPerMillion: model.inputYuanPerMillion,
          outputYuanPerMillion: model.outputYuanPerMillion,
          sort: model.sort,
          tags: model.tags,
          description: model.description,
        }}
      >
        <Form.Item
          name="inputYuanPerMillion"
          label="输入价格（¥ / 百万 Token）"
          extra="提示词（输入）每百万 Token 的价格，单位元，最多 4 位小数；修改后新的调用立即按新价格计费"
          rules={[{ required: true, whitespace: true, message: '请填写输入价格' }, schemaRule(fields.inputYuanPerMillion)]}
        >
          <Input prefix="¥" suffix="/ 百万 Token" inputMode="decimal" maxLength={14} style={{ width: 280 }} />
        </Form.Item>
        <Form.Item
          name="outputYuanPerMillion"
          label="输出价格（¥ / 百万 Token）"
          extra={embedding ? '向量模型没有输出 Token，通常为 0' : '回答（输出）每百万 Token 的价格'}
          rules={[{ required: true, whitespace: true, message: '请填写输出价格' }, schemaRule(fields.outputYuanPerMillion)]}
        >
          <Input prefix="¥" suffix="/ 百万 Token" inputMode="decimal" maxLength={14} style={{ width: 280 }} />
        </Form.Item>
        <Form.Item name="sort" label="排序" extra="模型广场按此数字从小到大排列" rules={[schemaRule(fields.sort)]}>
          <InputNumber aria-label="排序" precision={0} min={-100_000} max={100_000} style={{ width: 160 }} />
        </Form.Item>
        <Form.Item name="tags" label="标签" extra="回车添加，最多 10 个，每个最多 20 个字" rules={[schemaRule(fields.tags)]}>
          <Select mode="tags" aria-label="标签" placeholder="如：对话、长上下文" />
        </Form.Item>
        <Form.Item name="description" label="描述" rules={[schemaRule(fields.description)]} style={{ marginBottom: 0 }}>
          <Input.TextArea rows={3} maxLength={500} showCount />
        </Form.Item>
      </Form>
    </FormModal>
  );
}
