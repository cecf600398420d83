/**
 * 文件存储: the account's own file tree, mounted at /root/shared in each of its local instances and
 * browsed in the console (我的数据 → 文件存储). Paths are absolute inside the tree ("/", "/data/a.txt").
 */
import { z } from 'zod';

const SEGMENT = /^[^/\0]{1,255}$/;
/** Bytes of a name in UTF-8: Linux takes 255 per name (about 85 Chinese characters). */
const utf8Bytes = (s: string) =>
  [...s].reduce((n, ch) => n + (ch.codePointAt(0)! < 0x80 ? 1 : ch.codePointAt(0)! < 0x800 ? 2 : ch.codePointAt(0)! < 0x10000 ? 3 : 4), 0);
const segmentOk = (s: string) => SEGMENT.test(s) && s !== '.' && s !== '..' && utf8Bytes(s) <= 255;

/** A path inside the tree: "/" or "/a/b", no "." or ".." segments, no empty ones. */
export const fileStorePathSchema = z
  .string({ error: '请给出路径' })
  .max(1024, { error: '路径过长' })
  .refine((p) => p === '/' || (p.startsWith('/') && p.slice(1).split('/').every(segmentOk)), {
    error: '路径不正确：应以 / 开头，不能含空的、"." 或 ".." 段',
  });

/** One name inside a folder (a new folder, a rename, an uploaded file). */
export const fileStoreNameSchema = z
  .string({ error: '请输入名称' })
  .trim()
  .min(1, { error: '请输入名称' })
  .max(255, { error: '名称最多 255 个字符' })
  .refine(segmentOk, { error: '名称不能含 / ，不能是 . 或 ..，且最多 255 字节（约 85 个汉字）' });

export const fileStoreEntrySchema = z.object({
  name: z.string(),
  path: z.string(),
  dir: z.boolean(),
  size: z.number().int().describe('字节；文件夹为 0'),
  modifiedAt: z.string(),
});

export const fileStoreListingSchema = z.object({
  path: z.string(),
  entries: z.array(fileStoreEntrySchema),
  usedBytes: z.number().int(),
  quotaBytes: z.number().int(),
  /** The folder holds more entries than a listing shows (the first 5,000 by the file system's order). */
  truncated: z.boolean().optional(),
});

export const fileStorePathQuerySchema = z.object({ path: fileStorePathSchema.default('/') });
export const fileStoreFolderRequestSchema = z.object({ parent: fileStorePathSchema, name: fileStoreNameSchema });
export const fileStoreRenameRequestSchema = z.object({ path: fileStorePathSchema, name: fileStoreNameSchema });

export type FileStoreEntry = z.infer<typeof fileStoreEntrySchema>;
export type FileStoreListing = z.infer<typeof fileStoreListingSchema>;
