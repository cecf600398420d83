/** The sd-scripts parameters of a LoRA job as form fields, each with its one-line hint and its zod message. */
import { Col, Form, InputNumber, Row, Select, Switch } from 'antd';
import { LORA_OPTIMIZERS, LORA_PARAM_HINTS, LORA_SCHEDULERS, loraParamsSchema, type LoraParams } from '@console/contract';

/** What the form holds: a cleared number field is null until the user types again (zod says 应为数字). */
export type ParamsDraft = { [K in keyof LoraParams]: LoraParams[K] | null };
export type ParamErrors = Partial<Record<keyof LoraParams, string>>;

/** The fields' names, as sd-scripts users know them. */
export const PARAM_LABELS: Record<keyof LoraParams, string> = {
  resolution: '分辨率',
  repeats: '重复次数',
  epochs: '训练轮数',
  batchSize: '批大小',
  unetLr: 'UNet 学习率',
  textEncoderLr: '文本编码器学习率',
  networkDim: '网络维度（Dim）',
  networkAlpha: '网络 Alpha',
  optimizer: '优化器',
  scheduler: '学习率调度器',
  seed: '随机种子',
  shuffleCaption: '打乱标注',
  keepTokens: '保留词数',
  clipSkip: 'CLIP 跳层',
  noiseOffset: '噪声偏移',
  minSnrGamma: 'Min-SNR Gamma',
};

type Spec =
  | { key: keyof LoraParams; kind: 'number'; step?: number }
  | { key: keyof LoraParams; kind: 'select'; options: readonly string[] }
  | { key: keyof LoraParams; kind: 'switch' };

/** What most users set: how big, how often and how long. */
const BASIC: Spec[] = [
  { key: 'resolution', kind: 'number', step: 64 },
  { key: 'repeats', kind: 'number' },
  { key: 'epochs', kind: 'number' },
  { key: 'batchSize', kind: 'number' },
];

const ADVANCED: Spec[] = [
  { key: 'unetLr', kind: 'number', step: 0.0001 },
  { key: 'textEncoderLr', kind: 'number', step: 0.00001 },
  { key: 'networkDim', kind: 'number', step: 8 },
  { key: 'networkAlpha', kind: 'number', step: 8 },
  { key: 'optimizer', kind: 'select', options: LORA_OPTIMIZERS },
  { key: 'scheduler', kind: 'select', options: LORA_SCHEDULERS },
  { key: 'seed', kind: 'number' },
  { key: 'shuffleCaption', kind: 'switch' },
  { key: 'keepTokens', kind: 'number' },
  { key: 'clipSkip', kind: 'number' },
  { key: 'noiseOffset', kind: 'number', step: 0.01 },
  { key: 'minSnrGamma', kind: 'number', step: 1 },
];
export const ADVANCED_KEYS = ADVANCED.map((s) => s.key);

/** The draft checked by the contract's own schema (what the server checks too): the params, or each field's first message. */
export function validateParams(draft: ParamsDraft): { params: LoraParams; errors: ParamErrors } | { params: null; errors: ParamErrors } {
  const parsed = loraParamsSchema.safeParse(draft);
  if (parsed.success) return { params: parsed.data, errors: {} };
  const errors: ParamErrors = {};
  for (const issue of parsed.error.issues) {
    const key = issue.path[0] as keyof LoraParams | undefined;
    if (key && !errors[key]) errors[key] = issue.message;
  }
  return { params: null, errors };
}

const fieldId = (key: keyof LoraParams) => `lora-${key}`;

/** A field's value as the controls give it: the schema, not the control, decides whether it fits. */
type FieldValue = string | number | boolean | null;

function Control({ spec, value, onChange }: { spec: Spec; value: FieldValue; onChange: (v: FieldValue) => void }) {
  const id = fieldId(spec.key);
  if (spec.kind === 'switch') return <Switch id={id} checked={value === true} onChange={onChange} checkedChildren="是" unCheckedChildren="否" />;
  if (spec.kind === 'select')
    return <Select<string> id={id} value={value as string} onChange={onChange} options={spec.options.map((o) => ({ value: o, label: o }))} />;
  // No min/max here: antd would clamp silently, the schema's message says what the range is.
  return <InputNumber<number> id={id} value={value as number | null} onChange={(v) => onChange(v)} step={spec.step ?? 1} style={{ width: '100%' }} />;
}

function ParamField({
  spec,
  draft,
  errors,
  onChange,
}: {
  spec: Spec;
  draft: ParamsDraft;
  errors: ParamErrors;
  onChange: (patch: Partial<ParamsDraft>) => void;
}) {
  const error = errors[spec.key];
  return (
    <Form.Item
      label={PARAM_LABELS[spec.key]}
      htmlFor={fieldId(spec.key)}
      extra={LORA_PARAM_HINTS[spec.key]}
      validateStatus={error ? 'error' : undefined}
      help={error}
    >
      <Control spec={spec} value={draft[spec.key]} onChange={(v) => onChange({ [spec.key]: v })} />
    </Form.Item>
  );
}

function FieldGrid({ specs, ...rest }: { specs: Spec[]; draft: ParamsDraft; errors: ParamErrors; onChange: (patch: Partial<ParamsDraft>) => void }) {
  return (
    <Row gutter={16}>
      {specs.map((spec) => (
        <Col key={spec.key} xs={24} sm={12} lg={6}>
          <ParamField spec={spec} {...rest} />
        </Col>
      ))}
    </Row>
  );
}

export const BasicParamFields = (props: { draft: ParamsDraft; errors: ParamErrors; onChange: (patch: Partial<ParamsDraft>) => void }) => (
  <FieldGrid specs={BASIC} {...props} />
);
export const AdvancedParamFields = (props: { draft: ParamsDraft; errors: ParamErrors; onChange: (patch: Partial<ParamsDraft>) => void }) => (
  <FieldGrid specs={ADVANCED} {...props} />
);
