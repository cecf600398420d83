/** 生成参数: the txt2img parameters as WebUI users know them, the LoRAs, and at its foot the price and 生成. */
import { useState, type ReactNode } from 'react';
import { App, Button, Card, Col, Divider, Form, Input, InputNumber, Row, Segmented, Select, Space, Tag, Tooltip } from 'antd';
import Icon, { RetweetOutlined, SwapOutlined } from '@ant-design/icons';
import type { UseQueryResult } from '@tanstack/react-query';
import {
  DIFFUSION_MAX_BATCH,
  SD_BASE_MODELS,
  SD_SAMPLERS,
  type DiffusionImage,
  type DiffusionTask,
  type LoraOption,
  type SdBaseModelId,
} from '@console/contract';
import { LoraPicker } from './DiffusionLoras';
import { SubmitPanel } from './DiffusionSubmit';
import {
  initialDraft,
  loraOptionKey,
  pickFromOption,
  validateDraft,
  withBaseModel,
  withImageParams,
  withTriggerWord,
  type DiffusionDraft,
  type DraftErrors,
} from '../utils/diffusionDraft';
import { baseModelName } from '../../training';

/** Sizes people pick most: square, portrait and landscape at each family's native scale. */
export const SIZE_PRESETS = [
  [512, 512],
  [512, 768],
  [768, 512],
  [1024, 1024],
  [832, 1216],
  [1216, 832],
] as const;

/** The form's state and what it derives; the page owns it, so the gallery's 复用参数 can fill it. */
export function useDiffusionDraft(options: readonly LoraOption[] | undefined) {
  const { message } = App.useApp();
  const [draft, setDraft] = useState<DiffusionDraft>(() => initialDraft());
  const checked = validateDraft(draft);

  const set = (patch: Partial<DiffusionDraft>) => setDraft((s) => ({ ...s, ...patch }));
  const chooseBase = (baseModel: SdBaseModelId) => {
    if (baseModel === draft.baseModel) return;
    const next = withBaseModel(draft, baseModel);
    setDraft(next.draft);
    const dropped = next.dropped.length ? `；已移除不适用于该底模的 LoRA：${next.dropped.join('、')}` : '';
    void message.info(`已切换为 ${baseModelName(baseModel)}，尺寸、采样步数和 CFG 已改为它的默认值${dropped}`);
  };
  const addLora = (option: LoraOption) =>
    setDraft((s) => (s.loras.some((l) => l.key === loraOptionKey(option)) ? s : { ...s, loras: [...s.loras, pickFromOption(option)] }));
  const setLoraWeight = (index: number, weight: number | null) =>
    setDraft((s) => ({ ...s, loras: s.loras.map((l, i) => (i === index ? { ...l, weight } : l)) }));
  const removeLora = (index: number) => setDraft((s) => ({ ...s, loras: s.loras.filter((_, i) => i !== index) }));
  const insertTrigger = (word: string) => setDraft((s) => ({ ...s, prompt: withTriggerWord(s.prompt, word) }));
  const reuse = (image: DiffusionImage) => {
    const next = withImageParams(draft, image, options);
    setDraft(next.draft);
    void message.success(`已填入这张图的参数（种子 ${image.seed}）`);
    if (next.missing.length) void message.warning(`以下 LoRA 已不可用，未填入：${next.missing.join('、')}`);
  };
  return { draft, checked, set, chooseBase, addLora, setLoraWeight, removeLora, insertTrigger, reuse };
}

export type DiffusionDraftState = ReturnType<typeof useDiffusionDraft>;

/** A field with its label tied to the control (htmlFor = the control's id), its hint and the schema's message. */
function Field({ label, id, error, extra, children }: { label: string; id?: string; error?: string; extra?: ReactNode; children: ReactNode }) {
  return (
    <Form.Item label={label} htmlFor={id} validateStatus={error ? 'error' : undefined} help={error} extra={extra}>
      {children}
    </Form.Item>
  );
}

