import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import { defineConfig, type Plugin } from 'vite';
import react from '@vitejs/plugin-react';

/** Everything the API server answers; the dev server forwards these so the app runs same-origin as in production. */
const API_PREFIXES = ['/api', '/userapi', '/infra', '/upgpu', '/order', '/billing', '/shinichi', '/v1', '/dev', '/files', '/docs', '/healthz'];
const API_TARGET = 'http://localhost:8080';

/** Text formats worth compressing; images other than SVG and fonts are compressed already. Maps are for tools, not browsers. */
const COMPRESSIBLE = /\.(?:js|mjs|css|html|svg|json|txt|xml|webmanifest)$/;
/** Below this a compressed copy saves next to nothing; the page itself is on every first load, so it is always compressed. */
const MIN_BYTES = 1024;

/** The modules of the spine chunk (see codeSplitting below). */
const SPINE = new RegExp(
  [
    String.raw`web[\\/]src[\\/](session|routing|auth)[\\/]`,
    String.raw`web[\\/]src[\\/]app[\\/]theme\.`,
    String.raw`web[\\/]src[\\/]api[\\/](site|user|notices|billing|http|client|errors|ui)\.`,
    String.raw`web[\\/]src[\\/]features[\\/](market[\\/]api[\\/]catalogue|storage[\\/]api[\\/]storage)\.`,
    String.raw`web[\\/]src[\\/]components[\\/](PageLoading|LoadError|Price)\.`,
    String.raw`contract[\\/]src[\\/](enums|money|filter-by|rules|time|web-paths|api-paths|errors)\.`,
    String.raw`node_modules[\\/](@tanstack[\\/](query-core|react-query)|dayjs)[\\/]`,
    String.raw`preload-helper|rolldown[\/:]runtime`,
  ].join('|'),
);

const brotli = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

/** Writes file.br and file.gz beside a file, each only when it is smaller than the file. */
async function precompressFile(file: string): Promise<void> {
  const body = await readFile(file);
  if (body.length < MIN_BYTES && !file.endsWith('.html')) return;
  const [br, gz] = await Promise.all([
    brotli(body, { params: { [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } }),
    gzipAsync(body, { level: constants.Z_BEST_COMPRESSION }),
  ]);
  if (br.length < body.length) await writeFile(`${file}.br`, br);
  if (gz.length < body.length) await writeFile(`${file}.gz`, gz);
}

/**
 * Compresses the build once at maximum effort so the server only streams files: brotli for
 * browsers that accept it, gzip for the rest (the server picks by accept-encoding).
 */
function precompress(): Plugin {
  let outDir = '';
  return {
    name: 'console:precompress',
    apply: 'build',
    configResolved(config) {
      outDir = path.resolve(config.root, config.build.outDir);
    },
    // After writing, so the public/ files copied into the output are compressed too.
    async closeBundle() {
      const files = (await filesUnder(outDir)).filter((f) => COMPRESSIBLE.test(f));
      await Promise.all(files.map(precompressFile));
    },
  };
}

export default defineConfig({
  plugins: [react(), precompress()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    rolldownOptions: {
      treeshake: {
        // rc-form and its validator declare no sideEffects, so the Form (about 6 KB brotli) rode
        // along with every Select, Input and Radio through antd's form context, on pages without
        // a form. They only set properties on their own exports, which stay wherever a Form is used.
        // A feature's index.ts only re-exports: without this each became a chunk of its own (30-100
        // bytes, one more request) for the pages of two features that share it.
        moduleSideEffects: [
          { test: /node_modules[\\/]@rc-component[\\/](form|async-validator)[\\/]/, sideEffects: false },
          { test: /web[\\/]src[\\/]features[\\/][^\\/]+[\\/]index\.ts$/, sideEffects: false },
        ],
      },
      output: {
        // React changes far less often than pages: its own chunk stays cached across deploys.
        // The spine — session, routing, guards, the API layer every page uses, TanStack Query,
        // dayjs and the contract's rules — is one chunk: left to automatic splitting it came as
        // twenty files of about 1 KB each, every one paying some 600 bytes of HTTP/1.1 headers on
        // a first load (the GPU market went from 35 files and 296 KB to 57 files and 317 KB as pages
        // were added). Only the modules named are moved (not what they import), so no antd
        // component rides along into it. antd is left to automatic splitting so each page chunk
        // carries only the components it uses.
        codeSplitting: {
          includeDependenciesRecursively: false,
          groups: [
            { name: 'react', test: /node_modules[\\/](react|react-dom|react-router|scheduler)[\\/]/, priority: 20 },
            { name: 'spine', test: SPINE, priority: 10 },
          ],
        },
      },
    },
  },
  server: {
    // Keys starting with ^ are regexes: match whole segments so a page like /apparatus is not sent to /api.
    proxy: Object.fromEntries(API_PREFIXES.map((prefix) => [`^${prefix}(/|\\?|$)`, { target: API_TARGET, ws: true }])),
  },
});
