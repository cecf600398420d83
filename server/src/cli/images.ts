/**
 * `npm run images [名称…] [--force] [--update-pins] [--print]`: the stock images (server/images/*.json)
 * built from Debian's packages with mmdebstrap into the local driver's OCI layout
 * (DATA_DIR/local-compute/oci). Without names, every recipe. As root (mmdebstrap's root mode);
 * another user needs /etc/subuid and /etc/subgid for its unshare mode.
 *
 *   --force        build even where the layout has the image from the same recipe
 *   --update-pins  set each named recipe's versions to what the suite has now, build nothing
 *   --print        show mmdebstrap's command line of each, build nothing
 *
 * DEBIAN_MIRROR / DEBIAN_SECURITY_MIRROR: the mirrors to install from (Debian's own by default).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../config.js';
import { localComputeDir } from '../drivers/compute/index.js';
import { OciLayout } from '../drivers/compute/local/oci/layout.js';
import { buildImages, formatBytes, formatSeconds } from '../images-build/build.js';
import { MMDEBSTRAP, mirrorsFrom, mmdebstrapArgs } from '../images-build/mmdebstrap.js';
import { refreshAptLists, updatePinsOf } from '../images-build/pins.js';
import { loadRecipes, RecipeError, RECIPES_DIR, resolveRecipe, type ResolvedRecipe } from '../images-build/recipe.js';

const USAGE = `用法：
  npm run images [-- 名称…]            构建镜像（不写名称则全部），配方未变且已构建的跳过
  npm run images -- --force [名称…]     重新构建
  npm run images -- --update-pins [名称…]  把配方中的版本更新为 Debian 当前提供的版本（只改配方，不构建）
  npm run images -- --print [名称…]     只显示 mmdebstrap 命令行`;

const FLAGS = ['--force', '--update-pins', '--print', '--help'] as const;

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

/** The layout the local driver boots machines from: the driver's folder's `oci` (drivers/compute/local/machine-image.ts). */
function layoutDir(dataDir: string): string {
  return path.join(localComputeDir(dataDir), 'oci');
}

/** One word for a POSIX shell, as typed: single-quoted, its own single quotes closed and escaped. */
function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

function parseArgs(argv: string[]) {
  const flags = new Set(argv.filter((a) => a.startsWith('-')));
  for (const f of flags) if (!(FLAGS as readonly string[]).includes(f)) fail(`未知选项 ${f}\n${USAGE}`);
  return { names: argv.filter((a) => !a.startsWith('-')), flags };
}

function chosenRecipes(names: string[]): ResolvedRecipe[] {
  const recipes = loadRecipes();
  return (names.length ? names : [...recipes.keys()]).map((n) => resolveRecipe(recipes, n));
}

function updatePins(names: string[]) {
  const recipes = loadRecipes();
  if (process.getuid?.() === 0) {
    console.log('更新 apt 软件包索引（apt-get update）…');
    const refreshed = refreshAptLists();
    if (!refreshed.ok) console.log(`apt-get update 未成功，按本机现有索引更新：${refreshed.why}`);
  } else console.log('不是 root：不更新 apt 索引，按本机现有索引（可能较旧）更新版本');
  for (const name of names.length ? names : [...recipes.keys()]) {
    const r = recipes.get(name) ?? fail(`没有名为 ${name} 的配方（可选：${[...recipes.keys()].join('、')}）`);
    const { changed, missing } = updatePinsOf(path.join(RECIPES_DIR, `${name}.json`), r.suite, Object.keys(r.packages));
    console.log(`${name}：${changed.length ? changed.map((c) => `${c.name} ${c.from} → ${c.to}`).join('；') : '版本均为最新'}`);
    if (missing.length) console.log(`  本机 apt 中找不到 ${r.suite} 的：${missing.join('、')}（本机的 apt 源是否包含 ${r.suite}？）`);
  }
}

async function build(recipes: ResolvedRecipe[], dataDir: string, force: boolean) {
  const asRoot = process.getuid?.() === 0;
  if (!existsSync(MMDEBSTRAP)) fail(`缺少 ${MMDEBSTRAP}：apt-get install mmdebstrap`);
  if (!asRoot) console.log('提示：不是 root，mmdebstrap 使用 unshare 模式，需要 /etc/subuid 与 /etc/subgid 中有本用户的条目；失败时请用 root 运行');
  const dir = layoutDir(dataDir);
  const layout = await OciLayout.open(dir);
  console.log(`镜像目录：${dir}`);
  const started = Date.now();
  const outcomes = await buildImages(recipes, {
    layout,
    workDir: path.join(localComputeDir(dataDir), 'image-build'),
    mirrors: mirrorsFrom(process.env),
    asRoot,
    force,
    say: (line) => console.log(line),
  });
  console.log(`\n镜像（共 ${formatSeconds((Date.now() - started) / 1000)}，摘要记录在 ${path.join(dir, 'index.json')}）：`);
  for (const o of outcomes) {
    console.log(`  ${o.ref} → ${o.digest}  ${formatBytes(o.size)}  ${o.built ? `构建用时 ${formatSeconds(o.seconds)}` : '未变'}`);
  }
}

async function main() {
  const { names, flags } = parseArgs(process.argv.slice(2));
  if (flags.has('--help')) return console.log(USAGE);
  if (flags.has('--update-pins')) return updatePins(names);
  const recipes = chosenRecipes(names);
  if (flags.has('--print')) {
    const mirrors = mirrorsFrom(process.env);
    for (const r of recipes) console.log(`# ${r.ref}\n${[MMDEBSTRAP, ...mmdebstrapArgs(r, { mirrors, asRoot: true })].map(shellQuote).join(' ')}\n`);
    return;
  }
  await build(recipes, loadConfig(process.env).dataDir, flags.has('--force'));
}

main().catch((e: Error) => fail(e instanceof RecipeError ? e.message : `失败：${e.message}`));