/** A number as typed: no min/max, for antd would clamp silently; the schema's message says what the range is. */
function NumberBox({ id, value, onChange, step = 1 }: { id: string; value: number | null; onChange: (v: number | null) => void; step?: number }) {
  return <InputNumber<number> id={id} value={value} onChange={(v) => onChange(v)} step={step} style={{ width: '100%' }} />;
}

function SizeFields({ draft, errors, set }: { draft: DiffusionDraft; errors: DraftErrors; set: (patch: Partial<DiffusionDraft>) => void }) {
  const current = `${draft.width}x${draft.height}`;
  return (
    <>
      <Row gutter={8} align="top">
        <Col flex="1">
          <Field label="宽度" id="sd-width" error={errors.width}>
            <NumberBox id="sd-width" value={draft.width} step={64} onChange={(width) => set({ width })} />
          </Field>
        </Col>
        <Col flex="none" style={{ paddingTop: 30 }}>
          <Tooltip title="交换宽高">
            <Button icon={<SwapOutlined />} aria-label="交换宽高" onClick={() => set({ width: draft.height, height: draft.width })} />
          </Tooltip>
        </Col>
        <Col flex="1">
          <Field label="高度" id="sd-height" error={errors.height}>
            <NumberBox id="sd-height" value={draft.height} step={64} onChange={(height) => set({ height })} />
          </Field>
        </Col>
      </Row>
      <Tag.CheckableTagGroup<string>
        aria-label="常用尺寸"
        value={SIZE_PRESETS.some(([w, h]) => `${w}x${h}` === current) ? current : null}
        onChange={(value) => {
          if (!value) return; // the chosen size clicked again: it stays
          const [width, height] = value.split('x').map(Number);
          set({ width, height });
        }}
        options={SIZE_PRESETS.map(([w, h]) => ({ value: `${w}x${h}`, label: `${w}×${h}` }))}
        style={{ display: 'flex', flexWrap: 'wrap', gap: 4, marginTop: -12, marginBottom: 20 }}
      />
    </>
  );
}

/** A die (WebUI's 🎲): a random seed. antd has no such icon, and an emoji is a blank box where no emoji font is installed. */
const DiceSvg = () => (
  <svg viewBox="0 0 1024 1024" width="1em" height="1em" fill="currentColor" aria-hidden="true">
    <rect x="112" y="112" width="800" height="800" rx="160" fill="none" stroke="currentColor" strokeWidth="72" />
    <circle cx="340" cy="340" r="72" />
    <circle cx="684" cy="340" r="72" />
    <circle cx="512" cy="512" r="72" />
    <circle cx="340" cy="684" r="72" />
    <circle cx="684" cy="684" r="72" />
  </svg>
);

function SeedField({
  draft,
  error,
  lastSeed,
  set,
}: {
  draft: DiffusionDraft;
  error?: string;
  lastSeed: number | null;
  set: (patch: Partial<DiffusionDraft>) => void;
}) {
  return (
    <Field label="种子" id="sd-seed" error={error} extra="-1 为随机；相同种子和参数可复现同一张图">
      <Space.Compact style={{ width: '100%' }}>
        <InputNumber<number> id="sd-seed" value={draft.seed} onChange={(seed) => set({ seed })} style={{ width: '100%' }} />
        <Tooltip title="随机种子（-1）">
          <Button aria-label="随机种子" icon={<Icon component={DiceSvg} />} onClick={() => set({ seed: -1 })} />
        </Tooltip>
        <Tooltip title={lastSeed === null ? '还没有生成过图片' : `使用上一张图的种子 ${lastSeed}`}>
          <Button
            aria-label="使用上一张图的种子"
            icon={<RetweetOutlined />}
            disabled={lastSeed === null}
            onClick={() => lastSeed !== null && set({ seed: lastSeed })}
          />
        </Tooltip>
      </Space.Compact>
    </Field>
  );
}

