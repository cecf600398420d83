/** The generation form's state as plain data: what it holds, how the contract's schema checks it, and how it changes. */
import {
  DIFFUSION_DEFAULTS,
  diffusionParamsSchema,
  diffusionQuoteRequestSchema,
  PUBLIC_LORAS,
  type DiffusionImage,
  type DiffusionParams,
  type DiffusionQuoteRequest,
  type LoraOption,
  type LoraRef,
  type PublicLoraId,
  type SdBaseModelId,
} from '@console/contract';

type NumberKey = 'width' | 'height' | 'steps' | 'cfg' | 'seed' | 'batchCount';

/** A chosen LoRA: the reference the server takes, with what the form shows of it; a cleared weight is null until typed again. */
export interface LoraPick {
  key: string;
  ref: { source: 'job'; jobId: string; epoch: number } | { source: 'public'; id: PublicLoraId };
  name: string;
  baseModel: SdBaseModelId;
  triggerWord: string;
  weight: number | null;
}

/** What the form holds: a cleared number field is null (zod says 应为数字), never a guess. */
export type DiffusionDraft = Pick<DiffusionParams, 'prompt' | 'negativePrompt' | 'baseModel' | 'sampler'> & { loras: LoraPick[] } & {
  [K in NumberKey]: number | null;
};

/** Each field's first message; a LoRA's under `loras.<index>`, the list's own under `loras`. */
export type DraftErrors = Partial<Record<keyof DiffusionDraft | `loras.${number}`, string>>;

export const DEFAULT_BASE: SdBaseModelId = 'sd15';
export const DEFAULT_LORA_WEIGHT = 1;

export function initialDraft(baseModel: SdBaseModelId = DEFAULT_BASE): DiffusionDraft {
  return { prompt: '', baseModel, loras: [], ...DIFFUSION_DEFAULTS[baseModel] };
}

export const loraOptionKey = (o: Pick<LoraOption, 'source' | 'ref' | 'epoch'>) => (o.source === 'job' ? `job:${o.ref}:${o.epoch}` : `public:${o.ref}`);
export const loraRefKey = (r: LoraRef) => (r.source === 'job' ? `job:${r.jobId}:${r.epoch}` : `public:${r.id}`);

export function pickFromOption(o: LoraOption, weight: number | null = DEFAULT_LORA_WEIGHT): LoraPick {
  const ref: LoraPick['ref'] = o.source === 'job' ? { source: 'job', jobId: o.ref, epoch: o.epoch ?? 1 } : { source: 'public', id: o.ref as PublicLoraId };
  return { key: loraOptionKey(o), ref, name: o.name, baseModel: o.baseModel, triggerWord: o.triggerWord, weight };
}

export const toLoraRef = (p: LoraPick): LoraRef => ({ ...p.ref, weight: p.weight as number });

/** The draft checked by the contract's own schema (what the server checks too): the params, or each field's first message. */
export function validateDraft(draft: DiffusionDraft): {
  params: DiffusionParams | null;
  /** What the price depends on, when those fields are right (a quote needs no prompt). */
  priced: DiffusionQuoteRequest | null;
  errors: DraftErrors;
} {
  // The LoRAs do not change the price: the quote is asked again only when a priced field changes.
  const priced = diffusionQuoteRequestSchema.omit({ loras: true }).safeParse(draft).data ?? null;
  const parsed = diffusionParamsSchema.safeParse({ ...draft, loras: draft.loras.map(toLoraRef) });
  if (parsed.success) return { params: parsed.data, priced, errors: {} };
  const errors: DraftErrors = {};
  for (const issue of parsed.error.issues) {
    const [head, index] = issue.path;
    const key = (head === 'loras' && typeof index === 'number' ? `loras.${index}` : head) as keyof DraftErrors | undefined;
    if (key && !errors[key]) errors[key] = issue.message;
  }
  return { params: null, priced, errors };
}

/**
 * Another base model: its own default size, steps and CFG, and only the LoRAs trained for it (a
 * LoRA of the other family is refused by the server). Returns the names of the LoRAs dropped.
 */
export function withBaseModel(draft: DiffusionDraft, baseModel: SdBaseModelId): { draft: DiffusionDraft; dropped: string[] } {
  const { width, height, steps, cfg } = DIFFUSION_DEFAULTS[baseModel];
  const kept = draft.loras.filter((l) => l.baseModel === baseModel);
  const dropped = draft.loras.filter((l) => l.baseModel !== baseModel).map((l) => l.name);
  return { draft: { ...draft, baseModel, width, height, steps, cfg, loras: kept }, dropped };
}

/**
 * A gallery image's parameters back in the form, its own seed and LoRAs included (the count stays as
 * it is: an image is one of a batch). A LoRA no longer offered (its job deleted) is left out and
 * named, so the form never submits what the server would refuse; with the offers unknown, all stay.
 */
export function withImageParams(
  draft: DiffusionDraft,
  image: DiffusionImage,
  options: readonly LoraOption[] | undefined,
): { draft: DiffusionDraft; missing: string[] } {
  const p = image.params;
  const byKey = new Map((options ?? []).map((o) => [loraOptionKey(o), o]));
  const loras: LoraPick[] = [];
  const missing: string[] = [];
  p.loras.forEach((ref, i) => {
    const key = loraRefKey(ref);
    const used = image.loras[i];
    const offered = byKey.get(key);
    const publicOne = ref.source === 'public' ? PUBLIC_LORAS.find((l) => l.id === ref.id) : undefined;
    if (offered && offered.baseModel === p.baseModel) loras.push(pickFromOption(offered, ref.weight));
    else if (!options && (publicOne || ref.source === 'job'))
      loras.push({
        key,
        ref: ref.source === 'job' ? { source: 'job', jobId: ref.jobId, epoch: ref.epoch } : { source: 'public', id: ref.id },
        name: used?.name ?? publicOne?.name ?? 'LoRA',
        baseModel: p.baseModel,
        triggerWord: '',
        weight: ref.weight,
      });
    else missing.push(used?.name ?? publicOne?.name ?? key);
  });
  return {
    draft: {
      ...draft,
      prompt: p.prompt,
      negativePrompt: p.negativePrompt,
      baseModel: p.baseModel,
      loras,
      width: p.width,
      height: p.height,
      steps: p.steps,
      cfg: p.cfg,
      sampler: p.sampler,
      seed: p.seed,
    },
    missing,
  };
}

/** Whether the prompt already calls the trigger word (as a word or a tag, any case). */
export function promptHasWord(prompt: string, word: string): boolean {
  const w = word.trim().toLowerCase();
  return !w || prompt.toLowerCase().includes(w);
}

/** The trigger word first in the prompt, where sd-scripts keeps it (keep_tokens). */
export const withTriggerWord = (prompt: string, word: string) => (prompt.trim() ? `${word}, ${prompt.trimStart()}` : word);

/** What the price depends on. */
