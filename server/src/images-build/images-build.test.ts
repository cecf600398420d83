/**
 * `npm run images` without Debian's mirror: the stock recipes are valid and fully pinned, a recipe
 * that leaves a version open or an application without a port is refused, mmdebstrap gets the pinned
 * packages, locale and time zone, and an image whose recipe is unchanged is not built again. No real
 * build here: mmdebstrap's own index download from the mirror takes 10–20 s before it installs
 * anything; README "Images" says how to build and check the images.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OciLayout } from '../drivers/compute/local/oci/layout.js';
import { buildImage, imageConfigOf, mountPointsUnder, RECIPE_ANNOTATION, type BuildOptions } from './build.js';
import { DEFAULT_MIRRORS, describeLine, mirrorsFrom, mmdebstrapArgs } from './mmdebstrap.js';
import { newestInSuite, withPins } from './pins.js';
import { loadRecipes, recipeHash, resolveRecipe, type ResolvedRecipe } from './recipe.js';

const scratch = mkdtempSync(path.join(tmpdir(), 'images-build-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A folder of recipe files written from `recipes` (name → content). */
function recipeDir(recipes: Record<string, unknown>): string {
  const dir = mkdtempSync(path.join(scratch, 'recipes-'));
  for (const [name, content] of Object.entries(recipes)) writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(content));
  return dir;
}

const minimal = {
  name: 'mini',
  ref: 'console/mini:1',
  title: 'Mini',
  description: '测试用',
  kind: 'system',
  suite: 'bookworm',
  packages: { locales: '2.36-9+deb12u14', tzdata: '2026f-0+deb12u1' },
};

describe('the stock recipes (server/images)', () => {
  const recipes = loadRecipes();

  it('are base, pytorch, desktop and a notebook application, each with its ref and the name it is shown by', () => {
    const byName = Object.fromEntries([...recipes.values()].map((r) => [r.name, [r.ref, r.title]]));
    expect(byName).toMatchObject({
      base: ['console/base:12', expect.stringContaining('Debian 12')],
      pytorch: ['console/pytorch:1.13.1-cpu', 'PyTorch 1.13.1 · CPU'],
      desktop: ['console/desktop:12', expect.stringContaining('桌面')],
      notebook: ['console/notebook:6.4.12', expect.stringContaining('Jupyter Notebook 6.4.12')],
    });
  });

  it('pin every package to an exact version, pytorch on top of all of base’s', () => {
    const pytorch = resolveRecipe(recipes, 'pytorch');
    const base = resolveRecipe(recipes, 'base');
    expect(pytorch.packages).toMatchObject({
      ...base.packages,
      'python3-torch': expect.stringMatching(/^1\.13\.1/),
      'python3-torchvision': expect.any(String),
    });
    for (const name of recipes.keys()) {
      for (const version of Object.values(resolveRecipe(recipes, name).packages)) expect(version).toMatch(/^(\d+:)?\d[\w.+~:-]*$/);
    }
  });

  it('give base what the console runs inside machines, and desktop what desktop.ts starts', () => {
    const base = Object.keys(resolveRecipe(recipes, 'base').packages);
    expect(base).toEqual(
      expect.arrayContaining(['python3', 'python3-pip', 'python3-venv', 'python3-notebook', 'openssh-sftp-server', 'util-linux', 'git', 'vim', 'curl']),
    );
    const desktop = Object.keys(resolveRecipe(recipes, 'desktop').packages);
    const ciDesktop = /for p in ([^;]+); do/.exec(readFileSync(new URL('../../../.ci/run', import.meta.url), 'utf8'))![1]!.split(/[\s\\]+/);
    const needed = ciDesktop.filter((p) => p && !['x11-utils', 'xclip'].includes(p)); // those two are the desktop test's tools
    expect(desktop).toEqual(expect.arrayContaining([...needed, 'chromium', 'fonts-noto-cjk']));
  });

  it('make the application serve its port with its command, in Chinese and Beijing time', () => {
    const config = imageConfigOf(resolveRecipe(recipes, 'notebook'));
    expect(config.exposedPorts).toEqual([8888]);
    expect(config.cmd.join(' ')).toMatch(/python3 -m notebook .*--port=8888/);
    expect(config.env).toEqual(expect.arrayContaining(['LANG=zh_CN.UTF-8', 'TZ=Asia/Shanghai', expect.stringMatching(/^PATH=.*\/usr\/bin/)]));
    expect(imageConfigOf(resolveRecipe(recipes, 'base'))).toMatchObject({ cmd: ['/bin/bash'], workingDir: '/root', exposedPorts: [] });
  });
});

