/** The LoRA picker: up to DIFFUSION_MAX_LORAS LoRAs of the chosen base model, each with its weight and, for a trained one, its trigger word. */
import { Alert, Button, Flex, InputNumber, Select, Slider, Tag, Typography, theme } from 'antd';
import { DeleteOutlined } from '@ant-design/icons';
import type { UseQueryResult } from '@tanstack/react-query';
import { Link } from 'react-router';
import { DIFFUSION_MAX_LORAS, PAGE, type LoraOption, type SdBaseModelId } from '@console/contract';
import { loraOptionsFor } from '../api/diffusion';
import { loraOptionKey, promptHasWord, type DraftErrors, type LoraPick } from '../utils/diffusionDraft';
import { Note } from './diffusionViews';
import { baseModelName } from '../../training';

export const LORA_WEIGHT = { min: -2, max: 2, step: 0.05 } as const;

/** The picker's choices: the account's trained LoRAs, then the public ones, each of the base model and not yet chosen. */
function optionGroups(options: readonly LoraOption[], baseModel: SdBaseModelId, chosen: Set<string>) {
  const offer = (source: LoraOption['source']) =>
    loraOptionsFor(options, baseModel)
      .filter((o) => o.source === source && !chosen.has(loraOptionKey(o)))
      .map((o) => ({ value: loraOptionKey(o), label: o.name, title: o.name }));
  return [
    { label: '我的 LoRA', title: '我的 LoRA', options: offer('job') },
    { label: '公共 LoRA', title: '公共 LoRA', options: offer('public') },
  ].filter((g) => g.options.length > 0);
}

/** What to say when the account has no LoRA of its own (for this base model or at all). */
function MineHint({ options, baseModel }: { options: readonly LoraOption[]; baseModel: SdBaseModelId }) {
  const mine = options.filter((o) => o.source === 'job');
  if (mine.length === 0)
    return (
      <Note>
        还没有训练好的 LoRA：<Link to={PAGE.sdTrain}>去训练自己的 LoRA</Link>，训练完成的每一轮都可以在这里使用；也可以先用公共 LoRA。
      </Note>
    );
  if (!mine.some((o) => o.baseModel === baseModel)) return <Note>你训练的 LoRA 都不是 {baseModelName(baseModel)} 的，切换底模后可用。</Note>;
  return null;
}

function PickRow({
  pick,
  error,
  prompt,
  onWeight,
  onRemove,
  onInsertTrigger,
}: {
  pick: LoraPick;
  error?: string;
  prompt: string;
  onWeight: (w: number | null) => void;
  onRemove: () => void;
  onInsertTrigger: (word: string) => void;
}) {
  const { token } = theme.useToken();
  const needsTrigger = pick.ref.source === 'job' && !!pick.triggerWord && !promptHasWord(prompt, pick.triggerWord);
  return (
    <div
      data-testid="lora-pick"
      style={{ border: `1px solid ${error ? token.colorError : token.colorBorderSecondary}`, borderRadius: token.borderRadius, padding: '6px 10px' }}
    >
      <Flex align="center" gap={8}>
        <Tag color={pick.ref.source === 'job' ? 'processing' : 'default'} style={{ marginInlineEnd: 0 }} variant="filled">
          {pick.ref.source === 'job' ? '我的' : '公共'}
        </Tag>
        <Typography.Text strong ellipsis title={pick.name} style={{ maxWidth: 160 }} data-testid="lora-name">
          {pick.name}
        </Typography.Text>
        <Slider
          min={LORA_WEIGHT.min}
          max={LORA_WEIGHT.max}
          step={LORA_WEIGHT.step}
          value={pick.weight ?? 0}
          onChange={(v) => onWeight(v)}
          ariaLabelForHandle={`${pick.name} 的权重滑块`}
          style={{ flex: 1, minWidth: 80, margin: '0 4px' }}
        />
        {/* No min/max: antd would clamp silently, the schema's message says what the range is. */}
        <InputNumber<number>
          aria-label={`${pick.name} 的权重`}
          value={pick.weight}
          onChange={(v) => onWeight(v)}
          step={LORA_WEIGHT.step}
          style={{ width: 76 }}
        />
        <Button type="text" size="small" danger icon={<DeleteOutlined />} onClick={onRemove} aria-label={`移除 ${pick.name}`} />
      </Flex>
      {error && <Typography.Text type="danger">{error}</Typography.Text>}
      {needsTrigger && (
        <Flex align="center" gap={4} wrap>
          <Note>
            触发词 <Typography.Text code>{pick.triggerWord}</Typography.Text> 不在提示词中，不写时 LoRA 的效果通常较弱。
          </Note>
          <Button type="link" size="small" style={{ padding: 0 }} onClick={() => onInsertTrigger(pick.triggerWord)}>
            插入到提示词
          </Button>
        </Flex>
      )}
    </div>
  );
}

export function LoraPicker({
  id,
  loras,
  baseModel,
  prompt,
  picks,
  errors,
  onAdd,
  onWeight,
  onRemove,
  onInsertTrigger,
}: {
  /** The id of the add select, for its label. */
  id: string;
  loras: UseQueryResult<{ items: LoraOption[] }>;
  baseModel: SdBaseModelId;
  prompt: string;
  picks: LoraPick[];
  errors: DraftErrors;
  onAdd: (option: LoraOption) => void;
  onWeight: (index: number, weight: number | null) => void;
  onRemove: (index: number) => void;
  onInsertTrigger: (word: string) => void;
}) {
  const options = loras.data?.items ?? [];
  const full = picks.length >= DIFFUSION_MAX_LORAS;
  const groups = optionGroups(options, baseModel, new Set(picks.map((p) => p.key)));
  const add = (key: string) => {
    const option = options.find((o) => loraOptionKey(o) === key);
    if (option) onAdd(option);
  };
  return (
    <Flex vertical gap={8}>
      {picks.map((pick, i) => (
        <PickRow
          key={pick.key}
          pick={pick}
          error={errors[`loras.${i}`]}
          prompt={prompt}
          onWeight={(w) => onWeight(i, w)}
          onRemove={() => onRemove(i)}
          onInsertTrigger={onInsertTrigger}
        />
      ))}
      {errors.loras && <Typography.Text type="danger">{errors.loras}</Typography.Text>}
      {loras.isError ? (
        <Alert
          type="warning"
          showIcon
          title={`LoRA 列表加载失败：${loras.error.message}`}
          action={
            <Button size="small" onClick={() => void loras.refetch()}>
              重试
            </Button>
          }
        />
      ) : (
        <Select<string | null>
          id={id}
          value={null}
          onChange={(key) => key && add(key)}
          options={groups}
          loading={loras.isPending}
          disabled={loras.isPending || full}
          placeholder={
            full ? `最多同时使用 ${DIFFUSION_MAX_LORAS} 个 LoRA` : loras.isPending ? '正在加载 LoRA…' : `添加 LoRA（${picks.length}/${DIFFUSION_MAX_LORAS}）`
          }
          showSearch={{ optionFilterProp: 'label' }}
          notFoundContent={`没有可添加的 ${baseModelName(baseModel)} LoRA`}
        />
      )}
      {loras.data && <MineHint options={options} baseModel={baseModel} />}
    </Flex>
  );
}