export function DiffusionForm({
  form,
  loras,
  lastSeed,
  onSubmitted,
}: {
  form: DiffusionDraftState;
  loras: UseQueryResult<{ items: LoraOption[] }>;
  /** The seed of the newest image made, for ♻️. */
  lastSeed: number | null;
  onSubmitted: (task: DiffusionTask) => void;
}) {
  const { draft, checked, set } = form;
  const errors = checked.errors;
  // An empty prompt is how the page starts: not an error until the user wrote one and took it back.
  const [promptTouched, setPromptTouched] = useState(false);
  const promptError = promptTouched || draft.prompt ? errors.prompt : undefined;
  return (
    <Card title="生成参数">
      <Form layout="vertical" requiredMark={false} component="div">
        <Field label="提示词" id="sd-prompt" error={promptError} extra="描述画面，英文逗号分隔，如 1girl, red hair, smiling, best quality">
          <Input.TextArea
            id="sd-prompt"
            value={draft.prompt}
            onChange={(e) => {
              setPromptTouched(true);
              set({ prompt: e.target.value });
            }}
            autoSize={{ minRows: 3, maxRows: 8 }}
            placeholder="想画什么？"
          />
        </Field>
        <Field label="反向提示词" id="sd-negative" error={errors.negativePrompt} extra="不想出现在画面里的内容">
          <Input.TextArea
            id="sd-negative"
            value={draft.negativePrompt}
            onChange={(e) => set({ negativePrompt: e.target.value })}
            autoSize={{ minRows: 2, maxRows: 6 }}
          />
        </Field>
        <Field label="底模" id="sd-base" error={errors.baseModel}>
          <Select id="sd-base" value={draft.baseModel} onChange={form.chooseBase} options={SD_BASE_MODELS.map((m) => ({ value: m.id, label: m.name }))} />
        </Field>
        <Field label="LoRA" id="sd-lora">
          <LoraPicker
            id="sd-lora"
            loras={loras}
            baseModel={draft.baseModel}
            prompt={draft.prompt}
            picks={draft.loras}
            errors={errors}
            onAdd={form.addLora}
            onWeight={form.setLoraWeight}
            onRemove={form.removeLora}
            onInsertTrigger={form.insertTrigger}
          />
        </Field>
        <SizeFields draft={draft} errors={errors} set={set} />
        <Row gutter={12}>
          <Col span={12}>
            <Field label="采样步数" id="sd-steps" error={errors.steps} extra="越多越精细也越慢，常用 20-30">
              <NumberBox id="sd-steps" value={draft.steps} onChange={(steps) => set({ steps })} />
            </Field>
          </Col>
          <Col span={12}>
            <Field label="CFG" id="sd-cfg" error={errors.cfg} extra="遵循提示词的程度，常用 5-8">
              <NumberBox id="sd-cfg" value={draft.cfg} step={0.5} onChange={(cfg) => set({ cfg })} />
            </Field>
          </Col>
        </Row>
        <Field label="采样器" id="sd-sampler" error={errors.sampler}>
          <Select id="sd-sampler" value={draft.sampler} onChange={(sampler) => set({ sampler })} options={SD_SAMPLERS.map((s) => ({ value: s, label: s }))} />
        </Field>
        <SeedField draft={draft} error={errors.seed} lastSeed={lastSeed} set={set} />
        <Field label="生成数量" error={errors.batchCount}>
          <Segmented<number>
            block
            aria-label="生成数量"
            value={draft.batchCount ?? 1}
            onChange={(batchCount) => set({ batchCount })}
            options={Array.from({ length: DIFFUSION_MAX_BATCH }, (_, i) => ({ value: i + 1, label: String(i + 1) }))}
          />
        </Field>
      </Form>
      <Divider style={{ margin: '4px 0 16px' }} />
      <SubmitPanel params={checked.params} priced={checked.priced} errors={errors} onSubmitted={onSubmitted} />
    </Card>
  );
}