describe('a recipe is refused', () => {
  const refusal = (recipe: Record<string, unknown>) => {
    try {
      loadRecipes(recipeDir({ [String(recipe.name)]: recipe }));
    } catch (e) {
      return (e as Error).message;
    }
    return 'accepted';
  };

  it('when a package is not pinned to an exact version', () => {
    expect(refusal({ ...minimal, packages: { ...minimal.packages, python3: '' } })).toMatch(/packages\.python3.*确切的 Debian 版本号/);
    expect(refusal({ ...minimal, packages: { ...minimal.packages, python3: 'latest' } })).toMatch(/packages\.python3/);
    expect(refusal({ ...minimal, packages: ['python3', 'locales', 'tzdata'] })).toMatch(/packages/);
  });

  it('when an application has no port, or its port is no port', () => {
    expect(refusal({ ...minimal, kind: 'application' })).toMatch(/app.*镜像应用必须给出 app\.port/);
    expect(refusal({ ...minimal, kind: 'application', app: { port: 0, command: ['x'] } })).toMatch(/app\.port/);
    expect(refusal({ ...minimal, app: { port: 8080, command: ['x'] } })).toMatch(/只有 kind 为 application/);
  });

  it('when its ref is not repository:tag, or two recipes share one', () => {
    expect(refusal({ ...minimal, ref: 'Console/Base' })).toMatch(/ref.*仓库:标签/);
    expect(() => loadRecipes(recipeDir({ mini: minimal, other: { ...minimal, name: 'other' } }))).toThrow(/同一个镜像名 console\/mini:1/);
  });

  it('when it extends a recipe that does not exist, or lacks the locale and time-zone packages', () => {
    expect(refusal({ ...minimal, extends: 'nothing' })).toMatch(/扩展的 nothing 不存在/);
    expect(refusal({ ...minimal, packages: { bash: '5.2.15-2+b13' } })).toMatch(/缺少 locales/);
  });

  it('when its name is not its file name', () => {
    const dir = recipeDir({});
    writeFileSync(path.join(dir, 'elsewhere.json'), JSON.stringify(minimal));
    expect(() => loadRecipes(dir)).toThrow(/name 应与文件名一致（elsewhere）/);
  });
});

describe('the recipe hash', () => {
  it('changes with a parent’s pin, not with the order packages are listed in', () => {
    const base = { ...minimal, name: 'base', ref: 'console/b:1' };
    const child = { ...minimal, name: 'child', ref: 'console/c:1', extends: 'base', packages: { vim: '2:9.0.1378-2+deb12u2' } };
    const hashOf = (b: object, name = 'child') => recipeHash(resolveRecipe(loadRecipes(recipeDir({ base: b, child })), name));
    const reordered = { ...base, packages: { tzdata: base.packages.tzdata, locales: base.packages.locales } };
    expect(hashOf(reordered)).toBe(hashOf(base));
    expect(hashOf({ ...base, packages: { ...base.packages, tzdata: '2026g-0+deb12u1' } })).not.toBe(hashOf(base));
  });
});

