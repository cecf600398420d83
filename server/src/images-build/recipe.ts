/**
 * The stock images' recipes (server/images/<name>.json): which Debian suite, which packages at
 * which exact versions (the recipe is the lock: `npm run images -- --update-pins` refreshes it),
 * the locale and time zone, and the OCI image config a machine starts with. A recipe may extend
 * another (pytorch = base + torch): it gets the other's packages, then its own.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

export const RECIPES_DIR = fileURLToPath(new URL('../../images', import.meta.url));

/**
 * Bumped whenever the build steps in code change what an image contains (mmdebstrap.ts's hooks,
 * filters): it is part of every recipe's hash, so `npm run images` rebuilds what it built before.
 */
export const BUILDER_VERSION = 1;

/** A Debian package name (policy §5.6.1). */
const packageName = z.string().regex(/^[a-z0-9][a-z0-9+.-]+$/, { error: '应为 Debian 包名（小写字母、数字、+ . -）' });
/** A Debian version (policy §5.6.12): [epoch:]upstream[-revision], nothing left open. */
const debianVersion = z
  .string({ error: '必须固定版本号（如 "3.11.2-1+b1"），不能留空' })
  .regex(/^(\d+:)?[0-9][A-Za-z0-9.+~:-]*$/, { error: '应为确切的 Debian 版本号，如 3.11.2-1+b1 或 1:9.2p1-2+deb12u10' });
/** repository[:tag] as OCI names it (distribution's reference grammar, lower-case path, a tag required). */
const ociRef = z.string().regex(/^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*:[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/, {
  error: '应为 仓库:标签 形式，如 console/base:12',
});
const envEntry = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*=/, { error: '应为 名称=值 形式' });

export const recipeSchema = z
  .object({
    /** The recipe's file name without .json: what `npm run images <name>` builds. */
    name: z.string().regex(/^[a-z][a-z0-9-]{0,31}$/, { error: '应为小写字母开头的短名，如 base' }),
    ref: ociRef,
    /** What the image is, as the console shows it: "PyTorch 1.13.1 · CPU". */
    title: z.string().trim().min(1).max(64),
    description: z.string().trim().min(1).max(300),
    /** system: a 系统镜像 / 框架镜像; desktop: a 云桌面 image; application: a 镜像应用 (serves `app.port`). */
    kind: z.enum(['system', 'desktop', 'application']),
    extends: z.string().optional(),
    suite: z.string().regex(/^[a-z]+$/, { error: '应为 Debian 发行代号，如 bookworm' }),
    /** mmdebstrap's package set under the packages below; `apt` (essential + apt) unless the recipe says otherwise. */
    variant: z.enum(['essential', 'apt', 'required', 'minbase', 'important', 'standard']).default('apt'),
    /** Every package at an exact version: the build installs these and nothing newer. */
    packages: z.record(packageName, debianVersion).refine((p) => Object.keys(p).length > 0, { error: '至少要有一个软件包' }),
    locale: z
      .string()
      .regex(/^[a-z]{2,3}_[A-Z]{2}\.UTF-8$/, { error: '应为 UTF-8 区域，如 zh_CN.UTF-8' })
      .default('zh_CN.UTF-8'),
    timezone: z
      .string()
      .regex(/^[A-Za-z_]+\/[A-Za-z_+-]+$/, { error: '应为时区名，如 Asia/Shanghai' })
      .default('Asia/Shanghai'),
    /** Environment besides PATH, LANG and TZ (which come from the locale and time zone). */
    env: z.array(envEntry).default([]),
    /** What the image runs when nothing else is asked (an application's command comes from `app`). */
    cmd: z.array(z.string().min(1)).min(1).default(['/bin/bash']),
    workingDir: z.string().regex(/^\//, { error: '应为绝对路径' }).default('/root'),
    /** An application's port and the command that serves it there (the image config's Cmd and ExposedPorts). */
    app: z
      .object({
        port: z.number().int().min(1).max(65535),
        command: z.array(z.string().min(1)).min(1),
      })
      .optional(),
  })
  .strict()
  .superRefine((r, ctx) => {
    if (r.kind === 'application' && !r.app) ctx.addIssue({ code: 'custom', path: ['app'], message: '镜像应用必须给出 app.port 与 app.command' });
    if (r.kind !== 'application' && r.app) ctx.addIssue({ code: 'custom', path: ['app'], message: '只有 kind 为 application 的镜像才有 app' });
  });

export type Recipe = z.infer<typeof recipeSchema>;

/** A recipe with what it extends folded in: the full package list, in install order. */
export interface ResolvedRecipe extends Omit<Recipe, 'extends'> {
  /** The recipes it is built from, itself last: ['base', 'pytorch']. */
  lineage: string[];
}

export class RecipeError extends Error {}

/** Reads and checks one recipe file; its `name` must be its file name. */
export function readRecipe(file: string): Recipe {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new RecipeError(`${file}：不是有效的 JSON（${(e as Error).message}）`);
  }
  const parsed = recipeSchema.safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(根)'}: ${i.message}`);
    throw new RecipeError(`${file}：配方有误\n${lines.join('\n')}`);
  }
  const stem = path.basename(file, '.json');
  if (parsed.data.name !== stem) throw new RecipeError(`${file}：name 应与文件名一致（${stem}）`);
  return parsed.data;
}

