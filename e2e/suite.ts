import { mkdirSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from './browser.js';
import { startServer, type RunningServer } from './server.js';

/** What a browser journey runs against: the built console on a server of its own, and one Chromium page. */
export interface ConsoleSession {
  server: RunningServer;
  browser: Browser;
  page: Page;
}

/**
 * Makes the screenshots folder, starts the server (with `env`) and Chromium, and opens a 1440×900 zh-CN page.
 * `context`: the page in a context of its own, so tabs the journey opens later share its session. `imagesFrom`: the
 * server's DATA_DIR starts with that images cache's OCI layout (server.ts startServer).
 */
export async function openConsole(o: { shots: string; env?: Record<string, string>; context?: boolean; imagesFrom?: string }): Promise<ConsoleSession> {
  mkdirSync(o.shots, { recursive: true });
  const server = await startServer(o.env, { imagesFrom: o.imagesFrom });
  let browser: Browser | undefined;
  try {
    browser = await launchBrowser();
    const options = { viewport: { width: 1440, height: 900 }, locale: 'zh-CN' };
    const page = o.context ? await (await browser.newContext(options)).newPage() : await browser.newPage(options);
    return { server, browser, page };
  } catch (e) {
    // The caller never sees what was started: it is stopped here.
    await closeConsole({ browser, server });
    throw e;
  }
}

/** Closes what `openConsole` started (whatever of it a failed start left). */
export async function closeConsole(s: { browser?: Browser; server?: RunningServer }): Promise<void> {
  await s.browser?.close();
  await s.server?.stop();
}

/**
 * Chooses an option of a searchable antd Select the way a keyboard user does: types `text` into its search box, waits
 * until the first match is the active option, and presses Enter. A mouse click on an option can land where the
 * dropdown was before its open animation re-aligned it (seen on a loaded CI machine), closing it with nothing chosen.
 */
export async function chooseOption(page: Page, selectId: string, text: string): Promise<void> {
  const search = page.locator(`#${selectId}`);
  await search.click();
  await search.fill(text);
  await page.locator(`#${selectId}_list`).waitFor({ state: 'attached' });
  await page.locator('.ant-select-dropdown:visible .ant-select-item-option-active').filter({ hasText: text }).waitFor();
  await search.press('Enter');
}