describe('mmdebstrap’s command line', () => {
  const pytorch = resolveRecipe(loadRecipes(), 'pytorch');

  it('installs every pinned package from the suite’s main, updates and security archives into a tar on standard output', () => {
    const args = mmdebstrapArgs(pytorch, { mirrors: DEFAULT_MIRRORS, asRoot: true });
    expect(args).toEqual(expect.arrayContaining(['--variant=apt', '--mode=root', '--format=tar', '--skip=output/dev']));
    const include = args
      .find((a) => a.startsWith('--include='))!
      .slice('--include='.length)
      .split(',');
    expect(include).toContain(`python3-torch=${pytorch.packages['python3-torch']}`);
    expect(include).toContain(`python3-notebook=${pytorch.packages['python3-notebook']}`);
    expect(include).toHaveLength(Object.keys(pytorch.packages).length);
    expect(args.slice(-5)).toEqual([
      'bookworm',
      '-',
      'deb http://deb.debian.org/debian bookworm main',
      'deb http://deb.debian.org/debian bookworm-updates main',
      'deb http://deb.debian.org/debian-security bookworm-security main',
    ]);
  });

  it('generates zh_CN.UTF-8, sets Asia/Shanghai and leaves out the building host’s resolver and name', () => {
    const hook = mmdebstrapArgs(pytorch, { mirrors: DEFAULT_MIRRORS, asRoot: true }).find((a) => a.startsWith('--customize-hook='))!;
    expect(hook).toContain(`echo 'zh_CN.UTF-8 UTF-8' >> "$1/etc/locale.gen"`);
    expect(hook).toContain('chroot "$1" locale-gen');
    expect(hook).toContain(`ln -sf '/usr/share/zoneinfo/Asia/Shanghai' "$1/etc/localtime"`);
    expect(hook).toContain('rm -f "$1/etc/resolv.conf" "$1/etc/hostname"');
  });

  it('keeps documentation other than licences and manual pages out, as slim container images do', () => {
    const args = mmdebstrapArgs(pytorch, { mirrors: DEFAULT_MIRRORS, asRoot: true });
    expect(args.find((a) => a.startsWith('--essential-hook='))).toContain(`'path-exclude=/usr/share/doc/*' 'path-include=/usr/share/doc/*/copyright'`);
    expect(args.find((a) => a.startsWith('--customize-hook='))).toContain('find "$1/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete');
  });

  it('uses unshare mode for a user other than root, and the mirrors the environment names', () => {
    const mirrors = mirrorsFrom({ DEBIAN_MIRROR: 'https://mirrors.aliyun.com/debian', DEBIAN_SECURITY_MIRROR: 'https://mirrors.aliyun.com/debian-security' });
    const args = mmdebstrapArgs(pytorch, { mirrors, asRoot: false });
    expect(args).toContain('--mode=unshare');
    expect(args).toContain('deb https://mirrors.aliyun.com/debian-security bookworm-security main');
  });

  it('says in Chinese which step it is at, and how to fix a pin the mirror no longer has', () => {
    expect(describeLine('I: downloading packages with apt...')).toEqual({ kind: 'step', text: '下载软件包（downloading packages with apt...）' });
    expect(describeLine("E: Version '7.88.1-10+deb12u1' for 'curl' was not found")?.text).toMatch(
      /curl 的固定版本 7\.88\.1-10\+deb12u1 已不在镜像源中.*--update-pins/,
    );
    expect(describeLine('Get:1 http://deb.debian.org/debian bookworm InRelease')).toBeNull();
  });
});

describe('--update-pins', () => {
  const madison = [
    '      curl | 7.88.1-10+deb12u15 | http://deb.debian.org/debian-security bookworm-security/main amd64 Packages',
    '      curl | 7.88.1-10+deb12u14 | http://deb.debian.org/debian bookworm/main amd64 Packages',
    '      curl | 8.14.1-2 | http://deb.debian.org/debian trixie/main amd64 Packages',
  ].join('\n');

  it('takes the newest version the suite’s archives have, never another suite’s', () => {
    expect(newestInSuite(madison, 'bookworm')).toBe('7.88.1-10+deb12u15');
    expect(newestInSuite(madison.split('\n').slice(2).join('\n'), 'bookworm')).toBeNull();
  });

  it('rewrites only the versions in the recipe’s packages, the file otherwise as it was', () => {
    const text = `{\n  "name": "x",\n  "description": "curl 7",\n  "packages": {\n    "curl": "7.88.1-10+deb12u14",\n    "vim": "2:9.0.1378-2+deb12u2"\n  },\n  "env": ["curl=1"]\n}\n`;
    const { text: next, changed } = withPins(
      text,
      new Map([
        ['curl', '7.88.1-10+deb12u15'],
        ['vim', '2:9.0.1378-2+deb12u2'],
      ]),
    );
    expect(changed).toEqual([{ name: 'curl', from: '7.88.1-10+deb12u14', to: '7.88.1-10+deb12u15' }]);
    expect(next).toBe(text.replace('"curl": "7.88.1-10+deb12u14"', '"curl": "7.88.1-10+deb12u15"'));
  });
});