/** Every recipe of the folder, by name; refs unique, every `extends` known and acyclic. */
export function loadRecipes(dir: string = RECIPES_DIR): Map<string, Recipe> {
  const recipes = new Map<string, Recipe>();
  for (const f of readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()) {
    const r = readRecipe(path.join(dir, f));
    recipes.set(r.name, r);
  }
  const refs = new Map<string, string>();
  for (const r of recipes.values()) {
    const other = refs.get(r.ref);
    if (other) throw new RecipeError(`配方 ${other} 与 ${r.name} 使用了同一个镜像名 ${r.ref}`);
    refs.set(r.ref, r.name);
    resolveRecipe(recipes, r.name);
  }
  return recipes;
}

/** The recipe with everything it extends folded in. */
export function resolveRecipe(recipes: ReadonlyMap<string, Recipe>, name: string, seen: string[] = []): ResolvedRecipe {
  const r = recipes.get(name);
  if (!r)
    throw new RecipeError(seen.length ? `配方 ${seen.at(-1)} 扩展的 ${name} 不存在` : `没有名为 ${name} 的配方（可选：${[...recipes.keys()].join('、')}）`);
  if (seen.includes(name)) throw new RecipeError(`配方循环扩展：${[...seen, name].join(' → ')}`);
  const { extends: parentName, ...own } = r;
  const parent = parentName ? resolveRecipe(recipes, parentName, [...seen, name]) : null;
  if (parent && parent.suite !== r.suite) throw new RecipeError(`配方 ${name} 的发行版 ${r.suite} 与它扩展的 ${parentName}（${parent.suite}）不同`);
  const resolved: ResolvedRecipe = { ...own, packages: { ...parent?.packages, ...r.packages }, lineage: [...(parent?.lineage ?? []), name] };
  for (const needed of ['locales', 'tzdata']) {
    if (!resolved.packages[needed]) throw new RecipeError(`配方 ${name} 缺少 ${needed}：区域 ${r.locale} 与时区 ${r.timezone} 需要它`);
  }
  return resolved;
}

/** The packages as apt takes them: name=version. */
export function pinnedPackages(r: Pick<Recipe, 'packages'>): string[] {
  return Object.entries(r.packages).map(([name, version]) => `${name}=${version}`);
}

/** JSON with keys sorted at every level, so a hash does not depend on the order a file lists them in. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/**
 * What identifies the image a recipe makes: the resolved recipe (its parents' pins included) and the
 * builder's version. Stored on the image (RECIPE_ANNOTATION); the same hash there means nothing to build.
 */
export function recipeHash(r: ResolvedRecipe): string {
  return createHash('sha256')
    .update(canonical({ builder: BUILDER_VERSION, recipe: r }))
    .digest('hex');
}
