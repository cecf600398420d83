import { existsSync, mkdirSync, mkdtempSync, lstatSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildWeb, type WebBuildOptions } from './build';

let webDir: string;
afterEach(() => rmSync(webDir, { recursive: true, force: true }));

/** A web folder with one source file, and a stand-in for vite: it writes the page, then (slowly) its hashed assets. */
function fixture() {
  webDir = mkdtempSync(path.join(tmpdir(), 'web-build-'));
  mkdirSync(path.join(webDir, 'src'));
  writeFileSync(path.join(webDir, 'src', 'main.ts'), 'export const version = 1;');
  const builds: string[] = [];
  const build = async (outDir: string) => {
    const version = readFileSync(path.join(webDir, 'src', 'main.ts'), 'utf8').match(/\d+/)![0];
    builds.push(version);
    await mkdir(path.join(outDir, 'assets'), { recursive: true });
    await writeFile(path.join(outDir, 'index.html'), `<script src="/assets/main-v${version}.js"></script>`);
    await new Promise((r) => setTimeout(r, 150));
    await writeFile(path.join(outDir, 'assets', `main-v${version}.js`), `console.log(${version})`);
    await writeFile(path.join(outDir, 'assets', `main-v${version}.js.br`), 'compressed');
  };
  const options: WebBuildOptions = { webDir, inputs: [path.join(webDir, 'src')], build, pollMs: 20 };
  return { builds, options };
}

const dist = (...p: string[]) => path.join(webDir, 'dist', ...p);

describe('the web build (npm run build, npm start)', () => {
  it('two builds at once both succeed: one builds, the other waits and finds web/dist current', async () => {
    const { builds, options } = fixture();
    const results = await Promise.all([buildWeb(options), buildWeb(options)]);
    expect(results.sort()).toEqual([false, true]);
    expect(builds).toEqual(['1']);
    expect(readFileSync(dist('index.html'), 'utf8')).toContain('main-v1.js');
    expect(existsSync(dist('assets', 'main-v1.js'))).toBe(true);
    expect(existsSync(dist('assets', 'main-v1.js.br'))).toBe(true);
    // No lock or half-built folder is left behind.
    expect(existsSync(path.join(webDir, '.build-lock'))).toBe(false);
    expect(readFileSync(path.join(webDir, 'dist', '.build-stamp.json'), 'utf8')).toContain('main-v1.js');
  });

  it('a second start with nothing changed skips the build; a changed source builds again, --force always', async () => {
    const { builds, options } = fixture();
    expect(await buildWeb(options)).toBe(true);
    expect(await buildWeb(options)).toBe(false);
    expect(builds).toEqual(['1']);
    writeFileSync(path.join(webDir, 'src', 'main.ts'), 'export const version = 2;');
    expect(await buildWeb(options)).toBe(true);
    expect(await buildWeb({ ...options, force: true })).toBe(true);
    expect(builds).toEqual(['1', '2', '2']);
  });

  it('while it builds, a running server still finds a whole web/dist; a page loaded before the swap still gets its chunks', async () => {
    const { options } = fixture();
    await buildWeb(options);
    writeFileSync(path.join(webDir, 'src', 'main.ts'), 'export const version = 2;');
    let building = true;
    const seen: string[] = [];
    const reader = (async () => {
      while (building) {
        // What a request for the page and its script reads, at any moment of the build.
        const page = existsSync(dist('index.html')) ? readFileSync(dist('index.html'), 'utf8') : 'missing';
        const script = page.match(/main-v\d+\.js/)?.[0];
        seen.push(script && existsSync(dist('assets', script)) ? 'whole' : `broken: ${page}`);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    await buildWeb(options);
    building = false;
    await reader;
    expect(seen.filter((s) => s !== 'whole')).toEqual([]);
    expect(readFileSync(dist('index.html'), 'utf8')).toContain('main-v2.js');
    // The page of the build before (still open in a browser) asks for its own script.
    expect(existsSync(dist('assets', 'main-v1.js'))).toBe(true);
  });

  it('replaces a web/dist folder of an earlier build (before this script) with the link to the new build', async () => {
    const { options } = fixture();
    mkdirSync(dist('assets'), { recursive: true });
    writeFileSync(dist('index.html'), 'old page');
    expect(await buildWeb(options)).toBe(true);
    expect(lstatSync(path.join(webDir, 'dist')).isSymbolicLink()).toBe(true);
    expect(readFileSync(dist('index.html'), 'utf8')).toContain('main-v1.js');
    expect(readdirSync(webDir).filter((n) => n.startsWith('.dist-'))).toHaveLength(1);
  });

  it('takes over the lock of a builder that died, and clears the folders it left', async () => {
    const { builds, options } = fixture();
    mkdirSync(path.join(webDir, '.build-lock'));
    writeFileSync(path.join(webDir, '.build-lock', 'pid'), '999999999');
    mkdirSync(path.join(webDir, '.dist-1-999999999'));
    expect(await buildWeb(options)).toBe(true);
    expect(builds).toEqual(['1']);
    expect(existsSync(path.join(webDir, '.dist-1-999999999'))).toBe(false);
    // Only the current build's folder is left beside web/dist.
    expect(readdirSync(webDir).filter((n) => n.startsWith('.dist-'))).toEqual([readlinkSync(path.join(webDir, 'dist'))]);
  });
});