describe('building into the layout', () => {
  /** Stands in for mmdebstrap: a tar of one file; counts its runs. */
  function fakeRun() {
    const calls: string[][] = [];
    const run: NonNullable<BuildOptions['run']> = async (args, tarFile) => {
      calls.push(args);
      const root = mkdtempSync(path.join(scratch, 'root-'));
      mkdirSync(path.join(root, 'etc'));
      writeFileSync(path.join(root, 'etc', 'os-release'), 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n');
      expect(spawnSync('tar', ['-cf', tarFile, '-C', root, '.']).status).toBe(0);
    };
    return { run, calls };
  }

  it('imports the image under its ref with its config and recipe hash, and skips it while the recipe is unchanged', async () => {
    const layout = await OciLayout.open(path.join(scratch, 'oci'));
    const recipes = loadRecipes();
    const notebook = resolveRecipe(recipes, 'notebook');
    const fake = fakeRun();
    const lines: string[] = [];
    const options: BuildOptions = {
      layout,
      workDir: path.join(scratch, 'work'),
      mirrors: DEFAULT_MIRRORS,
      asRoot: true,
      say: (l) => lines.push(l),
      run: fake.run,
    };

    const first = await buildImage(notebook, options);
    expect(first).toMatchObject({ ref: 'console/notebook:6.4.12', built: true });
    const info = (await layout.resolve('console/notebook:6.4.12'))!;
    expect(info.digest).toBe(first.digest);
    expect(info.annotations).toMatchObject({ [RECIPE_ANNOTATION]: recipeHash(notebook), 'org.opencontainers.image.title': notebook.title });
    expect(info.config.exposedPorts).toEqual([8888]);
    expect(lines.at(-1)).toContain(`console/notebook:6.4.12 → ${first.digest}`);

    const again = await buildImage(notebook, options);
    expect(again).toMatchObject({ built: false, digest: first.digest });
    expect(fake.calls).toHaveLength(1);

    const repinned: ResolvedRecipe = { ...notebook, packages: { ...notebook.packages, 'python3-scipy': '1.10.1-3' } };
    const rebuilt = await buildImage(repinned, options);
    expect(rebuilt.built).toBe(true);
    expect(fake.calls).toHaveLength(2);
    expect(fake.calls[1]!.find((a) => a.startsWith('--include='))).toContain('python3-scipy=1.10.1-3');
  });

  it('never removes a build folder that still has the host’s /proc or /dev mounted in it (a killed mmdebstrap)', () => {
    const mountinfo = [
      '22 1 0:21 / /proc rw,nosuid - proc proc rw',
      '90 1 0:5 / /data/local-compute/image-build/base/mmdebstrap.x/dev rw - devtmpfs udev rw',
      '91 1 0:5 / /data/local-compute/image-build/base\\040two/proc rw - proc proc rw',
    ].join('\n');
    expect(mountPointsUnder('/data/local-compute/image-build/base', mountinfo)).toEqual(['/data/local-compute/image-build/base/mmdebstrap.x/dev']);
    expect(mountPointsUnder('/data/local-compute/image-build/base two', mountinfo)).toEqual(['/data/local-compute/image-build/base two/proc']);
    expect(mountPointsUnder('/data/local-compute/image-build/pytorch', mountinfo)).toEqual([]);
  });
});
