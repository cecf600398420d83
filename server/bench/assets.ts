/**
 * First-load JavaScript of the GPU market (issue "Structure and speed"): Chromium opens the page
 * with a cold cache and every script response is counted as it came over the wire (headers and the
 * encoded body, CDP's encodedDataLength) until the network is idle. Target: at most 300 KB
 * transferred — a bare antd page is about 283 KB gzip, so this leaves room for the page itself.
 * The precompressed .br/.gz files come from `npm run build` (web/vite.config.ts).
 */
import { existsSync } from 'node:fs';
import { chromium, type CDPSession } from 'playwright-core';
import { PAGE } from '@console/contract';

const TARGET_KB = 300;
const KB = 1024;

interface ScriptTraffic {
  transferred: number;
  decoded: number;
  encodings: Set<string>;
  files: number;
}

/** Sums what the scripts of one page load cost, keyed by CDP request id. */
function countScripts(cdp: CDPSession): ScriptTraffic {
  const traffic: ScriptTraffic = { transferred: 0, decoded: 0, encodings: new Set(), files: 0 };
  const scripts = new Set<string>();
  cdp.on('Network.responseReceived', (e) => {
    if (e.type !== 'Script') return;
    scripts.add(e.requestId);
    traffic.files++;
    const encoding = Object.entries(e.response.headers).find(([name]) => name.toLowerCase() === 'content-encoding')?.[1];
    traffic.encodings.add(encoding ?? 'none');
  });
  cdp.on('Network.dataReceived', (e) => {
    if (scripts.has(e.requestId)) traffic.decoded += e.dataLength;
  });
  cdp.on('Network.loadingFinished', (e) => {
    if (scripts.has(e.requestId)) traffic.transferred += e.encodedDataLength;
  });
  return traffic;
}

/** How the scripts came: small files are sent as they are, so "none" only counts when nothing was compressed. */
function encodingLabel(encodings: Set<string>): string {
  const names: Record<string, string> = { br: 'brotli', gzip: 'gzip', none: 'uncompressed' };
  const used = [...encodings].filter((e) => e !== 'none');
  return (used.length ? used : ['none']).map((e) => names[e] ?? e).join(', ');
}

/** The console answers 503 with a hint while web/dist does not exist. */
async function consoleIsBuilt(base: string): Promise<boolean> {
  const res = await fetch(base + PAGE.cloudGpu);
  await res.arrayBuffer();
  return res.status === 200;
}

async function measureMarket(base: string, executablePath: string): Promise<ScriptTraffic> {
  const browser = await chromium.launch({
    executablePath,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  try {
    // A new page has a context of its own, with an empty cache: a visitor's first visit.
    const page = await browser.newPage();
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
    const traffic = countScripts(cdp);
    await page.goto(base + PAGE.cloudGpu, { waitUntil: 'networkidle' });
    return traffic;
  } finally {
    await browser.close();
  }
}

/** Prints the first-load figure of the GPU market; false when the target was missed. */
export async function benchFirstLoad(base: string): Promise<boolean> {
  if (!(await consoleIsBuilt(base))) {
    console.log('\nfirst-load JS of the GPU market: skipped (web/dist is missing; run `npm run build` first)');
    return true;
  }
  const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(executablePath)) {
    console.log(`\nfirst-load JS of the GPU market: skipped (no Chromium at ${executablePath}; install Debian's chromium or set CHROMIUM_PATH)`);
    return true;
  }
  const t = await measureMarket(base, executablePath);
  const met = t.transferred <= TARGET_KB * KB;
  console.log(
    `\nfirst-load JS of the GPU market  ${Math.round(t.transferred / KB)} KB transferred (${encodingLabel(t.encodings)}), ` +
      `${Math.round(t.decoded / KB)} KB decoded, ${t.files} files  (target ≤ ${TARGET_KB} KB: ${met ? 'target met' : 'MISSED'})`,
  );
  return met;
}
