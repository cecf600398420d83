/**
 * AI 绘图 datasets (/sd/dataset): images with a caption each, as kohya sd-scripts reads them (the
 * caption is the same-name `.txt`), the input of LoRA training. A dataset belongs to the paying
 * account; creating one needs real-name certification (spec §4/§5, 40311001).
 */
import { z } from 'zod';
import { pagingQuerySchema } from './common.js';

/** Spec §9: at most 512 images in a dataset. */
export const DATASET_MAX_IMAGES = 512;
/** One image's largest size in bytes. */
export const DATASET_MAX_IMAGE_BYTES = 20 * 1024 * 1024;
/** Datasets per account. */
export const DATASET_MAX_PER_ACCOUNT = 50;
/** A caption's length (sd-scripts' tokenizer cuts far earlier; this keeps files sane). */
export const DATASET_MAX_CAPTION = 2000;
/** The file types a dataset takes, by content (the name's extension is not trusted). */
export const DATASET_IMAGE_FORMATS = ['png', 'jpeg', 'webp', 'bmp'] as const;
export const DATASET_IMAGE_EXTENSIONS = ['.png', '.jpg', '.jpeg', '.webp', '.bmp'] as const;

export const datasetKindSchema = z.enum(['person', 'style', 'concept'], { error: '请选择数据集类型' });
export type DatasetKind = z.infer<typeof datasetKindSchema>;
export const DATASET_KIND_LABELS: Record<DatasetKind, string> = { person: '人物', style: '画风', concept: '概念' };

/** PostgreSQL's text takes no NUL character: refused with the field's own message, never a 500. */
const noNul = (s: string) => !s.includes('\0');
const NUL_MESSAGE = { error: '不能包含空字符（\\0）' };

const nameSchema = z
  .string({ error: '请输入数据集名称' })
  .trim()
  .min(1, { error: '请输入数据集名称' })
  .max(40, { error: '数据集名称最多 40 个字符' })
  .refine(noNul, NUL_MESSAGE);
const descriptionSchema = z.string({ error: '描述应为文字' }).trim().max(500, { error: '描述最多 500 个字符' }).refine(noNul, NUL_MESSAGE);
/** The trigger word a LoRA learns (the export folder's `<repeats>_<trigger>`): letters, digits, _ and -. */
export const triggerWordSchema = z
  .string({ error: '触发词应为文字' })
  .trim()
  .max(40, { error: '触发词最多 40 个字符' })
  .regex(/^[A-Za-z0-9_-]*$/, { error: '触发词只能包含英文字母、数字、下划线和短横线' });
export const captionSchema = z
  .string({ error: '标注应为文字' })
  .max(DATASET_MAX_CAPTION, { error: `标注最多 ${DATASET_MAX_CAPTION} 个字符` })
  .refine(noNul, NUL_MESSAGE);

export const datasetCreateRequestSchema = z.object({
  name: nameSchema,
  kind: datasetKindSchema,
  description: descriptionSchema.default(''),
  triggerWord: triggerWordSchema.default(''),
});
export const datasetUpdateRequestSchema = z
  .object({ name: nameSchema, kind: datasetKindSchema, description: descriptionSchema, triggerWord: triggerWordSchema })
  .partial()
  .refine((b) => Object.keys(b).length > 0, { error: '请至少修改一项' });

export const datasetSchema = z.object({
  id: z.string(),
  name: z.string(),
  kind: datasetKindSchema,
  description: z.string(),
  triggerWord: z.string(),
  imageCount: z.number().int(),
  /** Images whose caption is still empty. */
  uncaptioned: z.number().int(),
  bytes: z.number().int(),
  /** The first image's id (the card's cover), null while empty. */
  coverImageId: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Dataset = z.infer<typeof datasetSchema>;

export const datasetImageSchema = z.object({
  id: z.string(),
  name: z.string().describe('文件名（导出时同名 .txt 为标注）'),
  format: z.enum(DATASET_IMAGE_FORMATS),
  width: z.number().int(),
  height: z.number().int(),
  bytes: z.number().int(),
  caption: z.string(),
  createdAt: z.string(),
});
export type DatasetImage = z.infer<typeof datasetImageSchema>;

export const datasetIdParamsSchema = z.object({ id: z.uuid({ error: '数据集 ID 格式不正确' }) });
export const datasetImageParamsSchema = z.object({
  id: z.uuid({ error: '数据集 ID 格式不正确' }),
  imageId: z.uuid({ error: '图片 ID 格式不正确' }),
});
export const datasetListQuerySchema = pagingQuerySchema;
export const datasetImageListQuerySchema = pagingQuerySchema.extend({
  /** Only the images still without a caption. */
  uncaptioned: z
    .enum(['true', 'false'], { error: 'uncaptioned 只能是 true 或 false' })
    .transform((v) => v === 'true')
    .optional(),
});

/** ?thumb=1: the thumbnail (WebP) instead of the image itself. */
export const datasetImageFileQuerySchema = z.object({ thumb: z.enum(['1'], { error: 'thumb 只能是 1' }).optional() });

export const datasetCaptionRequestSchema = z.object({ caption: captionSchema });

/** Captions changed in bulk: one by one, a trigger word in front of every caption, or find and replace. */
export const datasetCaptionsRequestSchema = z.discriminatedUnion(
  'op',
  [
    z.object({
      op: z.literal('set'),
      captions: z
        .array(z.object({ id: z.uuid({ error: '图片 ID 格式不正确' }), caption: captionSchema }))
        .min(1, { error: '请至少给出一条标注' })
        .max(DATASET_MAX_IMAGES, { error: `一次最多 ${DATASET_MAX_IMAGES} 条` }),
    }),
    z.object({
      op: z.literal('prefix'),
      text: z.string().trim().min(1, { error: '请输入要加在前面的文字' }).max(200, { error: '最多 200 个字符' }).refine(noNul, NUL_MESSAGE),
    }),
    z.object({
      op: z.literal('replace'),
      find: z.string().min(1, { error: '请输入要查找的文字' }).max(200, { error: '最多 200 个字符' }).refine(noNul, NUL_MESSAGE),
      replace: z.string().max(200, { error: '最多 200 个字符' }).refine(noNul, NUL_MESSAGE),
    }),
  ],
  { error: '请选择批量操作：set、prefix 或 replace' },
);
export const datasetCaptionsResultSchema = z.object({ changed: z.number().int() });

/** One upload or one zip import: what was taken and what was refused, file by file. */
export const datasetUploadResultSchema = z.object({
  added: z.array(datasetImageSchema),
  refused: z.array(z.object({ name: z.string(), code: z.number().int(), message: z.string() })),
});
export type DatasetUploadResult = z.infer<typeof datasetUploadResultSchema>;

export const datasetExportQuerySchema = z.object({
  /** sd-scripts' repeats, the number in the folder name `<repeats>_<trigger>`. */
  repeats: z
    .string()
    .regex(/^\d{1,3}$/, { error: '重复次数应为 1-100 的整数' })
    .transform(Number)
    .pipe(z.number().int().min(1, { error: '重复次数应为 1-100 的整数' }).max(100, { error: '重复次数应为 1-100 的整数' }))
    .default(10),
});
