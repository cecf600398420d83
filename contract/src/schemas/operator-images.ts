/**
 * 镜像登记 of the operator area (issue 30 §1): an image the operator registers by reference (a CUDA
 * PyTorch, an SD WebUI, a ComfyUI image from their registry). The console checks the manifest exists
 * — in REGISTRY_URL's registry, or without one in the host's OCI layout — before it records it; a
 * registered image is then a catalogue image (and, for an application, a 镜像应用) like the stock ones.
 */
import { z } from 'zod';
import { InstanceCategory } from '../enums.js';

export const OPERATOR_IMAGE_KINDS = ['system', 'application', 'desktop'] as const;
export type OperatorImageKind = (typeof OPERATOR_IMAGE_KINDS)[number];
export const OPERATOR_IMAGE_KIND_LABELS: Record<OperatorImageKind, string> = { system: '系统镜像', application: '镜像应用', desktop: '云桌面镜像' };

/** The categories a system or desktop image may serve (an application serves 镜像应用). */
export const OPERATOR_IMAGE_CATEGORIES = ['Gpu', 'Generic', 'Desktop', 'Ebusiness', 'Game'] as const;
export type OperatorImageCategory = (typeof OPERATOR_IMAGE_CATEGORIES)[number];
export const operatorImageCategoryLabel = (c: OperatorImageCategory) => InstanceCategory.label(c);

/**
 * `registry.example.com/ns/name:tag`, `ns/name:tag` or `ns/name@sha256:<64 hex>`: lower-case path
 * components (the distribution spec's repository names), a tag or a digest.
 */
export const OPERATOR_IMAGE_REFERENCE =
  /^(?:[a-z0-9]+(?:[.-][a-z0-9]+)*(?::\d{1,5})?\/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[\w][\w.-]{0,127}|@sha256:[a-f0-9]{64})$/;

/** The process an application runs: words as the image config's Cmd holds them (split on spaces; quote-free). */
export const OPERATOR_IMAGE_COMMAND_MAX = 500;

export const operatorImageRegisterSchema = z
  .object({
    reference: z
      .string({ error: '请填写镜像地址' })
      .trim()
      .min(1, { error: '请填写镜像地址' })
      .max(255, { error: '镜像地址最多 255 个字符' })
      .regex(OPERATOR_IMAGE_REFERENCE, { error: '镜像地址格式不正确，应为 仓库地址/命名空间/名称:标签 或 …@sha256:摘要（小写）' }),
    name: z.string({ error: '请填写显示名称' }).trim().min(2, { error: '显示名称至少 2 个字' }).max(60, { error: '显示名称最多 60 个字' }),
    kind: z.enum(OPERATOR_IMAGE_KINDS, { error: '镜像类型必须是 system、application 或 desktop' }),
    description: z.string().trim().max(300, { error: '说明最多 300 个字' }).default(''),
    /** system / desktop: the categories it is offered for (at least one); application: ignored (镜像应用). */
    categories: z
      .array(z.enum(OPERATOR_IMAGE_CATEGORIES, { error: '适用的产品类别不正确' }))
      .max(5)
      .default([]),
    /** application: the port it serves. */
    port: z.number({ error: '端口须为 1–65535 的整数' }).int({ error: '端口须为 1–65535 的整数' }).min(1).max(65535).nullable().default(null),
    /** application: the least GPU memory it needs (GB); 0: it also runs without a card, on CPU sizes. */
    minGpuMemoryGb: z
      .number({ error: '显存要求须为 0–640 的整数（GB）' })
      .int({ error: '显存要求须为 0–640 的整数（GB）' })
      .min(0, { error: '显存要求须为 0–640 的整数（GB）' })
      .max(640, { error: '显存要求须为 0–640 的整数（GB）' })
      .default(0),
    /** application: its start command (empty: the image's own Cmd). */
    command: z
      .string()
      .trim()
      .max(OPERATOR_IMAGE_COMMAND_MAX, { error: `启动命令最多 ${OPERATOR_IMAGE_COMMAND_MAX} 个字符` })
      .default(''),
  })
  .superRefine((v, ctx) => {
    if (v.kind === 'application' && v.port === null) ctx.addIssue({ code: 'custom', path: ['port'], message: '镜像应用须填写服务端口' });
    if (v.kind !== 'application' && v.categories.length === 0) ctx.addIssue({ code: 'custom', path: ['categories'], message: '请至少选择一个适用的产品类别' });
    if (v.kind === 'desktop' && v.categories.includes('Gpu')) ctx.addIssue({ code: 'custom', path: ['categories'], message: '云桌面镜像不用于 GPU 实例' });
  });
export type OperatorImageRegister = z.input<typeof operatorImageRegisterSchema>;

export const operatorImageParamsSchema = z.object({ id: z.string().regex(/^reg-[a-z0-9-]{1,60}$/, { error: '镜像登记编号不正确' }) });

export const operatorImageSchema = z.object({
  id: z.string(),
  reference: z.string(),
  /** The manifest digest seen at registration ('' where the registry's check did not say it). */
  digest: z.string(),
  name: z.string(),
  kind: z.enum(OPERATOR_IMAGE_KINDS),
  description: z.string(),
  categories: z.array(z.string()),
  port: z.number().int().nullable(),
  minGpuMemoryGb: z.number().int(),
  command: z.string(),
  /** Where it was found: the operator's registry, or this host's layout. */
  source: z.enum(['registry', 'layout']),
  /** Whether this host's layout has it now (a pull from the registry may still be under way). */
  ready: z.boolean(),
  /** Why the last try to make it ready on this host failed (tried again when the list is read a minute later); null: none failed. */
  problem: z.string().nullable(),
  /** How many instances not yet released use it (it cannot be removed while any do). */
  inUse: z.number().int(),
  createdAt: z.string(),
});
export type OperatorImage = z.infer<typeof operatorImageSchema>;

export const operatorImageListSchema = z.object({
  items: z.array(operatorImageSchema),
  /** Whether REGISTRY_URL is set (references are checked there), else the host's layout. */
  registry: z.string().nullable(),
});
export type OperatorImageList = z.infer<typeof operatorImageListSchema>;
